//! Send modes (see `core/src/abi/api/send_modes.rs` and `buffered.rs`) and MPI's memory
//! allocation calls.
//!
//! `MPI_Rsend` / `MPI_Irsend` are standard-mode sends: MPI-4.1 §3.4 allows it ("a ready send
//! may be replaced by a standard send with no effect on the behavior of the program other than
//! performance"). Synchronous sends wait for the receiver's match; buffered sends copy into
//! the attached buffer.

use std::ffi::{c_int, c_void};

use hcomm_core::abi::api::{self, Count, CountOut};
use hcomm_core::export_mpi_functions;

type Comm = c_int;
type Datatype = c_int;
type Request = c_int;

unsafe fn rsend(b: *const c_void, n: c_int, t: Datatype, d: c_int, tag: c_int, c: Comm) -> c_int {
    api::send("MPI_Rsend", b, n as Count, t, d, tag, c)
}
unsafe fn rsend_c(b: *const c_void, n: Count, t: Datatype, d: c_int, tag: c_int, c: Comm) -> c_int {
    api::send("MPI_Rsend_c", b, n, t, d, tag, c)
}
#[allow(clippy::too_many_arguments)]
unsafe fn irsend(
    b: *const c_void,
    n: c_int,
    t: Datatype,
    d: c_int,
    tag: c_int,
    c: Comm,
    r: *mut Request,
) -> c_int {
    api::isend("MPI_Irsend", b, n as Count, t, d, tag, c, r)
}
#[allow(clippy::too_many_arguments)]
unsafe fn irsend_c(
    b: *const c_void,
    n: Count,
    t: Datatype,
    d: c_int,
    tag: c_int,
    c: Comm,
    r: *mut Request,
) -> c_int {
    api::isend("MPI_Irsend_c", b, n, t, d, tag, c, r)
}

unsafe fn buffer_detach(buffer_addr: *mut c_void, size: *mut c_int) -> c_int {
    api::buffer_detach("MPI_Buffer_detach", buffer_addr, CountOut::Int(size))
}

unsafe fn buffer_detach_c(buffer_addr: *mut c_void, size: *mut Count) -> c_int {
    api::buffer_detach("MPI_Buffer_detach_c", buffer_addr, CountOut::Long(size))
}

unsafe fn comm_detach_buffer(comm: Comm, buffer_addr: *mut c_void, size: *mut c_int) -> c_int {
    api::comm_detach_buffer(
        "MPI_Comm_detach_buffer",
        comm,
        buffer_addr,
        CountOut::Int(size),
    )
}
unsafe fn comm_detach_buffer_c(comm: Comm, buffer_addr: *mut c_void, size: *mut Count) -> c_int {
    api::comm_detach_buffer(
        "MPI_Comm_detach_buffer_c",
        comm,
        buffer_addr,
        CountOut::Long(size),
    )
}

unsafe fn session_detach_buffer(
    session: c_int,
    buffer_addr: *mut c_void,
    size: *mut c_int,
) -> c_int {
    api::session_detach_buffer(
        "MPI_Session_detach_buffer",
        session,
        buffer_addr,
        CountOut::Int(size),
    )
}
unsafe fn session_detach_buffer_c(
    session: c_int,
    buffer_addr: *mut c_void,
    size: *mut Count,
) -> c_int {
    api::session_detach_buffer(
        "MPI_Session_detach_buffer_c",
        session,
        buffer_addr,
        CountOut::Long(size),
    )
}

export_mpi_functions! {
    fn MPI_Rsend / PMPI_Rsend(buf: *const c_void, count: c_int, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm) -> c_int => rsend;
    fn MPI_Rsend_c / PMPI_Rsend_c(buf: *const c_void, count: Count, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm) -> c_int => rsend_c;
    fn MPI_Irsend / PMPI_Irsend(buf: *const c_void, count: c_int, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm, request: *mut Request) -> c_int => irsend;
    fn MPI_Irsend_c / PMPI_Irsend_c(buf: *const c_void, count: Count, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm, request: *mut Request) -> c_int => irsend_c;
    fn MPI_Buffer_detach / PMPI_Buffer_detach(buffer_addr: *mut c_void, size: *mut c_int) -> c_int => buffer_detach;
    fn MPI_Buffer_detach_c / PMPI_Buffer_detach_c(buffer_addr: *mut c_void, size: *mut Count) -> c_int => buffer_detach_c;
    fn MPI_Comm_detach_buffer / PMPI_Comm_detach_buffer(comm: Comm, buffer_addr: *mut c_void, size: *mut c_int) -> c_int => comm_detach_buffer;
    fn MPI_Comm_detach_buffer_c / PMPI_Comm_detach_buffer_c(comm: Comm, buffer_addr: *mut c_void, size: *mut Count) -> c_int => comm_detach_buffer_c;
    fn MPI_Session_detach_buffer / PMPI_Session_detach_buffer(session: c_int, buffer_addr: *mut c_void, size: *mut c_int) -> c_int => session_detach_buffer;
    fn MPI_Session_detach_buffer_c / PMPI_Session_detach_buffer_c(session: c_int, buffer_addr: *mut c_void, size: *mut Count) -> c_int => session_detach_buffer_c;
}
