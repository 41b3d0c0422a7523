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

unsafe fn ssend(
    buf: *const c_void,
    count: c_int,
    datatype: Datatype,
    dest: c_int,
    tag: c_int,
    comm: Comm,
) -> c_int {
    api::ssend("MPI_Ssend", buf, count as Count, datatype, dest, tag, comm)
}

unsafe fn ssend_c(
    buf: *const c_void,
    count: Count,
    datatype: Datatype,
    dest: c_int,
    tag: c_int,
    comm: Comm,
) -> c_int {
    api::ssend("MPI_Ssend_c", buf, count, datatype, dest, tag, comm)
}

unsafe fn issend(
    buf: *const c_void,
    count: c_int,
    datatype: Datatype,
    dest: c_int,
    tag: c_int,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::issend(
        "MPI_Issend",
        buf,
        count as Count,
        datatype,
        dest,
        tag,
        comm,
        request,
    )
}

unsafe fn issend_c(
    buf: *const c_void,
    count: Count,
    datatype: Datatype,
    dest: c_int,
    tag: c_int,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::issend(
        "MPI_Issend_c",
        buf,
        count,
        datatype,
        dest,
        tag,
        comm,
        request,
    )
}

unsafe fn bsend(
    buf: *const c_void,
    count: c_int,
    datatype: Datatype,
    dest: c_int,
    tag: c_int,
    comm: Comm,
) -> c_int {
    api::bsend("MPI_Bsend", buf, count as Count, datatype, dest, tag, comm)
}

unsafe fn bsend_c(
    buf: *const c_void,
    count: Count,
    datatype: Datatype,
    dest: c_int,
    tag: c_int,
    comm: Comm,
) -> c_int {
    api::bsend("MPI_Bsend_c", buf, count, datatype, dest, tag, comm)
}

unsafe fn ibsend(
    buf: *const c_void,
    count: c_int,
    datatype: Datatype,
    dest: c_int,
    tag: c_int,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::ibsend(
        "MPI_Ibsend",
        buf,
        count as Count,
        datatype,
        dest,
        tag,
        comm,
        request,
    )
}

unsafe fn ibsend_c(
    buf: *const c_void,
    count: Count,
    datatype: Datatype,
    dest: c_int,
    tag: c_int,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::ibsend(
        "MPI_Ibsend_c",
        buf,
        count,
        datatype,
        dest,
        tag,
        comm,
        request,
    )
}

unsafe fn buffer_attach(buffer: *mut c_void, size: c_int) -> c_int {
    api::buffer_attach("MPI_Buffer_attach", buffer, size as Count)
}

unsafe fn buffer_attach_c(buffer: *mut c_void, size: Count) -> c_int {
    api::buffer_attach("MPI_Buffer_attach_c", buffer, size)
}

unsafe fn buffer_detach(buffer_addr: *mut c_void, size: *mut c_int) -> c_int {
    api::buffer_detach("MPI_Buffer_detach", buffer_addr, CountOut::Int(size))
}

unsafe fn buffer_detach_c(buffer_addr: *mut c_void, size: *mut Count) -> c_int {
    api::buffer_detach("MPI_Buffer_detach_c", buffer_addr, CountOut::Long(size))
}
unsafe fn buffer_flush() -> c_int {
    api::buffer_flush("MPI_Buffer_flush")
}

