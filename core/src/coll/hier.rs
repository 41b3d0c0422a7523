//! Two-level (host-aware) algorithms, for communicators that span hosts: within a host memory
//! is ~100× the network link, so only the data that must cross hosts does, once per host.
//!
//! Allreduce of S bytes over H hosts with L ranks each (every host the same L; ranks may be
//! numbered in any order over the hosts):
//! 1. intra-host ring reduce-scatter over the L local ranks: local rank i ends holding block
//!    (i+1) mod L of S/L bytes, reduced over its host;
//! 2. L inter-host ring allreduces in parallel, one per local index, each over the H ranks with
//!    that index and on that rank's block only — every local rank and socket shares the link;
//! 3. intra-host ring allgather of the L blocks.
//!
//! From 4 MiB on, the data is cut into up to 4 segments that run these stages as a pipeline:
//! segment k+1 is reduced within the host while segment k crosses the network.
//!
//! Per host link (each direction): 2(H−1)/H · S bytes, against about 2(n−1)/n · S · (L when the
//! flat ring crosses hosts at every hop) for a flat ring over ranks laid round-robin, and
//! 2(n−1)/n · S per crossing for ranks laid host by host. Each element is still combined in one
//! fixed order that depends only on the topology (host sums in local ring order, then the
//! inter-host ring order), so every rank gets the same bits, run after run. Commutative ops
//! only: the order is not rank order.

use super::ring::Ring;
use super::{chunk_elems, even_blocks, Reduction};
use crate::comm::Comm;
use crate::engine::{Fold, Schedule, TaskId};
use crate::error::Result;
use crate::topology::Topology;

/// This rank's place in a regular topology: its host's ranks (`local`, `l` of them, this
/// rank the `p`-th) and the ranks with its local index, one per host (`cross`, `h` of them,
/// this rank's host the `q`-th).
struct Here<'t> {
    local: &'t [usize],
    cross: Vec<usize>,
    l: usize,
    h: usize,
    p: usize,
    q: usize,
}

