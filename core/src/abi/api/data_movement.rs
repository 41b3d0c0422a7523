//! The blocking data-movement collectives: `MPI_Gather(v)`, `MPI_Scatter(v)`,
//! `MPI_Allgatherv`, `MPI_Alltoall(v,w)`, and their `_c` large-count variants (`name` lets a
//! variant report its own name; count and displacement arrays come as [`Ints`]).
//!
//! Each one is its collective's [`Plan`] (`plan.rs`: the checks, the staging, the schedule,
//! shared with `MPI_Ixxx` and `MPI_Xxx_init`, and the hand-over to `intercomm_coll.rs` on an
//! intercommunicator) driven to its end on the caller's thread: one implementation of each
//! collective's arguments for all three forms.
//!
//! How the buffers move: the algorithms take byte spans `(pointer, bytes)`, one per rank. A
//! buffer's per-rank blocks are first laid out (`blocks.rs`: `count` items at `displ × extent`
//! bytes from the buffer, displacements in units of the datatype's extent and possibly
//! negative, as MPI says), then turned into spans by the datatype's view (see `typearg.rs`):
//! predefined and contiguous types are spans of the user's buffer (zero copies, nothing
//! allocated); any other derived type (vector, indexed, struct) is packed block by block into
//! one staging buffer, and received blocks are unpacked into the user's layout after the call,
//! leaving the bytes between the typemap's entries untouched. A block's span is its packed
//! form: every rank's view of the same type signature has the same bytes, so sendtype and
//! recvtype may differ (2 × `vector(2, 1, 3, MPI_INT)` against 4 × `MPI_INT`).
//!
//! Signatures: every frame carries one and receivers compare it. Since sendtype and recvtype
//! may differ as long as the type signatures match, the count in a data-movement signature is
//! the type signature's length in bytes (count × type size) with the datatype `MPI_BYTE`: per
//! block for Gather/Scatter/Alltoall, the total for Allgatherv (every rank knows all counts),
//! and 0 where no rank but one knows the counts (Gatherv, Scatterv) or they are pairwise
//! (Alltoallv).
#![allow(clippy::missing_safety_doc)]
#![allow(clippy::too_many_arguments)]

use std::ffi::{c_int, c_void};

use super::nb::run_blocking;
use super::plan;
use super::*;

pub unsafe fn gather(
    name: &'static str,
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    recv: *mut c_void,
    rcount: Count,
    rdt: c_int,
    root: c_int,
    comm: c_int,
) -> c_int {
    // SAFETY: the caller's contract, forwarded.
    run_blocking(name, comm, |c| unsafe {
        plan::gather(send, scount, sdt, recv, rcount, rdt, root, c)
    })
}

pub unsafe fn gatherv(
    name: &'static str,
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    recv: *mut c_void,
    rcounts: Ints,
    displs: Ints,
    rdt: c_int,
    root: c_int,
    comm: c_int,
) -> c_int {
    // SAFETY: the caller's contract, forwarded.
    run_blocking(name, comm, |c| unsafe {
        plan::gatherv(send, scount, sdt, recv, rcounts, displs, rdt, root, c)
    })
}

pub unsafe fn scatter(
    name: &'static str,
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    recv: *mut c_void,
    rcount: Count,
    rdt: c_int,
    root: c_int,
    comm: c_int,
) -> c_int {
    // SAFETY: the caller's contract, forwarded.
    run_blocking(name, comm, |c| unsafe {
        plan::scatter(send, scount, sdt, recv, rcount, rdt, root, c)
    })
}

pub unsafe fn scatterv(
    name: &'static str,
    send: *const c_void,
    scounts: Ints,
    displs: Ints,
    sdt: c_int,
    recv: *mut c_void,
    rcount: Count,
    rdt: c_int,
    root: c_int,
    comm: c_int,
) -> c_int {
    // SAFETY: the caller's contract, forwarded.
    run_blocking(name, comm, |c| unsafe {
        plan::scatterv(send, scounts, displs, sdt, recv, rcount, rdt, root, c)
    })
}

pub unsafe fn allgatherv(
    name: &'static str,
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    recv: *mut c_void,
    rcounts: Ints,
    displs: Ints,
    rdt: c_int,
    comm: c_int,
) -> c_int {
    crate::stats::call(crate::stats::Coll::Allgatherv, || {
        // SAFETY: the caller's contract, forwarded.
        run_blocking(name, comm, |c| unsafe {
            plan::allgatherv(send, scount, sdt, recv, rcounts, displs, rdt, c)
        })
    })
}

pub unsafe fn alltoall(
    name: &'static str,
    send: *const c_void,
    scount: Count,
    sdt: c_int,
    recv: *mut c_void,
    rcount: Count,
    rdt: c_int,
    comm: c_int,
) -> c_int {
    // SAFETY: the caller's contract, forwarded.
    run_blocking(name, comm, |c| unsafe {
        plan::alltoall(send, scount, sdt, recv, rcount, rdt, c)
    })
}

pub unsafe fn alltoallv(
    name: &'static str,
    send: *const c_void,
    scounts: Ints,
    sdispls: Ints,
    sdt: c_int,
    recv: *mut c_void,
    rcounts: Ints,
    rdispls: Ints,
    rdt: c_int,
    comm: c_int,
) -> c_int {
    // SAFETY: the caller's contract, forwarded.
    run_blocking(name, comm, |c| unsafe {
        plan::alltoallv(send, scounts, sdispls, sdt, recv, rcounts, rdispls, rdt, c)
    })
}

pub unsafe fn alltoallw(
    name: &'static str,
    send: *const c_void,
    scounts: Ints,
    sdispls: Ints,
    stypes: *const c_int,
    recv: *mut c_void,
    rcounts: Ints,
    rdispls: Ints,
    rtypes: *const c_int,
    comm: c_int,
) -> c_int {
    // SAFETY: the caller's contract, forwarded.
    run_blocking(name, comm, |c| unsafe {
        plan::alltoallw(
            send, scounts, sdispls, stypes, recv, rcounts, rdispls, rtypes, c,
        )
    })
}
