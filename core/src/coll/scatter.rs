//! `MPI_Scatter` and `MPI_Scatterv`.
//!
//! Direct, the mirror image of gather: the root sends each rank its block as one message (the
//! engine fragments and streams large ones, to all ranks at once) and copies its own block
//! locally (nothing when in place); every other rank posts one receive. One step of latency,
//! and the root's link carries each byte once.
//!
//! Data moves as bytes: the ABI layer turns (count, datatype, displacement) into byte spans,
//! so `Scatter` is the `Scatterv` schedule with equal spans.

use super::allreduce::copy_if_needed;
use super::select::Algo;
use super::tag;
use crate::comm::Comm;
use crate::engine::{Fold, Schedule};
use crate::error::Result;
use crate::frame::Signature;

/// Scatters `send[p]` (`(pointer, bytes)` per rank `p`, used only at the root, empty
/// elsewhere) from `root` to `recv_len` bytes at `recv` on every rank. At the root,
/// `recv == send[root].0` means in place (its own block stays where it is).
pub fn scatterv(
    comm: &Comm,
    send: &[(*const u8, usize)],
    recv: *mut u8,
    recv_len: usize,
    root: usize,
    sig: Signature,
) -> Result<()> {
    build_scatterv(comm, send, recv, recv_len, root, sig)?.run()
}

/// The schedule of [`scatterv`], built (call number taken, own block copied) but not run.
pub fn build_scatterv<'c>(
    comm: &'c Comm,
    send: &[(*const u8, usize)],
    recv: *mut u8,
    recv_len: usize,
    root: usize,
    sig: Signature,
) -> Result<Schedule<'c>> {
    let (n, r) = (comm.size(), comm.rank);
    let seq = comm.next_seq();
    let algo = if n == 1 { Algo::Local } else { Algo::OneShot };
    if r != root {
        comm.note_algo(sig.kind, algo, recv_len);
        let mut s = Schedule::new(comm.ctx(sig, seq, 1));
        s.recv(root, tag(0, 0), recv, recv_len, Fold::Copy, &[]);
        return Ok(s);
    }
    assert_eq!(send.len(), n, "one send span per rank");
    comm.note_algo(sig.kind, algo, send.iter().map(|b| b.1).sum());
    let (own, own_len) = send[root];
    copy_if_needed(own, recv, own_len);
    let mut s = Schedule::new(comm.ctx(sig, seq, 1));
    // Start with the rank after the root, so that ranks are served in a fixed rotation.
    for p in (1..n).map(|k| (root + k) % n) {
        s.send(p, tag(0, 0), send[p].0, send[p].1, &[]);
    }
    Ok(s)
}
