//! Exports of the coll2 area (see `core/src/abi/api/coll2.rs`): gather(v), scatter(v),
//! allgatherv, alltoall(v), scan, exscan, each with its MPI-4 large-count `_c` variant.

use std::ffi::{c_int, c_void};

use hcomm_core::abi::api::{self, Count, Ints};
use hcomm_core::export_mpi_functions;

type Comm = c_int;
type Datatype = c_int;
type Op = c_int;
/// `MPI_Aint` (`long` on LP64, as in MPICH).
type Aint = i64;

#[allow(clippy::too_many_arguments)]
unsafe fn gather(
    s: *const c_void,
    sn: c_int,
    st: Datatype,
    r: *mut c_void,
    rn: c_int,
    rt: Datatype,
    root: c_int,
    c: Comm,
) -> c_int {
    api::gather("MPI_Gather", s, sn.into(), st, r, rn.into(), rt, root, c)
}
#[allow(clippy::too_many_arguments)]
unsafe fn gather_c(
    s: *const c_void,
    sn: Count,
    st: Datatype,
    r: *mut c_void,
    rn: Count,
    rt: Datatype,
    root: c_int,
    c: Comm,
) -> c_int {
    api::gather("MPI_Gather_c", s, sn, st, r, rn, rt, root, c)
}
#[allow(clippy::too_many_arguments)]
unsafe fn gatherv(
    s: *const c_void,
    sn: c_int,
    st: Datatype,
    r: *mut c_void,
    rn: *const c_int,
    d: *const c_int,
    rt: Datatype,
    root: c_int,
    c: Comm,
) -> c_int {
    api::gatherv(
        "MPI_Gatherv",
        s,
        sn.into(),
        st,
        r,
        Ints::Int(rn),
        Ints::Int(d),
        rt,
        root,
        c,
    )
}
#[allow(clippy::too_many_arguments)]
unsafe fn gatherv_c(
    s: *const c_void,
    sn: Count,
    st: Datatype,
    r: *mut c_void,
    rn: *const Count,
    d: *const Aint,
    rt: Datatype,
    root: c_int,
    c: Comm,
) -> c_int {
    api::gatherv(
        "MPI_Gatherv_c",
        s,
        sn,
        st,
        r,
        Ints::Long(rn),
        Ints::Long(d),
        rt,
        root,
        c,
    )
}
#[allow(clippy::too_many_arguments)]
unsafe fn scatter(
    s: *const c_void,
    sn: c_int,
    st: Datatype,
    r: *mut c_void,
    rn: c_int,
    rt: Datatype,
    root: c_int,
    c: Comm,
) -> c_int {
    api::scatter("MPI_Scatter", s, sn.into(), st, r, rn.into(), rt, root, c)
}
#[allow(clippy::too_many_arguments)]
unsafe fn scatter_c(
    s: *const c_void,
    sn: Count,
    st: Datatype,
    r: *mut c_void,
    rn: Count,
    rt: Datatype,
    root: c_int,
    c: Comm,
) -> c_int {
    api::scatter("MPI_Scatter_c", s, sn, st, r, rn, rt, root, c)
}
#[allow(clippy::too_many_arguments)]
unsafe fn scatterv(
    s: *const c_void,
    sn: *const c_int,
    d: *const c_int,
    st: Datatype,
    r: *mut c_void,
    rn: c_int,
    rt: Datatype,
    root: c_int,
    c: Comm,
) -> c_int {
    api::scatterv(
        "MPI_Scatterv",
        s,
        Ints::Int(sn),
        Ints::Int(d),
        st,
        r,
        rn.into(),
        rt,
        root,
        c,
    )
}
#[allow(clippy::too_many_arguments)]
unsafe fn scatterv_c(
    s: *const c_void,
    sn: *const Count,
    d: *const Aint,
    st: Datatype,
    r: *mut c_void,
    rn: Count,
    rt: Datatype,
    root: c_int,
    c: Comm,
) -> c_int {
    api::scatterv(
        "MPI_Scatterv_c",
        s,
        Ints::Long(sn),
        Ints::Long(d),
        st,
        r,
        rn,
        rt,
        root,
        c,
    )
}
#[allow(clippy::too_many_arguments)]
unsafe fn allgatherv(
    s: *const c_void,
    sn: c_int,
    st: Datatype,
    r: *mut c_void,
    rn: *const c_int,
    d: *const c_int,
    rt: Datatype,
    c: Comm,
) -> c_int {
    api::allgatherv(
        "MPI_Allgatherv",
        s,
        sn.into(),
        st,
        r,
        Ints::Int(rn),
        Ints::Int(d),
        rt,
        c,
    )
}
#[allow(clippy::too_many_arguments)]
unsafe fn allgatherv_c(
    s: *const c_void,
    sn: Count,
    st: Datatype,
    r: *mut c_void,
    rn: *const Count,
    d: *const Aint,
    rt: Datatype,
    c: Comm,
) -> c_int {
    api::allgatherv(
        "MPI_Allgatherv_c",
        s,
        sn,
        st,
        r,
        Ints::Long(rn),
        Ints::Long(d),
        rt,
        c,
    )
}
#[allow(clippy::too_many_arguments)]
unsafe fn alltoall(
    s: *const c_void,
    sn: c_int,
    st: Datatype,
    r: *mut c_void,
    rn: c_int,
    rt: Datatype,
    c: Comm,
) -> c_int {
    api::alltoall("MPI_Alltoall", s, sn.into(), st, r, rn.into(), rt, c)
}
#[allow(clippy::too_many_arguments)]
unsafe fn alltoall_c(
    s: *const c_void,
    sn: Count,
    st: Datatype,
    r: *mut c_void,
    rn: Count,
    rt: Datatype,
    c: Comm,
) -> c_int {
    api::alltoall("MPI_Alltoall_c", s, sn, st, r, rn, rt, c)
}
#[allow(clippy::too_many_arguments)]
unsafe fn alltoallv(
    s: *const c_void,
    sn: *const c_int,
    sd: *const c_int,
    st: Datatype,
    r: *mut c_void,
    rn: *const c_int,
    rd: *const c_int,
    rt: Datatype,
    c: Comm,
) -> c_int {
    api::alltoallv(
        "MPI_Alltoallv",
        s,
        Ints::Int(sn),
        Ints::Int(sd),
        st,
        r,
        Ints::Int(rn),
        Ints::Int(rd),
        rt,
        c,
    )
}
#[allow(clippy::too_many_arguments)]
unsafe fn alltoallv_c(
    s: *const c_void,
    sn: *const Count,
    sd: *const Aint,
    st: Datatype,
    r: *mut c_void,
    rn: *const Count,
    rd: *const Aint,
    rt: Datatype,
    c: Comm,
) -> c_int {
    api::alltoallv(
        "MPI_Alltoallv_c",
        s,
        Ints::Long(sn),
        Ints::Long(sd),
        st,
        r,
        Ints::Long(rn),
        Ints::Long(rd),
        rt,
        c,
    )
}
unsafe fn scan(s: *const c_void, r: *mut c_void, n: c_int, t: Datatype, o: Op, c: Comm) -> c_int {
    api::scan("MPI_Scan", false, s, r, n.into(), t, o, c)
}
unsafe fn scan_c(s: *const c_void, r: *mut c_void, n: Count, t: Datatype, o: Op, c: Comm) -> c_int {
    api::scan("MPI_Scan_c", false, s, r, n, t, o, c)
}
unsafe fn exscan(s: *const c_void, r: *mut c_void, n: c_int, t: Datatype, o: Op, c: Comm) -> c_int {
    api::scan("MPI_Exscan", true, s, r, n.into(), t, o, c)
}
unsafe fn exscan_c(
    s: *const c_void,
    r: *mut c_void,
    n: Count,
    t: Datatype,
    o: Op,
    c: Comm,
) -> c_int {
    api::scan("MPI_Exscan_c", true, s, r, n, t, o, c)
}

