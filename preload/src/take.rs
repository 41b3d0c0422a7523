//! Take or forward: each function returns `Some(rc)` when hcomm carried the call out and
//! `None` when it must go to the host's `PMPI_X` untouched.
//!
//! hcomm takes a call when its world is up ([`world::active`], agreed by all ranks at init),
//! the communicator is the host's `MPI_COMM_WORLD`, and the datatypes (and op) are predefined
//! ones hcomm handles (for reductions: a pair `hcomm_core::reduce::is_supported` accepts).
//! Predefined datatypes are contiguous. The decision reads only the arguments, which MPI
//! requires to match on every rank (`MPI_IN_PLACE` in `Allgather` is all-or-none; in `Reduce`
//! only the root's sendbuf may be in place, and the decision ignores sendbuf there), so every
//! rank decides alike. The call then runs through hcomm's own MPICH-ABI implementation
//! (`hcomm_core::abi::api`, full argument checking) on hcomm's world, whose error handler is
//! `MPI_ERRORS_RETURN`; an error is translated and raised through the host's handler.

use std::ffi::{c_int, c_void};

use hcomm_core::abi::api::{self, Count, RecvCounts};
use hcomm_core::abi::handles::COMM_WORLD;

use crate::world;
use crate::xlate::{reducible, Tables};

type Handle = usize;

/// The tables when `comm` is the host's world and hcomm is active.
fn on_world(comm: Handle) -> Option<&'static Tables> {
    world::active().filter(|t| t.is_world(comm))
}

/// A predefined datatype and op pair hcomm reduces.
fn reduction(t: &Tables, dt: Handle, op: Handle) -> Option<(c_int, c_int)> {
    let (d, o) = (t.datatype(dt)?, t.op(op)?);
    reducible(d, o).then_some((d, o))
}

pub fn allreduce(
    name: &'static str,
    send: *const c_void,
    recv: *mut c_void,
    count: Count,
    dt: Handle,
    op: Handle,
    comm: Handle,
) -> Option<c_int> {
    let t = on_world(comm)?;
    let (d, o) = reduction(t, dt, op)?;
    // SAFETY: the caller's MPI contract for these buffers; hcomm validates what it can.
    let rc = unsafe { api::allreduce(name, t.send_buf(send), recv, count, d, o, COMM_WORLD) };
    Some(world::finish(t, rc))
}

#[allow(clippy::too_many_arguments)]
pub fn reduce(
    name: &'static str,
    send: *const c_void,
    recv: *mut c_void,
    count: Count,
    dt: Handle,
    op: Handle,
    root: c_int,
    comm: Handle,
) -> Option<c_int> {
    let t = on_world(comm)?;
    let (d, o) = reduction(t, dt, op)?;
    // SAFETY: as in `allreduce`.
    let rc = unsafe { api::reduce(name, t.send_buf(send), recv, count, d, o, root, COMM_WORLD) };
    Some(world::finish(t, rc))
}

pub fn bcast(
    name: &'static str,
    buf: *mut c_void,
    count: Count,
    dt: Handle,
    root: c_int,
    comm: Handle,
) -> Option<c_int> {
    let t = on_world(comm)?;
    let d = t.datatype(dt)?;
    // SAFETY: as in `allreduce`.
    let rc = unsafe { api::bcast(name, buf, count, d, root, COMM_WORLD) };
    Some(world::finish(t, rc))
}

#[allow(clippy::too_many_arguments)]
pub fn allgather(
    name: &'static str,
    send: *const c_void,
    scount: Count,
    sdt: Handle,
    recv: *mut c_void,
    rcount: Count,
    rdt: Handle,
    comm: Handle,
) -> Option<c_int> {
    let t = on_world(comm)?;
    let r = t.datatype(rdt)?;
    // With MPI_IN_PLACE (on every rank) the send type is ignored.
    let s = if t.is_in_place(send) {
        r
    } else {
        t.datatype(sdt)?
    };
    // SAFETY: as in `allreduce`.
    let rc = unsafe {
        api::allgather(
            name,
            t.send_buf(send),
            scount,
            s,
            recv,
            rcount,
            r,
            COMM_WORLD,
        )
    };
    Some(world::finish(t, rc))
}

pub fn reduce_scatter(
    name: &'static str,
    send: *const c_void,
    recv: *mut c_void,
    counts: RecvCounts,
    dt: Handle,
    op: Handle,
    comm: Handle,
) -> Option<c_int> {
    let t = on_world(comm)?;
    let (d, o) = reduction(t, dt, op)?;
    // SAFETY: as in `allreduce`.
    let rc = unsafe { api::reduce_scatter(name, t.send_buf(send), recv, counts, d, o, COMM_WORLD) };
    Some(world::finish(t, rc))
}

pub fn reduce_scatter_block(
    name: &'static str,
    send: *const c_void,
    recv: *mut c_void,
    count: Count,
    dt: Handle,
    op: Handle,
    comm: Handle,
) -> Option<c_int> {
    let t = on_world(comm)?;
    let (d, o) = reduction(t, dt, op)?;
    // SAFETY: as in `allreduce`.
    let rc =
        unsafe { api::reduce_scatter_block(name, t.send_buf(send), recv, count, d, o, COMM_WORLD) };
    Some(world::finish(t, rc))
}

pub fn barrier(comm: Handle) -> Option<c_int> {
    let t = on_world(comm)?;
    // SAFETY: no buffers.
    let rc = unsafe { api::barrier(COMM_WORLD) };
    Some(world::finish(t, rc))
}
