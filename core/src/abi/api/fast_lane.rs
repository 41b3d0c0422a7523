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

use super::{is_in_place, sig, Count};
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
    let n = usize::try_from(count).ok().filter(|&n| n > 0)?;
    let len = n.checked_mul(d.extent).filter(|&l| l > 0)?;
    Some((d, n, len))
}

/// Whether the `len` bytes at each pointer are host memory (a null pointer is not).
fn host(bufs: &[*const c_void], len: usize) -> bool {
    let k = cuda::Classifier::new();
    bufs.iter()
        .all(|&p| !p.is_null() && matches!(k.of(p, len), Ok(Mem::Host)))
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
    let recv_c = recv as *const c_void;
    // The general layer rejects a NULL or MPI_IN_PLACE recvbuf and a sendbuf equal to it.
    if is_in_place(recv_c) || (!in_place && std::ptr::eq(send, recv_c)) {
        return None;
    }
    let bufs = [recv_c, send];
    if !host(&bufs[..if in_place { 1 } else { 2 }], len) {
        return None;
    }
    match no_vote(c) {
        Ok(true) => {}
        Ok(false) => return None,
        Err(e) => return Some(Err(e)),
    }
    let input = if in_place { recv_c } else { send };
    let s = sig(Kind::Allreduce, n, dt, op, -1);
    Some(coll::allreduce(c, input.cast(), recv.cast(), n, &d, red, s))
}

/// The reduction `op` over predefined datatype `d` when both are predefined and the op is
/// defined for the type.
fn builtin_reduction(op: c_int, d: &Datatype) -> Option<Reduction> {
    let (o, _) = h::op(op)?;
    (d.elem != ElemType::Opaque && crate::reduce::is_supported(d.elem, o))
        .then(|| Reduction::builtin(d.elem, o))
}

/// `root` when it is a rank of `c`.
fn root_of(root: c_int, c: &Comm) -> Option<usize> {
    usize::try_from(root).ok().filter(|&r| r < c.size())
}

/// Whether the call takes the host path without a vote (see
/// [`cuda::host_path_without_vote`]): `Err` ends the call with its error.
fn no_vote(c: &Comm) -> std::result::Result<bool, crate::error::Error> {
    cuda::host_path_without_vote(c)
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
    let root = root_of(root, c)?;
    if is_in_place(buf) || !host(&[buf.cast_const()], len) {
        return None;
    }
    match no_vote(c) {
        Ok(true) => {}
        Ok(false) => return None,
        Err(e) => return Some(Err(e)),
    }
    let s = sig(Kind::Bcast, n, dt, 0, root as i32);
    Some(coll::bcast(c, buf.cast(), n, &d, root, s))
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
    let root = root_of(root, c)?;
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
        (true, true) => host(&[recv_c], len),
        (true, false) => host(&[recv_c, send], len),
        (false, _) => host(&[send], len),
    };
    if !plain {
        return None;
    }
    match no_vote(c) {
        Ok(true) => {}
        Ok(false) => return None,
        Err(e) => return Some(Err(e)),
    }
    let input = if in_place { recv_c } else { send };
    let out = if is_root { recv } else { std::ptr::null_mut() };
    let s = sig(Kind::Reduce, n, dt, op, root as i32);
    Some(coll::reduce(
        c,
        input.cast(),
        out.cast(),
        n,
        &d,
        red,
        root,
        s,
    ))
}
