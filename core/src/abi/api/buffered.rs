//! Buffered mode: `MPI_Bsend`, `MPI_Ibsend`, `MPI_Buffer_attach`, `MPI_Buffer_detach`,
//! `MPI_Buffer_flush`, and MPI 4.1's per-communicator `MPI_Comm_attach_buffer`,
//! `MPI_Comm_detach_buffer`, `MPI_Comm_flush_buffer`, `MPI_Buffer_iflush`,
//! `MPI_Comm_iflush_buffer` (and the `_c` forms).
//!
//! A buffered send copies its message (packed, for derived datatypes) into the buffer the
//! process attached and starts a standard send from that copy, so it returns at once and the
//! caller may reuse its buffer. Each message takes its packed size plus `MPI_BSEND_OVERHEAD`
//! bytes of the attached buffer (what MPI tells programs to reserve; the overhead itself holds
//! nothing here) until its send completes; the sends join the progress engine's active list,
//! so they advance while the caller does anything else. A message that does not fit in the
//! free space is `MPI_ERR_BUFFER`. Detaching and flushing wait until every message buffered
//! there has been sent. A buffered send uses its communicator's buffer when one is attached,
//! else the process's (MPI 4.1 §3.6; hcomm has no sessions).
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use parking_lot::Mutex;

use super::nb::{publish, req_arg};
use super::p2p::{dest_arg, outgoing, send_tag_arg};
use super::*;
use crate::abi::{guard, out};
use crate::p2p::{self, Mode, Outgoing};
use crate::progress;
use crate::request::{Completion, Request};
use crate::runtime;

/// `MPI_BSEND_OVERHEAD` of `mpi.h`.
pub const BSEND_OVERHEAD: usize = 96;

/// The attached buffer and the messages in it.
struct Attached {
    base: *mut u8,
    size: usize,
    /// Messages whose send may not have completed: (offset, bytes reserved, its send).
    used: Vec<(usize, usize, Arc<Request>)>,
}

// SAFETY: `base` is the memory the user attached, handed back by detach; MPI forbids the user
// to touch it meanwhile, and all access goes through the `BUFFERS` lock.
unsafe impl Send for Attached {}

impl Attached {
    /// Forgets the messages whose send completed (a failed one is reported: nobody waits for
    /// a buffered send's request).
    fn reclaim(&mut self) {
        self.used.retain(|(_, _, r)| {
            if let Some(Err(e)) = r.outcome() {
                crate::warn!("a buffered send failed: {}", e.msg);
            }
            !r.is_done()
        });
    }

    /// The offset of the first gap of `need` bytes.
    fn find(&mut self, need: usize) -> Option<usize> {
        self.used.sort_by_key(|u| u.0);
        let mut at = 0;
        for &(off, len, _) in &self.used {
            if off - at >= need {
                return Some(at);
            }
            at = off + len;
        }
        (self.size - at >= need).then_some(at)
    }

    fn free(&self) -> usize {
        self.size - self.used.iter().map(|u| u.1).sum::<usize>()
    }

    /// Waits until every buffered message has been sent.
    fn flush(&mut self, ep: &crate::endpoint::Endpoint) {
        let sends: Vec<Arc<Request>> = self.used.iter().map(|u| u.2.clone()).collect();
        progress::wait_until(ep, || sends.iter().all(|r| r.is_done()));
        self.reclaim();
    }
}

/// Whose buffer: the process's, a communicator's (by its id) or a session's (by handle).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Owner {
    Process,
    Comm(u64),
    /// hcomm does not record which session a communicator was made from, so a session's
    /// buffer serves no buffered send: it is attached, flushed and detached as MPI 4.1 asks,
    /// and a buffered send on a communicator of that session uses the communicator's
    /// buffer or the process's, as docs/API-COVERAGE.md says.
    Session(c_int),
}

/// The attached buffers.
static BUFFERS: Mutex<Vec<(Owner, Attached)>> = Mutex::new(Vec::new());