impl<'t> Here<'t> {
    fn of(t: &'t Topology, rank: usize) -> Here<'t> {
        let (local, cross) = (t.local(rank), t.cross(rank));
        let (q, p) = t.place[rank];
        Here {
            local,
            l: local.len(),
            h: cross.len(),
            cross,
            p,
            q,
        }
    }
}

/// The pipeline chunk (elements) for blocks of up to `elems` elements sent to comm rank `peer`.
fn chunk_to(comm: &Comm, peer: usize, extent: usize, elems: usize) -> Result<usize> {
    Ok(chunk_elems(
        extent,
        elems,
        comm.ep.max_payload(comm.world[peer])?,
    ))
}

/// Whether the two-level allreduce applies to this communicator (more than one host, the same
/// number of ranks on each).
pub fn fits(t: &Topology) -> bool {
    t.spans_hosts() && t.is_regular()
}

/// One task that completes when all of `tasks` have (zero-byte copies, two dependencies
/// each); `None` when `tasks` is empty.
pub(super) fn join(s: &mut Schedule<'_>, tasks: &[TaskId], anchor: *mut u8) -> Option<TaskId> {
    let mut level = tasks.to_vec();
    while level.len() > 1 {
        level = level
            .chunks(2)
            .map(|c| s.copy(anchor, anchor, 0, &[Some(c[0]), c.get(1).copied()]))
            .collect();
    }
    level.first().copied()
}

/// Large two-level allreduces are cut into up to this many segments, each at least
/// [`SEGMENT_BYTES`]: segment k+1's host stage runs while segment k crosses the network, so
/// shared memory and the link work at the same time instead of one after the other.
const MAX_SEGMENTS: usize = 4;
const SEGMENT_BYTES: usize = 2 << 20;

/// Adds the two-level allreduce of `count` elements from `send` into `recv` (equal pointers:
/// in place) to `s`.
#[allow(clippy::too_many_arguments)]
pub fn allreduce(
    s: &mut Schedule<'_>,
    comm: &Comm,
    t: &Topology,
    send: *const u8,
    recv: *mut u8,
    count: usize,
    extent: usize,
    red: Reduction,
) -> Result<()> {
    let here = Here::of(t, comm.rank);
    let segs = (count * extent / SEGMENT_BYTES).clamp(1, MAX_SEGMENTS);
    // Tag steps of one segment: l−1 + (h−1) + (h−1) + l−1 < 2(l + h).
    let steps = 2 * (here.l + here.h);
    let mut host_before = None;
    for (k, (off, cnt)) in even_blocks(count, segs).into_iter().enumerate() {
        host_before = allreduce_segment(
            s,
            comm,
            &here,
            send.wrapping_add(off * extent),
            recv.wrapping_add(off * extent),
            cnt,
            extent,
            red,
            k * steps,
            host_before,
        )?;
    }
    Ok(())
}

/// One segment of [`allreduce`]: its host stage starts after `host_before` (the previous
/// segment's) and its tags from step `step0`. Returns the task ending its host stage.
#[allow(clippy::too_many_arguments)]
fn allreduce_segment(
    s: &mut Schedule<'_>,
    comm: &Comm,
    here: &Here<'_>,
    send: *const u8,
    recv: *mut u8,
    count: usize,
    extent: usize,
    red: Reduction,
    step0: usize,
    host_before: Option<TaskId>,
) -> Result<Option<TaskId>> {
    let &Here {
        local,
        ref cross,
        l,
        h,
        p,
        q,
    } = here;

    // 1. Host reduce-scatter: local rank p ends with block (p+1) mod l.
    let lblocks = even_blocks(count, l);
    // One rank on the host: no local stage (and no link to itself to size chunks by).
    let local_ce = match l {
        1 => 1,
        _ => chunk_to(comm, local[(p + 1) % l], extent, lblocks[0].1)?,
    };
    let local_ring = |after| Ring {
        blocks: &lblocks,
        extent,
        chunk_elems: local_ce,
        rank: p,
        n: l,
        peers: Some(local),
        after,
    };
    let host_done = if l > 1 {
        let fin = local_ring(host_before).reduce_scatter(s, red, send, recv, 0, step0);
        join(s, &fin, recv)
    } else if !std::ptr::eq(send, recv) {
        Some(s.copy(recv, send, count * extent, &[host_before]))
    } else {
        host_before
    };
    let mine = if l > 1 { (p + 1) % l } else { 0 };

    // 2. Inter-host allreduce of that block over the ranks with local index p, in place.
    let (boff, bcount) = lblocks[mine];
    let hblocks: Vec<(usize, usize)> = even_blocks(bcount, h)
        .into_iter()
        .map(|(o, c)| (boff + o, c))
        .collect();
    let cross_ring = Ring {
        blocks: &hblocks,
        extent,
        chunk_elems: chunk_to(comm, cross[(q + 1) % h], extent, hblocks[0].1)?,
        rank: q,
        n: h,
        peers: Some(cross),
        after: host_done,
    };
    let fin = cross_ring.reduce_scatter(s, red, recv, recv, 0, step0 + l);
    let mut got = cross_ring.allgather(s, recv, (q + 1) % h, None, &fin, step0 + l + h);
    got.extend_from_slice(&fin);

    // 3. Host allgather of the finished blocks.
    if l > 1 {
        let ready = join(s, &got, recv);
        local_ring(ready).allgather(s, recv, mine, None, &[], step0 + l + 2 * h);
    }
    Ok(host_done)
}

/// Adds the two-level allgather of `count` elements per rank to `s`; every rank's own block
/// is already in place in `recv` (block of comm rank x at element x·count). See
/// [`allgather_blocks`].
pub fn allgather(
    s: &mut Schedule<'_>,
    comm: &Comm,
    t: &Topology,
    recv: *mut u8,
    count: usize,
    extent: usize,
) -> Result<()> {
    let blocks: Vec<(usize, usize)> = (0..comm.size()).map(|x| (x * count, count)).collect();
    allgather_blocks(s, comm, t, recv, &blocks, extent)
}

/// Adds the two-level allgather of `blocks[x]` (`(offset, count)` in elements from `recv`,
/// any sizes, zero included: `MPI_Allgatherv`) of each comm rank x to `s`; every rank's own
/// block is already in place.
///
/// 1. Across hosts: a ring over the ranks with this rank's local index (one per host)
///    gathers their blocks — each rank receives H−1 blocks over the network, every local
///    rank on its own sockets, so a host's link carries L(H−1) blocks each way instead of
///    the flat ring's ≈ n−1 per crossing.
/// 2. Within the host: one ring per host's set of blocks passes them to the other local
///    ranks. The ring of this host's own blocks goes first and needs nothing from step 1, so
///    shared memory and the network work at the same time.
pub fn allgather_blocks(
    s: &mut Schedule<'_>,
    comm: &Comm,
    t: &Topology,
    recv: *mut u8,
    blocks: &[(usize, usize)],
    extent: usize,
) -> Result<()> {
    let Here {
        local,
        cross,
        l,
        h,
        p,
        q,
    } = Here::of(t, comm.rank);
    // Every rank sizes chunks by the biggest block, so all agree on the message shapes.
    let biggest = blocks.iter().map(|b| b.1).max().unwrap_or(0);

    let local_rings = |s: &mut Schedule<'_>, k: usize, after: Option<TaskId>| -> Result<()> {
        let hb: Vec<(usize, usize)> = t.hosts[k].iter().map(|&x| blocks[x]).collect();
        let ce = chunk_to(comm, local[(p + 1) % l], extent, biggest)?;
        let ring = Ring {
            blocks: &hb,
            extent,
            chunk_elems: ce,
            rank: p,
            n: l,
            peers: Some(local),
            after,
        };
        // Tags: after the cross ring's h−1 steps, l−1 steps per host's ring.
        ring.allgather(s, recv, p, None, &[], h + k * l);
        Ok(())
    };
    if l > 1 {
        local_rings(s, q, None)?;
    }
    let cblocks: Vec<(usize, usize)> = cross.iter().map(|&x| blocks[x]).collect();
    let cross_ring = Ring {
        blocks: &cblocks,
        extent,
        chunk_elems: chunk_to(comm, cross[(q + 1) % h], extent, biggest)?,
        rank: q,
        n: h,
        peers: Some(&cross),
        after: None,
    };
    let got = cross_ring.allgather(s, recv, q, None, &[], 0);
    if l > 1 {
        let ready = join(s, &got, recv);
        for k in (0..h).filter(|&k| k != q) {
            local_rings(s, k, ready)?;
        }
    }
    Ok(())
}

