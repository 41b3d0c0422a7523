//! `MPI_Reduce_scatter` and `MPI_Reduce_scatter_block`.
//!
//! Large messages: ring reduce-scatter with blocks of the given (possibly uneven, possibly zero)
//! counts, shifted so that rank r finishes its own block r; partial sums live in a scratch
//! buffer, and the finished block is copied to the output at the end (in place, the output
//! overlaps the input blocks still being read).
//! Small messages: one-shot — every rank sends block j of its input to rank j, which folds the n
//! pieces in rank order.

use super::allreduce::{copy_if_needed, fragment};
use super::direct;
use super::hier;
use super::ring::Ring;
use super::select::{choose, forced_levels, Algo};
use super::{blocks_from_counts, chunk_elems, scratch, tag, Reduction};
use crate::comm::Comm;
use crate::datatype::Datatype;
use crate::engine::{Fold, Schedule};
use crate::error::Result;
use crate::frame::Signature;

/// `send == recv` means in place (the input is in `recv`, which holds the sum of `counts`).
pub fn reduce_scatter(
    comm: &Comm,
    send: *const u8,
    recv: *mut u8,
    counts: &[usize],
    dt: &Datatype,
    red: Reduction,
    sig: Signature,
) -> Result<()> {
    let n = comm.size();
    let blk = counts.first().copied().unwrap_or(0) * dt.extent;
    if n > 1
        && counts.iter().all(|&c| c * dt.extent == blk)
        && algo(comm, red, blk * n) == Algo::OneShot
        && direct::fits(comm, blk)
    {
        // Latency-bound: the allocation-free one-shot (the schedule's frames and fold order).
        let seq = comm.next_seq();
        comm.note_algo(sig.kind, Algo::OneShot, blk * n);
        return direct::oneshot_scatter(comm, seq, send, recv, counts[0], dt.extent, red, sig);
    }
    build_reduce_scatter(comm, send, recv, counts, dt, red, sig)?.run()
}

/// The algorithm of a reduce-scatter of `total` bytes with `red` on more than one rank (every
/// rank decides alike: size, topology, settings).
fn algo(comm: &Comm, red: Reduction, total: usize) -> Algo {
    let two_level = red.commutative()
        && comm.topology().spans_hosts()
        && hier::fits(comm.topology())
        // Every size: measured faster than the flat algorithms from 64 B on (PERFORMANCE.md).
        && forced_levels("reduce_scatter").unwrap_or(true);
    if two_level {
        Algo::Hier
    } else if red.commutative() {
        choose(
            "reduce_scatter",
            total,
            &[Algo::Ring, Algo::OneShot],
            Algo::OneShot,
            Algo::Ring,
        )
    } else {
        // Only the one-shot fold combines operands in rank order.
        Algo::OneShot
    }
}

/// The schedule of [`reduce_scatter`], built (call number taken) but not run.
pub fn build_reduce_scatter<'c>(
    comm: &'c Comm,
    send: *const u8,
    recv: *mut u8,
    counts: &[usize],
    dt: &Datatype,
    red: Reduction,
    sig: Signature,
) -> Result<Schedule<'c>> {
    let (n, r) = (comm.size(), comm.rank);
    let blocks = blocks_from_counts(counts);
    let total: usize = counts.iter().sum();
    let ext = dt.extent;
    let seq = comm.next_seq();
    let (my_off, my_cnt) = blocks[r];
    if n == 1 {
        comm.note_algo(sig.kind, Algo::Local, total * ext);
        copy_if_needed(send, recv, my_cnt * ext);
        return Ok(Schedule::new(comm.ctx(sig, seq, ext)));
    }
    let algo = algo(comm, red, total * ext);
    comm.note_algo(sig.kind, algo, total * ext);
    let mut s = Schedule::new(comm.ctx(sig, seq, ext));
    let mut work;
    match algo {
        Algo::Hier => {
            work = scratch(total * ext);
            let t = comm.topology();
            hier::reduce_scatter(&mut s, comm, t, send, work.as_mut_ptr(), &blocks, ext, red)?;
            let mine = work.as_ptr().wrapping_add(my_off * ext);
            s.copy_at_end(recv, mine, my_cnt * ext);
            s.keep(work);
            Ok(s)
        }
        Algo::Ring => {
            work = scratch(total * ext);
            let maxblk = counts.iter().copied().max().unwrap_or(0);
            let ring = Ring::flat(
                &blocks,
                ext,
                chunk_elems(ext, maxblk, fragment(comm)?),
                r,
                n,
            );
            if std::ptr::eq(send, recv) {
                ring.reduce_scatter(&mut s, red, send, work.as_mut_ptr(), n - 1, 0);
                // Last: in place, the output overlaps input blocks other steps still read.
                let mine = work.as_ptr().wrapping_add(my_off * ext);
                s.copy_at_end(recv, mine, my_cnt * ext);
            } else {
                let w = work.as_mut_ptr();
                ring.reduce_scatter_to(&mut s, red, send, w, Some(recv), n - 1, 0);
            }
            s.keep(work);
            Ok(s)
        }
        _ => {
            work = scratch(my_cnt * ext);
            for p in (0..n).filter(|&p| p != r) {
                let (off, cnt) = blocks[p];
                s.send(p, tag(0, 0), send.wrapping_add(off * ext), cnt * ext, &[]);
            }
            let mine = send.wrapping_add(my_off * ext);
            let out = work.as_mut_ptr();
            let mut prev = None;
            for j in 0..n {
                let t = match (j == r, j == 0) {
                    (true, true) => s.copy(out, mine, my_cnt * ext, &[]),
                    (true, false) => s.reduce(red, out, out, mine, my_cnt, &[prev]),
                    (false, true) => s.recv(j, tag(0, 0), out, my_cnt * ext, Fold::Copy, &[]),
                    (false, false) => {
                        let fold = Fold::After { red, with: out };
                        s.recv(j, tag(0, 0), out, my_cnt * ext, fold, &[prev])
                    }
                };
                prev = Some(t);
            }
            s.copy_at_end(recv, work.as_ptr(), my_cnt * ext);
            s.keep(work);
            Ok(s)
        }
    }
}
