//! `MPI_Reduce`.
//!
//! Large messages: ring reduce-scatter (each rank finishes one block), then every rank sends its
//! finished block to the root, chunk by chunk as chunks finish.
//! Small messages on one host: one-shot — every rank sends to the root, which folds in rank
//! order (also what non-commutative ops always take). Small messages across hosts (or forced
//! `tree`): binomial tree — in round k a rank whose relative rank has bit k set sends its
//! partial result to the rank 2^k below it, which folds it in after its own; log2(n) steps.
//! Non-root ranks need scratch space for partial results (their `recvbuf` is not significant).

use super::allreduce::{copy_if_needed, fragment, oneshot_fold};
use super::direct;
use super::hier;
use super::ring::Ring;
use super::select::{choose, forced_levels, is_small, Algo};
use super::{chunk_elems, chunks, even_blocks, scratch, tag, Reduction};
use crate::comm::Comm;
use crate::datatype::Datatype;
use crate::engine::{Fold, Schedule};
use crate::error::Result;
use crate::frame::{Kind, Signature};

/// The algorithm of a large commutative reduce. On 2 ranks of one host from
/// [`TWO_RANK_DIRECT`] on, the other rank's message straight to the root (`OneShot`): the
/// ring's reduce-scatter halves the folding but adds the gather of the peer's half, 1.5 times
/// the memory traffic, which stops paying once the halves outgrow the cores' caches (measured
/// in docs/PERFORMANCE.md, "Reduce"). Every rank decides alike (size, topology).
fn large_reduce(comm: &Comm, nbytes: usize) -> Algo {
    if comm.size() == 2 && !comm.topology().spans_hosts() && nbytes >= TWO_RANK_DIRECT {
        Algo::OneShot
    } else {
        Algo::Ring
    }
}

/// Measured on a 2-core VM with 2 MiB of L2 per core: the ring is faster up to 8 MiB, the
/// direct path from 16 MiB (16 MiB 2.68 against 3.34 ms, 64 MiB 17.1 against 19.3 ms).
const TWO_RANK_DIRECT: usize = 16 << 20;

/// `send == recv` at the root means in place; `recv` is ignored elsewhere.
#[allow(clippy::too_many_arguments)]
pub fn reduce(
    comm: &Comm,
    send: *const u8,
    recv: *mut u8,
    count: usize,
    dt: &Datatype,
    red: Reduction,
    root: usize,
    sig: Signature,
) -> Result<()> {
    let nbytes = count * dt.extent;
    if comm.size() > 1 && algo(comm, red, nbytes) == Algo::OneShot && direct::fits(comm, nbytes) {
        // Latency-bound: the allocation-free one-shot (the schedule's frames and fold order).
        let seq = comm.next_seq();
        comm.note_algo(Kind::Reduce, Algo::OneShot, nbytes);
        return direct::oneshot(
            comm,
            seq,
            send,
            recv,
            count,
            dt.extent,
            red,
            Some(root),
            sig,
        );
    }
    build_reduce(comm, send, recv, count, dt, red, root, sig)?.run()
}

/// The most ranks whose small reduce on one host is the one-shot: it was measured at 2–4
/// ranks (docs/PERFORMANCE.md, "Small collectives without schedules"); with more, the root's
/// n − 1 folds in a row against the tree's log2(n) steps were not measured, so the tree stays.
const ONESHOT_MAX_RANKS: usize = 8;

/// The algorithm of a reduce of `nbytes` with `red` on more than one rank (every rank
/// decides alike: size, topology, settings). Small messages on one host of up to
/// [`ONESHOT_MAX_RANKS`]: the one-shot — each rank's one frame straight to the root, one step
/// of latency, where the binomial tree takes log2(n) steps (measured in docs/PERFORMANCE.md,
/// "Small collectives without schedules"); across hosts the tree (its frames cross the
/// network once per subtree, the one-shot's once per rank).
fn algo(comm: &Comm, red: Reduction, nbytes: usize) -> Algo {
    let two_level = red.commutative()
        && comm.topology().spans_hosts()
        && hier::fits(comm.topology())
        && forced_levels("reduce").unwrap_or(!is_small(nbytes));
    if two_level {
        Algo::Hier
    } else if red.commutative() {
        let small = if comm.topology().spans_hosts() || comm.size() > ONESHOT_MAX_RANKS {
            Algo::Tree
        } else {
            Algo::OneShot
        };
        choose(
            "reduce",
            nbytes,
            &[Algo::Ring, Algo::OneShot, Algo::Tree],
            small,
            large_reduce(comm, nbytes),
        )
    } else {
        // Only the one-shot fold combines operands in rank order.
        Algo::OneShot
    }
}

