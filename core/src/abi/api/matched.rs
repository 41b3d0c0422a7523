//! Matched probe: `MPI_Mprobe`, `MPI_Improbe`, `MPI_Mrecv`, `MPI_Imrecv` (and the `_c` forms
//! of the receives), with their `MPI_Message` handles.
//!
//! A message handle stands for a message claimed by a matched probe
//! ([`crate::p2p::Matched`]): no other receive or probe can take it. Handles are `int`s
//! (MPICH ABI): `0xac000000 | slot` (MPICH's "direct" request kind: its messages are
//! requests, and `MPI_MESSAGE_NULL` is `MPI_REQUEST_NULL`); slots are reused. A probe of
//! `MPI_PROC_NULL` gives `MPI_MESSAGE_NO_PROC`, whose receive completes at once with the
//! `MPI_PROC_NULL` status. `MPI_Message_c2f`/`f2c` are macros of `mpi.h` (no functions).
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use parking_lot::Mutex;

use super::nb::{publish, req_arg, Unsent};
use super::p2p::{
    finish_recv, incoming, recv_tag_arg, set_status, set_status_proc_null, source_arg, status_arg,
    unstage, Status, ANY_TAG,
};
use super::*;
use crate::abi::{guard, out};
use crate::p2p::{self, Matched};
use crate::request::{Completion, Request};
use crate::runtime;

/// `MPI_MESSAGE_NULL`.
pub const MESSAGE_NULL: c_int = 0x2c00_0000;
/// `MPI_MESSAGE_NO_PROC`.
pub const MESSAGE_NO_PROC: c_int = 0x6c00_0000;
const MESSAGE_BASE: c_int = 0xac00_0000_u32 as c_int;
const MESSAGE_MASK: c_int = 0x03ff_ffff;

/// Claimed messages not yet received, by slot, with their communicator's handle.
static MESSAGES: Mutex<Vec<Option<(Matched, c_int)>>> = Mutex::new(Vec::new());

fn insert(m: Matched, comm: c_int) -> Result<c_int> {
    let mut t = MESSAGES.lock();
    let i = match t.iter().position(Option::is_none) {
        Some(i) => i,
        None if t.len() > MESSAGE_MASK as usize => {
            return Err(Error::intern("too many matched messages outstanding"))
        }
        None => {
            t.push(None);
            t.len() - 1
        }
    };
    t[i] = Some((m, comm));
    Ok(MESSAGE_BASE | i as c_int)
}

fn slot_of(h: c_int) -> Option<usize> {
    (h & !MESSAGE_MASK == MESSAGE_BASE).then_some((h & MESSAGE_MASK) as usize)
}

/// What `*message` names: `None` for `MPI_MESSAGE_NO_PROC`; anything else that is not a live
/// handle is `MPI_ERR_REQUEST` (the class both reference MPIs use). Also gives the
/// communicator handle whose error handler reports the receive's errors.
unsafe fn message_arg(message: *mut c_int) -> Result<Option<(usize, c_int)>> {
    if message.is_null() {
        return Err(Error::new(Class::Arg, "message is NULL"));
    }
    // SAFETY: non-NULL; MPI: it points to the caller's MPI_Message.
    let h = unsafe { message.read() };
    if h == MESSAGE_NO_PROC {
        return Ok(None);
    }
    let bad = || {
        let what = if h == MESSAGE_NULL {
            "*message is MPI_MESSAGE_NULL".to_string()
        } else {
            format!("*message 0x{h:x} is not a message handle of a pending matched probe")
        };
        Error::new(Class::Request, what)
    };
    let i = slot_of(h).ok_or_else(bad)?;
    let t = MESSAGES.lock();
    let m = t.get(i).and_then(Option::as_ref).ok_or_else(bad)?;
    Ok(Some((i, m.1)))
}

fn take(i: usize) -> Result<Matched> {
    MESSAGES
        .lock()
        .get_mut(i)
        .and_then(Option::take)
        .map(|(m, _)| m)
        .ok_or_else(|| Error::new(Class::Request, "the message was received by another call"))
}