unsafe fn comm_attach_buffer(comm: Comm, buffer: *mut c_void, size: c_int) -> c_int {
    api::comm_attach_buffer("MPI_Comm_attach_buffer", comm, buffer, size as Count)
}
unsafe fn comm_attach_buffer_c(comm: Comm, buffer: *mut c_void, size: Count) -> c_int {
    api::comm_attach_buffer("MPI_Comm_attach_buffer_c", comm, buffer, size)
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
unsafe fn buffer_iflush(request: *mut Request) -> c_int {
    api::buffer_iflush("MPI_Buffer_iflush", request)
}
unsafe fn comm_iflush_buffer(comm: Comm, request: *mut Request) -> c_int {
    api::comm_iflush_buffer("MPI_Comm_iflush_buffer", comm, request)
}
unsafe fn comm_flush_buffer(comm: Comm) -> c_int {
    api::comm_flush_buffer("MPI_Comm_flush_buffer", comm)
}

export_mpi_functions! {
    fn MPI_Rsend / PMPI_Rsend(buf: *const c_void, count: c_int, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm) -> c_int => rsend;
    fn MPI_Rsend_c / PMPI_Rsend_c(buf: *const c_void, count: Count, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm) -> c_int => rsend_c;
    fn MPI_Irsend / PMPI_Irsend(buf: *const c_void, count: c_int, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm, request: *mut Request) -> c_int => irsend;
    fn MPI_Irsend_c / PMPI_Irsend_c(buf: *const c_void, count: Count, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm, request: *mut Request) -> c_int => irsend_c;
    fn MPI_Alloc_mem / PMPI_Alloc_mem(size: i64, info: c_int, baseptr: *mut c_void) -> c_int => api::alloc_mem;
    fn MPI_Free_mem / PMPI_Free_mem(base: *mut c_void) -> c_int => api::free_mem;
    fn MPI_Ssend / PMPI_Ssend(buf: *const c_void, count: c_int, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm) -> c_int => ssend;
    fn MPI_Ssend_c / PMPI_Ssend_c(buf: *const c_void, count: Count, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm) -> c_int => ssend_c;
    fn MPI_Issend / PMPI_Issend(buf: *const c_void, count: c_int, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm, request: *mut Request) -> c_int => issend;
    fn MPI_Issend_c / PMPI_Issend_c(buf: *const c_void, count: Count, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm, request: *mut Request) -> c_int => issend_c;
    fn MPI_Bsend / PMPI_Bsend(buf: *const c_void, count: c_int, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm) -> c_int => bsend;
    fn MPI_Bsend_c / PMPI_Bsend_c(buf: *const c_void, count: Count, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm) -> c_int => bsend_c;
    fn MPI_Ibsend / PMPI_Ibsend(buf: *const c_void, count: c_int, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm, request: *mut Request) -> c_int => ibsend;
    fn MPI_Ibsend_c / PMPI_Ibsend_c(buf: *const c_void, count: Count, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm, request: *mut Request) -> c_int => ibsend_c;
    fn MPI_Buffer_attach / PMPI_Buffer_attach(buffer: *mut c_void, size: c_int) -> c_int => buffer_attach;
    fn MPI_Buffer_attach_c / PMPI_Buffer_attach_c(buffer: *mut c_void, size: Count) -> c_int => buffer_attach_c;
    fn MPI_Buffer_detach / PMPI_Buffer_detach(buffer_addr: *mut c_void, size: *mut c_int) -> c_int => buffer_detach;
    fn MPI_Buffer_detach_c / PMPI_Buffer_detach_c(buffer_addr: *mut c_void, size: *mut Count) -> c_int => buffer_detach_c;
    fn MPI_Buffer_flush / PMPI_Buffer_flush() -> c_int => buffer_flush;
    fn MPI_Comm_attach_buffer / PMPI_Comm_attach_buffer(comm: Comm, buffer: *mut c_void, size: c_int) -> c_int => comm_attach_buffer;
    fn MPI_Comm_attach_buffer_c / PMPI_Comm_attach_buffer_c(comm: Comm, buffer: *mut c_void, size: Count) -> c_int => comm_attach_buffer_c;
    fn MPI_Comm_detach_buffer / PMPI_Comm_detach_buffer(comm: Comm, buffer_addr: *mut c_void, size: *mut c_int) -> c_int => comm_detach_buffer;
    fn MPI_Comm_detach_buffer_c / PMPI_Comm_detach_buffer_c(comm: Comm, buffer_addr: *mut c_void, size: *mut Count) -> c_int => comm_detach_buffer_c;
    fn MPI_Comm_flush_buffer / PMPI_Comm_flush_buffer(comm: Comm) -> c_int => comm_flush_buffer;
    fn MPI_Buffer_iflush / PMPI_Buffer_iflush(request: *mut Request) -> c_int => buffer_iflush;
    fn MPI_Comm_iflush_buffer / PMPI_Comm_iflush_buffer(comm: Comm, request: *mut Request) -> c_int => comm_iflush_buffer;
}
