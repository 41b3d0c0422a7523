//! Exports of the p2p area (see `core/src/abi/api/p2p.rs`): point-to-point calls, each as
//! `MPI_X` and `PMPI_X`, with the MPI-4 large-count `_c` variants MPICH 4.0 declares.

use std::ffi::{c_int, c_void};

use hcomm_core::abi::api::{self, Count, Status};
use hcomm_core::export_mpi_functions;

type Comm = c_int;
type Datatype = c_int;

unsafe fn send(b: *const c_void, n: c_int, t: Datatype, dest: c_int, tag: c_int, c: Comm) -> c_int {
    api::send("MPI_Send", b, n as Count, t, dest, tag, c)
}
unsafe fn send_c(
    b: *const c_void,
    n: Count,
    t: Datatype,
    dest: c_int,
    tag: c_int,
    c: Comm,
) -> c_int {
    api::send("MPI_Send_c", b, n, t, dest, tag, c)
}
#[allow(clippy::too_many_arguments)]
unsafe fn recv(
    b: *mut c_void,
    n: c_int,
    t: Datatype,
    src: c_int,
    tag: c_int,
    c: Comm,
    st: *mut Status,
) -> c_int {
    api::recv("MPI_Recv", b, n as Count, t, src, tag, c, st)
}
#[allow(clippy::too_many_arguments)]
unsafe fn recv_c(
    b: *mut c_void,
    n: Count,
    t: Datatype,
    src: c_int,
    tag: c_int,
    c: Comm,
    st: *mut Status,
) -> c_int {
    api::recv("MPI_Recv_c", b, n, t, src, tag, c, st)
}
#[allow(clippy::too_many_arguments)]
unsafe fn sendrecv(
    sb: *const c_void,
    sn: c_int,
    st_: Datatype,
    dest: c_int,
    stag: c_int,
    rb: *mut c_void,
    rn: c_int,
    rt: Datatype,
    src: c_int,
    rtag: c_int,
    c: Comm,
    st: *mut Status,
) -> c_int {
    api::sendrecv(
        "MPI_Sendrecv",
        sb,
        sn as Count,
        st_,
        dest,
        stag,
        rb,
        rn as Count,
        rt,
        src,
        rtag,
        c,
        st,
    )
}
#[allow(clippy::too_many_arguments)]
unsafe fn sendrecv_c(
    sb: *const c_void,
    sn: Count,
    st_: Datatype,
    dest: c_int,
    stag: c_int,
    rb: *mut c_void,
    rn: Count,
    rt: Datatype,
    src: c_int,
    rtag: c_int,
    c: Comm,
    st: *mut Status,
) -> c_int {
    api::sendrecv(
        "MPI_Sendrecv_c",
        sb,
        sn,
        st_,
        dest,
        stag,
        rb,
        rn,
        rt,
        src,
        rtag,
        c,
        st,
    )
}
#[allow(clippy::too_many_arguments)]
unsafe fn sendrecv_replace(
    b: *mut c_void,
    n: c_int,
    t: Datatype,
    dest: c_int,
    stag: c_int,
    src: c_int,
    rtag: c_int,
    c: Comm,
    st: *mut Status,
) -> c_int {
    api::sendrecv_replace(
        "MPI_Sendrecv_replace",
        b,
        n as Count,
        t,
        dest,
        stag,
        src,
        rtag,
        c,
        st,
    )
}
#[allow(clippy::too_many_arguments)]
unsafe fn sendrecv_replace_c(
    b: *mut c_void,
    n: Count,
    t: Datatype,
    dest: c_int,
    stag: c_int,
    src: c_int,
    rtag: c_int,
    c: Comm,
    st: *mut Status,
) -> c_int {
    api::sendrecv_replace(
        "MPI_Sendrecv_replace_c",
        b,
        n,
        t,
        dest,
        stag,
        src,
        rtag,
        c,
        st,
    )
}

export_mpi_functions! {
    fn MPI_Send / PMPI_Send(buf: *const c_void, count: c_int, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm) -> c_int => send;
    fn MPI_Send_c / PMPI_Send_c(buf: *const c_void, count: Count, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm) -> c_int => send_c;
    fn MPI_Recv / PMPI_Recv(buf: *mut c_void, count: c_int, datatype: Datatype, source: c_int, tag: c_int, comm: Comm, status: *mut Status) -> c_int => recv;
    fn MPI_Recv_c / PMPI_Recv_c(buf: *mut c_void, count: Count, datatype: Datatype, source: c_int, tag: c_int, comm: Comm, status: *mut Status) -> c_int => recv_c;
    fn MPI_Sendrecv / PMPI_Sendrecv(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, dest: c_int, sendtag: c_int, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, source: c_int, recvtag: c_int, comm: Comm, status: *mut Status) -> c_int => sendrecv;
    fn MPI_Sendrecv_c / PMPI_Sendrecv_c(sendbuf: *const c_void, sendcount: Count, sendtype: Datatype, dest: c_int, sendtag: c_int, recvbuf: *mut c_void, recvcount: Count, recvtype: Datatype, source: c_int, recvtag: c_int, comm: Comm, status: *mut Status) -> c_int => sendrecv_c;
    fn MPI_Sendrecv_replace / PMPI_Sendrecv_replace(buf: *mut c_void, count: c_int, datatype: Datatype, dest: c_int, sendtag: c_int, source: c_int, recvtag: c_int, comm: Comm, status: *mut Status) -> c_int => sendrecv_replace;
    fn MPI_Sendrecv_replace_c / PMPI_Sendrecv_replace_c(buf: *mut c_void, count: Count, datatype: Datatype, dest: c_int, sendtag: c_int, source: c_int, recvtag: c_int, comm: Comm, status: *mut Status) -> c_int => sendrecv_replace_c;
    fn MPI_Probe / PMPI_Probe(source: c_int, tag: c_int, comm: Comm, status: *mut Status) -> c_int => api::probe;
    fn MPI_Iprobe / PMPI_Iprobe(source: c_int, tag: c_int, comm: Comm, flag: *mut c_int, status: *mut Status) -> c_int => api::iprobe;
    fn MPI_Get_count / PMPI_Get_count(status: *const Status, datatype: Datatype, count: *mut c_int) -> c_int => api::get_count;
    fn MPI_Get_count_c / PMPI_Get_count_c(status: *const Status, datatype: Datatype, count: *mut Count) -> c_int => api::get_count_c;
}
