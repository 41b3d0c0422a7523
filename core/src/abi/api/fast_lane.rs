//! The lean entry of the small collectives.
//!
//! An 8-byte `MPI_Allreduce` on two ranks spends about as many instructions in the general
//! argument layer (the datatype's view, staging, the device-path choice) as in the collective
//! itself, and where both ranks are busy the whole time — one rank per core, calls back to
//! back — the time per call *is* the instructions per call: a delay added after the send costs
//! as much as one before it. When a call's arguments are of the plainest kind (a predefined
//! datatype, a predefined op defined for it, a non-empty message, host buffers, an
//! intracommunicator that is not CUDA-aware), the general layer accepts them unchanged and
//! passes the caller's pointers straight to the host collective; this lane checks exactly
//! that, cheaply, and makes the same call with the same arguments. Everything else — every
//! error included — takes the general layer, so each error has one source and one message.

use std::ffi::{c_int, c_void};

use super::{count_arg, is_in_place, root_arg, sig, Count};
use crate::abi::handles as h;
use crate::coll::{self, Reduction};
use crate::comm::Comm;
use crate::cuda::{self, Mem};
use crate::datatype::{Datatype, ElemType};
use crate::error::Result;
use crate::frame::Kind;

/// `count` items of predefined datatype `dt` as the general layer would see them: the
/// datatype and the message's bytes; `None` unless the message is non-empty and its size is
/// representable.
fn predefined(count: Count, dt: c_int) -> Option<(Datatype, usize, usize)> {
    let (d, _) = h::datatype(dt)?;
    let n = count_arg(count, "count").ok().filter(|&n| n > 0)?;
    let len = n.checked_mul(d.extent).filter(|&l| l > 0)?;
    Some((d, n, len))
}

/// Whether each `(pointer, bytes)` is host memory (a null pointer is not).
fn host(bufs: &[(*const c_void, usize)]) -> bool {
    let k = cuda::Classifier::new();
    bufs.iter()
        .all(|&(p, len)| !p.is_null() && matches!(k.of(p, len), Ok(Mem::Host)))
}

/// `MPI_Allreduce` when its arguments are plain (see the module's text): `None` sends the call
/// to the general layer.
///
/// # Safety
/// MPI's contract for `send` (unless `MPI_IN_PLACE`) and `recv`, as for the general call.
pub(super) unsafe fn allreduce(
    send: *const c_void,
    recv: *mut c_void,
    count: Count,
    dt: c_int,
    op: c_int,
    c: &Comm,
) -> Option<Result<()>> {
    let (d, n, len) = predefined(count, dt)?;
    let red = builtin_reduction(op, &d)?;
    let in_place = is_in_place(send);
    let recv_c = recv.cast_const();
    // The general layer rejects a NULL or MPI_IN_PLACE recvbuf and a sendbuf equal to it.
    if is_in_place(recv_c) || (!in_place && std::ptr::eq(send, recv_c)) {
        return None;
    }
    let bufs = [(recv_c, len), (send, len)];
    if !host(&bufs[..if in_place { 1 } else { 2 }]) {
        return None;
    }
    let input = if in_place { recv_c } else { send };
    let s = sig(Kind::Allreduce, n, dt, op, -1);
    unless_voting(c, || {
        coll::allreduce(c, input.cast(), recv.cast(), n, &d, red, s)
    })
}

/// The reduction `op` over predefined datatype `d` when both are predefined and the op is
/// defined for the type.
fn builtin_reduction(op: c_int, d: &Datatype) -> Option<Reduction> {
    let (o, _) = h::op(op)?;
    (d.elem != ElemType::Opaque && crate::reduce::is_supported(d.elem, o))
        .then(|| Reduction::builtin(d.elem, o))
}

/// Makes `call` (the host collective) unless the communicator is CUDA-aware, where every call
/// votes on its path: that one goes to the general layer (`None`). Counts the call toward the
/// communicator's CUDA agreement as the general layer would ([`cuda::host_path_without_vote`]).
fn unless_voting(c: &Comm, call: impl FnOnce() -> Result<()>) -> Option<Result<()>> {
    match cuda::host_path_without_vote(c) {
        Ok(true) => Some(call()),
        Ok(false) => None,
        Err(e) => Some(Err(e)),
    }
}

/// `MPI_Bcast` when its arguments are plain (see the module's text).
///
/// # Safety
/// MPI's contract for `buf`, as for the general call.
pub(super) unsafe fn bcast(
    buf: *mut c_void,
    count: Count,
    dt: c_int,
    root: c_int,
    c: &Comm,
) -> Option<Result<()>> {
    let (d, n, len) = predefined(count, dt)?;
    let root = root_arg(root, c).ok()?;
    if is_in_place(buf) || !host(&[(buf.cast_const(), len)]) {
        return None;
    }
    let s = sig(Kind::Bcast, n, dt, 0, root as i32);
    unless_voting(c, || coll::bcast(c, buf.cast(), n, &d, root, s))
}

