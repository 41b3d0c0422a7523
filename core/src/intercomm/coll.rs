//! Blocking collectives on intercommunicators (MPI 4.1 §6.2.2): every call moves data from one
//! group to the other.
//!
//! Two shapes cover them all:
//! - **through the leaders** (Bcast, Reduce, Allreduce, Reduce_scatter): one side combines its
//!   data at its leader (local rank 0) with the intracommunicator collectives of
//!   [`crate::coll`] on [`Inter::local_comm`], the leaders (or the root and the other side's
//!   leader) swap on [`Inter::bridge`], and the receiving side spreads the result over its own
//!   group the same way;
//! - **direct** (Gather(v), Scatter(v), Allgather(v), Alltoall(v)): every process exchanges its
//!   blocks with each remote process it owes one, with [`p2p::exchange`] on the bridge. Each
//!   block travels once; the message count is the product of the group sizes, which is what
//!   these collectives move anyway (Allgather aside, which sends its block to every remote
//!   process instead of once to a leader: simple, and right for the group sizes of one host).
//!
//! Buffers are contiguous bytes here (the api layer stages derived datatypes); a received block
//! must be exactly as long as the receiver said, or the call fails with `MPI_ERR_TRUNCATE`
//! naming the remote rank. Intercommunicator collectives use the bridge, never the
//! intercommunicator itself, so no user receive can take their messages.

use super::{bytes_dt, Inter};
use crate::coll::{self, Reduction};
use crate::datatype::Datatype;
use crate::error::{Class, Error, Result};
use crate::frame::{Kind, Signature};
use crate::p2p::{self, Incoming, Outgoing, Received};

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

/// Bridge tags, one per collective (messages of one kind between two processes stay in
/// order, so calls in sequence cannot take each other's).
const TAG_BCAST: u32 = 2;
const TAG_REDUCE: u32 = 3;
const TAG_ALLREDUCE: u32 = 4;
const TAG_REDUCE_SCATTER: u32 = 5;
const TAG_GATHER: u32 = 6;
const TAG_SCATTER: u32 = 7;
const TAG_ALLGATHER: u32 = 8;
const TAG_ALLTOALL: u32 = 9;

fn sig(count: usize, root: i32) -> Signature {
    Signature {
        kind: Kind::Internal,
        count: count as u64,
        dtype: 0,
        op: 0,
        root,
    }
}

fn outgoing(buf: *const u8, len: usize) -> Outgoing {
    Outgoing {
        buf,
        len,
        mpi_bytes: len as u64,
        dtype: 0,
    }
}

fn incoming(buf: *mut u8, len: usize) -> Incoming {
    Incoming {
        buf,
        cap: len,
        dt: bytes_dt(),
    }
}

/// A block from remote rank `from` must fill what the receiver said it would get.
fn exact(r: &Received, want: usize, from: usize, what: &str) -> Result<()> {
    if r.truncated || r.stored != want || r.env.wire_bytes != want as u64 {
        return Err(Error::new(
            Class::Truncate,
            format!(
                "{what}: remote rank {from} sent {} bytes, this process expected {want} \
                 (the two groups' counts or datatypes disagree)",
                r.env.wire_bytes
            ),
        ));
    }
    Ok(())
}

/// Receives one block per remote rank `(j, spans[j])` and sends `sends` on the bridge, all
/// together; checks every block's length.
fn exchange(
    inter: &Inter,
    what: &'static str,
    tag: u32,
    sends: &[(usize, *const u8, usize)],
    recvs: &[(usize, *mut u8, usize)],
) -> Result<()> {
    let s: Vec<_> = sends
        .iter()
        .map(|&(to, p, len)| (to, tag, outgoing(p, len)))
        .collect();
    let r: Vec<_> = recvs
        .iter()
        .map(|&(from, p, len)| (from, tag, incoming(p, len)))
        .collect();
    let got = p2p::exchange(&inter.bridge, what, &s, &r)?;
    for (g, &(from, _, len)) in got.iter().zip(recvs) {
        exact(g, len, from, what)?;
    }
    Ok(())
}

fn is_leader(inter: &Inter) -> bool {
    inter.local_comm.rank == 0
}

/// `MPI_Bcast`: `len` bytes at `buf` from the root to every process of the other group.
pub fn bcast(inter: &Inter, buf: *mut u8, len: usize, root: Root) -> Result<()> {
    match root {
        Root::Mine => exchange(inter, "MPI_Bcast", TAG_BCAST, &[(0, buf, len)], &[]),
        Root::Bystander => Ok(()),
        Root::Remote(r) => {
            if is_leader(inter) {
                exchange(inter, "MPI_Bcast", TAG_BCAST, &[], &[(r, buf, len)])?;
            }
            coll::bcast(&inter.local_comm, buf, len, &bytes_dt(), 0, sig(len, 0))
        }
    }
}

/// `MPI_Reduce`: the reduction over the other group of `count` elements each lands in the
/// root's `recv`.
#[allow(clippy::too_many_arguments)]
pub fn reduce(
    inter: &Inter,
    send: *const u8,
    recv: *mut u8,
    count: usize,
    dt: &Datatype,
    red: Reduction,
    root: Root,
) -> Result<()> {
    let bytes = coll::bytes(dt, count);
    match root {
        Root::Mine => exchange(inter, "MPI_Reduce", TAG_REDUCE, &[], &[(0, recv, bytes)]),
        Root::Bystander => Ok(()),
        Root::Remote(r) => {
            let mut sum = coll::scratch(if is_leader(inter) { bytes } else { 0 });
            let s = sig(count, 0);
            coll::reduce(
                &inter.local_comm,
                send,
                sum.as_mut_ptr(),
                count,
                dt,
                red,
                0,
                s,
            )?;
            if is_leader(inter) {
                exchange(
                    inter,
                    "MPI_Reduce",
                    TAG_REDUCE,
                    &[(r, sum.as_ptr(), bytes)],
                    &[],
                )?;
            }
            Ok(())
        }
    }
}