/// Adds the two-level reduce-scatter to `s`: block x (`blocks[x]`, in elements) of the
/// reduction over all ranks ends in `work` at its own offset on comm rank x. `work` is a
/// scratch buffer of the whole input's size, distinct from `input`.
///
/// 1. Within the host: for each host k, a ring reduce-scatter over the local ranks of the
///    blocks that belong to host k's ranks; local rank i ends with host k's i-th rank's block
///    summed over this host — for every k, exactly the blocks of the ranks with local index i.
/// 2. Across hosts: a ring reduce-scatter over the ranks with this local index finishes each
///    of those blocks at its owner. A host's link carries (H−1)/H of the data each way, split
///    over its L ranks.
///
/// Returns the tasks that finish this rank's block (one per chunk); tag steps used stay below
/// [`reduce_scatter_steps`].
#[allow(clippy::too_many_arguments)]
pub fn reduce_scatter(
    s: &mut Schedule<'_>,
    comm: &Comm,
    t: &Topology,
    input: *const u8,
    work: *mut u8,
    blocks: &[(usize, usize)],
    extent: usize,
    red: Reduction,
) -> Result<Vec<TaskId>> {
    let Here {
        local,
        cross,
        l,
        h,
        p,
        q,
    } = Here::of(t, comm.rank);
    let biggest = blocks.iter().map(|b| b.1).max().unwrap_or(0);

    let mut host_done = None;
    if l > 1 {
        let ce = chunk_to(comm, local[(p + 1) % l], extent, biggest)?;
        let mut fin = Vec::new();
        for k in 0..h {
            let kblocks: Vec<(usize, usize)> = t.hosts[k].iter().map(|&x| blocks[x]).collect();
            let ring = Ring {
                blocks: &kblocks,
                extent,
                chunk_elems: ce,
                rank: p,
                n: l,
                peers: Some(local),
                after: None,
            };
            // Shift l−1: local rank p finishes host k's p-th block.
            fin.extend(ring.reduce_scatter(s, red, input, work, l - 1, k * l));
        }
        host_done = join(s, &fin, work);
    }
    let cblocks: Vec<(usize, usize)> = cross.iter().map(|&x| blocks[x]).collect();
    let cross_ring = Ring {
        blocks: &cblocks,
        extent,
        chunk_elems: chunk_to(comm, cross[(q + 1) % h], extent, biggest)?,
        rank: q,
        n: h,
        peers: Some(&cross),
        after: host_done,
    };
    let src = if l > 1 { work as *const u8 } else { input };
    Ok(cross_ring.reduce_scatter(s, red, src, work, h - 1, h * l))
}

/// Tag steps [`reduce_scatter`] uses: below this.
pub fn reduce_scatter_steps(t: &Topology) -> usize {
    t.hosts.len() * (t.hosts[0].len() + 1)
}