/// Probes and, when found, writes the handle and the status.
fn probe_into(
    (c, comm): (&Arc<crate::comm::Comm>, c_int),
    source: c_int,
    tag: c_int,
    message: *mut c_int,
    status: *mut Status,
    flag: Option<*mut c_int>,
) -> Result<()> {
    let tag = recv_tag_arg(tag, "tag")?;
    let source = source_arg(source, c, "source")?;
    if message.is_null() {
        return Err(Error::new(Class::Arg, "message is NULL"));
    }
    if flag.is_some_and(|f| f.is_null()) {
        return Err(Error::new(Class::Arg, "flag is NULL"));
    }
    let st = status_arg(status)?;
    let Some(source) = source else {
        set_status_proc_null(st);
        out(message, "message", MESSAGE_NO_PROC)?;
        return flag.map_or(Ok(()), |f| out(f, "flag", 1));
    };
    match p2p::mprobe(c, source, tag, flag.is_none())? {
        Some(m) => {
            let env = m.envelope();
            let h = insert(m, comm)?;
            set_status(st, env.source, env.tag, env.mpi_bytes);
            out(message, "message", h)?;
            flag.map_or(Ok(()), |f| out(f, "flag", 1))
        }
        None => flag.map_or(Ok(()), |f| out(f, "flag", 0)),
    }
}

pub unsafe fn mprobe(
    source: c_int,
    tag: c_int,
    comm: c_int,
    message: *mut c_int,
    status: *mut Status,
) -> c_int {
    guard("MPI_Mprobe", Some(comm), || {
        let c = any_comm_of(runtime::get()?, comm)?;
        probe_into((&c, comm), source, tag, message, status, None)
    })
}

pub unsafe fn improbe(
    source: c_int,
    tag: c_int,
    comm: c_int,
    flag: *mut c_int,
    message: *mut c_int,
    status: *mut Status,
) -> c_int {
    guard("MPI_Improbe", Some(comm), || {
        let c = any_comm_of(runtime::get()?, comm)?;
        probe_into((&c, comm), source, tag, message, status, Some(flag))
    })
}

/// The communicator a receive of `*message` reports errors through (the world's when the
/// handle is not valid).
unsafe fn comm_of_message(message: *mut c_int) -> Option<c_int> {
    // SAFETY: the caller's MPI_Message pointer; message_arg checks it for NULL.
    unsafe { message_arg(message) }
        .ok()
        .flatten()
        .map(|(_, c)| c)
}

pub unsafe fn mrecv(
    name: &'static str,
    buf: *mut c_void,
    count: Count,
    datatype: c_int,
    message: *mut c_int,
    status: *mut Status,
) -> c_int {
    // SAFETY: the caller's arguments, checked inside.
    let comm = unsafe { comm_of_message(message) };
    guard(name, comm, || {
        host_only(&[buf])?;
        runtime::get()?;
        // SAFETY: as above.
        let msg = unsafe { message_arg(message) }?;
        let (into, staged) = incoming(buf, count, datatype, ["buf", "count", "datatype"])?;
        let st = status_arg(status)?;
        let Some((slot, _)) = msg else {
            set_status_proc_null(st);
            return out(message, "message", MESSAGE_NULL);
        };
        let m = take(slot)?;
        out(message, "message", MESSAGE_NULL)?;
        let r = p2p::mrecv(m, &into)?;
        unstage(staged, &r, into.cap);
        finish_recv(st, &r, into.cap)
    })
}

pub unsafe fn imrecv(
    name: &'static str,
    buf: *mut c_void,
    count: Count,
    datatype: c_int,
    message: *mut c_int,
    request: *mut c_int,
) -> c_int {
    // SAFETY: the caller's arguments, checked inside.
    let comm = unsafe { comm_of_message(message) };
    guard(name, comm, || {
        host_only(&[buf])?;
        let rt = runtime::get()?;
        // SAFETY: as above.
        let msg = unsafe { message_arg(message) }?;
        let (into, staged) = incoming(buf, count, datatype, ["buf", "count", "datatype"])?;
        req_arg(request)?;
        let Some((slot, comm)) = msg else {
            let done = Completion {
                source: h::PROC_NULL,
                tag: ANY_TAG,
                ..Completion::empty()
            };
            let world = comm_of(rt, h::COMM_WORLD)?;
            let r = Request::completed(name, h::COMM_WORLD, world.ep.clone(), done);
            out(message, "message", MESSAGE_NULL)?;
            return publish(Arc::new(r), request);
        };
        let m = take(slot)?;
        out(message, "message", MESSAGE_NULL)?;
        let ep = m.comm.ep.clone();
        let (staged, cap) = (Unsent(staged), into.cap);
        let finish: p2p::RecvFinish = Box::new(move |r| unstage(staged.take(), r, cap));
        let op = p2p::imrecv(m, &into, Some(finish));
        publish(
            Arc::new(Request::new(name, comm, false, ep, Box::new(op))),
            request,
        )
    })
}
