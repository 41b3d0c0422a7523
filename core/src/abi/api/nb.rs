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

use super::p2p::{
    dest_arg, incoming, outgoing, recv_tag_arg, send_tag_arg, set_status, source_arg, unstage,
    Status, ANY_TAG, STATUS_IGNORE,
};
use super::plan::Plan;
use super::*;
use crate::abi::guard;
use crate::error::{Class, Error, Result};
use crate::p2p;
use crate::progress;
use crate::request::{self, Completion, Request, REQUEST_NULL};
use crate::runtime;
use crate::stats;

/// `MPI_UNDEFINED` (MPICH ABI).
const UNDEFINED: c_int = -32766;

/// Carries staged buffers (raw pointers into the caller's memory or staging memory) into the
/// completion closure, which may run on the progress thread.
pub(crate) struct Unsent<T>(pub(crate) T);

// SAFETY: the wrapped values are staging descriptors owned by exactly one request; MPI
// forbids the caller to touch the buffers they point into until the request completes, and
// the request's lock lets one thread at a time use them.
unsafe impl<T> Send for Unsent<T> {}

impl<T> Unsent<T> {
    /// The value (a method, so a closure captures the whole wrapper, not its field).
    pub(crate) fn take(self) -> T {
        self.0
    }

    /// The value, in place (a method, as [`Unsent::take`]).
    pub(crate) fn get(&mut self) -> &mut T {
        &mut self.0
    }
}

/// The request output argument: checked before anything starts.
pub(crate) fn req_arg(req: *mut c_int) -> Result<()> {
    if req.is_null() {
        return Err(Error::new(Class::Arg, "request is NULL"));
    }
    Ok(())
}

/// Registers a started request and writes its handle.
pub(crate) fn publish(r: Arc<Request>, req: *mut c_int) -> Result<()> {
    let h = request::insert(r.clone())?;
    // SAFETY: `req` is non-NULL (req_arg) and points to the caller's MPI_Request.
    unsafe { req.write(h) };
    progress::start(&r)
}

/// Starts a nonblocking collective: launches its plan and publishes the request.
pub(super) fn start_coll(
    name: &'static str,
    comm: c_int,
    c: Arc<Comm>,
    req: *mut c_int,
    mut plan: Plan,
) -> Result<()> {
    let ep = c.ep.clone();
    let pending = plan.stat.and_then(stats::profile::begin);
    let op = plan.launch(&c)?;
    let r = Request::new(name, comm, true, ep, op);
    publish(Arc::new(r.profiled(pending.map(|p| p.built()))), req)
}

/// A completion closure that unpacks `st` (nothing to do for contiguous datatypes).
pub(crate) fn finishing(st: Staged) -> Option<Box<dyn FnOnce() + Send>> {
    let st = Unsent(st);
    Some(Box::new(move || {
        let st = st.take();
        // SAFETY: the staging was made from the caller's buffer for this request, which MPI
        // keeps valid and untouched until the request completes.
        unsafe { st.finish() }
    }))
}

/// The body of a blocking collective run from its plan (the neighbor collectives, whose entry
/// points are generated; Gather(v), Scatter(v), Allgatherv, Alltoall(v,w)): the
/// communicator (a plan refuses the kinds it does not take), the checked plan, then the
/// schedule, driven to its end on the caller's thread like any blocking collective's (the same
/// spin-then-sleep wait and liveness checks; no request, and no progress thread started for it).
pub fn run_blocking(
    name: &'static str,
    comm: c_int,
    make: impl FnOnce(&Comm) -> Result<Plan>,
) -> c_int {
    guard(name, Some(comm), || {
        let c = any_comm_of(runtime::get()?, comm)?;
        make(&c)?.run(&c)
    })
}

