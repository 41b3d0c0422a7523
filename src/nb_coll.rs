//! Exports of the nonblocking collectives added after the first set (see
//! `core/src/abi/api/nb.rs`): `MPI_Igather(v)`, `MPI_Iscatter(v)`, `MPI_Ialltoallv`,
//! `MPI_Ialltoallw`, `MPI_Iscan`, `MPI_Iexscan`, with their `_c` large-count forms.

use std::ffi::{c_int, c_void};

use hcomm_core::abi::api::{self, Count, Ints};
use hcomm_core::export_mpi_functions;

type Comm = c_int;
type Datatype = c_int;
type Op = c_int;
type Request = c_int;
/// `MPI_Aint` (`long` on LP64, as in MPICH).
type Aint = i64;

#[allow(clippy::too_many_arguments)]
unsafe fn igather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Datatype,
    root: c_int,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::igather(
        "MPI_Igather",
        sendbuf,
        sendcount.into(),
        sendtype,
        recvbuf,
        recvcount.into(),
        recvtype,
        root,
        comm,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn igather_c(
    sendbuf: *const c_void,
    sendcount: Count,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: Count,
    recvtype: Datatype,
    root: c_int,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::igather(
        "MPI_Igather_c",
        sendbuf,
        sendcount,
        sendtype,
        recvbuf,
        recvcount,
        recvtype,
        root,
        comm,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn igatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: Datatype,
    root: c_int,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::igatherv(
        "MPI_Igatherv",
        sendbuf,
        sendcount.into(),
        sendtype,
        recvbuf,
        Ints::Int(recvcounts),
        Ints::Int(displs),
        recvtype,
        root,
        comm,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn igatherv_c(
    sendbuf: *const c_void,
    sendcount: Count,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const Count,
    displs: *const Aint,
    recvtype: Datatype,
    root: c_int,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::igatherv(
        "MPI_Igatherv_c",
        sendbuf,
        sendcount,
        sendtype,
        recvbuf,
        Ints::Long(recvcounts),
        Ints::Long(displs),
        recvtype,
        root,
        comm,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn iscatter(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Datatype,
    root: c_int,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::iscatter(
        "MPI_Iscatter",
        sendbuf,
        sendcount.into(),
        sendtype,
        recvbuf,
        recvcount.into(),
        recvtype,
        root,
        comm,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn iscatter_c(
    sendbuf: *const c_void,
    sendcount: Count,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: Count,
    recvtype: Datatype,
    root: c_int,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::iscatter(
        "MPI_Iscatter_c",
        sendbuf,
        sendcount,
        sendtype,
        recvbuf,
        recvcount,
        recvtype,
        root,
        comm,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn iscatterv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    displs: *const c_int,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Datatype,
    root: c_int,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::iscatterv(
        "MPI_Iscatterv",
        sendbuf,
        Ints::Int(sendcounts),
        Ints::Int(displs),
        sendtype,
        recvbuf,
        recvcount.into(),
        recvtype,
        root,
        comm,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn iscatterv_c(
    sendbuf: *const c_void,
    sendcounts: *const Count,
    displs: *const Aint,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: Count,
    recvtype: Datatype,
    root: c_int,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::iscatterv(
        "MPI_Iscatterv_c",
        sendbuf,
        Ints::Long(sendcounts),
        Ints::Long(displs),
        sendtype,
        recvbuf,
        recvcount,
        recvtype,
        root,
        comm,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn ialltoallv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: Datatype,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::ialltoallv(
        "MPI_Ialltoallv",
        sendbuf,
        Ints::Int(sendcounts),
        Ints::Int(sdispls),
        sendtype,
        recvbuf,
        Ints::Int(recvcounts),
        Ints::Int(rdispls),
        recvtype,
        comm,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn ialltoallv_c(
    sendbuf: *const c_void,
    sendcounts: *const Count,
    sdispls: *const Aint,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const Count,
    rdispls: *const Aint,
    recvtype: Datatype,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::ialltoallv(
        "MPI_Ialltoallv_c",
        sendbuf,
        Ints::Long(sendcounts),
        Ints::Long(sdispls),
        sendtype,
        recvbuf,
        Ints::Long(recvcounts),
        Ints::Long(rdispls),
        recvtype,
        comm,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn ialltoallw(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtypes: *const Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtypes: *const Datatype,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::ialltoallw(
        "MPI_Ialltoallw",
        sendbuf,
        Ints::Int(sendcounts),
        Ints::Int(sdispls),
        sendtypes,
        recvbuf,
        Ints::Int(recvcounts),
        Ints::Int(rdispls),
        recvtypes,
        comm,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn ialltoallw_c(
    sendbuf: *const c_void,
    sendcounts: *const Count,
    sdispls: *const Aint,
    sendtypes: *const Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const Count,
    rdispls: *const Aint,
    recvtypes: *const Datatype,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::ialltoallw(
        "MPI_Ialltoallw_c",
        sendbuf,
        Ints::Long(sendcounts),
        Ints::Long(sdispls),
        sendtypes,
        recvbuf,
        Ints::Long(recvcounts),
        Ints::Long(rdispls),
        recvtypes,
        comm,
        request,
    )
}

unsafe fn iscan(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: Datatype,
    op: Op,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::iscan(
        "MPI_Iscan",
        sendbuf,
        recvbuf,
        count.into(),
        datatype,
        op,
        comm,
        request,
    )
}

unsafe fn iscan_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: Count,
    datatype: Datatype,
    op: Op,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::iscan(
        "MPI_Iscan_c",
        sendbuf,
        recvbuf,
        count,
        datatype,
        op,
        comm,
        request,
    )
}

unsafe fn iexscan(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: Datatype,
    op: Op,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::iexscan(
        "MPI_Iexscan",
        sendbuf,
        recvbuf,
        count.into(),
        datatype,
        op,
        comm,
        request,
    )
}

unsafe fn iexscan_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: Count,
    datatype: Datatype,
    op: Op,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::iexscan(
        "MPI_Iexscan_c",
        sendbuf,
        recvbuf,
        count,
        datatype,
        op,
        comm,
        request,
    )
}

export_mpi_functions! {
    fn MPI_Igather / PMPI_Igather(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, root: c_int, comm: Comm, request: *mut Request) -> c_int => igather;
    fn MPI_Igather_c / PMPI_Igather_c(sendbuf: *const c_void, sendcount: Count, sendtype: Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: Datatype, root: c_int, comm: Comm, request: *mut Request) -> c_int => igather_c;
    fn MPI_Igatherv / PMPI_Igatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: Datatype, root: c_int, comm: Comm, request: *mut Request) -> c_int => igatherv;
    fn MPI_Igatherv_c / PMPI_Igatherv_c(sendbuf: *const c_void, sendcount: Count, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Aint, recvtype: Datatype, root: c_int, comm: Comm, request: *mut Request) -> c_int => igatherv_c;
    fn MPI_Iscatter / PMPI_Iscatter(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, root: c_int, comm: Comm, request: *mut Request) -> c_int => iscatter;
    fn MPI_Iscatter_c / PMPI_Iscatter_c(sendbuf: *const c_void, sendcount: Count, sendtype: Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: Datatype, root: c_int, comm: Comm, request: *mut Request) -> c_int => iscatter_c;
    fn MPI_Iscatterv / PMPI_Iscatterv(sendbuf: *const c_void, sendcounts: *const c_int, displs: *const c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, root: c_int, comm: Comm, request: *mut Request) -> c_int => iscatterv;
    fn MPI_Iscatterv_c / PMPI_Iscatterv_c(sendbuf: *const c_void, sendcounts: *const Count, displs: *const Aint, sendtype: Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: Datatype, root: c_int, comm: Comm, request: *mut Request) -> c_int => iscatterv_c;
    fn MPI_Ialltoallv / PMPI_Ialltoallv(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: Datatype, comm: Comm, request: *mut Request) -> c_int => ialltoallv;
    fn MPI_Ialltoallv_c / PMPI_Ialltoallv_c(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Aint, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Aint, recvtype: Datatype, comm: Comm, request: *mut Request) -> c_int => ialltoallv_c;
    fn MPI_Ialltoallw / PMPI_Ialltoallw(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtypes: *const Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtypes: *const Datatype, comm: Comm, request: *mut Request) -> c_int => ialltoallw;
    fn MPI_Ialltoallw_c / PMPI_Ialltoallw_c(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Aint, sendtypes: *const Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Aint, recvtypes: *const Datatype, comm: Comm, request: *mut Request) -> c_int => ialltoallw_c;
    fn MPI_Iscan / PMPI_Iscan(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Datatype, op: Op, comm: Comm, request: *mut Request) -> c_int => iscan;
    fn MPI_Iscan_c / PMPI_Iscan_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: Datatype, op: Op, comm: Comm, request: *mut Request) -> c_int => iscan_c;
    fn MPI_Iexscan / PMPI_Iexscan(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Datatype, op: Op, comm: Comm, request: *mut Request) -> c_int => iexscan;
    fn MPI_Iexscan_c / PMPI_Iexscan_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: Datatype, op: Op, comm: Comm, request: *mut Request) -> c_int => iexscan_c;
}