fn attached(list: &mut [(Owner, Attached)], owner: Owner) -> Option<&mut Attached> {
    list.iter_mut().find(|(o, _)| *o == owner).map(|(_, a)| a)
}

/// The owner of the buffer a communicator's buffered sends use.
fn owner_for(list: &[(Owner, Attached)], comm_id: u64) -> Owner {
    if list.iter().any(|(o, _)| *o == Owner::Comm(comm_id)) {
        Owner::Comm(comm_id)
    } else {
        Owner::Process
    }
}

/// Copies `msg` into the attached buffer and starts its send; the send's request.
pub(crate) fn buffer_and_send(
    name: &'static str,
    comm: c_int,
    c: Arc<crate::comm::Comm>,
    dest: usize,
    tag: u32,
    msg: &Outgoing,
) -> Result<()> {
    let mut g = BUFFERS.lock();
    let owner = owner_for(&g, c.id);
    let Some(a) = attached(&mut g, owner) else {
        return Err(Error::new(
            Class::Buffer,
            format!(
                "no buffer is attached (MPI_Buffer_attach) for this {}-byte message",
                msg.len
            ),
        ));
    };
    a.reclaim();
    let need = msg.len.saturating_add(BSEND_OVERHEAD);
    let Some(off) = a.find(need) else {
        return Err(Error::new(
            Class::Buffer,
            format!(
                "the attached buffer has no room for this message: it needs {need} bytes ({} of data + MPI_BSEND_OVERHEAD {BSEND_OVERHEAD}), {} of the {} attached bytes are free ({} buffered messages not yet sent)",
                msg.len,
                a.free(),
                a.size,
                a.used.len()
            ),
        ));
    };
    // SAFETY: off + need <= size: the range lies in the attached buffer and overlaps no other
    // message's; the send buffer (or its staging) holds msg.len bytes (checked by `outgoing`).
    let copy = unsafe {
        let at = a.base.add(off);
        if msg.len > 0 {
            std::ptr::copy_nonoverlapping(msg.buf, at, msg.len);
        }
        at
    };
    let sent = Outgoing { buf: copy, ..*msg };
    let ep = c.ep.clone();
    let op = p2p::isend(c, dest, tag, &sent, Mode::Standard, None)?;
    let r = Arc::new(Request::new(name, comm, false, ep, Box::new(op)));
    a.used.push((off, need, r.clone()));
    drop(g);
    progress::start(&r)
}

/// The arguments of a buffered send, checked; `None` for `MPI_PROC_NULL`.
unsafe fn checked(
    c: &crate::comm::Comm,
    buf: *const c_void,
    count: Count,
    datatype: c_int,
    dest: c_int,
    tag: c_int,
) -> Result<(Option<usize>, u32, Outgoing, Staged)> {
    host_only(&[buf])?;
    let (msg, staged) = outgoing(buf, count, datatype, ["buf", "count", "datatype"])?;
    let tag = send_tag_arg(tag, "tag")?;
    let dest = dest_arg(dest, c, "dest")?;
    Ok((dest, tag, msg, staged))
}

