//! `MPI_Allreduce`.
//!
//! Large messages: ring reduce-scatter then ring allgather (see `ring.rs`), both pipelined in
//! chunks; rank r finishes block r+1 and passes it on. Each rank sends and receives 2(n−1)/n of
//! the buffer — bandwidth-optimal.
//! Small messages: one-shot — every rank sends its whole input to every other rank, and every
//! rank folds the n inputs in rank order 0, 1, …, n−1. One step of latency; identical order,
//! hence identical bits, everywhere.

use super::direct;
use super::hier;
use super::ring::Ring;
use super::select::{choose, forced_levels, is_small, Algo};
use super::{chunk_elems, even_blocks, rotate, scratch, tag, Reduction};
use crate::comm::Comm;
use crate::datatype::Datatype;
use crate::engine::{Fold, Schedule};
use crate::error::Result;
use crate::frame::{Kind, Signature};

/// `send == recv` means in place.
pub fn allreduce(
    comm: &Comm,
    send: *const u8,
    recv: *mut u8,
    count: usize,
    dt: &Datatype,
    red: Reduction,
    sig: Signature,
) -> Result<()> {
    let nbytes = count * dt.extent;
    if comm.size() == 1 {
        // Nothing to exchange: no schedule (the call number is still taken, as every
        // collective does).
        let _ = comm.next_seq();
        comm.note_algo(Kind::Allreduce, Algo::Local, nbytes);
        copy_if_needed(send, recv, nbytes);
        return Ok(());
    }
    if choose_algo(comm, red, nbytes) == Algo::OneShot && direct::fits(comm, nbytes) {
        // Latency-bound: the allocation-free one-shot (same frames, same fold order).
        let seq = comm.next_seq();
        comm.note_algo(Kind::Allreduce, Algo::OneShot, nbytes);
        return direct::oneshot(comm, seq, send, recv, count, dt.extent, red, None, sig);
    }
    build_allreduce(comm, send, recv, count, dt, red, sig)?.run()
}

/// The operation of a nonblocking or persistent allreduce (the call number taken now): the
/// allocation-free one-shot where the blocking call would take it, else the schedule of
/// [`build_allreduce`]. `finish` runs on completion.
#[allow(clippy::too_many_arguments)]
pub fn allreduce_op(
    comm: &std::sync::Arc<Comm>,
    send: *const u8,
    recv: *mut u8,
    count: usize,
    dt: &Datatype,
    red: Reduction,
    sig: Signature,
    finish: Option<Box<dyn FnOnce() + Send>>,
) -> Result<Box<dyn crate::request::Op>> {
    let nbytes = count * dt.extent;
    if comm.size() > 1
        && choose_algo(comm, red, nbytes) == Algo::OneShot
        && direct::fits(comm, nbytes)
    {
        let seq = comm.next_seq();
        comm.note_algo(Kind::Allreduce, Algo::OneShot, nbytes);
        return direct::oneshot_op(
            comm.clone(),
            seq,
            send,
            recv,
            count,
            dt.extent,
            red,
            sig,
            finish,
        );
    }
    let dt = *dt;
    let s = crate::request::Sched::new(
        comm.clone(),
        move |c| build_allreduce(c, send, recv, count, &dt, red, sig),
        finish,
    )?;
    Ok(Box::new(s))
}

/// The algorithm for `nbytes` with `red` on more than one rank. Across hosts, commutative
/// reductions take two levels ([`hier`]): small ones through the host leaders (one network
/// message per pair of hosts; measured faster than the flat one-shot's one per pair of ranks,
/// docs/PERFORMANCE.md "Across hosts"), large ones where every host has as many ranks.
/// `HCOMM_ALGO` may force `hier` or `flat`; on one host nothing changes.
fn choose_algo(comm: &Comm, red: Reduction, nbytes: usize) -> Algo {
    if red.commutative() && comm.topology().spans_hosts() {
        let small = is_small(nbytes);
        let two = forced_levels("allreduce").unwrap_or(true);
        // Small messages go through the host leaders on any layout; large ones need the
        // same number of ranks on every host.
        if two && (small || hier::fits(comm.topology())) {
            return Algo::Hier;
        }
    }
    if red.commutative() {
        choose(
            "allreduce",
            nbytes,
            &[Algo::Ring, Algo::OneShot],
            Algo::OneShot,
            Algo::Ring,
        )
    } else {
        // Only the one-shot fold combines operands in rank order.
        Algo::OneShot
    }
}

