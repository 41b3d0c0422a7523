//! `MPI_Barrier`: dissemination. In round k every rank signals rank r+2^k and waits for rank
//! r−2^k (empty messages); after ceil(log2 n) rounds every rank has heard, transitively, from
//! every other, so none leaves before all have entered. The transitivity needs round k's
//! signal to follow *every* earlier receive, so receives are chained too (the engine would
//! otherwise complete a later round's receive before an earlier one's).

use super::select::Algo;
use super::tag;
use crate::comm::Comm;
use crate::engine::{Fold, Schedule};
use crate::error::Result;
use crate::frame::{Kind, Signature};

pub fn barrier(comm: &Comm) -> Result<()> {
    build_barrier(comm)?.run()
}

/// The schedule of [`barrier`], built (call number taken) but not run.
pub fn build_barrier(comm: &Comm) -> Result<Schedule<'_>> {
    let (n, r) = (comm.size(), comm.rank);
    let seq = comm.next_seq();
    let sig = Signature {
        kind: Kind::Barrier,
        count: 0,
        dtype: 0,
        op: 0,
        root: -1,
    };
    let mut s = Schedule::new(comm.ctx(sig, seq, 1));
    if n == 1 {
        return Ok(s);
    }
    comm.note_algo(Kind::Barrier, Algo::Dissemination, 0);
    let mut prev = None;
    let (mut dist, mut round) = (1, 0);
    while dist < n {
        s.send((r + dist) % n, tag(round, 0), std::ptr::null(), 0, &[prev]);
        prev = Some(s.recv(
            (r + n - dist) % n,
            tag(round, 0),
            std::ptr::null_mut(),
            0,
            Fold::Copy,
            &[prev],
        ));
        dist <<= 1;
        round += 1;
    }
    Ok(s)
}
