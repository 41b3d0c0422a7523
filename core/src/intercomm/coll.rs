//! The collectives on intercommunicators (MPI 4.1 §6.2.2), as schedules: every call moves
//! data from one group to the other.
//!
//! Each function builds a call's *stages* ([`crate::request::Sched::stages`]): schedules on
//! the local group's intracommunicator ([`Inter::local_comm`]) or on the bridge between the
//! groups ([`Inter::bridge`]), run one after the other. The blocking, nonblocking and persistent
//! forms all run these (the api layer drives the stages to their end for a blocking call).
//!
//! Two shapes cover them all:
//! - **through the leaders** (Bcast, Reduce, Allreduce, Reduce_scatter, Barrier): one side
//!   combines its data at its leader (local rank 0) with the intracommunicator schedules of
//!   [`crate::coll`], the leaders (or the root and the other side's leader) swap on the bridge,
//!   and the receiving side spreads the result over its own group the same way;
//! - **direct** (Gather(v), Scatter(v), Allgather(v), Alltoall(v/w)): every process exchanges
//!   its blocks with each remote process it owes one, on the bridge. Each block travels once;
//!   the message count is the product of the group sizes, which is what these collectives move
//!   anyway (Allgather aside, which sends its block to every remote process instead of once to
//!   a leader: simple, and right for the group sizes of one host).
//!
//! Call numbers: every process of both groups takes exactly one bridge call number per
//! collective ([`bridge`]; a process with nothing to move gets an empty stage), and every
//! process of a group the same local ones, so the numbers agree wherever two processes meet
//! whichever of them was the root. A stage is built when the call starts, so nothing in a
//! build may read what an earlier stage has yet to write (the leader's own block of
//! Reduce_scatter is copied at the end of its bridge stage for that reason).
//!
//! Buffers are contiguous bytes here (the api layer stages derived datatypes); a received block
//! must be exactly as long as the receiver said, or the call fails with `MPI_ERR_TRUNCATE`
//! naming the remote rank (the engine's size check). Intercommunicator collectives use the
//! bridge, never the intercommunicator itself, so no user receive can take their messages.

use super::{bytes_dt, Inter};
use crate::coll::{self, Reduction};
use crate::datatype::Datatype;
use crate::engine::{Fold, Schedule};
use crate::error::Result;
use crate::frame::{Kind, Signature};

/// Who a rooted collective's process is, from its `root` argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Root {
    /// `MPI_ROOT`: this process is the root (in the root's group).
    Mine,
    /// `MPI_PROC_NULL`: another process of this group is the root; this one takes no part.
    Bystander,
    /// The root is this rank of the remote group.
    Remote(usize),
}

/// The stages of one call, in the order they run.
pub type Stages<'c> = Vec<Schedule<'c>>;

/// The one message tag of a bridge stage (no two messages of one stage share a pair of
/// processes and a direction).
const TAG: u32 = 0;

/// Signature of the local stages: internal collectives of one group.
fn local_sig(count: usize) -> Signature {
    Signature {
        kind: Kind::Internal,
        count: count as u64,
        dtype: 0,
        op: 0,
        root: 0,
    }
}

/// The bridge stage of a call of collective `kind`: takes the bridge's next call number (every
/// process of both groups calls this once per collective). Lengths are checked per message, so
/// the signature says only which collective it is.
fn bridge(inter: &Inter, kind: Kind) -> Schedule<'_> {
    let b = &inter.bridge;
    let seq = b.next_seq();
    Schedule::new(b.ctx(
        Signature {
            kind,
            count: 0,
            dtype: 0,
            op: 0,
            root: 0,
        },
        seq,
        1,
    ))
}

/// The part of a process that takes no part in a rooted call of collective `kind`
/// (`MPI_PROC_NULL`): only the call's number on the bridge (an empty stage).
pub fn bystander(inter: &Inter, kind: Kind) -> Result<Stages<'_>> {
    Ok(vec![bridge(inter, kind)])
}

fn is_leader(inter: &Inter) -> bool {
    inter.local_comm.rank == 0
}

