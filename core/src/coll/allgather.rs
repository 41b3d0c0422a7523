//! `MPI_Allgather`.
//!
//! Large messages: ring — in step s each rank forwards to its right neighbour the block it
//! received in step s−1 (its own block first), pipelined in chunks; n−1 steps.
//! Small messages: one-shot — every rank sends its block straight to every other rank.
//! Large messages on one host, 3 ranks or more: the one-shot as a fan-out
//! ([`crate::engine::Schedule::fanout`]): each rank copies its block once into its stage and
//! every other rank copies it out from there — n copies of a block in all (one more for the
//! owner's own place in the output), where the ring makes 2(n−1) + 1 (docs/PERFORMANCE.md,
//! "Fan-out").

use super::allreduce::{copy_if_needed, copy_ring_fragment};
use super::direct;
use super::hier;
use super::ring::Ring;
use super::select::{choose, forced_levels, Algo};
use super::{chunk_elems, even_blocks, fans_out, tag};
use crate::comm::Comm;
use crate::datatype::Datatype;
use crate::engine::{Fold, Schedule};
use crate::error::Result;
use crate::frame::{Kind, Signature};

/// `send == recv + rank × count × extent` means in place (the own block is already there).
pub fn allgather(
    comm: &Comm,
    send: *const u8,
    recv: *mut u8,
    count: usize,
    dt: &Datatype,
    sig: Signature,
) -> Result<()> {
    allgather_as(comm, send, recv, count, dt, sig, Kind::Allgather)
}

/// Allgather of `mine.len()` bytes per rank, used inside hcomm (communicator creation).
pub fn allgather_internal(comm: &Comm, mine: &[u8], all: &mut [u8]) -> Result<()> {
    assert_eq!(all.len(), mine.len() * comm.size());
    let dt = Datatype::new(crate::datatype::ElemType::Byte, 1, 1);
    let sig = Signature {
        kind: Kind::Internal,
        count: mine.len() as u64,
        dtype: 0,
        op: 0,
        root: -1,
    };
    allgather_as(
        comm,
        mine.as_ptr(),
        all.as_mut_ptr(),
        mine.len(),
        &dt,
        sig,
        Kind::Internal,
    )
}

fn allgather_as(
    comm: &Comm,
    send: *const u8,
    recv: *mut u8,
    count: usize,
    dt: &Datatype,
    sig: Signature,
    kind: Kind,
) -> Result<()> {
    let (n, r) = (comm.size(), comm.rank);
    let blk = count * dt.extent;
    if n > 1 && algo(comm, blk * n) == Algo::OneShot && direct::fits(comm, blk) {
        // Latency-bound: the allocation-free one-shot (the schedule's frames).
        let seq = comm.next_seq();
        comm.note_algo(kind, Algo::OneShot, blk * n);
        copy_if_needed(send, recv.wrapping_add(r * blk), blk);
        return direct::gather(comm, seq, recv, blk, sig);
    }
    build_allgather_as(comm, send, recv, count, dt, sig, kind)?.run()
}

/// The algorithm of an allgather of `total` bytes on more than one rank (every rank decides
/// alike: size, topology, settings).
fn algo(comm: &Comm, total: usize) -> Algo {
    let two_level = comm.topology().spans_hosts()
        && hier::fits(comm.topology())
        // Every size: measured faster than the flat algorithms from 64 B on (PERFORMANCE.md).
        && forced_levels("allgather").unwrap_or(true);
    if two_level {
        Algo::Hier
    } else {
        flat_algo(comm, "allgather", total)
    }
}

/// The one-level algorithm of an allgather or allgatherv (`coll`, as in `HCOMM_ALGO`) of
/// `total` bytes: the one-shot when small, and when large too where it fans out ([`fans_out`]),
/// else the ring.
pub(super) fn flat_algo(comm: &Comm, coll: &str, total: usize) -> Algo {
    let large = if fans_out(comm) {
        Algo::OneShot
    } else {
        Algo::Ring
    };
    choose(
        coll,
        total,
        &[Algo::Ring, Algo::OneShot],
        Algo::OneShot,
        large,
    )
}

/// The schedule of [`allgather`], built (call number taken) but not run.
pub fn build_allgather<'c>(
    comm: &'c Comm,
    send: *const u8,
    recv: *mut u8,
    count: usize,
    dt: &Datatype,
    sig: Signature,
) -> Result<Schedule<'c>> {
    build_allgather_as(comm, send, recv, count, dt, sig, Kind::Allgather)
}

fn build_allgather_as<'c>(
    comm: &'c Comm,
    send: *const u8,
    recv: *mut u8,
    count: usize,
    dt: &Datatype,
    sig: Signature,
    kind: Kind,
) -> Result<Schedule<'c>> {
    let (n, r) = (comm.size(), comm.rank);
    let blk = count * dt.extent;
    let seq = comm.next_seq();
    let own = recv.wrapping_add(r * blk);
    if n == 1 {
        comm.note_algo(kind, Algo::Local, blk);
        copy_if_needed(send, own, blk);
        return Ok(Schedule::new(comm.ctx(sig, seq, dt.extent)));
    }
    let algo = algo(comm, blk * n);
    comm.note_algo(kind, algo, blk * n);
    let mut s = Schedule::new(comm.ctx(sig, seq, dt.extent));
    match algo {
        Algo::Hier => {
            copy_if_needed(send, own, blk);
            hier::allgather(&mut s, comm, comm.topology(), recv, count, dt.extent)?
        }
        Algo::Ring => {
            // Blocks of `count` elements each, back to back.
            let blocks: Vec<(usize, usize)> = even_blocks(count * n, n);
            let ring = Ring::flat(
                &blocks,
                dt.extent,
                chunk_elems(dt.extent, count, copy_ring_fragment(comm, &mut s, blk)?),
                r,
                n,
            );
            // The own block leaves from the send buffer (when not in place): a single-copy read
            // of it then pulls lines nobody just wrote, not ones a local copy left dirty in
            // this core's cache; and it reaches its place in `recv` fragment by fragment as it
            // is sent, while in cache, not in a separate pass over memory (measured:
            // docs/PERFORMANCE.md, "The own block").
            let src = (!std::ptr::eq(send, own)).then_some(send);
            ring.allgather(&mut s, recv, r, src, &[], 0);
        }
        _ => {
            // The own block leaves from the send buffer and reaches its place in `recv` as
            // the first send's mirror, while in cache (as in the ring). Every send is one
            // fan-out member: the block is copied to the stage once for all peers.
            let in_place = std::ptr::eq(send, own);
            let g = s.fanout();
            for (i, p) in (1..n).map(|d| (r + d) % n).enumerate() {
                let mirror = if i == 0 && !in_place {
                    own
                } else {
                    std::ptr::null_mut()
                };
                s.send_fanout(g, p, tag(0, 0), send, blk, mirror, &[]);
            }
            for p in (0..n).filter(|&p| p != r) {
                s.recv(
                    p,
                    tag(0, 0),
                    recv.wrapping_add(p * blk),
                    blk,
                    Fold::Copy,
                    &[],
                );
            }
        }
    }
    Ok(s)
}
