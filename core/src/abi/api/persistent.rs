//! Persistent requests: the MPI 4.0 persistent collectives (`MPI_Bcast_init`, ...), persistent
//! point-to-point (`MPI_Send_init`, `MPI_Ssend_init`, `MPI_Bsend_init`, `MPI_Rsend_init`,
//! `MPI_Recv_init`), and `MPI_Start`,
//! `MPI_Startall`.
//!
//! An `_init` call checks its arguments exactly as the nonblocking form does and returns an
//! inactive request (see [`crate::request`]); nothing is sent and no call number is taken.
//! Every `MPI_Start` stages the buffers as they are then and starts a fresh operation: a
//! collective takes the communicator's next call number, as a new `MPI_Ixxx` would, so the
//! ranks' starts match in order. `MPI_Wait`/`MPI_Test` complete it and leave it inactive with
//! its handle valid; `MPI_Request_free` releases it. Freeing an active persistent collective
//! request is refused with `MPI_ERR_REQUEST` (MPI makes it erroneous; the request stays
//! usable); an active persistent send or receive may be freed as a nonblocking one can (it
//! completes on its own).
//!
//! `MPI_Rsend_init` is a standard-mode send, as `MPI_Rsend` is. The `info` argument of the
//! persistent collectives is checked (a valid info object or `MPI_INFO_NULL`) and otherwise
//! ignored.
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use super::buffered::buffer_and_send;
use super::info::info_arg;
use super::nb::{completing, req_arg, Failed, Unsent};
use super::p2p::{
    dest_arg, incoming_typed, outgoing_typed, recv_tag_arg, send_tag_arg, source_arg, unstage,
    ANY_TAG,
};
use super::plan::Plan;
use super::*;
use crate::abi::guard;
use crate::engine::{Step, Wait};
use crate::error::{Class, Error, Result};
use crate::p2p;
use crate::progress;
use crate::request::{self, Completion, Op, Request, Starter};

/// Registers an inactive persistent request and writes its handle.
fn register(r: Request, req: *mut c_int) -> Result<()> {
    let h = request::insert(Arc::new(r))?;
    // SAFETY: `req` is non-NULL (req_arg) and points to the caller's MPI_Request.
    unsafe { req.write(h) };
    Ok(())
}

/// Wraps a starting closure that captures raw buffer pointers.
fn starter(f: impl FnMut() -> Result<Box<dyn Op>> + 'static) -> Starter {
    let mut f = Unsent(f);
    Box::new(move || (f.get())())
}

/// The body of every persistent collective `MPI_Xxx_init` (its entry point is generated, with
/// `make` the collective's [`super::plan`] function): the communicator, the checked plan, the
/// info and request arguments, then the inactive request.
pub fn start_persistent(
    name: &'static str,
    comm: c_int,
    info: c_int,
    req: *mut c_int,
    make: impl FnOnce(&Comm) -> Result<Plan>,
) -> c_int {
    guard(name, Some(comm), || {
        let c = any_comm_of(runtime::get()?, comm)?;
        let mut plan = make(&c)?;
        info_arg(info)?;
        req_arg(req)?;
        let ep = c.ep.clone();
        // Each start takes the next number of the nonblocking sequence (see
        // `Comm::nonblocking`), as MPICH and Open MPI number persistent collectives.
        let nb = c.nonblocking().clone();
        let start: Starter = Box::new(move || plan.launch(&nb));
        register(Request::persistent(name, comm, true, ep, start), req)
    })
}

// ---------------------------------------------------------------------------------------------
// Point-to-point

/// The op of a start whose peer is `MPI_PROC_NULL`: complete at once.
struct Ready(Completion);

impl Wait for Ready {
    fn poll(&mut self, _last: bool) -> Result<Step> {
        Ok(Step::Done)
    }
    fn describe(&self) -> String {
        "a persistent operation with MPI_PROC_NULL".into()
    }
    fn blocked_on(&self, _out: &mut Vec<usize>) {}
}

impl Op for Ready {
    fn complete(&mut self) -> Result<Completion> {
        Ok(self.0)
    }
}

const NAMES: [&str; 3] = ["buf", "count", "datatype"];

/// How each start of a persistent send sends its message.
#[derive(Clone, Copy)]
enum How {
    /// `MPI_Send_init`, `MPI_Rsend_init` (a standard send), `MPI_Ssend_init`.
    Send(p2p::Mode),
    /// `MPI_Bsend_init`: each start copies the message into the attached buffer (as
    /// `MPI_Ibsend` does) and is complete at once.
    Buffered,
}

/// `MPI_Send_init` and `MPI_Rsend_init` (a standard send).
#[allow(clippy::too_many_arguments)]
pub unsafe fn send_init(
    name: &'static str,
    buf: *const c_void,
    count: Count,
    dt: c_int,
    dest: c_int,
    tag: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        send_init_as(
            name,
            buf,
            count,
            dt,
            dest,
            tag,
            comm,
            req,
            How::Send(p2p::Mode::Standard),
        )
    }
}

/// `MPI_Ssend_init`: every start is a synchronous send.
#[allow(clippy::too_many_arguments)]
pub unsafe fn ssend_init(
    name: &'static str,
    buf: *const c_void,
    count: Count,
    dt: c_int,
    dest: c_int,
    tag: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        send_init_as(
            name,
            buf,
            count,
            dt,
            dest,
            tag,
            comm,
            req,
            How::Send(p2p::Mode::Synchronous),
        )
    }
}

/// `MPI_Bsend_init`: every start is a buffered send.
#[allow(clippy::too_many_arguments)]
pub unsafe fn bsend_init(
    name: &'static str,
    buf: *const c_void,
    count: Count,
    dt: c_int,
    dest: c_int,
    tag: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { send_init_as(name, buf, count, dt, dest, tag, comm, req, How::Buffered) }
}