/// The body of every nonblocking collective `MPI_Ixxx` (its entry point is generated, with
/// `make` the collective's [`super::plan`] function): the communicator, the checked plan, the
/// request argument, then the start.
pub fn start_nonblocking(
    name: &'static str,
    comm: c_int,
    req: *mut c_int,
    make: impl FnOnce(&Comm) -> Result<Plan>,
) -> c_int {
    guard(name, Some(comm), || {
        let c = any_comm_of(runtime::get()?, comm)?;
        let plan = make(&c)?;
        req_arg(req)?;
        if let Some(stat) = plan.stat {
            stats::handled_nb(stat);
        }
        // In the nonblocking sequence (see `Comm::nonblocking`).
        start_coll(name, comm, c.nonblocking().clone(), req, plan)
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
    isend_in_mode(
        name,
        buf,
        count,
        dt,
        dest,
        tag,
        comm,
        req,
        p2p::Mode::Standard,
    )
}

/// `MPI_Isend` or `MPI_Issend`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn isend_in_mode(
    name: &'static str,
    buf: *const c_void,
    count: Count,
    dt: c_int,
    dest: c_int,
    tag: c_int,
    comm: c_int,
    req: *mut c_int,
    mode: p2p::Mode,
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
                let op = p2p::isend(c, dest, tag, &msg, mode, Some(keep))?;
                if op.finished() {
                    // Eager: the whole message is out; nothing is left to step.
                    Request::completed(name, comm, ep, Completion::empty())
                } else {
                    Request::new(name, comm, false, ep, Box::new(op))
                }
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
pub(crate) fn completing(
    name: &'static str,
    body: impl FnOnce() -> std::result::Result<(), Failed>,
) -> c_int {
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
pub(crate) struct Failed(pub(crate) Option<c_int>, pub(crate) Error);

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

/// MPI's empty status (a null or inactive request): source `MPI_ANY_SOURCE`, tag
/// `MPI_ANY_TAG`, error `MPI_SUCCESS`, count 0, not cancelled.
fn fill_empty(st: Option<*mut Status>) {
    fill(st, &Completion::empty());
    set_error(st, 0);
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
    let list = request::get_all(
        // SAFETY: MPI: the array holds `count` requests.
        (0..n).map(|i| unsafe { *reqs.add(i) }),
        |i| format!("array_of_requests[{i}]"),
    )?;
    Ok((n, list))
}

/// Completes request `i` of the array: releases its handle and sets it to `MPI_REQUEST_NULL`,
/// or, for a persistent request, makes it inactive (the handle stays). Returns its outcome.
unsafe fn retire(reqs: *mut c_int, i: usize, r: &Request) -> Result<Completion> {
    let out = outcome_of(r);
    if let Some(p) = r.take_profile() {
        stats::profile::completed(p);
    }
    if r.deactivate() {
        return out;
    }
    // SAFETY: MPI: the array holds the request at `i`.
    unsafe {
        request::remove(*reqs.add(i));
        *reqs.add(i) = REQUEST_NULL;
    }
    out
}

/// Whether a request counts in Waitany/Waitsome/Testany/Testsome: not `MPI_REQUEST_NULL`,
/// not an inactive persistent request.
fn active(r: &Option<Arc<Request>>) -> bool {
    r.as_ref().is_some_and(|r| !r.is_inactive())
}

fn ep_of(list: &[Option<Arc<Request>>]) -> Option<Arc<crate::endpoint::Endpoint>> {
    list.iter()
        .filter(|r| active(r))
        .flatten()
        .next()
        .map(|r| r.endpoint().clone())
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
            fill_empty(st);
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
            fill_empty(st);
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
            fill_empty(st);
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
        .position(|r| active(r) && r.as_ref().is_some_and(|r| r.is_done()))
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
            fill_empty(st);
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
                .filter(|&i| active(&list[i]) && list[i].as_ref().is_some_and(|r| r.is_done()))
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
        let Some(r) = request::get(h, "request")? else {
            return Err(Error::new(Class::Request, "request is MPI_REQUEST_NULL").into());
        };
        // MPI makes freeing an active persistent collective request erroneous: it is refused
        // (the request stays valid), as its schedule's buffers belong to the caller.
        if r.collective && r.is_persistent() && !r.is_inactive() {
            return Err(Failed(
                Some(r.comm),
                Error::new(
                    Class::Request,
                    format!(
                        "the {} request is active: complete it (MPI_Wait/MPI_Test) before freeing it",
                        r.name
                    ),
                ),
            ));
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
            fill_empty(st);
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
        r.cancel().map_err(|e| Failed(Some(r.comm), e))
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

// ---------------------------------------------------------------------------------------------
// MPI 4.1: MPI_Request_get_status_any / _all / _some: as MPI_Testany / _all / _some, but the
// completed requests stay (a later Wait/Test completes them) and the handles are not written.

/// Fills the statuses of the completed requests `which` (slot `k` for the `k`-th) without
/// releasing them; failures as in [`retire_all`] (`MPI_ERR_IN_STATUS`).
fn report_all(
    list: &[Option<Arc<Request>>],
    which: &[usize],
    statuses: Option<*mut Status>,
    slot: impl Fn(usize, usize) -> usize,
) -> std::result::Result<(), Failed> {
    let mut first: Option<(c_int, Error)> = None;
    let mut codes = Vec::with_capacity(which.len());
    for (k, &i) in which.iter().enumerate() {
        let st = nth(statuses, slot(k, i));
        let outcome = list[i].as_ref().map(|r| (r.comm, outcome_of(r)));
        match outcome {
            None => {
                fill_empty(st);
                codes.push((st, 0));
            }
            Some((_, Ok(c))) => {
                fill(st, &c);
                codes.push((st, 0));
            }
            Some((comm, Err(e))) => {
                codes.push((st, e.class as c_int));
                first.get_or_insert((comm, e));
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

pub unsafe fn request_get_status_any(
    count: c_int,
    array_of_requests: *const c_int,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut Status,
) -> c_int {
    completing("MPI_Request_get_status_any", || {
        runtime::get()?;
        if index.is_null() || flag.is_null() {
            return Err(Error::new(Class::Arg, "index or flag is NULL").into());
        }
        // SAFETY: MPI: the array holds `count` requests (only read).
        let (_, list) = unsafe { requests(count, array_of_requests.cast_mut()) }?;
        let st = status_out(status)?;
        let set = |i: c_int, f: bool| {
            // SAFETY: non-NULL outputs of the caller (checked above).
            unsafe {
                *index = i;
                *flag = c_int::from(f);
            }
        };
        if ep_of(&list).is_none() {
            set(UNDEFINED, true);
            fill_empty(st);
            return Ok(());
        }
        progress::poke();
        match first_done(&list) {
            Some(i) => {
                set(i as c_int, true);
                let r = list[i].as_ref().expect("active");
                match outcome_of(r) {
                    Ok(c) => {
                        fill(st, &c);
                        Ok(())
                    }
                    Err(e) => Err(Failed(Some(r.comm), e)),
                }
            }
            None => {
                set(UNDEFINED, false);
                Ok(())
            }
        }
    })
}

pub unsafe fn request_get_status_all(
    count: c_int,
    array_of_requests: *const c_int,
    flag: *mut c_int,
    array_of_statuses: *mut Status,
) -> c_int {
    completing("MPI_Request_get_status_all", || {
        runtime::get()?;
        if flag.is_null() {
            return Err(Error::new(Class::Arg, "flag is NULL").into());
        }
        // SAFETY: MPI: the array holds `count` requests (only read).
        let (n, list) = unsafe { requests(count, array_of_requests.cast_mut()) }?;
        let sts = statuses_out(array_of_statuses, n)?;
        progress::poke();
        let all = list.iter().flatten().all(|r| r.is_done());
        // SAFETY: non-NULL output of the caller.
        unsafe { *flag = c_int::from(all) };
        if !all {
            return Ok(());
        }
        let which: Vec<usize> = (0..n).collect();
        report_all(&list, &which, sts, |_, i| i)
    })
}

pub unsafe fn request_get_status_some(
    incount: c_int,
    array_of_requests: *const c_int,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut Status,
) -> c_int {
    completing("MPI_Request_get_status_some", || {
        runtime::get()?;
        if outcount.is_null() {
            return Err(Error::new(Class::Arg, "outcount is NULL").into());
        }
        // SAFETY: MPI: the array holds `incount` requests (only read).
        let (n, list) = unsafe { requests(incount, array_of_requests.cast_mut()) }?;
        if n > 0 && array_of_indices.is_null() {
            return Err(Error::new(Class::Arg, "array_of_indices is NULL").into());
        }
        let sts = statuses_out(array_of_statuses, n)?;
        if ep_of(&list).is_none() {
            // SAFETY: non-NULL output of the caller.
            unsafe { *outcount = UNDEFINED };
            return Ok(());
        }
        progress::poke();
        let which: Vec<usize> = (0..n)
            .filter(|&i| list[i].as_ref().is_some_and(|r| r.is_done()))
            .collect();
        // SAFETY: MPI: `array_of_indices` holds `incount` entries; `outcount` is the caller's.
        unsafe {
            *outcount = which.len() as c_int;
            for (k, &i) in which.iter().enumerate() {
                *array_of_indices.add(k) = i as c_int;
            }
        }
        report_all(&list, &which, sts, |k, _| k)
    })
}
