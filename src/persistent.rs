//! Exports of the persistent requests (see `core/src/abi/api/persistent.rs`): the MPI 4.0
//! persistent collectives, `MPI_Send_init`, `MPI_Recv_init`, `MPI_Rsend_init` (with their `_c`
//! forms), `MPI_Start`, `MPI_Startall`.

use std::ffi::{c_int, c_void};

use hcomm_core::abi::api::{self, Count};
use hcomm_core::export_mpi_functions;

type Comm = c_int;
type Datatype = c_int;
type Request = c_int;

unsafe fn rsend_init(
    buf: *const c_void,
    count: c_int,
    datatype: Datatype,
    dest: c_int,
    tag: c_int,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::send_init(
        "MPI_Rsend_init",
        buf,
        count.into(),
        datatype,
        dest,
        tag,
        comm,
        request,
    )
}

unsafe fn rsend_init_c(
    buf: *const c_void,
    count: Count,
    datatype: Datatype,
    dest: c_int,
    tag: c_int,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::send_init(
        "MPI_Rsend_init_c",
        buf,
        count,
        datatype,
        dest,
        tag,
        comm,
        request,
    )
}

export_mpi_functions! {
    fn MPI_Rsend_init / PMPI_Rsend_init(buf: *const c_void, count: c_int, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm, request: *mut Request) -> c_int => rsend_init;
    fn MPI_Rsend_init_c / PMPI_Rsend_init_c(buf: *const c_void, count: Count, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm, request: *mut Request) -> c_int => rsend_init_c;
}
