//! `MPI_Isendrecv`, `MPI_Isendrecv_replace` (and their `_c` forms): the arguments are checked
//! as `MPI_Sendrecv(_replace)` checks them, then a receive and a send start under one request
//! ([`crate::p2p::SendrecvOp`]); its status is the receive's.
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use super::nb::{publish, req_arg, Unsent};
use super::p2p::{
    dest_arg, incoming, outgoing, recv_tag_arg, send_tag_arg, source_arg, unstage, ANY_TAG,
};
use super::*;
use crate::abi::guard;
use crate::p2p::{self, Incoming, Mode, Outgoing, Source};
use crate::request::{Completion, Request};
use crate::runtime;

#[allow(clippy::too_many_arguments)]
pub unsafe fn isendrecv(
    name: &'static str,
    sendbuf: *const c_void,
    sendcount: Count,
    sendtype: c_int,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: Count,
    recvtype: c_int,
    source: c_int,
    recvtag: c_int,
    comm: c_int,
    request: *mut c_int,
) -> c_int {
    guard(name, Some(comm), || {
        host_only(&[sendbuf, recvbuf as *const c_void])?;
        let c = any_comm_of(runtime::get()?, comm)?;
        let (msg, sstaged) = outgoing(
            sendbuf,
            sendcount,
            sendtype,
            ["sendbuf", "sendcount", "sendtype"],
        )?;
        let stag = send_tag_arg(sendtag, "sendtag")?;
        let dest = dest_arg(dest, &c, "dest")?;
        let (into, rstaged) = incoming(
            recvbuf,
            recvcount,
            recvtype,
            ["recvbuf", "recvcount", "recvtype"],
        )?;
        let rtag = recv_tag_arg(recvtag, "recvtag")?;
        let source = source_arg(source, &c, "source")?;
        req_arg(request)?;
        let keep: Box<dyn Send> = Box::new(Unsent(sstaged));
        start(
            name,
            comm,
            c,
            (dest, stag, msg, keep),
            (source, rtag, into, rstaged),
            request,
        )
    })
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn isendrecv_replace(
    name: &'static str,
    buf: *mut c_void,
    count: Count,
    datatype: c_int,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: c_int,
    request: *mut c_int,
) -> c_int {
    guard(name, Some(comm), || {
        host_only(&[buf])?;
        let c = any_comm_of(runtime::get()?, comm)?;
        let (mut msg, _sstaged) = outgoing(buf, count, datatype, ["buf", "count", "datatype"])?;
        let stag = send_tag_arg(sendtag, "sendtag")?;
        let dest = dest_arg(dest, &c, "dest")?;
        let (into, rstaged) = incoming(buf, count, datatype, ["buf", "count", "datatype"])?;
        let rtag = recv_tag_arg(recvtag, "recvtag")?;
        let source = source_arg(source, &c, "source")?;
        req_arg(request)?;
        // The receive overwrites the buffer while the send may still read it: send a copy,
        // kept by the request.
        let copy: Vec<u8> = if msg.len > 0 {
            // SAFETY: msg.buf..+len is the caller's buffer or its packed staging (validated
            // by `outgoing`), alive during this call.
            unsafe { std::slice::from_raw_parts(msg.buf, msg.len) }.to_vec()
        } else {
            Vec::new()
        };
        msg.buf = copy.as_ptr();
        let keep: Box<dyn Send> = Box::new(copy);
        start(
            name,
            comm,
            c,
            (dest, stag, msg, keep),
            (source, rtag, into, rstaged),
            request,
        )
    })
}

type SendHalf = (Option<usize>, u32, Outgoing, Box<dyn Send>);
type RecvHalf = (Option<Source>, Option<u32>, Incoming, Staged);

/// Starts the receive, then the send, and publishes the request.
fn start(
    name: &'static str,
    comm: c_int,
    c: Arc<crate::comm::Comm>,
    (dest, stag, msg, keep): SendHalf,
    (source, rtag, into, rstaged): RecvHalf,
    request: *mut c_int,
) -> Result<()> {
    let ep = c.ep.clone();
    let recv = source.map(|s| {
        let (staged, cap) = (Unsent(rstaged), into.cap);
        let finish: p2p::RecvFinish = Box::new(move |r| unstage(staged.take(), r, cap));
        p2p::irecv(c.clone(), s, rtag, &into, Some(finish))
    });
    let send = match dest {
        Some(d) => Some(p2p::isend(c, d, stag, &msg, Mode::Standard, Some(keep))?),
        None => None,
    };
    let proc_null = Completion {
        source: h::PROC_NULL,
        tag: ANY_TAG,
        ..Completion::empty()
    };
    let op = p2p::SendrecvOp::new(recv, send, proc_null);
    publish(
        Arc::new(Request::new(name, comm, false, ep, Box::new(op))),
        request,
    )
}