/// `MPI_Barrier`: the group's barrier, the leaders' empty swap, the group's barrier again (no
/// process leaves before every process of the other group has arrived).
pub fn barrier(inter: &Inter) -> Result<Stages<'_>> {
    let lc = &inter.local_comm;
    let arrive = coll::build_barrier(lc)?;
    let mut br = bridge(inter, Kind::Barrier);
    if is_leader(inter) {
        br.send(0, TAG, std::ptr::null(), 0, &[]);
        br.recv(0, TAG, std::ptr::null_mut(), 0, Fold::Copy, &[]);
    }
    let leave = coll::build_barrier(lc)?;
    Ok(vec![arrive, br, leave])
}

/// `MPI_Bcast`: `len` bytes at `buf` from the root to every process of the other group.
pub fn bcast(inter: &Inter, buf: *mut u8, len: usize, root: Root) -> Result<Stages<'_>> {
    let mut br = bridge(inter, Kind::Bcast);
    match root {
        Root::Mine => {
            br.send(0, TAG, buf, len, &[]);
            Ok(vec![br])
        }
        Root::Bystander => Ok(vec![br]),
        Root::Remote(r) => {
            if is_leader(inter) {
                br.recv(r, TAG, buf, len, Fold::Copy, &[]);
            }
            let spread =
                coll::build_bcast(&inter.local_comm, buf, len, &bytes_dt(), 0, local_sig(len))?;
            Ok(vec![br, spread])
        }
    }
}

/// `MPI_Reduce`: the reduction over the other group of `count` elements each lands in the
/// root's `recv`.
#[allow(clippy::too_many_arguments)]
pub fn reduce<'c>(
    inter: &'c Inter,
    send: *const u8,
    recv: *mut u8,
    count: usize,
    dt: &Datatype,
    red: Reduction,
    root: Root,
) -> Result<Stages<'c>> {
    let bytes = coll::bytes(dt, count);
    match root {
        Root::Mine => {
            let mut br = bridge(inter, Kind::Reduce);
            br.recv(0, TAG, recv, bytes, Fold::Copy, &[]);
            Ok(vec![br])
        }
        Root::Bystander => bystander(inter, Kind::Reduce),
        Root::Remote(r) => {
            let leader = is_leader(inter);
            let mut sum = coll::scratch(if leader { bytes } else { 0 });
            let combine = coll::build_reduce(
                &inter.local_comm,
                send,
                sum.as_mut_ptr(),
                count,
                dt,
                red,
                0,
                local_sig(count),
            )?;
            let mut br = bridge(inter, Kind::Reduce);
            if leader {
                br.send(r, TAG, sum.as_ptr(), bytes, &[]);
            }
            br.keep(sum);
            Ok(vec![combine, br])
        }
    }
}

/// `MPI_Allreduce`: each group receives the reduction over the other group.
pub fn allreduce<'c>(
    inter: &'c Inter,
    send: *const u8,
    recv: *mut u8,
    count: usize,
    dt: &Datatype,
    red: Reduction,
) -> Result<Stages<'c>> {
    let bytes = coll::bytes(dt, count);
    let leader = is_leader(inter);
    let mut sum = coll::scratch(if leader { bytes } else { 0 });
    let lc = &inter.local_comm;
    let combine = coll::build_reduce(
        lc,
        send,
        sum.as_mut_ptr(),
        count,
        dt,
        red,
        0,
        local_sig(count),
    )?;
    let mut br = bridge(inter, Kind::Allreduce);
    if leader {
        br.send(0, TAG, sum.as_ptr(), bytes, &[]);
        br.recv(0, TAG, recv, bytes, Fold::Copy, &[]);
    }
    br.keep(sum);
    let spread = coll::build_bcast(lc, recv, count, dt, 0, local_sig(count))?;
    Ok(vec![combine, br, spread])
}

