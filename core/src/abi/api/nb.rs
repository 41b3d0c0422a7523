//! Nonblocking operations: `MPI_Iallreduce`, `MPI_Ibcast`, `MPI_Ireduce`, `MPI_Iallgather`,
//! `MPI_Iallgatherv`, `MPI_Ireduce_scatter(_block)`, `MPI_Ialltoall`, `MPI_Ibarrier`,
//! `MPI_Isend`, `MPI_Irecv` (with their `_c` variants), and the completion calls `MPI_Wait*`,
//! `MPI_Test*`, `MPI_Request_free`, `MPI_Request_get_status`, `MPI_Cancel`,
//! `MPI_Test_cancelled`.
//!
//! A starting call validates every argument exactly as its blocking form does (a rejected call
//! writes nothing, not even the request), stages derived datatypes the same way (packing the
//! input now: MPI forbids touching the buffers until completion, so nothing else is copied),
//! builds the collective's schedule — which takes the communicator's next call number now,
//! so outstanding collectives match across ranks in the order they were started — and hands
//! it to the progress engine ([`crate::progress`]). The staged output is unpacked when the
//! request completes.
//!
//! Errors of the operation itself surface from the call that completes the request, through
//! the error handler of the request's communicator, prefixed with the starting call's name.
//! The multi-request calls report them as MPI does: `MPI_ERR_IN_STATUS`, with each status's
//! `MPI_ERROR` set (unless `MPI_STATUSES_IGNORE`).
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use super::coll::{ReduceIo, ReduceScatterIo, RootReduceIo};
use super::coll2::{alltoall_sides, laid_out, own_send, read_only, Ints, Side, BYTE};
use super::p2p::{
    dest_arg, incoming, outgoing, recv_tag_arg, send_tag_arg, set_status, source_arg, unstage,
    Status, ANY_TAG, STATUS_IGNORE,
};
use super::*;
use crate::abi::guard;
use crate::coll;
use crate::engine::Schedule;
use crate::error::{Class, Error, Result};
use crate::frame::Kind;
use crate::p2p;
use crate::progress;
use crate::request::{self, Completion, Request, Sched, REQUEST_NULL};
use crate::runtime;
use crate::stats::{self, Coll};

/// `MPI_UNDEFINED` (MPICH ABI).
const UNDEFINED: c_int = -32766;

/// Carries staged buffers (raw pointers into the caller's memory or staging memory) into the
/// completion closure, which may run on the progress thread.
struct Unsent<T>(T);

// SAFETY: the wrapped values are staging descriptors owned by exactly one request; MPI
// forbids the caller to touch the buffers they point into until the request completes, and
// the request's lock lets one thread at a time use them.
unsafe impl<T> Send for Unsent<T> {}

impl<T> Unsent<T> {
    /// The value (a method, so a closure captures the whole wrapper, not its field).
    fn take(self) -> T {
        self.0
    }
}

/// The request output argument: checked before anything starts.
fn req_arg(req: *mut c_int) -> Result<()> {
    if req.is_null() {
        return Err(Error::new(Class::Arg, "request is NULL"));
    }
    Ok(())
}

/// Registers a started request and writes its handle.
fn publish(r: Arc<Request>, req: *mut c_int) -> Result<()> {
    let h = request::insert(r.clone())?;
    // SAFETY: `req` is non-NULL (req_arg) and points to the caller's MPI_Request.
    unsafe { req.write(h) };
    progress::start(&r)
}

/// Starts a nonblocking collective; `stat`: the collective it is profiled as (its nonblocking
/// row), if any.
#[allow(clippy::too_many_arguments)]
fn start_coll(
    name: &'static str,
    stat: Option<Coll>,
    comm: c_int,
    c: Arc<Comm>,
    req: *mut c_int,
    build: impl for<'c> FnOnce(&'c Comm) -> Result<Schedule<'c>>,
    finish: Option<Box<dyn FnOnce() + Send>>,
) -> Result<()> {
    let ep = c.ep.clone();
    let pending = stat.and_then(stats::profile::begin);
    let sched = Sched::new(c, build, finish)?;
    let r = Request::new(name, comm, true, ep, Box::new(sched));
    publish(Arc::new(r.profiled(pending.map(|p| p.built()))), req)
}

/// A completion closure that unpacks `st` (nothing to do for contiguous datatypes).
fn finishing(st: Staged) -> Option<Box<dyn FnOnce() + Send>> {
    let st = Unsent(st);
    Some(Box::new(move || {
        let st = st.take();
        // SAFETY: the staging was made from the caller's buffer for this request, which MPI
        // keeps valid and untouched until the request completes.
        unsafe { st.finish() }
    }))
}

