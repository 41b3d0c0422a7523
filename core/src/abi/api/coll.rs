//! Collectives. `name` lets the `_c` variants report their own name.
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};

use super::*;
use crate::abi::guard;
use crate::coll;
use crate::error::{Class, Error, Result};
use crate::frame::Kind;
use crate::runtime;
// ---------------------------------------------------------------------------------------------
// Collectives. `name` lets the `_c` variants report their own name.

pub unsafe fn barrier(comm: c_int) -> c_int {
    guard("MPI_Barrier", Some(comm), || {
        coll::barrier(&*comm_of(runtime::get()?, comm)?)
    })
}

pub unsafe fn bcast(
    name: &'static str,
    buf: *mut c_void,
    count: Count,
    dt: c_int,
    root: c_int,
    comm: c_int,
) -> c_int {
    guard(name, Some(comm), || {
        let c = comm_of(runtime::get()?, comm)?;
        let n = count_arg(count, "count")?;
        let d = datatype_arg(dt, "datatype")?;
        let root = root_arg(root, &c)?;
        let len = nbytes(n, &d, "count")?;
        buf_arg(buf, len, "buffer")?;
        coll::bcast(
            &c,
            buf.cast(),
            n,
            &d,
            root,
            sig(Kind::Bcast, n, dt, 0, root as i32),
        )
    })
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn reduce(
    name: &'static str,
    send: *const c_void,
    recv: *mut c_void,
    count: Count,
    dt: c_int,
    op: c_int,
    root: c_int,
    comm: c_int,
) -> c_int {
    guard(name, Some(comm), || {
        let c = comm_of(runtime::get()?, comm)?;
        let n = count_arg(count, "count")?;
        let d = datatype_arg(dt, "datatype")?;
        let red = reduction_arg(op, dt, &d)?;
        let root = root_arg(root, &c)?;
        let len = nbytes(n, &d, "count")?;
        let is_root = c.rank == root;
        let send = if is_root && is_in_place(send) {
            buf_arg(recv, len, "recvbuf")?;
            recv as *const c_void
        } else {
            buf_arg(send, len, "sendbuf")?;
            if is_root {
                buf_arg(recv, len, "recvbuf")?;
                no_alias(send, recv, len)?;
            }
            send
        };
        coll::reduce(
            &c,
            send.cast(),
            recv.cast(),
            n,
            &d,
            red,
            root,
            sig(Kind::Reduce, n, dt, op, root as i32),
        )
    })
}

pub unsafe fn allreduce(
    name: &'static str,
    send: *const c_void,
    recv: *mut c_void,
    count: Count,
    dt: c_int,
    op: c_int,
    comm: c_int,
) -> c_int {
    guard(name, Some(comm), || {
        let c = comm_of(runtime::get()?, comm)?;
        let n = count_arg(count, "count")?;
        let d = datatype_arg(dt, "datatype")?;
        let red = reduction_arg(op, dt, &d)?;
        let len = nbytes(n, &d, "count")?;
        buf_arg(recv, len, "recvbuf")?;
        let send = if is_in_place(send) {
            recv as *const c_void
        } else {
            buf_arg(send, len, "sendbuf")?;
            no_alias(send, recv, len)?;
            send
        };
        coll::allreduce(
            &c,
            send.cast(),
            recv.cast(),
            n,
            &d,
            red,
            sig(Kind::Allreduce, n, dt, op, -1),
        )
    })
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn allgather(
    name: &'static str,
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    recv: *mut c_void,
    rcount: Count,
    rdt: c_int,
    comm: c_int,
) -> c_int {
    guard(name, Some(comm), || {
        let c = comm_of(runtime::get()?, comm)?;
        let rn = count_arg(rcount, "recvcount")?;
        let rd = datatype_arg(rdt, "recvtype")?;
        let blk = nbytes(rn, &rd, "recvcount")?;
        let total = blk
            .checked_mul(c.size())
            .filter(|&t| t <= isize::MAX as usize)
            .ok_or_else(|| {
                Error::new(Class::Count, "recvcount × communicator size is too large")
            })?;
        buf_arg(recv, total, "recvbuf")?;
        let own = recv.cast::<u8>().wrapping_add(c.rank * blk);
        let send: *const u8 = if is_in_place(send) {
            own
        } else {
            let sn = count_arg(scount, "sendcount")?;
            let sd = datatype_arg(sdt, "sendtype")?;
            let sbytes = nbytes(sn, &sd, "sendcount")?;
            if sn * sd.size != rn * rd.size || sbytes != blk {
                return Err(Error::new(
                    Class::Truncate,
                    format!("sendcount×sendtype ({sbytes} bytes) does not match recvcount×recvtype ({blk} bytes)"),
                ));
            }
            buf_arg(send, sbytes, "sendbuf")?;
            no_alias(send, own as *const c_void, blk)?;
            send.cast()
        };
        coll::allgather(
            &c,
            send,
            recv.cast(),
            rn,
            &rd,
            sig(Kind::Allgather, rn, rdt, 0, -1),
        )
    })
}

/// Shared by `MPI_Reduce_scatter(_c)` and `MPI_Reduce_scatter_block(_c)`.
#[allow(clippy::too_many_arguments)]
unsafe fn reduce_scatter_common(
    send: *const c_void,
    recv: *mut c_void,
    counts: &dyn Fn(usize) -> Result<usize>,
    kind: Kind,
    dt: c_int,
    op: c_int,
    comm: &Comm,
) -> Result<()> {
    let d = datatype_arg(dt, "datatype")?;
    let red = reduction_arg(op, dt, &d)?;
    let counts: Vec<usize> = (0..comm.size()).map(counts).collect::<Result<_>>()?;
    let total = counts
        .iter()
        .try_fold(0usize, |a, &b| a.checked_add(b))
        .ok_or_else(|| Error::new(Class::Count, "the counts add up to too much"))?;
    let total_bytes = nbytes(total, &d, "total count")?;
    let mine = nbytes(counts[comm.rank], &d, "recvcount")?;
    let send = if is_in_place(send) {
        buf_arg(recv, total_bytes, "recvbuf")?;
        recv as *const c_void
    } else {
        buf_arg(send, total_bytes, "sendbuf")?;
        buf_arg(recv, mine, "recvbuf")?;
        no_alias(send, recv, mine.min(total_bytes))?;
        send
    };
    coll::reduce_scatter(
        comm,
        send.cast(),
        recv.cast(),
        &counts,
        &d,
        red,
        sig(kind, total, dt, op, -1),
    )
}

pub unsafe fn reduce_scatter(
    name: &'static str,
    send: *const c_void,
    recv: *mut c_void,
    counts: RecvCounts,
    dt: c_int,
    op: c_int,
    comm: c_int,
) -> c_int {
    guard(name, Some(comm), || {
        let c = comm_of(runtime::get()?, comm)?;
        let get = |i: usize| -> Result<usize> {
            let v = match counts {
                RecvCounts::Int(p) if !p.is_null() => Count::from(unsafe { *p.add(i) }),
                RecvCounts::Count(p) if !p.is_null() => unsafe { *p.add(i) },
                _ => return Err(Error::new(Class::Arg, "recvcounts is NULL")),
            };
            count_arg(v, &format!("recvcounts[{i}]"))
        };
        // SAFETY: get reads recvcounts[0..size], which MPI requires the caller to provide.
        unsafe { reduce_scatter_common(send, recv, &get, Kind::ReduceScatter, dt, op, &c) }
    })
}

pub unsafe fn reduce_scatter_block(
    name: &'static str,
    send: *const c_void,
    recv: *mut c_void,
    count: Count,
    dt: c_int,
    op: c_int,
    comm: c_int,
) -> c_int {
    guard(name, Some(comm), || {
        let c = comm_of(runtime::get()?, comm)?;
        let n = count_arg(count, "recvcount")?;
        // SAFETY: pointers are validated inside before use.
        unsafe {
            reduce_scatter_common(send, recv, &|_| Ok(n), Kind::ReduceScatterBlock, dt, op, &c)
        }
    })
}

/// `recvcounts` of `MPI_Reduce_scatter` (int) or `MPI_Reduce_scatter_c` (MPI_Count).
#[derive(Clone, Copy)]
pub enum RecvCounts {
    Int(*const c_int),
    Count(*const Count),
}