/// `MPI_Reduce` when its arguments are plain (see the module's text).
///
/// # Safety
/// MPI's contract for `send` (unless the root's `MPI_IN_PLACE`) and the root's `recv`, as for
/// the general call.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn reduce(
    send: *const c_void,
    recv: *mut c_void,
    count: Count,
    dt: c_int,
    op: c_int,
    root: c_int,
    c: &Comm,
) -> Option<Result<()>> {
    let (d, n, len) = predefined(count, dt)?;
    let red = builtin_reduction(op, &d)?;
    let root = root_arg(root, c).ok()?;
    let is_root = c.rank == root;
    let in_place = is_in_place(send);
    let recv_c = recv.cast_const();
    // The general layer rejects MPI_IN_PLACE off the root, and at the root a NULL or
    // MPI_IN_PLACE recvbuf and a sendbuf equal to it.
    if in_place && !is_root
        || is_root && (is_in_place(recv_c) || (!in_place && std::ptr::eq(send, recv_c)))
    {
        return None;
    }
    let plain = match (is_root, in_place) {
        (true, true) => host(&[(recv_c, len)]),
        (true, false) => host(&[(recv_c, len), (send, len)]),
        (false, _) => host(&[(send, len)]),
    };
    if !plain {
        return None;
    }
    let input = if in_place { recv_c } else { send };
    let out = if is_root { recv } else { std::ptr::null_mut() };
    let s = sig(Kind::Reduce, n, dt, op, root as i32);
    unless_voting(c, || {
        coll::reduce(c, input.cast(), out.cast(), n, &d, red, root, s)
    })
}

/// `MPI_Allgather` when its arguments are plain (see the module's text), with the same
/// predefined datatype and count on both sides (or `MPI_IN_PLACE`).
///
/// # Safety
/// MPI's contract for `send` (unless `MPI_IN_PLACE`) and `recv`, as for the general call.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn allgather(
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    recv: *mut c_void,
    rcount: Count,
    rdt: c_int,
    c: &Comm,
) -> Option<Result<()>> {
    let (d, n, block) = predefined(rcount, rdt)?;
    let total = block.checked_mul(c.size())?;
    let recv_c = recv.cast_const();
    let own = recv.cast::<u8>().wrapping_add(c.rank * block);
    let in_place = is_in_place(send);
    // The general layer rejects a NULL or MPI_IN_PLACE recvbuf and a sendbuf that is the own
    // block of recvbuf; other datatypes and counts may still match, there.
    if is_in_place(recv_c)
        || !in_place && (sdt != rdt || scount != rcount || std::ptr::eq(send.cast(), own))
    {
        return None;
    }
    let bufs = [(recv_c, total), (send, block)];
    if !host(&bufs[..if in_place { 1 } else { 2 }]) {
        return None;
    }
    let input = if in_place {
        own.cast_const()
    } else {
        send.cast()
    };
    let s = sig(Kind::Allgather, n, rdt, 0, -1);
    unless_voting(c, || coll::allgather(c, input, recv.cast(), n, &d, s))
}

/// The most ranks [`reduce_scatter_block`] takes (its counts live on the stack).
const MAX_BLOCK_RANKS: usize = 64;

/// `MPI_Reduce_scatter_block` when its arguments are plain (see the module's text).
///
/// # Safety
/// MPI's contract for `send` (or `recv` in place: the whole input) and `recv`, as for the
/// general call.
pub(super) unsafe fn reduce_scatter_block(
    send: *const c_void,
    recv: *mut c_void,
    count: Count,
    dt: c_int,
    op: c_int,
    c: &Comm,
) -> Option<Result<()>> {
    let (d, n, mine) = predefined(count, dt)?;
    let red = builtin_reduction(op, &d)?;
    let size = c.size();
    if size > MAX_BLOCK_RANKS {
        return None;
    }
    let total = n.checked_mul(size)?;
    let total_bytes = mine.checked_mul(size)?;
    let recv_c = recv.cast_const();
    let in_place = is_in_place(send);
    // The general layer rejects a NULL or MPI_IN_PLACE recvbuf and a sendbuf equal to it.
    if is_in_place(recv_c) || (!in_place && std::ptr::eq(send, recv_c)) {
        return None;
    }
    let plain = if in_place {
        host(&[(recv_c, total_bytes)])
    } else {
        host(&[(send, total_bytes), (recv_c, mine)])
    };
    if !plain {
        return None;
    }
    let counts = [n; MAX_BLOCK_RANKS];
    let input = if in_place { recv_c } else { send };
    let s = sig(Kind::ReduceScatterBlock, total, dt, op, -1);
    unless_voting(c, || {
        coll::reduce_scatter(c, input.cast(), recv.cast(), &counts[..size], &d, red, s)
    })
}
