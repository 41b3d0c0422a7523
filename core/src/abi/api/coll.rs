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
    crate::stats::call(crate::stats::Coll::Barrier, || {
        guard("MPI_Barrier", Some(comm), || {
            coll::barrier(&*comm_of(runtime::get()?, comm)?)
        })
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
    crate::stats::call(crate::stats::Coll::Bcast, || {
        guard(name, Some(comm), || {
            let c = comm_of(runtime::get()?, comm)?;
            let cnt = count_arg(count, "count")?;
            let v = type_arg(dt, "datatype")?.moving();
            let root = root_arg(root, &c)?;
            let n = v.count(cnt, "count")?;
            buf_arg(buf, v.bytes(cnt, "count")?, "buffer")?;
            let is_root = c.rank == root;
            // SAFETY: MPI: `buf` holds `count` items; the root's are read, the others' written.
            let st = unsafe { v.stage(buf, cnt, is_root, !is_root) };
            let s = sig(Kind::Bcast, n, v.handle, 0, root as i32);
            coll::bcast(&c, st.ptr(), n, &v.dt, root, s)?;
            // SAFETY: as above.
            unsafe { st.finish() };
            Ok(())
        })
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
    crate::stats::call(crate::stats::Coll::Reduce, || {
        guard(name, Some(comm), || {
            let c = comm_of(runtime::get()?, comm)?;
            let cnt = count_arg(count, "count")?;
            let t = type_arg(dt, "datatype")?;
            let (red, v) = reduce_args(op, &t)?;
            let root = root_arg(root, &c)?;
            let n = v.count(cnt, "count")?;
            let len = v.bytes(cnt, "count")?;
            let is_root = c.rank == root;
            let in_place = is_root && is_in_place(send);
            if in_place {
                buf_arg(recv, len, "recvbuf")?;
            } else {
                buf_arg(send, len, "sendbuf")?;
                if is_root {
                    buf_arg(recv, len, "recvbuf")?;
                    no_alias(send, recv, len)?;
                }
            }
            // SAFETY: MPI: sendbuf holds `count` items to read, the root's recvbuf `count` items
            // to write (and read, in place).
            let (st_send, st_recv) = unsafe {
                if in_place {
                    (None, Some(v.stage(recv, cnt, true, true)))
                } else {
                    let s = v.stage(send, cnt, true, false);
                    (Some(s), is_root.then(|| v.stage(recv, cnt, false, true)))
                }
            };
            let out = st_recv.as_ref().map_or(std::ptr::null_mut(), |s| s.ptr());
            let inp = st_send.as_ref().map_or(out, |s| s.ptr());
            let s = sig(Kind::Reduce, n, v.handle, op, root as i32);
            coll::reduce(&c, inp, out, n, &v.dt, red, root, s)?;
            if let Some(st) = st_recv {
                // SAFETY: as above.
                unsafe { st.finish() };
            }
            Ok(())
        })
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
    crate::stats::call(crate::stats::Coll::Allreduce, || {
        guard(name, Some(comm), || {
            let c = comm_of(runtime::get()?, comm)?;
            // SAFETY: MPI's contract for sendbuf/recvbuf, checked inside.
            let io = unsafe { ReduceIo::new(send, recv, count, dt, op) }?;
            let s = sig(Kind::Allreduce, io.elems, io.view.handle, op, -1);
            coll::allreduce(
                &c,
                io.input,
                io.output.ptr(),
                io.elems,
                &io.view.dt,
                io.red,
                s,
            )?;
            // SAFETY: the output was staged from recvbuf just above.
            unsafe { io.output.finish() };
            Ok(())
        })
    })
}

/// The checked, staged buffers of a reduction whose result every rank receives in its own
/// recvbuf (`MPI_Allreduce`, `MPI_Scan`, `MPI_Exscan`); `MPI_IN_PLACE` reads the input from
/// recvbuf. Validation happens before anything is staged, so a rejected call writes nothing.
pub(crate) struct ReduceIo {
    pub red: coll::Reduction,
    pub view: View,
    /// Elements (of `view.dt`) in the message.
    pub elems: usize,
    /// The staged sendbuf, or the staged recvbuf in place.
    pub input: *const u8,
    pub output: Staged,
    /// Keeps the staged sendbuf alive while `input` points into it.
    _send: Option<Staged>,
}

impl ReduceIo {
    /// # Safety
    /// MPI's contract: `send` (unless `MPI_IN_PLACE`) holds `count` items to read, `recv`
    /// `count` items to write (and read, in place).
    pub(crate) unsafe fn new(
        send: *const c_void,
        recv: *mut c_void,
        count: Count,
        dt: c_int,
        op: c_int,
    ) -> Result<ReduceIo> {
        let cnt = count_arg(count, "count")?;
        let t = type_arg(dt, "datatype")?;
        let (red, view) = reduce_args(op, &t)?;
        let elems = view.count(cnt, "count")?;
        let len = view.bytes(cnt, "count")?;
        buf_arg(recv, len, "recvbuf")?;
        let in_place = is_in_place(send);
        if !in_place {
            buf_arg(send, len, "sendbuf")?;
            no_alias(send, recv, len)?;
        }
        // SAFETY: the caller's contract, with both ranges checked above.
        let (send, output) = unsafe {
            let r = view.stage(recv, cnt, in_place, true);
            ((!in_place).then(|| view.stage(send, cnt, true, false)), r)
        };
        let input = send.as_ref().map_or(output.ptr() as *const u8, |s| s.ptr());
        Ok(ReduceIo {
            red,
            view,
            elems,
            input,
            output,
            _send: send,
        })
    }
}

/// The checked, staged buffers of a reduce-scatter (`MPI_Reduce_scatter(_block)` and their
/// nonblocking forms): `counts(i)` is rank i's count; the input is the staged sendbuf, or the
/// staged recvbuf in place. Validation happens before anything is staged.
pub(crate) struct ReduceScatterIo {
    pub red: coll::Reduction,
    pub view: View,
    /// Elements (of `view.dt`) per rank's block.
    pub counts: Vec<usize>,
    /// Elements in the whole input.
    pub total: usize,
    pub input: *const u8,
    pub output: Staged,
    /// Keeps the staged sendbuf alive while `input` points into it.
    _send: Option<Staged>,
}

impl ReduceScatterIo {
    /// # Safety
    /// MPI's contract: `send` (or `recv` in place) holds the sum of the counts, `recv` this
    /// rank's count; `counts` reads the caller's count array for ranks `0..size`.
    pub(crate) unsafe fn new(
        send: *const c_void,
        recv: *mut c_void,
        counts: &dyn Fn(usize) -> Result<usize>,
        dt: c_int,
        op: c_int,
        comm: &Comm,
    ) -> Result<ReduceScatterIo> {
        let t = type_arg(dt, "datatype")?;
        let (red, view) = reduce_args(op, &t)?;
        let items: Vec<usize> = (0..comm.size()).map(counts).collect::<Result<_>>()?;
        let total_items = items
            .iter()
            .try_fold(0usize, |a, &b| a.checked_add(b))
            .ok_or_else(|| Error::new(Class::Count, "the counts add up to too much"))?;
        let total = view.count(total_items, "total count")?;
        let counts: Vec<usize> = items
            .iter()
            .map(|&i| i * (total / total_items.max(1)))
            .collect();
        let total_bytes = view.bytes(total_items, "total count")?;
        let my_items = items[comm.rank];
        let mine = view.bytes(my_items, "recvcount")?;
        let in_place = is_in_place(send);
        if in_place {
            buf_arg(recv, total_bytes, "recvbuf")?;
        } else {
            buf_arg(send, total_bytes, "sendbuf")?;
            buf_arg(recv, mine, "recvbuf")?;
            no_alias(send, recv, mine.min(total_bytes))?;
        }
        // SAFETY: the caller's contract, with the ranges checked above.
        let (send, mut output) = unsafe {
            if in_place {
                (None, view.stage(recv, total_items, true, true))
            } else {
                let s = view.stage(send, total_items, true, false);
                (Some(s), view.stage(recv, my_items, false, true))
            }
        };
        output.store_only(my_items);
        let input = send.as_ref().map_or(output.ptr() as *const u8, |s| s.ptr());
        Ok(ReduceScatterIo {
            red,
            view,
            counts,
            total,
            input,
            output,
            _send: send,
        })
    }
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
    crate::stats::call(crate::stats::Coll::Allgather, || {
        guard(name, Some(comm), || {
            let c = comm_of(runtime::get()?, comm)?;
            let rcnt = count_arg(rcount, "recvcount")?;
            let rt = type_arg(rdt, "recvtype")?;
            let rv = rt.moving();
            let rn = rv.count(rcnt, "recvcount")?;
            let blk = rn * rv.dt.extent;
            let items = rcnt.checked_mul(c.size());
            let total = items
                .and_then(|i| rv.bytes(i, "recvcount").ok())
                .ok_or_else(|| {
                    Error::new(Class::Count, "recvcount × communicator size is too large")
                })?;
            let items = items.unwrap_or(0);
            buf_arg(recv, total, "recvbuf")?;
            let own_user = recv.cast::<u8>().wrapping_add(c.rank * rcnt * rt.extent());
            let in_place = is_in_place(send);
            let mut sv = None;
            if !in_place {
                let scnt = count_arg(scount, "sendcount")?;
                let v = type_arg(sdt, "sendtype")?.moving();
                let sbytes = v.bytes(scnt, "sendcount")?;
                if v.count(scnt, "sendcount")? * v.dt.size != rn * rv.dt.size || sbytes != blk {
                    return Err(Error::new(
                    Class::Truncate,
                    format!("sendcount×sendtype ({sbytes} bytes) does not match recvcount×recvtype ({blk} bytes)"),
                ));
                }
                buf_arg(send, sbytes, "sendbuf")?;
                no_alias(send, own_user as *const c_void, blk)?;
                sv = Some((v, scnt));
            }
            // SAFETY: MPI: recvbuf holds size × recvcount items (the own block is read in
            // place), sendbuf `sendcount` items.
            let st_recv = unsafe { rv.stage(recv, items, false, true) };
            let st_send = sv
                .as_ref()
                .map(|(v, n)| unsafe { v.stage(send, *n, true, false) });
            let inp = match &st_send {
                Some(s) => s.ptr() as *const u8,
                None => {
                    // SAFETY: the own block lies in recvbuf (see above).
                    unsafe { st_recv.load_items(c.rank * rcnt, rcnt) };
                    st_recv.ptr().wrapping_add(c.rank * blk)
                }
            };
            let s = sig(Kind::Allgather, rn, rv.handle, 0, -1);
            coll::allgather(&c, inp, st_recv.ptr(), rn, &rv.dt, s)?;
            // SAFETY: as above.
            unsafe { st_recv.finish() };
            Ok(())
        })
    })
}

/// Shared by `MPI_Reduce_scatter(_c)` and `MPI_Reduce_scatter_block(_c)`.
unsafe fn reduce_scatter_common(
    send: *const c_void,
    recv: *mut c_void,
    counts: &dyn Fn(usize) -> Result<usize>,
    kind: Kind,
    dt: c_int,
    op: c_int,
    comm: &Comm,
) -> Result<()> {
    // SAFETY: the caller's contract for the buffers and the count array.
    let io = unsafe { ReduceScatterIo::new(send, recv, counts, dt, op, comm) }?;
    let s = sig(kind, io.total, io.view.handle, op, -1);
    coll::reduce_scatter(
        comm,
        io.input,
        io.output.ptr(),
        &io.counts,
        &io.view.dt,
        io.red,
        s,
    )?;
    // SAFETY: the output was staged from recvbuf just above.
    unsafe { io.output.finish() };
    Ok(())
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
    crate::stats::call(crate::stats::Coll::ReduceScatter, || {
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
    crate::stats::call(crate::stats::Coll::ReduceScatterBlock, || {
        guard(name, Some(comm), || {
            let c = comm_of(runtime::get()?, comm)?;
            let n = count_arg(count, "recvcount")?;
            // SAFETY: pointers are validated inside before use.
            unsafe {
                reduce_scatter_common(send, recv, &|_| Ok(n), Kind::ReduceScatterBlock, dt, op, &c)
            }
        })
    })
}

/// `recvcounts` of `MPI_Reduce_scatter` (int) or `MPI_Reduce_scatter_c` (MPI_Count).
#[derive(Clone, Copy)]
pub enum RecvCounts {
    Int(*const c_int),
    Count(*const Count),
}
