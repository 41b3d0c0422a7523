//! `MPI_Gather` and `MPI_Gatherv`.
//!
//! Direct: every non-root rank sends its block to the root as one message (the engine cuts a
//! large message into transport-sized fragments and streams them); the root posts one receive
//! per rank, straight into that rank's place in the receive buffer, and all of them progress
//! at once. The root's own block is a local copy (none when in place). One step of latency,
//! and the root's link carries each byte exactly once — the minimum for a gather; a tree would
//! only save latency on many ranks at the cost of copying blocks through intermediate ranks.
//!
//! Data moves as bytes: the ABI layer turns (count, datatype, displacement) into byte spans,
//! so `Gather` is the `Gatherv` schedule with equal spans, and any layout of the receive
//! buffer (gaps, reversed order, zero counts) is just a list of spans.

use super::allreduce::copy_if_needed;
use super::select::Algo;
use super::tag;
use crate::comm::Comm;
use crate::engine::{Fold, Schedule};
use crate::error::Result;
use crate::frame::Signature;

/// Gathers `send_len` bytes at `send` from every rank into `recv[p]` (`(pointer, bytes)` per
/// rank `p`) at `root`; `recv` is used only at the root (empty elsewhere). At the root,
/// `send == recv[root].0` means in place (its own block is already there).
pub fn gatherv(
    comm: &Comm,
    send: *const u8,
    send_len: usize,
    recv: &[(*mut u8, usize)],
    root: usize,
    sig: Signature,
) -> Result<()> {
    build_gatherv(comm, send, send_len, recv, root, sig)?.run()
}

/// The schedule of [`gatherv`], built (call number taken, own block copied) but not run.
pub fn build_gatherv<'c>(
    comm: &'c Comm,
    send: *const u8,
    send_len: usize,
    recv: &[(*mut u8, usize)],
    root: usize,
    sig: Signature,
) -> Result<Schedule<'c>> {
    let (n, r) = (comm.size(), comm.rank);
    let seq = comm.next_seq();
    let algo = if n == 1 { Algo::Local } else { Algo::OneShot };
    if r != root {
        comm.note_algo(sig.kind, algo, send_len);
        let mut s = Schedule::new(comm.ctx(sig, seq, 1));
        s.send(root, tag(0, 0), send, send_len, &[]);
        return Ok(s);
    }
    assert_eq!(recv.len(), n, "one receive span per rank");
    comm.note_algo(sig.kind, algo, recv.iter().map(|b| b.1).sum());
    let (own, own_len) = recv[root];
    copy_if_needed(send, own, own_len);
    let mut s = Schedule::new(comm.ctx(sig, seq, 1));
    for p in (0..n).filter(|&p| p != root) {
        s.recv(p, tag(0, 0), recv[p].0, recv[p].1, Fold::Copy, &[]);
    }
    Ok(s)
}