// ---------------------------------------------------------------------------------------------
// Nonblocking collectives

pub unsafe fn ibarrier(name: &'static str, comm: c_int, req: *mut c_int) -> c_int {
    stats::handled_nb(Coll::Barrier);
    guard(name, Some(comm), || {
        let c = comm_of(runtime::get()?, comm)?;
        req_arg(req)?;
        start_coll(
            name,
            Some(Coll::Barrier),
            comm,
            c,
            req,
            coll::build_barrier,
            None,
        )
    })
}

pub unsafe fn ibcast(
    name: &'static str,
    buf: *mut c_void,
    count: Count,
    dt: c_int,
    root: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    stats::handled_nb(Coll::Bcast);
    guard(name, Some(comm), || {
        host_only(&[buf])?;
        let c = comm_of(runtime::get()?, comm)?;
        let cnt = count_arg(count, "count")?;
        let v = type_arg(dt, "datatype")?.moving();
        let root = root_arg(root, &c)?;
        let n = v.count(cnt, "count")?;
        buf_arg(buf, v.bytes(cnt, "count")?, "buffer")?;
        req_arg(req)?;
        let is_root = c.rank == root;
        // SAFETY: MPI: `buf` holds `count` items; the root's are read, the others' written.
        let st = unsafe { v.stage(buf, cnt, is_root, !is_root) };
        let s = sig(Kind::Bcast, n, v.handle, 0, root as i32);
        let (p, dtv) = (st.ptr(), v.dt);
        start_coll(
            name,
            Some(Coll::Bcast),
            comm,
            c,
            req,
            move |c| coll::build_bcast(c, p, n, &dtv, root, s),
            finishing(st),
        )
    })
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn iallreduce(
    name: &'static str,
    send: *const c_void,
    recv: *mut c_void,
    count: Count,
    dt: c_int,
    op: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    stats::handled_nb(Coll::Allreduce);
    guard(name, Some(comm), || {
        host_only(&[send, recv as *const c_void])?;
        let c = comm_of(runtime::get()?, comm)?;
        req_arg(req)?;
        // SAFETY: MPI's contract for sendbuf/recvbuf, checked inside.
        let io = unsafe { ReduceIo::new(send, recv, count, dt, op) }?;
        let s = sig(Kind::Allreduce, io.elems, io.view.handle, op, -1);
        let (inp, out, n, dtv, red) = (io.input, io.output.ptr(), io.elems, io.view.dt, io.red);
        let io = Unsent(io);
        let finish: Box<dyn FnOnce() + Send> = Box::new(move || {
            let io = io.take();
            // SAFETY: staged from recvbuf for this request (see `finishing`).
            unsafe { io.output.finish() }
        });
        start_coll(
            name,
            Some(Coll::Allreduce),
            comm,
            c,
            req,
            move |c| coll::build_allreduce(c, inp, out, n, &dtv, red, s),
            Some(finish),
        )
    })
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn ireduce(
    name: &'static str,
    send: *const c_void,
    recv: *mut c_void,
    count: Count,
    dt: c_int,
    op: c_int,
    root: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    stats::handled_nb(Coll::Reduce);
    guard(name, Some(comm), || {
        host_only(&[send, recv as *const c_void])?;
        let c = comm_of(runtime::get()?, comm)?;
        // SAFETY: MPI's contract for sendbuf/recvbuf, checked inside.
        let io = unsafe { RootReduceIo::new(send, recv, count, dt, op, root, &c, false) }?;
        let out = io.recv.as_ref().map_or(std::ptr::null_mut(), |s| s.ptr());
        let inp = io.send.as_ref().map_or(out as *const u8, |s| s.ptr());
        let (n, root, red) = (io.elems, io.root, io.red);
        let s = sig(Kind::Reduce, n, io.view.handle, op, root as i32);
        let dtv = io.view.dt;
        let keep = Unsent((io.send, io.recv));
        let finish: Box<dyn FnOnce() + Send> = Box::new(move || {
            let (_send, recv) = keep.take();
            if let Some(st) = recv {
                // SAFETY: staged from recvbuf for this request (see `finishing`).
                unsafe { st.finish() }
            }
        });
        start_coll(
            name,
            Some(Coll::Reduce),
            comm,
            c,
            req,
            move |c| coll::build_reduce(c, inp, out, n, &dtv, red, root, s),
            Some(finish),
        )
    })
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn iallgather(
    name: &'static str,
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    recv: *mut c_void,
    rcount: Count,
    rdt: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    stats::handled_nb(Coll::Allgather);
    guard(name, Some(comm), || {
        host_only(&[send, recv as *const c_void])?;
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
        req_arg(req)?;
        // SAFETY: MPI: recvbuf holds size × recvcount items (the own block is read in place),
        // sendbuf `sendcount` items.
        let st_recv = unsafe { rv.stage(recv, items, false, true) };
        let st_send = sv
            .as_ref()
            // SAFETY: as above.
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
        let (out, dtv) = (st_recv.ptr(), rv.dt);
        let keep = Unsent((st_send, st_recv));
        let finish: Box<dyn FnOnce() + Send> = Box::new(move || {
            let (_send, recv) = keep.take();
            // SAFETY: staged from recvbuf for this request (see `finishing`).
            unsafe { recv.finish() }
        });
        start_coll(
            name,
            Some(Coll::Allgather),
            comm,
            c,
            req,
            move |c| coll::build_allgather(c, inp, out, rn, &dtv, s),
            Some(finish),
        )
    })
}

/// `MPI_Ireduce_scatter(_block)`: `counts(i)` is rank i's count.
#[allow(clippy::too_many_arguments)]
unsafe fn ireduce_scatter_common(
    name: &'static str,
    send: *const c_void,
    recv: *mut c_void,
    counts: &dyn Fn(usize) -> Result<usize>,
    kind: Kind,
    dt: c_int,
    op: c_int,
    comm: c_int,
    c: Arc<Comm>,
    req: *mut c_int,
) -> Result<()> {
    req_arg(req)?;
    let stat = Some(match kind {
        Kind::ReduceScatterBlock => Coll::ReduceScatterBlock,
        _ => Coll::ReduceScatter,
    });
    // SAFETY: the caller's contract for the buffers and the count array.
    let mut io = unsafe { ReduceScatterIo::new(send, recv, counts, dt, op, &c) }?;
    let s = sig(kind, io.total, io.view.handle, op, -1);
    let (inp, out, red) = (io.input, io.output.ptr(), io.red);
    let (counts, dtv) = (std::mem::take(&mut io.counts), io.view.dt);
    let keep = Unsent(io);
    let finish: Box<dyn FnOnce() + Send> = Box::new(move || {
        let io = keep.take();
        // SAFETY: staged from recvbuf for this request (see `finishing`).
        unsafe { io.output.finish() }
    });
    start_coll(
        name,
        stat,
        comm,
        c,
        req,
        move |c| coll::build_reduce_scatter(c, inp, out, &counts, &dtv, red, s),
        Some(finish),
    )
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn ireduce_scatter(
    name: &'static str,
    send: *const c_void,
    recv: *mut c_void,
    counts: RecvCounts,
    dt: c_int,
    op: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    stats::handled_nb(Coll::ReduceScatter);
    guard(name, Some(comm), || {
        host_only(&[send, recv as *const c_void])?;
        let c = comm_of(runtime::get()?, comm)?;
        let get = |i: usize| -> Result<usize> {
            // SAFETY: MPI requires recvcounts to hold one element per rank (i < size).
            let v = match counts {
                RecvCounts::Int(p) if !p.is_null() => Count::from(unsafe { *p.add(i) }),
                RecvCounts::Count(p) if !p.is_null() => unsafe { *p.add(i) },
                _ => return Err(Error::new(Class::Arg, "recvcounts is NULL")),
            };
            count_arg(v, &format!("recvcounts[{i}]"))
        };
        let kind = Kind::ReduceScatter;
        // SAFETY: pointers are validated inside before use.
        unsafe { ireduce_scatter_common(name, send, recv, &get, kind, dt, op, comm, c, req) }
    })
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn ireduce_scatter_block(
    name: &'static str,
    send: *const c_void,
    recv: *mut c_void,
    count: Count,
    dt: c_int,
    op: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    stats::handled_nb(Coll::ReduceScatterBlock);
    guard(name, Some(comm), || {
        host_only(&[send, recv as *const c_void])?;
        let c = comm_of(runtime::get()?, comm)?;
        let n = count_arg(count, "recvcount")?;
        let kind = Kind::ReduceScatterBlock;
        // SAFETY: pointers are validated inside before use.
        unsafe { ireduce_scatter_common(name, send, recv, &|_| Ok(n), kind, dt, op, comm, c, req) }
    })
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn iallgatherv(
    name: &'static str,
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    recv: *mut c_void,
    rcounts: Ints,
    displs: Ints,
    rdt: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    guard(name, Some(comm), || {
        host_only(&[send, recv as *const c_void])?;
        let c = comm_of(runtime::get()?, comm)?;
        let (n, r) = (c.size(), c.rank);
        // SAFETY: MPI requires both arrays to hold one element per rank.
        let counts = unsafe { rcounts.counts(n, "recvcounts") }?;
        // SAFETY: as above.
        let displs = unsafe { displs.read(n, "displs") }?;
        let rs = Side::new(rdt, "recvtype")?;
        let names = ["recvbuf", "recvcounts", "displs"];
        let laid = laid_out(recv, &rs, &counts, &displs, names)?;
        let own = own_send(send, scount, sdt, recv, &laid, r)?;
        req_arg(req)?;
        // Fits: every signature is at most its block's bytes, which add up to an isize.
        let total: usize = laid.typed.iter().map(|t| t.sig).sum();
        let rb = rs.v.blocks(recv, &laid.items);
        // SAFETY: MPI: sendbuf holds `sendcount` items to read.
        let st = own.map(|s| unsafe { s.side.v.stage(send, s.count, true, false) });
        let sp = match &st {
            Some(s) => s.ptr() as *const u8,
            None => {
                // SAFETY: in place, the own block is read from its place in recvbuf.
                unsafe { rb.load(r) };
                rb.spans()[r].0
            }
        };
        let spans = rb.spans().to_vec();
        let skip = st.is_none().then_some(r);
        let keep = Unsent((st, rb));
        let finish: Box<dyn FnOnce() + Send> = Box::new(move || {
            let (_st, rb) = keep.take();
            // SAFETY: MPI: recvbuf holds every rank's block, to write, until completion.
            unsafe { rb.store_all_but(skip) }
        });
        let s = sig(Kind::Allgatherv, total, BYTE, 0, -1);
        start_coll(
            name,
            None,
            comm,
            c,
            req,
            move |c| coll::build_allgatherv(c, sp, &spans, s),
            Some(finish),
        )
    })
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn ialltoall(
    name: &'static str,
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    recv: *mut c_void,
    rcount: Count,
    rdt: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    guard(name, Some(comm), || {
        host_only(&[send, recv as *const c_void])?;
        let c = comm_of(runtime::get()?, comm)?;
        let (rs, rlaid, sendside) = alltoall_sides(send, scount, sdt, recv, rcount, rdt, &c)?;
        req_arg(req)?;
        let s = sig(Kind::Alltoall, rlaid.typed[0].sig, BYTE, 0, -1);
        let rb = rs.v.blocks(recv, &rlaid.items);
        let sb = sendside.as_ref().map(|(ss, l)| ss.v.blocks(send, &l.items));
        // SAFETY: MPI: sendbuf holds every rank's block, to read (in place, recvbuf does).
        unsafe { sb.as_ref().unwrap_or(&rb).load_all_but(None) };
        let ss = read_only(sb.as_ref().unwrap_or(&rb).spans());
        let rspans = rb.spans().to_vec();
        let keep = Unsent((sb, rb));
        let finish: Box<dyn FnOnce() + Send> = Box::new(move || {
            let (_sb, rb) = keep.take();
            // SAFETY: MPI: recvbuf holds every rank's block, to write, until completion.
            unsafe { rb.store_all_but(None) }
        });
        start_coll(
            name,
            None,
            comm,
            c,
            req,
            move |c| coll::build_alltoallv(c, &ss, &rspans, s),
            Some(finish),
        )
    })
}

// ---------------------------------------------------------------------------------------------
// Point-to-point

#[allow(clippy::too_many_arguments)]
pub unsafe fn isend(
    name: &'static str,
    buf: *const c_void,
    count: Count,
    dt: c_int,
    dest: c_int,
    tag: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    guard(name, Some(comm), || {
        host_only(&[buf])?;
        let c = any_comm_of(runtime::get()?, comm)?;
        let (msg, staged) = outgoing(buf, count, dt, ["buf", "count", "datatype"])?;
        let tag = send_tag_arg(tag, "tag")?;
        let dest = dest_arg(dest, &c, "dest")?;
        req_arg(req)?;
        let ep = c.ep.clone();
        let r = match dest {
            Some(dest) => {
                let keep: Box<dyn Send> = Box::new(Unsent(staged));
                let op = p2p::isend(c, dest, tag, &msg, Some(keep))?;
                Request::new(name, comm, false, ep, Box::new(op))
            }
            None => Request::completed(name, comm, ep, Completion::empty()),
        };
        publish(Arc::new(r), req)
    })
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn irecv(
    name: &'static str,
    buf: *mut c_void,
    count: Count,
    dt: c_int,
    source: c_int,
    tag: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    guard(name, Some(comm), || {
        host_only(&[buf])?;
        let c = any_comm_of(runtime::get()?, comm)?;
        let (into, staged) = incoming(buf, count, dt, ["buf", "count", "datatype"])?;
        let tag = recv_tag_arg(tag, "tag")?;
        let source = source_arg(source, &c, "source")?;
        req_arg(req)?;
        let ep = c.ep.clone();
        let r = match source {
            Some(source) => {
                let (staged, cap) = (Unsent(staged), into.cap);
                let finish: p2p::RecvFinish = Box::new(move |r| unstage(staged.take(), r, cap));
                let op = p2p::irecv(c, source, tag, &into, Some(finish));
                Request::new(name, comm, false, ep, Box::new(op))
            }
            None => {
                let done = Completion {
                    source: h::PROC_NULL,
                    tag: ANY_TAG,
                    ..Completion::empty()
                };
                Request::completed(name, comm, ep, done)
            }
        };
        publish(Arc::new(r), req)
    })
}

// ---------------------------------------------------------------------------------------------
// Completion

/// Runs a completion call: panics become `MPI_ERR_INTERN`; an error goes to the error handler
/// of the communicator it names (the world's for `None`).
fn completing(name: &'static str, body: impl FnOnce() -> std::result::Result<(), Failed>) -> c_int {
    let res = catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|p| {
        let what = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        Err(Failed(
            None,
            Error::intern(format!("internal error (panic): {what}")),
        ))
    });
    match res {
        Ok(()) => 0,
        Err(Failed(comm, e)) => crate::abi::raise(name, comm, e.class as c_int, &e.to_string()),
    }
}

/// An error and the communicator whose handler gets it.
struct Failed(Option<c_int>, Error);

impl From<Error> for Failed {
    fn from(e: Error) -> Failed {
        Failed(None, e)
    }
}

/// A status output: `None` for `MPI_STATUS_IGNORE`; NULL is an error.
fn status_out(p: *mut Status) -> Result<Option<*mut Status>> {
    super::p2p::status_arg(p)
}

/// The `i`-th of an array of statuses (`None` for `MPI_STATUSES_IGNORE`).
fn statuses_out(p: *mut Status, count: usize) -> Result<Option<*mut Status>> {
    if count > 0 && p.is_null() {
        return Err(Error::new(
            Class::Arg,
            "array_of_statuses is NULL (use MPI_STATUSES_IGNORE)",
        ));
    }
    Ok((p as usize != STATUS_IGNORE && count > 0).then_some(p))
}

fn nth(statuses: Option<*mut Status>, i: usize) -> Option<*mut Status> {
    statuses.map(|p| p.wrapping_add(i))
}

/// Fills a status with a completion (unless ignored); `MPI_ERROR` is left alone.
fn fill(st: Option<*mut Status>, c: &Completion) {
    set_status(st, c.source, c.tag, c.bytes);
    if let Some(p) = st {
        // SAFETY: a status the caller supplied for this output (checked non-NULL, not ignored).
        unsafe { (*p).count_hi_and_cancelled |= c_int::from(c.cancelled) };
    }
}

fn set_error(st: Option<*mut Status>, code: c_int) {
    if let Some(p) = st {
        // SAFETY: as in `fill`.
        unsafe { (*p).error = code };
    }
}

fn empty() -> Completion {
    Completion::empty()
}

/// A truncated receive is an error of its completion.
fn outcome_of(r: &Request) -> Result<Completion> {
    let c = r.outcome().expect("completed")?;
    if c.truncated {
        return Err(Error::new(
            Class::Truncate,
            format!(
                "{}: message truncated: rank {} sent more than the receive buffer holds ({} bytes stored)",
                r.name, c.source, c.bytes
            ),
        ));
    }
    Ok(c)
}

/// Reads `count` request handles and looks them up (all checked before anything waits).
unsafe fn requests(count: c_int, reqs: *mut c_int) -> Result<(usize, Vec<Option<Arc<Request>>>)> {
    let n = usize::try_from(count)
        .map_err(|_| Error::new(Class::Count, format!("count is negative ({count})")))?;
    if n > 0 && reqs.is_null() {
        return Err(Error::new(Class::Arg, "array_of_requests is NULL"));
    }
    let list = (0..n)
        .map(|i| {
            // SAFETY: MPI: the array holds `count` requests.
            let h = unsafe { *reqs.add(i) };
            request::get(h, &format!("array_of_requests[{i}]"))
        })
        .collect::<Result<_>>()?;
    Ok((n, list))
}

/// Completes request `i` of the array: releases its handle and sets it to `MPI_REQUEST_NULL`
/// (a freed, persistent-less request). Returns its outcome.
unsafe fn retire(reqs: *mut c_int, i: usize, r: &Request) -> Result<Completion> {
    let out = outcome_of(r);
    if let Some(p) = r.take_profile() {
        stats::profile::completed(p);
    }
    // SAFETY: MPI: the array holds the request at `i`.
    unsafe {
        request::remove(*reqs.add(i));
        *reqs.add(i) = REQUEST_NULL;
    }
    out
}

fn ep_of(list: &[Option<Arc<Request>>]) -> Option<Arc<crate::endpoint::Endpoint>> {
    list.iter().flatten().next().map(|r| r.endpoint().clone())
}

pub unsafe fn wait(req: *mut c_int, status: *mut Status) -> c_int {
    completing("MPI_Wait", || {
        if req.is_null() {
            return Err(Error::new(Class::Arg, "request is NULL").into());
        }
        runtime::get()?;
        let st = status_out(status)?;
        // SAFETY: a non-NULL MPI_Request of the caller.
        let Some(r) = request::get(unsafe { *req }, "request")? else {
            fill(st, &empty());
            return Ok(());
        };
        progress::wait_until(r.endpoint(), || r.is_done());
        // SAFETY: `req` is an array of one.
        match unsafe { retire(req, 0, &r) } {
            Ok(c) => {
                fill(st, &c);
                Ok(())
            }
            Err(e) => Err(Failed(Some(r.comm), e)),
        }
    })
}

pub unsafe fn test(req: *mut c_int, flag: *mut c_int, status: *mut Status) -> c_int {
    completing("MPI_Test", || {
        if req.is_null() || flag.is_null() {
            return Err(Error::new(Class::Arg, "request or flag is NULL").into());
        }
        runtime::get()?;
        let st = status_out(status)?;
        // SAFETY: a non-NULL MPI_Request of the caller.
        let Some(r) = request::get(unsafe { *req }, "request")? else {
            fill(st, &empty());
            // SAFETY: non-NULL flag of the caller.
            unsafe { *flag = 1 };
            return Ok(());
        };
        progress::poke();
        let done = r.is_done();
        // SAFETY: non-NULL flag of the caller.
        unsafe { *flag = c_int::from(done) };
        if !done {
            return Ok(());
        }
        // SAFETY: `req` is an array of one.
        match unsafe { retire(req, 0, &r) } {
            Ok(c) => {
                fill(st, &c);
                Ok(())
            }
            Err(e) => Err(Failed(Some(r.comm), e)),
        }
    })
}

/// Completes every finished request of the array among `which`, filling their statuses; the
/// first error becomes `MPI_ERR_IN_STATUS` (each status's `MPI_ERROR` says which).
unsafe fn retire_all(
    reqs: *mut c_int,
    list: &[Option<Arc<Request>>],
    which: &[usize],
    statuses: Option<*mut Status>,
    slot: impl Fn(usize, usize) -> usize,
) -> std::result::Result<(), Failed> {
    let mut first: Option<(c_int, Error)> = None;
    let mut codes = Vec::with_capacity(which.len());
    for (k, &i) in which.iter().enumerate() {
        let st = nth(statuses, slot(k, i));
        let Some(r) = &list[i] else {
            fill(st, &empty());
            codes.push((st, 0));
            continue;
        };
        // SAFETY: `reqs` holds the array `list` was read from.
        match unsafe { retire(reqs, i, r) } {
            Ok(c) => {
                fill(st, &c);
                codes.push((st, 0));
            }
            Err(e) => {
                codes.push((st, e.class as c_int));
                if first.is_none() {
                    first = Some((r.comm, e));
                }
            }
        }
    }
    let Some((comm, e)) = first else {
        return Ok(());
    };
    for (st, code) in codes {
        set_error(st, code);
    }
    Err(Failed(
        Some(comm),
        Error::new(Class::InStatus, format!("a request failed: {}", e.msg)),
    ))
}

pub unsafe fn waitall(count: c_int, reqs: *mut c_int, statuses: *mut Status) -> c_int {
    completing("MPI_Waitall", || {
        runtime::get()?;
        // SAFETY: MPI: the array holds `count` requests.
        let (n, list) = unsafe { requests(count, reqs) }?;
        let sts = statuses_out(statuses, n)?;
        if let Some(ep) = ep_of(&list) {
            progress::wait_until(&ep, || list.iter().flatten().all(|r| r.is_done()));
        }
        let all: Vec<usize> = (0..n).collect();
        // SAFETY: as above.
        unsafe { retire_all(reqs, &list, &all, sts, |_, i| i) }
    })
}

pub unsafe fn testall(
    count: c_int,
    reqs: *mut c_int,
    flag: *mut c_int,
    statuses: *mut Status,
) -> c_int {
    completing("MPI_Testall", || {
        runtime::get()?;
        if flag.is_null() {
            return Err(Error::new(Class::Arg, "flag is NULL").into());
        }
        // SAFETY: MPI: the array holds `count` requests.
        let (n, list) = unsafe { requests(count, reqs) }?;
        let sts = statuses_out(statuses, n)?;
        progress::poke();
        let done = list.iter().flatten().all(|r| r.is_done());
        // SAFETY: non-NULL flag of the caller.
        unsafe { *flag = c_int::from(done) };
        if !done {
            return Ok(());
        }
        let all: Vec<usize> = (0..n).collect();
        // SAFETY: as above.
        unsafe { retire_all(reqs, &list, &all, sts, |_, i| i) }
    })
}

/// The index of the first completed request, `None` if none is; `Some(None)`-like
/// `UNDEFINED` handling is the caller's.
fn first_done(list: &[Option<Arc<Request>>]) -> Option<usize> {
    list.iter()
        .position(|r| r.as_ref().is_some_and(|r| r.is_done()))
}

unsafe fn any_common(
    name: &'static str,
    count: c_int,
    reqs: *mut c_int,
    index: *mut c_int,
    flag: Option<*mut c_int>,
    status: *mut Status,
) -> c_int {
    completing(name, || {
        runtime::get()?;
        if index.is_null() || flag.is_some_and(|f| f.is_null()) {
            return Err(Error::new(Class::Arg, "index or flag is NULL").into());
        }
        // SAFETY: MPI: the array holds `count` requests.
        let (_, list) = unsafe { requests(count, reqs) }?;
        let st = status_out(status)?;
        let set = |i: c_int, f: bool| {
            // SAFETY: non-NULL outputs of the caller (checked above).
            unsafe {
                *index = i;
                if let Some(p) = flag {
                    *p = c_int::from(f);
                }
            }
        };
        let Some(ep) = ep_of(&list) else {
            // No active request: flag true, index MPI_UNDEFINED, empty status.
            set(UNDEFINED, true);
            fill(st, &empty());
            return Ok(());
        };
        if flag.is_some() {
            progress::poke();
        } else {
            progress::wait_until(&ep, || first_done(&list).is_some());
        }
        let Some(i) = first_done(&list) else {
            set(UNDEFINED, false);
            return Ok(());
        };
        set(i as c_int, true);
        let r = list[i].as_ref().expect("active");
        // SAFETY: as above.
        match unsafe { retire(reqs, i, r) } {
            Ok(c) => {
                fill(st, &c);
                Ok(())
            }
            Err(e) => Err(Failed(Some(r.comm), e)),
        }
    })
}

pub unsafe fn waitany(
    count: c_int,
    reqs: *mut c_int,
    index: *mut c_int,
    status: *mut Status,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { any_common("MPI_Waitany", count, reqs, index, None, status) }
}

pub unsafe fn testany(
    count: c_int,
    reqs: *mut c_int,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut Status,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { any_common("MPI_Testany", count, reqs, index, Some(flag), status) }
}

unsafe fn some_common(
    name: &'static str,
    blocking: bool,
    count: c_int,
    reqs: *mut c_int,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut Status,
) -> c_int {
    completing(name, || {
        runtime::get()?;
        if outcount.is_null() {
            return Err(Error::new(Class::Arg, "outcount is NULL").into());
        }
        // SAFETY: MPI: the array holds `count` requests.
        let (n, list) = unsafe { requests(count, reqs) }?;
        if n > 0 && indices.is_null() {
            return Err(Error::new(Class::Arg, "array_of_indices is NULL").into());
        }
        let sts = statuses_out(statuses, n)?;
        let Some(ep) = ep_of(&list) else {
            // SAFETY: non-NULL output of the caller.
            unsafe { *outcount = UNDEFINED };
            return Ok(());
        };
        let done = || -> Vec<usize> {
            (0..n)
                .filter(|&i| list[i].as_ref().is_some_and(|r| r.is_done()))
                .collect()
        };
        if blocking {
            progress::wait_until(&ep, || !done().is_empty());
        } else {
            progress::poke();
        }
        let which = done();
        // SAFETY: MPI: `indices` holds `count` entries; `outcount` is the caller's.
        unsafe {
            *outcount = which.len() as c_int;
            for (k, &i) in which.iter().enumerate() {
                *indices.add(k) = i as c_int;
            }
        }
        // Statuses go in the order of the indices.
        // SAFETY: as above.
        unsafe { retire_all(reqs, &list, &which, sts, |k, _| k) }
    })
}

pub unsafe fn waitsome(
    count: c_int,
    reqs: *mut c_int,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut Status,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        some_common(
            "MPI_Waitsome",
            true,
            count,
            reqs,
            outcount,
            indices,
            statuses,
        )
    }
}

pub unsafe fn testsome(
    count: c_int,
    reqs: *mut c_int,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut Status,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        some_common(
            "MPI_Testsome",
            false,
            count,
            reqs,
            outcount,
            indices,
            statuses,
        )
    }
}

pub unsafe fn request_free(req: *mut c_int) -> c_int {
    completing("MPI_Request_free", || {
        if req.is_null() {
            return Err(Error::new(Class::Arg, "request is NULL").into());
        }
        runtime::get()?;
        // SAFETY: a non-NULL MPI_Request of the caller.
        let h = unsafe { *req };
        if request::get(h, "request")?.is_none() {
            return Err(Error::new(Class::Request, "request is MPI_REQUEST_NULL").into());
        }
        // An active request goes on to complete; only the handle goes.
        request::remove(h);
        // SAFETY: as above.
        unsafe { *req = REQUEST_NULL };
        Ok(())
    })
}

pub unsafe fn request_get_status(req: c_int, flag: *mut c_int, status: *mut Status) -> c_int {
    completing("MPI_Request_get_status", || {
        runtime::get()?;
        if flag.is_null() {
            return Err(Error::new(Class::Arg, "flag is NULL").into());
        }
        let st = status_out(status)?;
        let Some(r) = request::get(req, "request")? else {
            fill(st, &empty());
            // SAFETY: non-NULL flag of the caller.
            unsafe { *flag = 1 };
            return Ok(());
        };
        progress::poke();
        let done = r.is_done();
        // SAFETY: non-NULL flag of the caller.
        unsafe { *flag = c_int::from(done) };
        if done {
            // The request stays: a later Wait/Test completes it.
            match outcome_of(&r) {
                Ok(c) => fill(st, &c),
                Err(e) => return Err(Failed(Some(r.comm), e)),
            }
        }
        Ok(())
    })
}

pub unsafe fn cancel(req: *mut c_int) -> c_int {
    completing("MPI_Cancel", || {
        if req.is_null() {
            return Err(Error::new(Class::Arg, "request is NULL").into());
        }
        runtime::get()?;
        // SAFETY: a non-NULL MPI_Request of the caller.
        let Some(r) = request::get(unsafe { *req }, "request")? else {
            return Err(Error::new(Class::Request, "request is MPI_REQUEST_NULL").into());
        };
        if r.collective {
            return Err(Failed(
                Some(r.comm),
                Error::new(
                    Class::Request,
                    format!("{} requests cannot be cancelled", r.name),
                ),
            ));
        }
        // A receive that has not matched a message completes as cancelled; anything else
        // completes normally (MPI allows a cancel to fail).
        r.cancel();
        Ok(())
    })
}

pub unsafe fn test_cancelled(status: *const Status, flag: *mut c_int) -> c_int {
    completing("MPI_Test_cancelled", || {
        if status.is_null() || status as usize == STATUS_IGNORE || flag.is_null() {
            return Err(
                Error::new(Class::Arg, "status or flag is NULL or MPI_STATUS_IGNORE").into(),
            );
        }
        // SAFETY: non-NULL status and flag of the caller.
        unsafe { *flag = (*status).count_hi_and_cancelled & 1 };
        Ok(())
    })
}