#[allow(clippy::too_many_arguments)]
unsafe fn alltoallw(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtypes: *const Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtypes: *const Datatype,
    comm: Comm,
) -> c_int {
    api::alltoallw(
        "MPI_Alltoallw",
        sendbuf,
        Ints::Int(sendcounts),
        Ints::Int(sdispls),
        sendtypes,
        recvbuf,
        Ints::Int(recvcounts),
        Ints::Int(rdispls),
        recvtypes,
        comm,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn alltoallw_c(
    sendbuf: *const c_void,
    sendcounts: *const Count,
    sdispls: *const Aint,
    sendtypes: *const Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const Count,
    rdispls: *const Aint,
    recvtypes: *const Datatype,
    comm: Comm,
) -> c_int {
    api::alltoallw(
        "MPI_Alltoallw_c",
        sendbuf,
        Ints::Long(sendcounts),
        Ints::Long(sdispls),
        sendtypes,
        recvbuf,
        Ints::Long(recvcounts),
        Ints::Long(rdispls),
        recvtypes,
        comm,
    )
}

export_mpi_functions! {
    fn MPI_Gather / PMPI_Gather(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, root: c_int, comm: Comm) -> c_int => gather;
    fn MPI_Gather_c / PMPI_Gather_c(sendbuf: *const c_void, sendcount: Count, sendtype: Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: Datatype, root: c_int, comm: Comm) -> c_int => gather_c;
    fn MPI_Gatherv / PMPI_Gatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: Datatype, root: c_int, comm: Comm) -> c_int => gatherv;
    fn MPI_Gatherv_c / PMPI_Gatherv_c(sendbuf: *const c_void, sendcount: Count, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Aint, recvtype: Datatype, root: c_int, comm: Comm) -> c_int => gatherv_c;
    fn MPI_Scatter / PMPI_Scatter(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, root: c_int, comm: Comm) -> c_int => scatter;
    fn MPI_Scatter_c / PMPI_Scatter_c(sendbuf: *const c_void, sendcount: Count, sendtype: Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: Datatype, root: c_int, comm: Comm) -> c_int => scatter_c;
    fn MPI_Scatterv / PMPI_Scatterv(sendbuf: *const c_void, sendcounts: *const c_int, displs: *const c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, root: c_int, comm: Comm) -> c_int => scatterv;
    fn MPI_Scatterv_c / PMPI_Scatterv_c(sendbuf: *const c_void, sendcounts: *const Count, displs: *const Aint, sendtype: Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: Datatype, root: c_int, comm: Comm) -> c_int => scatterv_c;
    fn MPI_Allgatherv / PMPI_Allgatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: Datatype, comm: Comm) -> c_int => allgatherv;
    fn MPI_Allgatherv_c / PMPI_Allgatherv_c(sendbuf: *const c_void, sendcount: Count, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Aint, recvtype: Datatype, comm: Comm) -> c_int => allgatherv_c;
    fn MPI_Alltoall / PMPI_Alltoall(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, comm: Comm) -> c_int => alltoall;
    fn MPI_Alltoall_c / PMPI_Alltoall_c(sendbuf: *const c_void, sendcount: Count, sendtype: Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: Datatype, comm: Comm) -> c_int => alltoall_c;
    fn MPI_Alltoallv / PMPI_Alltoallv(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: Datatype, comm: Comm) -> c_int => alltoallv;
    fn MPI_Alltoallv_c / PMPI_Alltoallv_c(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Aint, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Aint, recvtype: Datatype, comm: Comm) -> c_int => alltoallv_c;
    fn MPI_Scan / PMPI_Scan(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Datatype, op: Op, comm: Comm) -> c_int => scan;
    fn MPI_Scan_c / PMPI_Scan_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: Datatype, op: Op, comm: Comm) -> c_int => scan_c;
    fn MPI_Exscan / PMPI_Exscan(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Datatype, op: Op, comm: Comm) -> c_int => exscan;
    fn MPI_Exscan_c / PMPI_Exscan_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: Datatype, op: Op, comm: Comm) -> c_int => exscan_c;
    fn MPI_Alltoallw / PMPI_Alltoallw(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtypes: *const Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtypes: *const Datatype, comm: Comm) -> c_int => alltoallw;
    fn MPI_Alltoallw_c / PMPI_Alltoallw_c(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Aint, sendtypes: *const Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Aint, recvtypes: *const Datatype, comm: Comm) -> c_int => alltoallw_c;
}
