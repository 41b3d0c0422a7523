//! Exports of the nonblocking area (see `core/src/abi/api/nb.rs`): nonblocking collectives and
//! point-to-point, with the MPI-4 large-count `_c` variants MPICH 4.0 declares, and the
//! request completion calls.

use std::ffi::{c_int, c_void};

use hcomm_core::abi::api::{self, Count, Ints, RecvCounts, Status};
use hcomm_core::export_mpi_functions;

type Comm = c_int;
type Datatype = c_int;
type Op = c_int;
type Request = c_int;
/// `MPI_Aint` (`long` on LP64, as in MPICH).
type Aint = i64;

#[allow(clippy::too_many_arguments)]
unsafe fn isend(
    b: *const c_void,
    n: c_int,
    t: Datatype,
    d: c_int,
    tag: c_int,
    c: Comm,
    r: *mut Request,
) -> c_int {
    api::isend("MPI_Isend", b, n.into(), t, d, tag, c, r)
}
#[allow(clippy::too_many_arguments)]
unsafe fn isend_c(
    b: *const c_void,
    n: Count,
    t: Datatype,
    d: c_int,
    tag: c_int,
    c: Comm,
    r: *mut Request,
) -> c_int {
    api::isend("MPI_Isend_c", b, n, t, d, tag, c, r)
}
#[allow(clippy::too_many_arguments)]
unsafe fn irecv(
    b: *mut c_void,
    n: c_int,
    t: Datatype,
    s: c_int,
    tag: c_int,
    c: Comm,
    r: *mut Request,
) -> c_int {
    api::irecv("MPI_Irecv", b, n.into(), t, s, tag, c, r)
}
#[allow(clippy::too_many_arguments)]
unsafe fn irecv_c(
    b: *mut c_void,
    n: Count,
    t: Datatype,
    s: c_int,
    tag: c_int,
    c: Comm,
    r: *mut Request,
) -> c_int {
    api::irecv("MPI_Irecv_c", b, n, t, s, tag, c, r)
}
unsafe fn ibarrier(c: Comm, r: *mut Request) -> c_int {
    api::ibarrier("MPI_Ibarrier", c, r)
}
unsafe fn ibcast(
    b: *mut c_void,
    n: c_int,
    t: Datatype,
    root: c_int,
    c: Comm,
    r: *mut Request,
) -> c_int {
    api::ibcast("MPI_Ibcast", b, n.into(), t, root, c, r)
}
unsafe fn ibcast_c(
    b: *mut c_void,
    n: Count,
    t: Datatype,
    root: c_int,
    c: Comm,
    r: *mut Request,
) -> c_int {
    api::ibcast("MPI_Ibcast_c", b, n, t, root, c, r)
}
#[allow(clippy::too_many_arguments)]
unsafe fn ireduce(
    s: *const c_void,
    rb: *mut c_void,
    n: c_int,
    t: Datatype,
    o: Op,
    root: c_int,
    c: Comm,
    r: *mut Request,
) -> c_int {
    api::ireduce("MPI_Ireduce", s, rb, n.into(), t, o, root, c, r)
}
#[allow(clippy::too_many_arguments)]
unsafe fn ireduce_c(
    s: *const c_void,
    rb: *mut c_void,
    n: Count,
    t: Datatype,
    o: Op,
    root: c_int,
    c: Comm,
    r: *mut Request,
) -> c_int {
    api::ireduce("MPI_Ireduce_c", s, rb, n, t, o, root, c, r)
}
unsafe fn iallreduce(
    s: *const c_void,
    rb: *mut c_void,
    n: c_int,
    t: Datatype,
    o: Op,
    c: Comm,
    r: *mut Request,
) -> c_int {
    api::iallreduce("MPI_Iallreduce", s, rb, n.into(), t, o, c, r)
}
unsafe fn iallreduce_c(
    s: *const c_void,
    rb: *mut c_void,
    n: Count,
    t: Datatype,
    o: Op,
    c: Comm,
    r: *mut Request,
) -> c_int {
    api::iallreduce("MPI_Iallreduce_c", s, rb, n, t, o, c, r)
}
#[allow(clippy::too_many_arguments)]
unsafe fn iallgather(
    s: *const c_void,
    sn: c_int,
    st: Datatype,
    rb: *mut c_void,
    rn: c_int,
    rt: Datatype,
    c: Comm,
    r: *mut Request,
) -> c_int {
    api::iallgather("MPI_Iallgather", s, sn.into(), st, rb, rn.into(), rt, c, r)
}
#[allow(clippy::too_many_arguments)]
unsafe fn iallgather_c(
    s: *const c_void,
    sn: Count,
    st: Datatype,
    rb: *mut c_void,
    rn: Count,
    rt: Datatype,
    c: Comm,
    r: *mut Request,
) -> c_int {
    api::iallgather("MPI_Iallgather_c", s, sn, st, rb, rn, rt, c, r)
}
#[allow(clippy::too_many_arguments)]
unsafe fn iallgatherv(
    s: *const c_void,
    sn: c_int,
    st: Datatype,
    rb: *mut c_void,
    rn: *const c_int,
    d: *const c_int,
    rt: Datatype,
    c: Comm,
    r: *mut Request,
) -> c_int {
    api::iallgatherv(
        "MPI_Iallgatherv",
        s,
        sn.into(),
        st,
        rb,
        Ints::Int(rn),
        Ints::Int(d),
        rt,
        c,
        r,
    )
}
#[allow(clippy::too_many_arguments)]
unsafe fn iallgatherv_c(
    s: *const c_void,
    sn: Count,
    st: Datatype,
    rb: *mut c_void,
    rn: *const Count,
    d: *const Aint,
    rt: Datatype,
    c: Comm,
    r: *mut Request,
) -> c_int {
    api::iallgatherv(
        "MPI_Iallgatherv_c",
        s,
        sn,
        st,
        rb,
        Ints::Long(rn),
        Ints::Long(d),
        rt,
        c,
        r,
    )
}
#[allow(clippy::too_many_arguments)]
unsafe fn ireduce_scatter(
    s: *const c_void,
    rb: *mut c_void,
    n: *const c_int,
    t: Datatype,
    o: Op,
    c: Comm,
    r: *mut Request,
) -> c_int {
    api::ireduce_scatter("MPI_Ireduce_scatter", s, rb, RecvCounts::Int(n), t, o, c, r)
}
#[allow(clippy::too_many_arguments)]
unsafe fn ireduce_scatter_c(
    s: *const c_void,
    rb: *mut c_void,
    n: *const Count,
    t: Datatype,
    o: Op,
    c: Comm,
    r: *mut Request,
) -> c_int {
    api::ireduce_scatter(
        "MPI_Ireduce_scatter_c",
        s,
        rb,
        RecvCounts::Count(n),
        t,
        o,
        c,
        r,
    )
}
unsafe fn ireduce_scatter_block(
    s: *const c_void,
    rb: *mut c_void,
    n: c_int,
    t: Datatype,
    o: Op,
    c: Comm,
    r: *mut Request,
) -> c_int {
    api::ireduce_scatter_block("MPI_Ireduce_scatter_block", s, rb, n.into(), t, o, c, r)
}
unsafe fn ireduce_scatter_block_c(
    s: *const c_void,
    rb: *mut c_void,
    n: Count,
    t: Datatype,
    o: Op,
    c: Comm,
    r: *mut Request,
) -> c_int {
    api::ireduce_scatter_block("MPI_Ireduce_scatter_block_c", s, rb, n, t, o, c, r)
}
#[allow(clippy::too_many_arguments)]
unsafe fn ialltoall(
    s: *const c_void,
    sn: c_int,
    st: Datatype,
    rb: *mut c_void,
    rn: c_int,
    rt: Datatype,
    c: Comm,
    r: *mut Request,
) -> c_int {
    api::ialltoall("MPI_Ialltoall", s, sn.into(), st, rb, rn.into(), rt, c, r)
}
#[allow(clippy::too_many_arguments)]
unsafe fn ialltoall_c(
    s: *const c_void,
    sn: Count,
    st: Datatype,
    rb: *mut c_void,
    rn: Count,
    rt: Datatype,
    c: Comm,
    r: *mut Request,
) -> c_int {
    api::ialltoall("MPI_Ialltoall_c", s, sn, st, rb, rn, rt, c, r)
}

