//! `MPI_Alltoall` and `MPI_Alltoallv`.
//!
//! Pairwise exchange: in step s (1 ≤ s < n) rank r sends its block for rank r+s and receives
//! the block of rank r−s, so in every step each rank sends to one peer and receives from
//! another, and every pair of ranks exchanges exactly one message each way. The engine does not
//! wait for step s to finish before starting step s+1 — all messages progress at once, bounded
//! by the transports' channel slots — but the step order staggers the peers: at any moment the
//! ranks start on different destinations instead of all sending to rank 0 first. No deadlock
//! is possible: every receive is posted from the start. The own block is a local copy.
//!
//! In place (`MPI_IN_PLACE`), the blocks to send are the ones the incoming blocks overwrite:
//! they are first copied into a scratch buffer and sent from there.
//!
//! Across hosts, small `MPI_Alltoall` blocks go through the host leaders, one network message
//! per host pair (`alltoall_hosts.rs`).
//!
//! Data moves as bytes: the ABI layer turns (count, datatype, displacement) into byte spans,
//! so `Alltoall` is the `Alltoallv` schedule with equal spans.

use super::allreduce::copy_if_needed;
use super::alltoall_hosts;
use super::select::{forced_levels, is_small, Algo};
use super::{scratch, tag};
use crate::comm::Comm;
use crate::engine::{Fold, Schedule};
use crate::error::Result;
use crate::frame::{Kind, Signature};

/// Sends `send[p]` to rank p and receives rank p's block into `recv[p]` (`(pointer, bytes)` per
/// rank). `send` equal to `recv` (same spans) means in place.
pub fn alltoallv(
    comm: &Comm,
    send: &[(*const u8, usize)],
    recv: &[(*mut u8, usize)],
    sig: Signature,
) -> Result<()> {
    build_alltoallv(comm, send, recv, sig)?.run()
}

/// The schedule of [`alltoallv`], built (call number taken) but not run.
pub fn build_alltoallv<'c>(
    comm: &'c Comm,
    send: &[(*const u8, usize)],
    recv: &[(*mut u8, usize)],
    sig: Signature,
) -> Result<Schedule<'c>> {
    let (n, r) = (comm.size(), comm.rank);
    assert!(send.len() == n && recv.len() == n, "one span per rank");
    let seq = comm.next_seq();
    let total: usize = recv.iter().map(|b| b.1).sum();
    // Alltoall's blocks are all the same size, known to every rank: the aggregated schedule
    // needs that (Alltoallv's sizes are known only to their two ranks).
    let b = recv[0].1;
    let aggregate = sig.kind == Kind::Alltoall
        && b > 0
        && comm.topology().spans_hosts()
        && forced_levels("alltoall").unwrap_or(is_small(total));
    comm.note_algo(
        sig.kind,
        match n {
            1 => Algo::Local,
            _ if aggregate => Algo::Hier,
            _ => Algo::OneShot,
        },
        total,
    );
    let in_place = send
        .iter()
        .zip(recv)
        .all(|(s, d)| std::ptr::eq(s.0, d.0) && s.1 == d.1);
    copy_if_needed(send[r].0, recv[r].0, recv[r].1);
    if n == 1 {
        return Ok(Schedule::new(comm.ctx(sig, seq, 1)));
    }
    let mut keep = scratch(0);
    let send: Vec<(*const u8, usize)> = if in_place {
        // Pack the outgoing blocks (all but our own, which stays) before any arrives.
        keep = scratch(total - recv[r].1);
        let mut out = send.to_vec();
        let mut at = 0;
        for p in (0..n).filter(|&p| p != r) {
            let dst = keep.as_mut_ptr().wrapping_add(at);
            copy_if_needed(send[p].0, dst, send[p].1);
            out[p].0 = dst;
            at += send[p].1;
        }
        out
    } else {
        send.to_vec()
    };
    let mut s = Schedule::new(comm.ctx(sig, seq, 1));
    if aggregate {
        alltoall_hosts::alltoall(&mut s, comm, comm.topology(), &send, recv, b);
        s.keep(keep);
        return Ok(s);
    }
    for st in 1..n {
        let (to, from) = ((r + st) % n, (r + n - st) % n);
        s.send(to, tag(0, 0), send[to].0, send[to].1, &[]);
        s.recv(from, tag(0, 0), recv[from].0, recv[from].1, Fold::Copy, &[]);
    }
    s.keep(keep);
    Ok(s)
}