pub unsafe fn bsend(
    name: &'static str,
    buf: *const c_void,
    count: Count,
    datatype: c_int,
    dest: c_int,
    tag: c_int,
    comm: c_int,
) -> c_int {
    guard(name, Some(comm), || {
        let c = any_comm_of(runtime::get()?, comm)?;
        // SAFETY: the caller's arguments, checked there.
        let (dest, tag, msg, _staged) = unsafe { checked(&c, buf, count, datatype, dest, tag) }?;
        match dest {
            Some(d) => buffer_and_send(name, comm, c, d, tag, &msg),
            None => Ok(()),
        }
    })
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn ibsend(
    name: &'static str,
    buf: *const c_void,
    count: Count,
    datatype: c_int,
    dest: c_int,
    tag: c_int,
    comm: c_int,
    request: *mut c_int,
) -> c_int {
    guard(name, Some(comm), || {
        let c = any_comm_of(runtime::get()?, comm)?;
        // SAFETY: the caller's arguments, checked there.
        let (dest, tag, msg, _staged) = unsafe { checked(&c, buf, count, datatype, dest, tag) }?;
        req_arg(request)?;
        let ep = c.ep.clone();
        if let Some(d) = dest {
            buffer_and_send(name, comm, c, d, tag, &msg)?;
        }
        // The message is in the attached buffer: the caller's buffer is free again.
        let done = Request::completed(name, comm, ep, Completion::empty());
        publish(Arc::new(done), request)
    })
}

pub unsafe fn buffer_attach(name: &'static str, buffer: *mut c_void, size: Count) -> c_int {
    guard(name, None, || {
        runtime::get()?;
        attach(Owner::Process, buffer, size)
    })
}

pub unsafe fn comm_attach_buffer(
    name: &'static str,
    comm: c_int,
    buffer: *mut c_void,
    size: Count,
) -> c_int {
    guard(name, Some(comm), || {
        let c = any_comm_of(runtime::get()?, comm)?;
        attach(Owner::Comm(c.id), buffer, size)
    })
}

pub(crate) fn attach(owner: Owner, buffer: *mut c_void, size: Count) -> Result<()> {
    let size = usize::try_from(size)
        .map_err(|_| Error::new(Class::Arg, format!("size is negative ({size})")))?;
    if buffer.is_null() && size > 0 {
        return Err(Error::new(
            Class::Buffer,
            "buffer is NULL but the size is not zero",
        ));
    }
    let mut g = BUFFERS.lock();
    if let Some(a) = attached(&mut g, owner) {
        return Err(Error::new(
            Class::Buffer,
            format!(
                "a buffer of {} bytes is already attached (detach it first)",
                a.size
            ),
        ));
    }
    g.push((
        owner,
        Attached {
            base: buffer.cast(),
            size,
            used: Vec::new(),
        },
    ));
    Ok(())
}

/// The size output of `MPI_Buffer_detach` (`int *`) or `MPI_Buffer_detach_c` (`MPI_Count *`).
#[derive(Clone, Copy)]
pub enum CountOut {
    Int(*mut c_int),
    Long(*mut Count),
}

pub unsafe fn buffer_detach(name: &'static str, buffer_addr: *mut c_void, size: CountOut) -> c_int {
    guard(name, None, || {
        let rt = runtime::get()?;
        let ep = comm_of(rt, h::COMM_WORLD)?.ep.clone();
        detach(Owner::Process, &ep, buffer_addr, size)
    })
}

pub unsafe fn comm_detach_buffer(
    name: &'static str,
    comm: c_int,
    buffer_addr: *mut c_void,
    size: CountOut,
) -> c_int {
    guard(name, Some(comm), || {
        let c = any_comm_of(runtime::get()?, comm)?;
        detach(Owner::Comm(c.id), &c.ep, buffer_addr, size)
    })
}

/// Waits until `owner`'s buffered messages have been sent, detaches its buffer and writes
/// its address and size (NULL and 0 when none was attached).
pub(crate) fn detach(
    owner: Owner,
    ep: &crate::endpoint::Endpoint,
    buffer_addr: *mut c_void,
    size: CountOut,
) -> Result<()> {
    if buffer_addr.is_null() {
        return Err(Error::new(Class::Arg, "buffer_addr is NULL"));
    }
    let null = match size {
        CountOut::Int(p) => p.is_null(),
        CountOut::Long(p) => p.is_null(),
    };
    if null {
        return Err(Error::new(Class::Arg, "size is NULL"));
    }
    let mut g = BUFFERS.lock();
    let (base, n) = attached(&mut g, owner).map_or((std::ptr::null_mut(), 0), |a| (a.base, a.size));
    if let CountOut::Int(_) = size {
        if c_int::try_from(n).is_err() {
            return Err(Error::new(
                Class::Count,
                format!("the attached buffer's size ({n} bytes) does not fit in an int (use the _c form)"),
            ));
        }
    }
    if let Some(at) = g.iter().position(|(o, _)| *o == owner) {
        // Nothing else may start in the buffer while its messages drain.
        let (_, mut a) = g.remove(at);
        drop(g);
        a.flush(ep);
    }
    out(
        buffer_addr.cast::<*mut c_void>(),
        "buffer_addr",
        base.cast(),
    )?;
    match size {
        CountOut::Int(p) => out(p, "size", n as c_int),
        CountOut::Long(p) => out(p, "size", n as Count),
    }
}

pub unsafe fn buffer_flush(name: &'static str) -> c_int {
    guard(name, None, || {
        let rt = runtime::get()?;
        flush(Owner::Process, &comm_of(rt, h::COMM_WORLD)?.ep);
        Ok(())
    })
}

pub unsafe fn comm_flush_buffer(name: &'static str, comm: c_int) -> c_int {
    guard(name, Some(comm), || {
        let c = any_comm_of(runtime::get()?, comm)?;
        flush(Owner::Comm(c.id), &c.ep);
        Ok(())
    })
}

pub unsafe fn buffer_iflush(name: &'static str, request: *mut c_int) -> c_int {
    guard(name, None, || {
        let rt = runtime::get()?;
        req_arg(request)?;
        let ep = comm_of(rt, h::COMM_WORLD)?.ep.clone();
        iflush(name, h::COMM_WORLD, Owner::Process, ep, request)
    })
}

pub unsafe fn comm_iflush_buffer(name: &'static str, comm: c_int, request: *mut c_int) -> c_int {
    guard(name, Some(comm), || {
        let c = any_comm_of(runtime::get()?, comm)?;
        req_arg(request)?;
        iflush(name, comm, Owner::Comm(c.id), c.ep.clone(), request)
    })
}

/// Starts a request that completes when the messages now in `owner`'s buffer have been sent.
pub(crate) fn iflush(
    name: &'static str,
    comm: c_int,
    owner: Owner,
    ep: Arc<crate::endpoint::Endpoint>,
    request: *mut c_int,
) -> Result<()> {
    let sends = match attached(&mut BUFFERS.lock(), owner) {
        Some(a) => a.used.iter().map(|u| u.2.clone()).collect(),
        None => Vec::new(),
    };
    let op = FlushOp { sends };
    publish(
        Arc::new(Request::new(name, comm, false, ep, Box::new(op))),
        request,
    )
}

/// The operation of an `MPI_Buffer_iflush` request: the buffered sends it waits for are
/// stepped by the progress engine themselves (they are on its active list).
struct FlushOp {
    sends: Vec<Arc<Request>>,
}

impl crate::engine::Wait for FlushOp {
    fn poll(&mut self, _last: bool) -> Result<crate::engine::Step> {
        let before = self.sends.len();
        self.sends.retain(|r| !r.is_done());
        Ok(if self.sends.is_empty() {
            crate::engine::Step::Done
        } else if self.sends.len() < before {
            crate::engine::Step::Moved
        } else {
            crate::engine::Step::Idle
        })
    }
    fn describe(&self) -> String {
        format!(
            "MPI_Buffer_iflush ({} buffered messages not yet sent)",
            self.sends.len()
        )
    }
    fn blocked_on(&self, _out: &mut Vec<usize>) {}
}

impl crate::request::Op for FlushOp {
    fn complete(&mut self) -> Result<Completion> {
        Ok(Completion::empty())
    }
}

/// Waits until the messages in `owner`'s buffer have been sent (those buffered by other
/// threads meanwhile are theirs to wait for).
pub(crate) fn flush(owner: Owner, ep: &crate::endpoint::Endpoint) {
    let sends: Vec<Arc<Request>> = match attached(&mut BUFFERS.lock(), owner) {
        Some(a) => a.used.iter().map(|u| u.2.clone()).collect(),
        None => Vec::new(),
    };
    progress::wait_until(ep, || sends.iter().all(|r| r.is_done()));
    if let Some(a) = attached(&mut BUFFERS.lock(), owner) {
        a.reclaim();
    }
}
