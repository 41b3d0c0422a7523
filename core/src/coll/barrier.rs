//! `MPI_Barrier`: dissemination. In round k every rank signals rank r+2^k and waits for rank
//! r−2^k (empty messages); after ceil(log2 n) rounds every rank has heard, transitively, from
//! every other, so none leaves before all have entered. The transitivity needs round k's
//! signal to follow *every* earlier receive, so receives are chained too (the engine would
//! otherwise complete a later round's receive before an earlier one's).

use super::select::{forced_levels, Algo};
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
    let t = comm.topology();
    if t.spans_hosts() && forced_levels("barrier") != Some(false) {
        // Two levels: the host's ranks check in with their leader (its first rank), the
        // leaders run the dissemination among themselves — log2(hosts) network rounds
        // instead of log2(ranks) — and each leader lets its ranks go.
        comm.note_algo(Kind::Barrier, Algo::Hier, 0);
        let local = t.local(r);
        let leader = local[0];
        let leaders: Vec<usize> = t.hosts.iter().map(|h| h[0]).collect();
        let none = std::ptr::null_mut();
        if r != leader {
            let arrived = s.send(leader, tag(0, 0), none, 0, &[]);
            s.recv(leader, tag(1, 0), none, 0, Fold::Copy, &[Some(arrived)]);
            return Ok(s);
        }
        let mut prev = None;
        for &x in &local[1..] {
            prev = Some(s.recv(x, tag(0, 0), none, 0, Fold::Copy, &[prev]));
        }
        let me = t.place[r].0;
        prev = dissemination(&mut s, me, leaders.len(), |i| leaders[i], prev, 2);
        for &x in &local[1..] {
            s.send(x, tag(1, 0), none, 0, &[prev]);
        }
        return Ok(s);
    }
    comm.note_algo(Kind::Barrier, Algo::Dissemination, 0);
    dissemination(&mut s, r, n, |i| i, None, 0);
    Ok(s)
}

/// Dissemination over `n` members (`member(i)` is member i's comm rank; this rank is member
/// `me`), starting after `first`, with tags from step `tag0`. Returns the last receive.
fn dissemination(
    s: &mut Schedule<'_>,
    me: usize,
    n: usize,
    member: impl Fn(usize) -> usize,
    first: Option<crate::engine::TaskId>,
    tag0: usize,
) -> Option<crate::engine::TaskId> {
    let mut prev = first;
    let (mut dist, mut round) = (1, tag0);
    while dist < n {
        s.send(
            member((me + dist) % n),
            tag(round, 0),
            std::ptr::null(),
            0,
            &[prev],
        );
        prev = Some(s.recv(
            member((me + n - dist) % n),
            tag(round, 0),
            std::ptr::null_mut(),
            0,
            Fold::Copy,
            &[prev],
        ));
        dist <<= 1;
        round += 1;
    }
    prev
}