/// `MPI_Allreduce`: each group receives the reduction over the other group.
pub fn allreduce(
    inter: &Inter,
    send: *const u8,
    recv: *mut u8,
    count: usize,
    dt: &Datatype,
    red: Reduction,
) -> Result<()> {
    let bytes = coll::bytes(dt, count);
    let mut sum = coll::scratch(if is_leader(inter) { bytes } else { 0 });
    coll::reduce(
        &inter.local_comm,
        send,
        sum.as_mut_ptr(),
        count,
        dt,
        red,
        0,
        sig(count, 0),
    )?;
    if is_leader(inter) {
        exchange(
            inter,
            "MPI_Allreduce",
            TAG_ALLREDUCE,
            &[(0, sum.as_ptr(), bytes)],
            &[(0, recv, bytes)],
        )?;
    }
    coll::bcast(&inter.local_comm, recv, count, dt, 0, sig(count, 0))
}

/// `MPI_Reduce_scatter(_block)`: the reduction over the other group of `counts.iter().sum()`
/// elements each, scattered over this group (`counts[i]` elements to local rank `i`, into
/// `recv`). Both groups' totals must agree.
pub fn reduce_scatter(
    inter: &Inter,
    send: *const u8,
    recv: *mut u8,
    counts: &[usize],
    dt: &Datatype,
    red: Reduction,
) -> Result<()> {
    let total: usize = counts.iter().sum();
    let bytes = coll::bytes(dt, total);
    let leader = is_leader(inter);
    let mut sum = coll::scratch(if leader { bytes } else { 0 });
    coll::reduce(
        &inter.local_comm,
        send,
        sum.as_mut_ptr(),
        total,
        dt,
        red,
        0,
        sig(total, 0),
    )?;
    let mut theirs = coll::scratch(if leader { bytes } else { 0 });
    if leader {
        exchange(
            inter,
            "MPI_Reduce_scatter",
            TAG_REDUCE_SCATTER,
            &[(0, sum.as_ptr(), bytes)],
            &[(0, theirs.as_mut_ptr(), bytes)],
        )?;
    }
    let spans: Vec<(*const u8, usize)> = if leader {
        coll::blocks_from_counts(counts)
            .into_iter()
            .map(|(at, n)| {
                (
                    theirs.as_ptr().wrapping_add(coll::bytes(dt, at)),
                    coll::bytes(dt, n),
                )
            })
            .collect()
    } else {
        Vec::new()
    };
    let mine = coll::bytes(dt, counts[inter.local_comm.rank]);
    coll::scatterv(&inter.local_comm, &spans, recv, mine, 0, sig(0, 0))
}

/// `MPI_Gather(v)`: the root receives block `j` of `recv` from remote rank `j`; the other
/// group's processes each send theirs.
pub fn gatherv(
    inter: &Inter,
    send: (*const u8, usize),
    recv: &[(*mut u8, usize)],
    root: Root,
) -> Result<()> {
    match root {
        Root::Mine => {
            let r: Vec<_> = recv
                .iter()
                .enumerate()
                .map(|(j, &(p, l))| (j, p, l))
                .collect();
            exchange(inter, "MPI_Gather", TAG_GATHER, &[], &r)
        }
        Root::Bystander => Ok(()),
        Root::Remote(root) => exchange(
            inter,
            "MPI_Gather",
            TAG_GATHER,
            &[(root, send.0, send.1)],
            &[],
        ),
    }
}

/// `MPI_Scatter(v)`: the root sends block `j` of `send` to remote rank `j`.
pub fn scatterv(
    inter: &Inter,
    send: &[(*const u8, usize)],
    recv: (*mut u8, usize),
    root: Root,
) -> Result<()> {
    match root {
        Root::Mine => {
            let s: Vec<_> = send
                .iter()
                .enumerate()
                .map(|(j, &(p, l))| (j, p, l))
                .collect();
            exchange(inter, "MPI_Scatter", TAG_SCATTER, &s, &[])
        }
        Root::Bystander => Ok(()),
        Root::Remote(root) => exchange(
            inter,
            "MPI_Scatter",
            TAG_SCATTER,
            &[],
            &[(root, recv.0, recv.1)],
        ),
    }
}

/// `MPI_Allgather(v)`: every process sends its block to every remote process and receives
/// remote rank `j`'s block into `recv[j]`.
pub fn allgatherv(
    inter: &Inter,
    send: (*const u8, usize),
    recv: &[(*mut u8, usize)],
) -> Result<()> {
    let s: Vec<_> = (0..recv.len()).map(|j| (j, send.0, send.1)).collect();
    let r: Vec<_> = recv
        .iter()
        .enumerate()
        .map(|(j, &(p, l))| (j, p, l))
        .collect();
    exchange(inter, "MPI_Allgather", TAG_ALLGATHER, &s, &r)
}

/// `MPI_Alltoall(v)`: block `j` of `send` goes to remote rank `j`, whose block for this
/// process lands in `recv[j]`.
pub fn alltoallv(
    inter: &Inter,
    send: &[(*const u8, usize)],
    recv: &[(*mut u8, usize)],
) -> Result<()> {
    let s: Vec<_> = send
        .iter()
        .enumerate()
        .map(|(j, &(p, l))| (j, p, l))
        .collect();
    let r: Vec<_> = recv
        .iter()
        .enumerate()
        .map(|(j, &(p, l))| (j, p, l))
        .collect();
    exchange(inter, "MPI_Alltoall", TAG_ALLTOALL, &s, &r)
}