/// `MPI_Reduce_scatter(_block)`: the reduction over the other group of `counts.iter().sum()`
/// elements each, scattered over this group (`counts[i]` elements to local rank `i`, into
/// `recv`). Both groups' totals must agree.
pub fn reduce_scatter<'c>(
    inter: &'c Inter,
    send: *const u8,
    recv: *mut u8,
    counts: &[usize],
    dt: &Datatype,
    red: Reduction,
) -> Result<Stages<'c>> {
    let total: usize = counts.iter().sum();
    let bytes = coll::bytes(dt, total);
    let leader = is_leader(inter);
    let lc = &inter.local_comm;
    let mut sum = coll::scratch(if leader { bytes } else { 0 });
    let combine = coll::build_reduce(
        lc,
        send,
        sum.as_mut_ptr(),
        total,
        dt,
        red,
        0,
        local_sig(total),
    )?;
    let mut theirs = coll::scratch(if leader { bytes } else { 0 });
    let mine = coll::bytes(dt, counts[lc.rank]);
    let mut br = bridge(inter, Kind::ReduceScatter);
    let mut spans: Vec<(*const u8, usize)> = Vec::new();
    if leader {
        br.send(0, TAG, sum.as_ptr(), bytes, &[]);
        br.recv(0, TAG, theirs.as_mut_ptr(), bytes, Fold::Copy, &[]);
        spans = coll::blocks_from_counts(counts)
            .into_iter()
            .map(|(at, n)| {
                (
                    theirs.as_ptr().wrapping_add(coll::bytes(dt, at)),
                    coll::bytes(dt, n),
                )
            })
            .collect();
        // The leader's own block: the scatter's build would copy it before the bridge stage
        // has received it, so the bridge stage copies it when done and the scatter's own span
        // is the block itself (a copy onto itself is none).
        br.copy_at_end(recv, spans[0].0, mine);
        spans[0].0 = recv;
    }
    br.keep(sum);
    br.keep(theirs);
    let spread = coll::build_scatterv(lc, &spans, recv, mine, 0, local_sig(0))?;
    Ok(vec![combine, br, spread])
}

/// `MPI_Gather(v)`: the root receives block `j` of `recv` from remote rank `j`; the other
/// group's processes each send theirs.
pub fn gatherv<'c>(
    inter: &'c Inter,
    send: (*const u8, usize),
    recv: &[(*mut u8, usize)],
    root: Root,
) -> Result<Stages<'c>> {
    let mut br = bridge(inter, Kind::Gatherv);
    match root {
        Root::Mine => {
            for (j, &(p, l)) in recv.iter().enumerate() {
                br.recv(j, TAG, p, l, Fold::Copy, &[]);
            }
        }
        Root::Bystander => {}
        Root::Remote(root) => {
            br.send(root, TAG, send.0, send.1, &[]);
        }
    }
    Ok(vec![br])
}

/// `MPI_Scatter(v)`: the root sends block `j` of `send` to remote rank `j`.
pub fn scatterv<'c>(
    inter: &'c Inter,
    send: &[(*const u8, usize)],
    recv: (*mut u8, usize),
    root: Root,
) -> Result<Stages<'c>> {
    let mut br = bridge(inter, Kind::Scatterv);
    match root {
        Root::Mine => {
            for (j, &(p, l)) in send.iter().enumerate() {
                br.send(j, TAG, p, l, &[]);
            }
        }
        Root::Bystander => {}
        Root::Remote(root) => {
            br.recv(root, TAG, recv.0, recv.1, Fold::Copy, &[]);
        }
    }
    Ok(vec![br])
}

/// `MPI_Allgather(v)`: every process sends its block to every remote process and receives
/// remote rank `j`'s block into `recv[j]`.
pub fn allgatherv<'c>(
    inter: &'c Inter,
    send: (*const u8, usize),
    recv: &[(*mut u8, usize)],
) -> Result<Stages<'c>> {
    let mut br = bridge(inter, Kind::Allgatherv);
    for (j, &(p, l)) in recv.iter().enumerate() {
        br.recv(j, TAG, p, l, Fold::Copy, &[]);
    }
    for j in 0..recv.len() {
        br.send(j, TAG, send.0, send.1, &[]);
    }
    Ok(vec![br])
}

/// `MPI_Alltoall(v/w)`: block `j` of `send` goes to remote rank `j`, whose block for this
/// process lands in `recv[j]`.
pub fn alltoallv<'c>(
    inter: &'c Inter,
    send: &[(*const u8, usize)],
    recv: &[(*mut u8, usize)],
) -> Result<Stages<'c>> {
    let mut br = bridge(inter, Kind::Alltoallv);
    for (j, &(p, l)) in recv.iter().enumerate() {
        br.recv(j, TAG, p, l, Fold::Copy, &[]);
    }
    for (j, &(p, l)) in send.iter().enumerate() {
        br.send(j, TAG, p, l, &[]);
    }
    Ok(vec![br])
}
