//! `MPI_Alltoall` of small blocks across hosts, aggregated per host pair.
//!
//! Flat pairwise exchange sends n(n−1) messages, L_j·L_k of them over each pair of hosts j, k,
//! each paying the network's per-message cost for a few bytes. Here every block that crosses
//! hosts travels through the two hosts' leaders (their lowest ranks) inside one message per
//! host pair and direction:
//! 1. every rank exchanges the blocks for its own host's ranks directly (shared memory), and
//!    sends its leader one pack of its blocks for the other hosts, ordered by host then rank;
//! 2. each leader, once it holds its ranks' packs, sends every other leader one message: the
//!    blocks from each of its ranks (in local order) to each of that host's ranks;
//! 3. each leader returns to every local rank one pack of the blocks addressed to it from the
//!    other hosts, ordered by source rank, which the rank copies to their places.
//!
//! H(H−1) network messages instead of n(n−1), at the price of copies through the leader: worth
//! it for small blocks only (latency-bound), so it is used up to `HCOMM_SMALL_BYTES` per rank
//! or when `HCOMM_ALGO=alltoall:hier`. Works on any layout (hosts of different sizes too).
//! Every rank knows every block size (Alltoall's are all equal), so the message shapes agree.

use super::hier::join;
use super::{scratch, tag};
use crate::comm::Comm;
use crate::engine::{Fold, Schedule, TaskId};
use crate::topology::Topology;

/// Tag steps: direct blocks within the host, packs to the leader, leader to leader, packs back.
const DIRECT: usize = 0;
const PACK: usize = 1;
const CROSS: usize = 2;
const BACK: usize = 3;

/// Adds the aggregated exchange of `b`-byte blocks to `s`: `send[x]` goes to comm rank x,
/// `recv[x]` receives rank x's block (the own block is already in place).
pub fn alltoall(
    s: &mut Schedule<'_>,
    comm: &Comm,
    t: &Topology,
    send: &[(*const u8, usize)],
    recv: &[(*mut u8, usize)],
    b: usize,
) {
    let r = comm.rank;
    let (k, _) = t.place[r];
    let local = &t.hosts[k];
    let leader = local[0];
    // The ranks of the other hosts, host by host: the order of every pack.
    let remote: Vec<usize> = (0..t.hosts.len())
        .filter(|&j| j != k)
        .flat_map(|j| t.hosts[j].iter().copied())
        .collect();
    let m = remote.len();

    // 1. Direct blocks within the host.
    for &x in local.iter().filter(|&&x| x != r) {
        s.send(x, tag(DIRECT, 0), send[x].0, send[x].1, &[]);
        s.recv(x, tag(DIRECT, 0), recv[x].0, recv[x].1, Fold::Copy, &[]);
    }

    // This rank's pack of blocks for the other hosts, and the pack coming back.
    let mut out = scratch(m * b);
    let mut back = scratch(m * b);
    let copies: Vec<TaskId> = remote
        .iter()
        .enumerate()
        .map(|(i, &x)| s.copy(out.as_mut_ptr().wrapping_add(i * b), send[x].0, b, &[]))
        .collect();
    let packed = join(s, &copies, out.as_mut_ptr());
    let back_ptr = back.as_mut_ptr();
    let unpack = |s: &mut Schedule<'_>, got: Option<TaskId>| {
        for (i, &x) in remote.iter().enumerate() {
            s.copy(recv[x].0, back_ptr.wrapping_add(i * b), b, &[got]);
        }
    };

    if r != leader {
        s.send(leader, tag(PACK, 0), out.as_ptr(), m * b, &[packed]);
        let got = s.recv(leader, tag(BACK, 0), back_ptr, m * b, Fold::Copy, &[]);
        unpack(s, Some(got));
        s.keep(out);
        s.keep(back);
        return;
    }

    // The leader: every local rank's pack (its own included), side by side.
    let l = local.len();
    let mut packs = scratch(l * m * b);
    let packs_ptr = packs.as_mut_ptr();
    let pack_of = |i: usize| packs_ptr.wrapping_add(i * m * b);
    let mut have = Vec::with_capacity(l);
    for (i, &x) in local.iter().enumerate() {
        have.push(if x == r {
            s.copy(pack_of(i), out.as_ptr(), m * b, &[packed])
        } else {
            s.recv(x, tag(PACK, 0), pack_of(i), m * b, Fold::Copy, &[])
        });
    }
    let all_packs = join(s, &have, packs_ptr);

    // 2. One message per other host j: local rank i's run of blocks for host j, for each i.
    //    And one from each: its rank y's blocks for each local rank, y by y.
    let mut returns = scratch(l * m * b);
    let returns_ptr = returns.as_mut_ptr();
    let return_of = |i: usize| returns_ptr.wrapping_add(i * m * b);
    let mut bufs = Vec::new();
    let mut filled = Vec::new();
    let mut start = 0; // index in `remote` of host j's first rank
    for j in (0..t.hosts.len()).filter(|&j| j != k) {
        let lj = t.hosts[j].len();
        let their_leader = t.hosts[j][0];
        let mut msg = scratch(l * lj * b);
        let msg_ptr = msg.as_mut_ptr();
        let runs: Vec<TaskId> = (0..l)
            .map(|i| {
                s.copy(
                    msg_ptr.wrapping_add(i * lj * b),
                    pack_of(i).wrapping_add(start * b),
                    lj * b,
                    &[all_packs],
                )
            })
            .collect();
        let ready = join(s, &runs, msg_ptr);
        s.send(their_leader, tag(CROSS, 0), msg_ptr, l * lj * b, &[ready]);
        bufs.push(msg);

        let mut inc = scratch(lj * l * b);
        let inc_ptr = inc.as_mut_ptr();
        let got = s.recv(
            their_leader,
            tag(CROSS, 0),
            inc_ptr,
            lj * l * b,
            Fold::Copy,
            &[],
        );
        // Block from their rank y (y-th of host j) to local rank i sits at (y·l + i)·b.
        for y in 0..lj {
            for i in 0..l {
                filled.push(s.copy(
                    return_of(i).wrapping_add((start + y) * b),
                    inc_ptr.wrapping_add((y * l + i) * b),
                    b,
                    &[Some(got)],
                ));
            }
        }
        bufs.push(inc);
        start += lj;
    }

    // 3. Each local rank's blocks from the other hosts, back to it.
    let done = join(s, &filled, returns_ptr);
    for (i, &x) in local.iter().enumerate() {
        if x == r {
            let mine = s.copy(back_ptr, return_of(i), m * b, &[done]);
            unpack(s, Some(mine));
        } else {
            s.send(x, tag(BACK, 0), return_of(i), m * b, &[done]);
        }
    }
    for v in [out, back, packs, returns].into_iter().chain(bufs) {
        s.keep(v);
    }
}
