//! Take or forward: each function returns `Some(rc)` when hcomm carried the call out and
//! `None` when it must go to the host's `PMPI_X` untouched.
//!
//! hcomm takes a call when its world is up ([`world::active`], agreed by all ranks at init),
//! the communicator is an intracommunicator whose state is set up ([`comms::resolve`], agreed
//! by its members on first use), and the datatypes (and op) are predefined
//! ones hcomm handles (for reductions: a pair `hcomm_core::reduce::is_supported` accepts).
//! Predefined datatypes are contiguous. The decision reads only the arguments, which MPI
//! requires to match on every rank (`MPI_IN_PLACE` in `Allgather` is all-or-none; in `Reduce`
//! only the root's sendbuf may be in place, and the decision ignores sendbuf there), so every
//! rank decides alike. The call then runs through hcomm's own MPICH-ABI implementation
//! (`hcomm_core::abi::api`, full argument checking) on hcomm's communicator, whose error handler is
//! `MPI_ERRORS_RETURN`; an error is translated and raised through the host's handler.

use std::ffi::{c_int, c_void};

use crate::xlate::{reducible, Tables};
use crate::{comms, world};
use hcomm_core::abi::api::{self, Count, Ints, RecvCounts};

type Handle = usize;

/// The tables and hcomm's communicator for host communicator `comm`, when hcomm is active and
/// takes collectives on it (set up on first use, see [`comms`]).
fn on_comm(comm: Handle) -> Option<(&'static Tables, c_int)> {
    let t = world::active()?;
    Some((t, comms::resolve(t, comm)?))
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
    let (t, hc) = on_comm(comm)?;
    let (d, o) = reduction(t, dt, op)?;
    // SAFETY: the caller's MPI contract for these buffers; hcomm validates what it can.
    let rc = unsafe { api::allreduce(name, t.send_buf(send), recv, count, d, o, hc) };
    Some(world::finish(t, comm, rc))
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
    let (t, hc) = on_comm(comm)?;
    let (d, o) = reduction(t, dt, op)?;
    // SAFETY: as in `allreduce`.
    let rc = unsafe { api::reduce(name, t.send_buf(send), recv, count, d, o, root, hc) };
    Some(world::finish(t, comm, rc))
}

pub fn bcast(
    name: &'static str,
    buf: *mut c_void,
    count: Count,
    dt: Handle,
    root: c_int,
    comm: Handle,
) -> Option<c_int> {
    let (t, hc) = on_comm(comm)?;
    let d = t.datatype(dt)?;
    // SAFETY: as in `allreduce`.
    let rc = unsafe { api::bcast(name, buf, count, d, root, hc) };
    Some(world::finish(t, comm, rc))
}

/// The send and receive datatypes of an allgather(v) when both are predefined; with
/// `MPI_IN_PLACE` (on every rank) the send type is ignored and taken as the receive type.
fn gather_types(
    t: &Tables,
    send: *const c_void,
    sdt: Handle,
    rdt: Handle,
) -> Option<(c_int, c_int)> {
    let r = t.datatype(rdt)?;
    let s = if t.is_in_place(send) {
        r
    } else {
        t.datatype(sdt)?
    };
    Some((s, r))
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
    let (t, hc) = on_comm(comm)?;
    let (s, r) = gather_types(t, send, sdt, rdt)?;
    // SAFETY: as in `allreduce`.
    let rc = unsafe { api::allgather(name, t.send_buf(send), scount, s, recv, rcount, r, hc) };
    Some(world::finish(t, comm, rc))
}

/// `MPI_Allgatherv` and `MPI_Allgatherv_c` (`int` or 64-bit counts and displacements, the
/// same C types in both ABIs). Decided like `allgather`: predefined datatypes, `MPI_IN_PLACE`
/// on every rank or none.
#[allow(clippy::too_many_arguments)]
pub fn allgatherv(
    name: &'static str,
    send: *const c_void,
    scount: Count,
    sdt: Handle,
    recv: *mut c_void,
    rcounts: Ints,
    displs: Ints,
    rdt: Handle,
    comm: Handle,
) -> Option<c_int> {
    let (t, hc) = on_comm(comm)?;
    let (s, r) = gather_types(t, send, sdt, rdt)?;
    // SAFETY: as in `allreduce`; the arrays are the caller's, `comm`'s size long (checked by
    // hcomm's argument layer where it can).
    let rc = unsafe {
        api::allgatherv(
            name,
            t.send_buf(send),
            scount,
            s,
            recv,
            rcounts,
            displs,
            r,
            hc,
        )
    };
    Some(world::finish(t, comm, rc))
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
    let (t, hc) = on_comm(comm)?;
    let (d, o) = reduction(t, dt, op)?;
    // SAFETY: as in `allreduce`.
    let rc = unsafe { api::reduce_scatter(name, t.send_buf(send), recv, counts, d, o, hc) };
    Some(world::finish(t, comm, rc))
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
    let (t, hc) = on_comm(comm)?;
    let (d, o) = reduction(t, dt, op)?;
    // SAFETY: as in `allreduce`.
    let rc = unsafe { api::reduce_scatter_block(name, t.send_buf(send), recv, count, d, o, hc) };
    Some(world::finish(t, comm, rc))
}

pub fn barrier(comm: Handle) -> Option<c_int> {
    let (t, hc) = on_comm(comm)?;
    // SAFETY: no buffers.
    let rc = unsafe { api::barrier(hc) };
    Some(world::finish(t, comm, rc))
}