export_mpi_functions! {
    fn MPI_Isend / PMPI_Isend(buf: *const c_void, count: c_int, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm, request: *mut Request) -> c_int => isend;
    fn MPI_Isend_c / PMPI_Isend_c(buf: *const c_void, count: Count, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm, request: *mut Request) -> c_int => isend_c;
    fn MPI_Irecv / PMPI_Irecv(buf: *mut c_void, count: c_int, datatype: Datatype, source: c_int, tag: c_int, comm: Comm, request: *mut Request) -> c_int => irecv;
    fn MPI_Irecv_c / PMPI_Irecv_c(buf: *mut c_void, count: Count, datatype: Datatype, source: c_int, tag: c_int, comm: Comm, request: *mut Request) -> c_int => irecv_c;
    fn MPI_Wait / PMPI_Wait(request: *mut Request, status: *mut Status) -> c_int => api::wait;
    fn MPI_Waitall / PMPI_Waitall(count: c_int, array_of_requests: *mut Request, array_of_statuses: *mut Status) -> c_int => api::waitall;
    fn MPI_Waitany / PMPI_Waitany(count: c_int, array_of_requests: *mut Request, indx: *mut c_int, status: *mut Status) -> c_int => api::waitany;
    fn MPI_Waitsome / PMPI_Waitsome(incount: c_int, array_of_requests: *mut Request, outcount: *mut c_int, array_of_indices: *mut c_int, array_of_statuses: *mut Status) -> c_int => api::waitsome;
    fn MPI_Test / PMPI_Test(request: *mut Request, flag: *mut c_int, status: *mut Status) -> c_int => api::test;
    fn MPI_Testall / PMPI_Testall(count: c_int, array_of_requests: *mut Request, flag: *mut c_int, array_of_statuses: *mut Status) -> c_int => api::testall;
    fn MPI_Testany / PMPI_Testany(count: c_int, array_of_requests: *mut Request, indx: *mut c_int, flag: *mut c_int, status: *mut Status) -> c_int => api::testany;
    fn MPI_Testsome / PMPI_Testsome(incount: c_int, array_of_requests: *mut Request, outcount: *mut c_int, array_of_indices: *mut c_int, array_of_statuses: *mut Status) -> c_int => api::testsome;
    fn MPI_Request_free / PMPI_Request_free(request: *mut Request) -> c_int => api::request_free;
    fn MPI_Request_get_status / PMPI_Request_get_status(request: Request, flag: *mut c_int, status: *mut Status) -> c_int => api::request_get_status;
    fn MPI_Request_get_status_any / PMPI_Request_get_status_any(count: c_int, array_of_requests: *const Request, index: *mut c_int, flag: *mut c_int, status: *mut Status) -> c_int => api::request_get_status_any;
    fn MPI_Request_get_status_all / PMPI_Request_get_status_all(count: c_int, array_of_requests: *const Request, flag: *mut c_int, array_of_statuses: *mut Status) -> c_int => api::request_get_status_all;
    fn MPI_Request_get_status_some / PMPI_Request_get_status_some(incount: c_int, array_of_requests: *const Request, outcount: *mut c_int, array_of_indices: *mut c_int, array_of_statuses: *mut Status) -> c_int => api::request_get_status_some;
    fn MPI_Cancel / PMPI_Cancel(request: *mut Request) -> c_int => api::cancel;
    fn MPI_Test_cancelled / PMPI_Test_cancelled(status: *const Status, flag: *mut c_int) -> c_int => api::test_cancelled;
    fn MPI_Ibarrier / PMPI_Ibarrier(comm: Comm, request: *mut Request) -> c_int => ibarrier;
    fn MPI_Ibcast / PMPI_Ibcast(buffer: *mut c_void, count: c_int, datatype: Datatype, root: c_int, comm: Comm, request: *mut Request) -> c_int => ibcast;
    fn MPI_Ibcast_c / PMPI_Ibcast_c(buffer: *mut c_void, count: Count, datatype: Datatype, root: c_int, comm: Comm, request: *mut Request) -> c_int => ibcast_c;
    fn MPI_Ireduce / PMPI_Ireduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Datatype, op: Op, root: c_int, comm: Comm, request: *mut Request) -> c_int => ireduce;
    fn MPI_Ireduce_c / PMPI_Ireduce_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: Datatype, op: Op, root: c_int, comm: Comm, request: *mut Request) -> c_int => ireduce_c;
    fn MPI_Iallreduce / PMPI_Iallreduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Datatype, op: Op, comm: Comm, request: *mut Request) -> c_int => iallreduce;
    fn MPI_Iallreduce_c / PMPI_Iallreduce_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: Datatype, op: Op, comm: Comm, request: *mut Request) -> c_int => iallreduce_c;
    fn MPI_Iallgather / PMPI_Iallgather(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, comm: Comm, request: *mut Request) -> c_int => iallgather;
    fn MPI_Iallgather_c / PMPI_Iallgather_c(sendbuf: *const c_void, sendcount: Count, sendtype: Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: Datatype, comm: Comm, request: *mut Request) -> c_int => iallgather_c;
    fn MPI_Iallgatherv / PMPI_Iallgatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: Datatype, comm: Comm, request: *mut Request) -> c_int => iallgatherv;
    fn MPI_Iallgatherv_c / PMPI_Iallgatherv_c(sendbuf: *const c_void, sendcount: Count, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Aint, recvtype: Datatype, comm: Comm, request: *mut Request) -> c_int => iallgatherv_c;
    fn MPI_Ireduce_scatter / PMPI_Ireduce_scatter(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const c_int, datatype: Datatype, op: Op, comm: Comm, request: *mut Request) -> c_int => ireduce_scatter;
    fn MPI_Ireduce_scatter_c / PMPI_Ireduce_scatter_c(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const Count, datatype: Datatype, op: Op, comm: Comm, request: *mut Request) -> c_int => ireduce_scatter_c;
    fn MPI_Ireduce_scatter_block / PMPI_Ireduce_scatter_block(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: c_int, datatype: Datatype, op: Op, comm: Comm, request: *mut Request) -> c_int => ireduce_scatter_block;
    fn MPI_Ireduce_scatter_block_c / PMPI_Ireduce_scatter_block_c(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: Count, datatype: Datatype, op: Op, comm: Comm, request: *mut Request) -> c_int => ireduce_scatter_block_c;
    fn MPI_Ialltoall / PMPI_Ialltoall(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, comm: Comm, request: *mut Request) -> c_int => ialltoall;
    fn MPI_Ialltoall_c / PMPI_Ialltoall_c(sendbuf: *const c_void, sendcount: Count, sendtype: Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: Datatype, comm: Comm, request: *mut Request) -> c_int => ialltoall_c;
}