/// The schedule of [`reduce`], built (call number taken) but not run.
#[allow(clippy::too_many_arguments)]
pub fn build_reduce<'c>(
    comm: &'c Comm,
    send: *const u8,
    recv: *mut u8,
    count: usize,
    dt: &Datatype,
    red: Reduction,
    root: usize,
    sig: Signature,
) -> Result<Schedule<'c>> {
    let (n, r) = (comm.size(), comm.rank);
    let nbytes = count * dt.extent;
    let seq = comm.next_seq();
    if n == 1 {
        comm.note_algo(Kind::Reduce, Algo::Local, nbytes);
        copy_if_needed(send, recv, nbytes);
        return Ok(Schedule::new(comm.ctx(sig, seq, dt.extent)));
    }
    let algo = algo(comm, red, nbytes);
    comm.note_algo(Kind::Reduce, algo, nbytes);
    let mut s = Schedule::new(comm.ctx(sig, seq, dt.extent));
    let is_root = r == root;
    let mut keep = scratch(0);
    match algo {
        Algo::Hier => {
            keep = scratch(nbytes);
            let t = comm.topology();
            let work = keep.as_mut_ptr();
            hier::reduce(
                &mut s, comm, t, send, recv, work, count, dt.extent, red, root,
            )?;
        }
        Algo::Ring => {
            let work = if is_root {
                recv
            } else {
                keep = scratch(nbytes);
                keep.as_mut_ptr()
            };
            let blocks = even_blocks(count, n);
            let ring = Ring::flat(
                &blocks,
                dt.extent,
                chunk_elems(dt.extent, blocks[0].1, fragment(comm)?),
                r,
                n,
            );
            let fin = ring.reduce_scatter(&mut s, red, send, work, 0, 0);
            let ce = ring.chunk_elems;
            if is_root {
                // Block b is finished by rank b-1.
                for q in (0..n).filter(|&q| q != r) {
                    let b = (q + 1) % n;
                    for (c, (off, cnt)) in chunks(blocks[b].1, ce).enumerate() {
                        let dst = work.wrapping_add((blocks[b].0 + off) * dt.extent);
                        s.recv(q, tag(n, c), dst, cnt * dt.extent, Fold::Copy, &[]);
                    }
                }
            } else {
                let b = (r + 1) % n;
                for (c, (off, cnt)) in chunks(blocks[b].1, ce).enumerate() {
                    let src = work.wrapping_add((blocks[b].0 + off) * dt.extent);
                    s.send(root, tag(n, c), src, cnt * dt.extent, &[Some(fin[c])]);
                }
            }
        }
        Algo::OneShot => {
            let mine = if is_root && std::ptr::eq(send, recv) {
                keep = scratch(nbytes);
                copy_if_needed(send, keep.as_mut_ptr(), nbytes);
                keep.as_ptr()
            } else {
                send
            };
            oneshot_fold(&mut s, comm, mine, recv, count, dt, red, Some(root));
        }
        _ => {
            // Binomial tree on ranks relative to the root.
            let vr = (r + n - root) % n;
            let real = |v: usize| (v + root) % n;
            let has_children = vr & 1 == 0 && vr + 1 < n;
            let acc: *mut u8 = if is_root {
                copy_if_needed(send, recv, nbytes);
                recv
            } else if has_children {
                keep = scratch(nbytes);
                copy_if_needed(send, keep.as_mut_ptr(), nbytes);
                keep.as_mut_ptr()
            } else {
                send as *mut u8
            };
            let mut prev = None;
            let mut mask = 1;
            while mask < n {
                if vr & mask != 0 {
                    s.send(real(vr - mask), tag(0, 0), acc, nbytes, &[prev]);
                    break;
                }
                if vr + mask < n {
                    let fold = Fold::After { red, with: acc };
                    prev = Some(s.recv(real(vr + mask), tag(0, 0), acc, nbytes, fold, &[prev]));
                }
                mask <<= 1;
            }
        }
    }
    s.keep(keep);
    Ok(s)
}