#[allow(clippy::too_many_arguments)]
unsafe fn send_init_as(
    name: &'static str,
    buf: *const c_void,
    count: Count,
    dt: c_int,
    dest: c_int,
    tag: c_int,
    comm: c_int,
    req: *mut c_int,
    how: How,
) -> c_int {
    guard(name, Some(comm), || {
        host_only(&[buf])?;
        let c = any_comm_of(runtime::get()?, comm)?;
        // The datatype is resolved once (the request keeps it, even if the handle is freed); a
        // dry run checks the buffer; each start stages the buffer anew.
        let (n, t) = (count_arg(count, NAMES[1])?, type_arg(dt, NAMES[2])?);
        drop(outgoing_typed(buf, n, &t, NAMES)?);
        let tag = send_tag_arg(tag, "tag")?;
        let dest = dest_arg(dest, &c, "dest")?;
        req_arg(req)?;
        let ep = c.ep.clone();
        let start = starter(move || {
            let Some(dest) = dest else {
                return Ok(Box::new(Ready(Completion::empty())) as Box<dyn Op>);
            };
            let (msg, staged) = outgoing_typed(buf, n, &t, NAMES)?;
            let mode = match how {
                How::Send(mode) => mode,
                How::Buffered => {
                    // The message is in the attached buffer: the caller's is free again.
                    buffer_and_send(name, comm, c.clone(), dest, tag, &msg)?;
                    return Ok(Box::new(Ready(Completion::empty())) as Box<dyn Op>);
                }
            };
            let keep: Box<dyn Send> = Box::new(Unsent(staged));
            Ok(Box::new(p2p::isend(c.clone(), dest, tag, &msg, mode, Some(keep))?) as Box<dyn Op>)
        });
        register(Request::persistent(name, comm, false, ep, start), req)
    })
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn recv_init(
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
        // As in `send_init`.
        let (n, t) = (count_arg(count, NAMES[1])?, type_arg(dt, NAMES[2])?);
        drop(incoming_typed(buf, n, &t, NAMES)?);
        let tag = recv_tag_arg(tag, "tag")?;
        let source = source_arg(source, &c, "source")?;
        req_arg(req)?;
        let ep = c.ep.clone();
        let start = starter(move || {
            let Some(source) = source else {
                let done = Completion {
                    source: h::PROC_NULL,
                    tag: ANY_TAG,
                    ..Completion::empty()
                };
                return Ok(Box::new(Ready(done)) as Box<dyn Op>);
            };
            let (into, staged) = incoming_typed(buf, n, &t, NAMES)?;
            let (staged, cap) = (Unsent(staged), into.cap);
            let finish: p2p::RecvFinish = Box::new(move |r| unstage(staged.take(), r, cap));
            Ok(Box::new(p2p::irecv(c.clone(), source, tag, &into, Some(finish))) as Box<dyn Op>)
        });
        register(Request::persistent(name, comm, false, ep, start), req)
    })
}

// ---------------------------------------------------------------------------------------------
// Start

/// The persistent, inactive request behind a handle (anything else is `MPI_ERR_REQUEST`).
/// `what` names the argument; formatted only for an error message.
fn startable(h: c_int, what: impl Fn() -> String) -> Result<Arc<Request>> {
    let r = request::get_named(h, &what)?
        .ok_or_else(|| Error::new(Class::Request, format!("{} is MPI_REQUEST_NULL", what())))?;
    if !r.is_persistent() {
        return Err(Error::new(
            Class::Request,
            format!("{} ({}) is not a persistent request", what(), r.name),
        ));
    }
    if !r.is_inactive() {
        return Err(Error::new(
            Class::Request,
            format!("{} ({}) is already active", what(), r.name),
        ));
    }
    Ok(r)
}

fn start_one(r: &Arc<Request>) -> std::result::Result<(), Failed> {
    r.start()
        .and_then(|()| progress::start(r))
        .map_err(|e| Failed(Some(r.comm), e))
}

pub unsafe fn start(req: *mut c_int) -> c_int {
    completing("MPI_Start", || {
        if req.is_null() {
            return Err(Error::new(Class::Arg, "request is NULL").into());
        }
        runtime::get()?;
        // SAFETY: a non-NULL MPI_Request of the caller.
        let r = startable(unsafe { *req }, || "request".into())?;
        start_one(&r)
    })
}

/// Every request is checked before any starts (a rejected call starts nothing); they start in
/// array order.
pub unsafe fn startall(count: c_int, reqs: *mut c_int) -> c_int {
    completing("MPI_Startall", || {
        runtime::get()?;
        let n = usize::try_from(count)
            .map_err(|_| Error::new(Class::Count, format!("count is negative ({count})")))?;
        if n > 0 && reqs.is_null() {
            return Err(Error::new(Class::Arg, "array_of_requests is NULL").into());
        }
        let mut list: Vec<Arc<Request>> = Vec::with_capacity(n);
        for i in 0..n {
            // SAFETY: MPI: the array holds `count` requests.
            let r = startable(unsafe { *reqs.add(i) }, || {
                format!("array_of_requests[{i}]")
            })?;
            if list.iter().any(|q| Arc::ptr_eq(q, &r)) {
                return Err(Error::new(
                    Class::Request,
                    format!("array_of_requests[{i}] appears twice"),
                )
                .into());
            }
            list.push(r);
        }
        list.iter().try_for_each(start_one)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_completes_at_once_with_its_status() {
        let mut r = Ready(Completion::empty());
        assert_eq!(r.poll(false).unwrap(), Step::Done);
        assert_eq!(r.complete().unwrap(), Completion::empty());
    }
}