/// The schedule of [`allreduce`], built (call number taken) but not run.
pub fn build_allreduce<'c>(
    comm: &'c Comm,
    send: *const u8,
    recv: *mut u8,
    count: usize,
    dt: &Datatype,
    red: Reduction,
    sig: Signature,
) -> Result<Schedule<'c>> {
    let (n, r) = (comm.size(), comm.rank);
    let nbytes = count * dt.extent;
    let seq = comm.next_seq();
    if n == 1 {
        comm.note_algo(Kind::Allreduce, Algo::Local, nbytes);
        copy_if_needed(send, recv, nbytes);
        return Ok(Schedule::new(comm.ctx(sig, seq, dt.extent)));
    }
    let algo = choose_algo(comm, red, nbytes);
    comm.note_algo(Kind::Allreduce, algo, nbytes);
    let mut s = Schedule::new(comm.ctx(sig, seq, dt.extent));
    let in_place = std::ptr::eq(send, recv);
    match algo {
        Algo::Ring => {
            let blocks = even_blocks(count, n);
            let ring = Ring::flat(
                &blocks,
                dt.extent,
                chunk_elems(dt.extent, blocks[0].1, fragment(comm)?),
                r,
                n,
            );
            // Not a single copy for the allgather half, though it only copies: measured
            // slower (the blocks were just written by the peer's fold; docs/PERFORMANCE.md).
            let fin = ring.reduce_scatter(&mut s, red, send, recv, 0, 0);
            ring.allgather(&mut s, recv, (r + 1) % n, None, &fin, n);
        }
        Algo::Hier if is_small(nbytes) => {
            let mut hostsum = scratch(nbytes);
            let t = comm.topology();
            let p = hostsum.as_mut_ptr();
            hier::allreduce_small(&mut s, comm, t, send, recv, count, dt.extent, red, p);
            s.keep(hostsum);
        }
        Algo::Hier => hier::allreduce(
            &mut s,
            comm,
            comm.topology(),
            send,
            recv,
            count,
            dt.extent,
            red,
        )?,
        _ => {
            // In place, the output is the input: keep a copy to send and fold from.
            let mine = if in_place {
                let mut v = scratch(nbytes);
                copy_if_needed(send, v.as_mut_ptr(), nbytes);
                let p = v.as_ptr();
                s.keep(v);
                p
            } else {
                send
            };
            oneshot_fold(&mut s, comm, mine, recv, count, dt, red, None);
        }
    }
    Ok(s)
}

/// Sends `mine` to every rank that folds (all, or only `root`), and — on a folding rank — folds
/// all n inputs into `out` in rank order. `out` must not alias `mine`.
#[allow(clippy::too_many_arguments)]
pub(super) fn oneshot_fold(
    s: &mut Schedule<'_>,
    comm: &Comm,
    mine: *const u8,
    out: *mut u8,
    count: usize,
    dt: &Datatype,
    red: Reduction,
    root: Option<usize>,
) {
    let (n, r) = (comm.size(), comm.rank);
    let nbytes = count * dt.extent;
    for p in (0..n).filter(|&p| p != r && root.is_none_or(|root| root == p)) {
        s.send(p, tag(0, 0), mine, nbytes, &[]);
    }
    if root.is_some_and(|root| root != r) {
        return;
    }
    let mut prev = None;
    for j in 0..n {
        let t = match (j == r, j == 0) {
            (true, true) => s.copy(out, mine, nbytes, &[]),
            (true, false) => s.reduce(red, out, out, mine, count, &[prev]),
            (false, true) => s.recv(j, tag(0, 0), out, nbytes, Fold::Copy, &[]),
            (false, false) => {
                let fold = Fold::After { red, with: out };
                s.recv(j, tag(0, 0), out, nbytes, fold, &[prev])
            }
        };
        prev = Some(t);
    }
}

/// The largest fragment the transport to the right neighbour moves (the same on every rank).
pub(super) fn fragment(comm: &Comm) -> Result<usize> {
    let right = comm.world[rotate(comm.rank, 1, comm.size())];
    comm.ep.max_payload(right)
}

/// The chunk basis of a ring that only copies (allgather, allgatherv) whose largest block is
/// `block_bytes`: [`single_copy_chunk`] (and the ring's sends may go as single copies,
/// [`Schedule::single_copy`]) where it applies, else the transport's fragment.
pub(super) fn copy_ring_fragment(
    comm: &Comm,
    s: &mut Schedule<'_>,
    block_bytes: usize,
) -> Result<usize> {
    let f = fragment(comm)?;
    Ok(match single_copy_chunk(comm, block_bytes) {
        Some(c) => {
            s.single_copy();
            f.max(c)
        }
        None => f,
    })
}

/// The chunk of a ring stage that copies blocks of up to `block_bytes` as single copies: the
/// block, at most [`SINGLE_COPY_CHUNK`], when single copy is possible (`HCOMM_CMA` not 0),
/// every rank is on one host and the block holds at least [`SINGLE_COPY_MIN`]; else `None`.
/// Every rank decides alike (same settings, topology and counts), so all cut the same chunks.
pub(super) fn single_copy_chunk(comm: &Comm, block_bytes: usize) -> Option<usize> {
    let possible = crate::param::cma() != crate::param::CmaMode::Off
        && !comm.topology().spans_hosts()
        && block_bytes >= SINGLE_COPY_MIN;
    possible.then_some(SINGLE_COPY_CHUNK.min(block_bytes))
}

/// The smallest block a copying ring moves as single copies (one read per block below
/// [`SINGLE_COPY_CHUNK`]): 128 KiB blocks were faster than the slots at 2 ranks and at 4 ranks
/// on 2 cores, 64 KiB blocks faster at 2 ranks only, 32 KiB no faster (docs/PERFORMANCE.md,
/// "The own block").
const SINGLE_COPY_MIN: usize = 128 << 10;

/// A kernel read pins the pages and costs a system call: cut into 128 KiB reads, large blocks
/// were slower than the slots' two copies, in 1 MiB reads faster (docs/PERFORMANCE.md,
/// "Single copy").
const SINGLE_COPY_CHUNK: usize = 1 << 20;

pub(super) fn copy_if_needed(src: *const u8, dst: *mut u8, len: usize) {
    if len > 0 && !std::ptr::eq(src, dst) {
        // SAFETY: the ABI layer validated both ranges for `len` bytes; MPI forbids aliasing
        // between distinct send and receive buffers.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, len) };
    }
}
