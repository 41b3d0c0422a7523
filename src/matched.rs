//! Exports of matched probe (see `core/src/abi/api/matched.rs`): `MPI_Mprobe`, `MPI_Improbe`,
//! `MPI_Mrecv`, `MPI_Imrecv` (with the `_c` receives).

use std::ffi::{c_int, c_void};

use hcomm_core::abi::api::{self, Count, Status};
use hcomm_core::export_mpi_functions;

type Comm = c_int;
type Datatype = c_int;
type Message = c_int;
type Request = c_int;

unsafe fn mrecv(
    buf: *mut c_void,
    count: c_int,
    datatype: Datatype,
    message: *mut Message,
    status: *mut Status,
) -> c_int {
    api::mrecv("MPI_Mrecv", buf, count as Count, datatype, message, status)
}

unsafe fn mrecv_c(
    buf: *mut c_void,
    count: Count,
    datatype: Datatype,
    message: *mut Message,
    status: *mut Status,
) -> c_int {
    api::mrecv("MPI_Mrecv_c", buf, count, datatype, message, status)
}

unsafe fn imrecv(
    buf: *mut c_void,
    count: c_int,
    datatype: Datatype,
    message: *mut Message,
    request: *mut Request,
) -> c_int {
    api::imrecv(
        "MPI_Imrecv",
        buf,
        count as Count,
        datatype,
        message,
        request,
    )
}

unsafe fn imrecv_c(
    buf: *mut c_void,
    count: Count,
    datatype: Datatype,
    message: *mut Message,
    request: *mut Request,
) -> c_int {
    api::imrecv("MPI_Imrecv_c", buf, count, datatype, message, request)
}

export_mpi_functions! {
    fn MPI_Mprobe / PMPI_Mprobe(source: c_int, tag: c_int, comm: Comm, message: *mut Message, status: *mut Status) -> c_int => api::mprobe;
    fn MPI_Improbe / PMPI_Improbe(source: c_int, tag: c_int, comm: Comm, flag: *mut c_int, message: *mut Message, status: *mut Status) -> c_int => api::improbe;
    fn MPI_Mrecv / PMPI_Mrecv(buf: *mut c_void, count: c_int, datatype: Datatype, message: *mut Message, status: *mut Status) -> c_int => mrecv;
    fn MPI_Mrecv_c / PMPI_Mrecv_c(buf: *mut c_void, count: Count, datatype: Datatype, message: *mut Message, status: *mut Status) -> c_int => mrecv_c;
    fn MPI_Imrecv / PMPI_Imrecv(buf: *mut c_void, count: c_int, datatype: Datatype, message: *mut Message, request: *mut Request) -> c_int => imrecv;
    fn MPI_Imrecv_c / PMPI_Imrecv_c(buf: *mut c_void, count: Count, datatype: Datatype, message: *mut Message, request: *mut Request) -> c_int => imrecv_c;
}
