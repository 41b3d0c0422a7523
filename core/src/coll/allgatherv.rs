//! `MPI_Allgatherv`.
//!
//! The blocks may have any sizes (zero included) and lie anywhere in the receive buffer: in
//! rank order or not, with gaps or without. The ABI layer turns them into byte spans; here
//! every block is an `(offset, bytes)` pair relative to the lowest block, which is all the
//! ring helper needs.
//! Large totals: ring (see `ring.rs`) — in step s each rank forwards to its right neighbour the
//! block it received in step s−1 (its own first), pipelined in chunks; n−1 steps, and each
//! rank sends and receives every other block once. Zero-sized blocks still travel as one empty
//! message, so the schedule has the same shape on every rank.
//! Small totals: one-shot — every rank sends its block straight to every other rank (each
//! block within a fragment: without a schedule, `direct::gather_op`).
//! Large totals on one host, 3 ranks or more: the one-shot as a fan-out, as `MPI_Allgather`
//! does (`allgather.rs`): each block is copied once into its owner's stage and out once by
//! every other rank — n copies of a block where the ring makes 2(n−1) + 1, whatever the
//! blocks' sizes.
//! Across hosts (same number of ranks on each): two levels, as `MPI_Allgather` (`hier.rs`).
//! Every rank knows every block size, so all pick the same algorithm and chunking.

use super::allreduce::{copy_if_needed, copy_ring_fragment};
use super::direct;
use super::hier;
use super::ring::Ring;
use super::select::{forced_levels, Algo};
use super::{chunk_elems, tag};
use crate::comm::Comm;
use crate::engine::{Fold, Schedule};
use crate::error::Result;
use crate::frame::Signature;
use std::sync::Arc;

/// Gathers every rank's block into `recv[p]` (`(pointer, bytes)` per rank `p`) on every rank;
/// this rank's `recv[rank].1` bytes are read from `send`, where `send == recv[rank].0` means
/// in place.
pub fn allgatherv(
    comm: &Comm,
    send: *const u8,
    recv: &[(*mut u8, usize)],
    sig: Signature,
) -> Result<()> {
    build_allgatherv(comm, send, recv, sig)?.run()
}

/// [`allgatherv`] as the operation of a request (every `MPI_Allgatherv` form, through
/// `abi::api::plan`): the allocation-free one-shot where the totals are small and every block
/// fits one fragment (the schedule's frames), else the schedule of [`build_allgatherv`].
/// `finish` runs on completion.
pub fn allgatherv_op(
    comm: &Arc<Comm>,
    send: *const u8,
    recv: Vec<(*mut u8, usize)>,
    sig: Signature,
    finish: Option<Box<dyn FnOnce() + Send>>,
) -> Result<Box<dyn crate::request::Op>> {
    let (n, r) = (comm.size(), comm.rank);
    assert_eq!(recv.len(), n, "one receive span per rank");
    let total: usize = recv.iter().map(|b| b.1).sum();
    let biggest = recv.iter().map(|b| b.1).max().unwrap_or(0);
    if n > 1 && algo(comm, total) == Algo::OneShot && direct::fits(comm, biggest) {
        let seq = comm.next_seq();
        comm.note_algo(sig.kind, Algo::OneShot, total);
        copy_if_needed(send, recv[r].0, recv[r].1);
        return direct::gather_op(comm.clone(), seq, recv, sig, finish);
    }
    let s = crate::request::Sched::new(
        comm.clone(),
        move |c| build_allgatherv(c, send, &recv, sig),
        finish,
    )?;
    Ok(Box::new(s))
}

/// The algorithm of an allgatherv of `total` bytes on more than one rank (every rank decides
/// alike: the total, the topology, the settings).
fn algo(comm: &Comm, total: usize) -> Algo {
    if hier::fits(comm.topology()) && forced_levels("allgatherv").unwrap_or(true) {
        return Algo::Hier;
    }
    super::allgather::flat_algo(comm, "allgatherv", total)
}