/// Adds the two-level reduce to `root` to `s`: the two-level reduce-scatter of `count`
/// elements in even blocks into `work` (a scratch buffer of the whole size), then every rank
/// sends its finished block to the root, which collects them in `recv`.
#[allow(clippy::too_many_arguments)]
pub fn reduce(
    s: &mut Schedule<'_>,
    comm: &Comm,
    t: &Topology,
    input: *const u8,
    recv: *mut u8,
    work: *mut u8,
    count: usize,
    extent: usize,
    red: Reduction,
    root: usize,
) -> Result<()> {
    let (n, r) = (comm.size(), comm.rank);
    let blocks = even_blocks(count, n);
    let fin = reduce_scatter(s, comm, t, input, work, &blocks, extent, red)?;
    let done = join(s, &fin, work);
    let step = reduce_scatter_steps(t);
    let at = |buf: *mut u8, b: (usize, usize)| buf.wrapping_add(b.0 * extent);
    if r == root {
        // A block is final only after every rank's contribution to it was read, the root's
        // input included, so writing it into `recv` (the input, in place) is safe.
        for x in (0..n).filter(|&x| x != r) {
            let b = blocks[x];
            s.recv(
                x,
                super::tag(step, 0),
                at(recv, b),
                b.1 * extent,
                Fold::Copy,
                &[done],
            );
        }
        let b = blocks[r];
        s.copy(at(recv, b), at(work, b), b.1 * extent, &[done]);
    } else {
        let b = blocks[r];
        s.send(
            root,
            super::tag(step, 0),
            at(work, b),
            b.1 * extent,
            &[done],
        );
    }
    Ok(())
}

/// The ranks in host-major order starting at `root`: `root`, the rest of its host, then each
/// other host's ranks together. A chain or binomial tree over this order is a two-level one:
/// the chain crosses each host boundary once (a flat chain over ranks laid round-robin
/// crosses at every hop), the tree's first, longest hops go between hosts and the rest stay
/// within one.
pub fn host_major_order(t: &Topology, root: usize) -> Vec<usize> {
    let home = t.place[root].0;
    let mut order = vec![root];
    order.extend(t.hosts[home].iter().copied().filter(|&x| x != root));
    for (k, ranks) in t.hosts.iter().enumerate() {
        if k != home {
            order.extend_from_slice(ranks);
        }
    }
    order
}

/// Adds the two-level small-message allreduce to `s` (any layout, commutative ops): each
/// host's ranks send their input to the host's leader (its first rank), which folds them in
/// local order; the leaders exchange their host sums, one message to each other leader, and
/// each folds them in host order; each leader sends the result to its ranks. One message per
/// pair of hosts crosses the network instead of one per pair of ranks, and every rank gets
/// its leader's bits — the same on every host, since every leader folds in the same order.
#[allow(clippy::too_many_arguments)]
pub fn allreduce_small(
    s: &mut Schedule<'_>,
    comm: &Comm,
    t: &Topology,
    send: *const u8,
    recv: *mut u8,
    count: usize,
    extent: usize,
    red: Reduction,
    hostsum: *mut u8,
) {
    let r = comm.rank;
    let local = t.local(r);
    let leader = local[0];
    let nbytes = count * extent;
    let tag = super::tag;
    if r != leader {
        let sent = s.send(leader, tag(0, 0), send, nbytes, &[]);
        // The result overwrites `recv` (maybe `send`, in place) only after the input left.
        s.recv(leader, tag(2, 0), recv, nbytes, Fold::Copy, &[Some(sent)]);
        return;
    }
    let mut prev = Some(s.copy(hostsum, send, nbytes, &[]));
    for &x in &local[1..] {
        let fold = Fold::After { red, with: hostsum };
        prev = Some(s.recv(x, tag(0, 0), hostsum, nbytes, fold, &[prev]));
    }
    let me = t.place[r].0;
    let leaders: Vec<usize> = t.hosts.iter().map(|h| h[0]).collect();
    let mut sends = Vec::new();
    for (k, &x) in leaders.iter().enumerate() {
        if k != me {
            sends.push(s.send(x, tag(1, 0), hostsum, nbytes, &[prev]));
        }
    }
    // `recv` may be `send` (in place), which the local fold read: fold into it after that.
    let mut acc = prev;
    for (k, &x) in leaders.iter().enumerate() {
        acc = Some(match (k == me, k == 0) {
            (true, true) => s.copy(recv, hostsum, nbytes, &[acc]),
            (true, false) => s.reduce(red, recv, recv, hostsum, count, &[acc]),
            (false, true) => s.recv(x, tag(1, 0), recv, nbytes, Fold::Copy, &[acc]),
            (false, false) => {
                let fold = Fold::After { red, with: recv };
                s.recv(x, tag(1, 0), recv, nbytes, fold, &[acc])
            }
        });
    }
    for &x in &local[1..] {
        s.send(x, tag(2, 0), recv, nbytes, &[acc]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_major_order_starts_at_the_root_and_keeps_hosts_together() {
        let t = Topology::new(6, |r| r % 2); // round-robin over two hosts
        assert_eq!(host_major_order(&t, 3), vec![3, 1, 5, 0, 2, 4]);
        assert_eq!(host_major_order(&t, 0), vec![0, 2, 4, 1, 3, 5]);
    }
}
