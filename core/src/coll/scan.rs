//! `MPI_Scan` (inclusive prefix reduction) and `MPI_Exscan` (exclusive).
//!
//! Chain in rank order, pipelined in chunks: rank r receives the prefix
//! P(r−1) = x0 op … op x(r−1) from rank r−1, computes P(r) = P(r−1) op x(r) — the lower ranks'
//! prefix always the left operand, so non-commutative ops are right — and passes P(r) on to
//! rank r+1. Chunk c moves on as soon as chunk c has arrived and been folded, so for large
//! buffers all links are busy at once and the time is about that of one transfer plus n−1
//! chunk latencies. Each element of P(r) is reduced in the same order on every run, so results
//! are reproducible bit for bit.
//!
//! Scan: the prefix is folded straight into the receive buffer as it arrives (`Fold::Before`
//! with this rank's input), and forwarded from there.
//! Exscan: the receive buffer gets P(r−1) unchanged; P(r) is computed into a scratch buffer
//! and forwarded from there. Rank 0's receive buffer is not touched (MPI leaves it undefined).
//! In place, this rank's input is the receive buffer: Scan folds into it directly; Exscan
//! keeps a copy of its input before P(r−1) overwrites it.

use super::allreduce::{copy_if_needed, fragment};
use super::select::Algo;
use super::{chunk_elems, chunks, scratch, tag, Reduction};
use crate::comm::Comm;
use crate::datatype::Datatype;
use crate::engine::{Fold, Schedule};
use crate::error::Result;
use crate::frame::Signature;

/// Prefix reduction of `count` elements: inclusive (`MPI_Scan`) or, with `exclusive`,
/// `MPI_Exscan`. `send == recv` means in place.
#[allow(clippy::too_many_arguments)]
pub fn scan(
    comm: &Comm,
    send: *const u8,
    recv: *mut u8,
    count: usize,
    dt: &Datatype,
    red: Reduction,
    exclusive: bool,
    sig: Signature,
) -> Result<()> {
    build_scan(comm, send, recv, count, dt, red, exclusive, sig)?.run()
}

/// The schedule of [`scan`], built (call number taken) but not run; it owns its scratch.
#[allow(clippy::too_many_arguments)]
pub fn build_scan<'c>(
    comm: &'c Comm,
    send: *const u8,
    recv: *mut u8,
    count: usize,
    dt: &Datatype,
    red: Reduction,
    exclusive: bool,
    sig: Signature,
) -> Result<Schedule<'c>> {
    let (n, r) = (comm.size(), comm.rank);
    let ext = dt.extent;
    let nbytes = count * ext;
    let seq = comm.next_seq();
    if n == 1 {
        comm.note_algo(sig.kind, Algo::Local, nbytes);
        if !exclusive {
            copy_if_needed(send, recv, nbytes);
        }
        return Ok(Schedule::new(comm.ctx(sig, seq, ext)));
    }
    comm.note_algo(sig.kind, Algo::Pipeline, nbytes);
    let (prev, next) = ((r > 0).then(|| r - 1), (r + 1 < n).then_some(r + 1));
    let in_place = std::ptr::eq(send, recv);
    let mut s = Schedule::new(comm.ctx(sig, seq, ext));
    let ce = chunk_elems(ext, count, fragment(comm)?);
    let at = |p: *const u8, off: usize| p.wrapping_add(off * ext);
    let mut work = scratch(0);
    if !exclusive {
        if prev.is_none() {
            copy_if_needed(send, recv, nbytes);
        }
        for (c, (off, cnt)) in chunks(count, ce).enumerate() {
            let dst = at(recv, off) as *mut u8;
            let got = prev.map(|p| {
                let fold = Fold::Before {
                    red,
                    with: at(send, off),
                };
                s.recv(p, tag(0, c), dst, cnt * ext, fold, &[])
            });
            if let Some(q) = next {
                s.send(q, tag(0, c), dst, cnt * ext, &[got]);
            }
        }
    } else {
        // P(r) = P(r−1) op x(r) goes to `work`; in place, x(r) is saved there first and the
        // fold overwrites it element by element (dst == b is allowed).
        let middle = prev.is_some() && next.is_some();
        if middle {
            work = scratch(nbytes);
        }
        let wp = work.as_mut_ptr();
        let mine = if in_place && middle {
            copy_if_needed(send, wp, nbytes);
            wp as *const u8
        } else {
            send
        };
        for (c, (off, cnt)) in chunks(count, ce).enumerate() {
            let got = prev.map(|p| {
                s.recv(
                    p,
                    tag(0, c),
                    at(recv, off) as *mut u8,
                    cnt * ext,
                    Fold::Copy,
                    &[],
                )
            });
            let Some(q) = next else { continue };
            let (src, ready) = match got {
                // Rank 0: P(0) = x(0), sent as it is.
                None => (at(mine, off), None),
                Some(got) => {
                    let dst = at(wp, off) as *mut u8;
                    let t = s.reduce(red, dst, at(recv, off), at(mine, off), cnt, &[Some(got)]);
                    (dst as *const u8, Some(t))
                }
            };
            s.send(q, tag(0, c), src, cnt * ext, &[ready]);
        }
    }
    s.keep(work);
    Ok(s)
}