/// The schedule of [`allgatherv`], built (call number taken) but not run.
pub fn build_allgatherv<'c>(
    comm: &'c Comm,
    send: *const u8,
    recv: &[(*mut u8, usize)],
    sig: Signature,
) -> Result<Schedule<'c>> {
    let (n, r) = (comm.size(), comm.rank);
    assert_eq!(recv.len(), n, "one receive span per rank");
    let seq = comm.next_seq();
    let total: usize = recv.iter().map(|b| b.1).sum();
    let (own, own_len) = recv[r];
    if n == 1 {
        copy_if_needed(send, own, own_len);
        comm.note_algo(sig.kind, Algo::Local, total);
        return Ok(Schedule::new(comm.ctx(sig, seq, 1)));
    }
    let t = comm.topology();
    let algo = algo(comm, total);
    comm.note_algo(sig.kind, algo, total);
    let mut s = Schedule::new(comm.ctx(sig, seq, 1));
    match algo {
        Algo::Hier => {
            copy_if_needed(send, own, own_len);
            let (base, blocks) = relative_blocks(recv);
            hier::allgather_blocks(&mut s, comm, t, base, &blocks, 1)?;
        }
        Algo::Ring => {
            let (base, blocks) = relative_blocks(recv);
            let biggest = recv.iter().map(|b| b.1).max().unwrap_or(0);
            let chunk = chunk_elems(1, biggest, copy_ring_fragment(comm, &mut s, biggest)?);
            let ring = Ring::flat(&blocks, 1, chunk, r, n);
            // From the send buffer, and into place as it is sent, as in the allgather.
            let src = (!std::ptr::eq(send, own)).then_some(send);
            ring.allgather(&mut s, base, r, src, &[], 0);
        }
        _ => {
            // As the allgather's one-shot: the own block leaves from the send buffer, reaches
            // its place as the first send's mirror, and every send is one fan-out member (a
            // peer without a stage, or a block under a fragment's worth, gets plain sends).
            let in_place = std::ptr::eq(send, own);
            let g = s.fanout();
            for (i, p) in (1..n).map(|d| (r + d) % n).enumerate() {
                let mirror = if i == 0 && !in_place {
                    own
                } else {
                    std::ptr::null_mut()
                };
                s.send_fanout(g, p, tag(0, 0), send, own_len, mirror, &[]);
            }
            for p in (0..n).filter(|&p| p != r) {
                s.recv(p, tag(0, 0), recv[p].0, recv[p].1, Fold::Copy, &[]);
            }
        }
    }
    Ok(s)
}

/// The spans as `(offset, bytes)` from the lowest non-empty span, which is returned as the
/// base. Empty spans are never dereferenced; they get offset 0.
fn relative_blocks(spans: &[(*mut u8, usize)]) -> (*mut u8, Vec<(usize, usize)>) {
    let base = spans
        .iter()
        .filter(|b| b.1 > 0)
        .map(|b| b.0)
        .min_by_key(|p| *p as usize)
        .unwrap_or(spans[0].0);
    let blocks = spans
        .iter()
        .map(|&(p, len)| {
            let off = if len > 0 {
                p as usize - base as usize
            } else {
                0
            };
            (off, len)
        })
        .collect();
    (base, blocks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_relative_to_lowest() {
        let mut buf = [0u8; 64];
        let p = buf.as_mut_ptr();
        let spans = [
            (p.wrapping_add(40), 8),
            (p.wrapping_add(3), 0),
            (p.wrapping_add(10), 5),
            (std::ptr::null_mut(), 0),
        ];
        let (base, blocks) = relative_blocks(&spans);
        assert_eq!(base, p.wrapping_add(10));
        assert_eq!(blocks, vec![(30, 8), (0, 0), (0, 5), (0, 0)]);
    }
}
