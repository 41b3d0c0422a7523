//! Exports of `MPI_Isendrecv` and `MPI_Isendrecv_replace` (see
//! `core/src/abi/api/isendrecv.rs`), with their `_c` forms.

use std::ffi::{c_int, c_void};

use hcomm_core::abi::api::{self, Count};
use hcomm_core::export_mpi_functions;

type Comm = c_int;
type Datatype = c_int;
type Request = c_int;

#[allow(clippy::too_many_arguments)]
unsafe fn isendrecv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Datatype,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Datatype,
    source: c_int,
    recvtag: c_int,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::isendrecv(
        "MPI_Isendrecv",
        sendbuf,
        sendcount as Count,
        sendtype,
        dest,
        sendtag,
        recvbuf,
        recvcount as Count,
        recvtype,
        source,
        recvtag,
        comm,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn isendrecv_c(
    sendbuf: *const c_void,
    sendcount: Count,
    sendtype: Datatype,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: Count,
    recvtype: Datatype,
    source: c_int,
    recvtag: c_int,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::isendrecv(
        "MPI_Isendrecv_c",
        sendbuf,
        sendcount,
        sendtype,
        dest,
        sendtag,
        recvbuf,
        recvcount,
        recvtype,
        source,
        recvtag,
        comm,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn isendrecv_replace(
    buf: *mut c_void,
    count: c_int,
    datatype: Datatype,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::isendrecv_replace(
        "MPI_Isendrecv_replace",
        buf,
        count as Count,
        datatype,
        dest,
        sendtag,
        source,
        recvtag,
        comm,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn isendrecv_replace_c(
    buf: *mut c_void,
    count: Count,
    datatype: Datatype,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::isendrecv_replace(
        "MPI_Isendrecv_replace_c",
        buf,
        count,
        datatype,
        dest,
        sendtag,
        source,
        recvtag,
        comm,
        request,
    )
}

export_mpi_functions! {
    fn MPI_Isendrecv / PMPI_Isendrecv(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, dest: c_int, sendtag: c_int, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, source: c_int, recvtag: c_int, comm: Comm, request: *mut Request) -> c_int => isendrecv;
    fn MPI_Isendrecv_c / PMPI_Isendrecv_c(sendbuf: *const c_void, sendcount: Count, sendtype: Datatype, dest: c_int, sendtag: c_int, recvbuf: *mut c_void, recvcount: Count, recvtype: Datatype, source: c_int, recvtag: c_int, comm: Comm, request: *mut Request) -> c_int => isendrecv_c;
    fn MPI_Isendrecv_replace / PMPI_Isendrecv_replace(buf: *mut c_void, count: c_int, datatype: Datatype, dest: c_int, sendtag: c_int, source: c_int, recvtag: c_int, comm: Comm, request: *mut Request) -> c_int => isendrecv_replace;
    fn MPI_Isendrecv_replace_c / PMPI_Isendrecv_replace_c(buf: *mut c_void, count: Count, datatype: Datatype, dest: c_int, sendtag: c_int, source: c_int, recvtag: c_int, comm: Comm, request: *mut Request) -> c_int => isendrecv_replace_c;
}
