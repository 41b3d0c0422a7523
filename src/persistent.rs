//! Exports of the persistent requests (see `core/src/abi/api/persistent.rs`): the MPI 4.0
//! persistent collectives, `MPI_Send_init`, `MPI_Recv_init`, `MPI_Rsend_init` (with their `_c`
//! forms), `MPI_Start`, `MPI_Startall`.

use std::ffi::{c_int, c_void};

use hcomm_core::abi::api::{self, Count, Ints, RecvCounts};
use hcomm_core::export_mpi_functions;

type Comm = c_int;
type Datatype = c_int;
type Op = c_int;
type Info = c_int;
type Request = c_int;
/// `MPI_Aint` (`long` on LP64, as in MPICH).
type Aint = i64;

unsafe fn barrier_init(comm: Comm, info: Info, request: *mut Request) -> c_int {
    api::barrier_init("MPI_Barrier_init", comm, info, request)
}

unsafe fn bcast_init(
    buffer: *mut c_void,
    count: c_int,
    datatype: Datatype,
    root: c_int,
    comm: Comm,
    info: Info,
    request: *mut Request,
) -> c_int {
    api::bcast_init(
        "MPI_Bcast_init",
        buffer,
        count.into(),
        datatype,
        root,
        comm,
        info,
        request,
    )
}

unsafe fn bcast_init_c(
    buffer: *mut c_void,
    count: Count,
    datatype: Datatype,
    root: c_int,
    comm: Comm,
    info: Info,
    request: *mut Request,
) -> c_int {
    api::bcast_init(
        "MPI_Bcast_init_c",
        buffer,
        count,
        datatype,
        root,
        comm,
        info,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn reduce_init(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: Datatype,
    op: Op,
    root: c_int,
    comm: Comm,
    info: Info,
    request: *mut Request,
) -> c_int {
    api::reduce_init(
        "MPI_Reduce_init",
        sendbuf,
        recvbuf,
        count.into(),
        datatype,
        op,
        root,
        comm,
        info,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn reduce_init_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: Count,
    datatype: Datatype,
    op: Op,
    root: c_int,
    comm: Comm,
    info: Info,
    request: *mut Request,
) -> c_int {
    api::reduce_init(
        "MPI_Reduce_init_c",
        sendbuf,
        recvbuf,
        count,
        datatype,
        op,
        root,
        comm,
        info,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn allreduce_init(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: Datatype,
    op: Op,
    comm: Comm,
    info: Info,
    request: *mut Request,
) -> c_int {
    api::allreduce_init(
        "MPI_Allreduce_init",
        sendbuf,
        recvbuf,
        count.into(),
        datatype,
        op,
        comm,
        info,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn allreduce_init_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: Count,
    datatype: Datatype,
    op: Op,
    comm: Comm,
    info: Info,
    request: *mut Request,
) -> c_int {
    api::allreduce_init(
        "MPI_Allreduce_init_c",
        sendbuf,
        recvbuf,
        count,
        datatype,
        op,
        comm,
        info,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn allgather_init(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Datatype,
    comm: Comm,
    info: Info,
    request: *mut Request,
) -> c_int {
    api::allgather_init(
        "MPI_Allgather_init",
        sendbuf,
        sendcount.into(),
        sendtype,
        recvbuf,
        recvcount.into(),
        recvtype,
        comm,
        info,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn allgather_init_c(
    sendbuf: *const c_void,
    sendcount: Count,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: Count,
    recvtype: Datatype,
    comm: Comm,
    info: Info,
    request: *mut Request,
) -> c_int {
    api::allgather_init(
        "MPI_Allgather_init_c",
        sendbuf,
        sendcount,
        sendtype,
        recvbuf,
        recvcount,
        recvtype,
        comm,
        info,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn allgatherv_init(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: Datatype,
    comm: Comm,
    info: Info,
    request: *mut Request,
) -> c_int {
    api::allgatherv_init(
        "MPI_Allgatherv_init",
        sendbuf,
        sendcount.into(),
        sendtype,
        recvbuf,
        Ints::Int(recvcounts),
        Ints::Int(displs),
        recvtype,
        comm,
        info,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn allgatherv_init_c(
    sendbuf: *const c_void,
    sendcount: Count,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const Count,
    displs: *const Aint,
    recvtype: Datatype,
    comm: Comm,
    info: Info,
    request: *mut Request,
) -> c_int {
    api::allgatherv_init(
        "MPI_Allgatherv_init_c",
        sendbuf,
        sendcount,
        sendtype,
        recvbuf,
        Ints::Long(recvcounts),
        Ints::Long(displs),
        recvtype,
        comm,
        info,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn alltoall_init(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Datatype,
    comm: Comm,
    info: Info,
    request: *mut Request,
) -> c_int {
    api::alltoall_init(
        "MPI_Alltoall_init",
        sendbuf,
        sendcount.into(),
        sendtype,
        recvbuf,
        recvcount.into(),
        recvtype,
        comm,
        info,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn alltoall_init_c(
    sendbuf: *const c_void,
    sendcount: Count,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: Count,
    recvtype: Datatype,
    comm: Comm,
    info: Info,
    request: *mut Request,
) -> c_int {
    api::alltoall_init(
        "MPI_Alltoall_init_c",
        sendbuf,
        sendcount,
        sendtype,
        recvbuf,
        recvcount,
        recvtype,
        comm,
        info,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn alltoallv_init(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: Datatype,
    comm: Comm,
    info: Info,
    request: *mut Request,
) -> c_int {
    api::alltoallv_init(
        "MPI_Alltoallv_init",
        sendbuf,
        Ints::Int(sendcounts),
        Ints::Int(sdispls),
        sendtype,
        recvbuf,
        Ints::Int(recvcounts),
        Ints::Int(rdispls),
        recvtype,
        comm,
        info,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn alltoallv_init_c(
    sendbuf: *const c_void,
    sendcounts: *const Count,
    sdispls: *const Aint,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const Count,
    rdispls: *const Aint,
    recvtype: Datatype,
    comm: Comm,
    info: Info,
    request: *mut Request,
) -> c_int {
    api::alltoallv_init(
        "MPI_Alltoallv_init_c",
        sendbuf,
        Ints::Long(sendcounts),
        Ints::Long(sdispls),
        sendtype,
        recvbuf,
        Ints::Long(recvcounts),
        Ints::Long(rdispls),
        recvtype,
        comm,
        info,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn alltoallw_init(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtypes: *const Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtypes: *const Datatype,
    comm: Comm,
    info: Info,
    request: *mut Request,
) -> c_int {
    api::alltoallw_init(
        "MPI_Alltoallw_init",
        sendbuf,
        Ints::Int(sendcounts),
        Ints::Int(sdispls),
        sendtypes,
        recvbuf,
        Ints::Int(recvcounts),
        Ints::Int(rdispls),
        recvtypes,
        comm,
        info,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn alltoallw_init_c(
    sendbuf: *const c_void,
    sendcounts: *const Count,
    sdispls: *const Aint,
    sendtypes: *const Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const Count,
    rdispls: *const Aint,
    recvtypes: *const Datatype,
    comm: Comm,
    info: Info,
    request: *mut Request,
) -> c_int {
    api::alltoallw_init(
        "MPI_Alltoallw_init_c",
        sendbuf,
        Ints::Long(sendcounts),
        Ints::Long(sdispls),
        sendtypes,
        recvbuf,
        Ints::Long(recvcounts),
        Ints::Long(rdispls),
        recvtypes,
        comm,
        info,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn gather_init(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Datatype,
    root: c_int,
    comm: Comm,
    info: Info,
    request: *mut Request,
) -> c_int {
    api::gather_init(
        "MPI_Gather_init",
        sendbuf,
        sendcount.into(),
        sendtype,
        recvbuf,
        recvcount.into(),
        recvtype,
        root,
        comm,
        info,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn gather_init_c(
    sendbuf: *const c_void,
    sendcount: Count,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: Count,
    recvtype: Datatype,
    root: c_int,
    comm: Comm,
    info: Info,
    request: *mut Request,
) -> c_int {
    api::gather_init(
        "MPI_Gather_init_c",
        sendbuf,
        sendcount,
        sendtype,
        recvbuf,
        recvcount,
        recvtype,
        root,
        comm,
        info,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn gatherv_init(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: Datatype,
    root: c_int,
    comm: Comm,
    info: Info,
    request: *mut Request,
) -> c_int {
    api::gatherv_init(
        "MPI_Gatherv_init",
        sendbuf,
        sendcount.into(),
        sendtype,
        recvbuf,
        Ints::Int(recvcounts),
        Ints::Int(displs),
        recvtype,
        root,
        comm,
        info,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn gatherv_init_c(
    sendbuf: *const c_void,
    sendcount: Count,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const Count,
    displs: *const Aint,
    recvtype: Datatype,
    root: c_int,
    comm: Comm,
    info: Info,
    request: *mut Request,
) -> c_int {
    api::gatherv_init(
        "MPI_Gatherv_init_c",
        sendbuf,
        sendcount,
        sendtype,
        recvbuf,
        Ints::Long(recvcounts),
        Ints::Long(displs),
        recvtype,
        root,
        comm,
        info,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn scatter_init(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Datatype,
    root: c_int,
    comm: Comm,
    info: Info,
    request: *mut Request,
) -> c_int {
    api::scatter_init(
        "MPI_Scatter_init",
        sendbuf,
        sendcount.into(),
        sendtype,
        recvbuf,
        recvcount.into(),
        recvtype,
        root,
        comm,
        info,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn scatter_init_c(
    sendbuf: *const c_void,
    sendcount: Count,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: Count,
    recvtype: Datatype,
    root: c_int,
    comm: Comm,
    info: Info,
    request: *mut Request,
) -> c_int {
    api::scatter_init(
        "MPI_Scatter_init_c",
        sendbuf,
        sendcount,
        sendtype,
        recvbuf,
        recvcount,
        recvtype,
        root,
        comm,
        info,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn scatterv_init(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    displs: *const c_int,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Datatype,
    root: c_int,
    comm: Comm,
    info: Info,
    request: *mut Request,
) -> c_int {
    api::scatterv_init(
        "MPI_Scatterv_init",
        sendbuf,
        Ints::Int(sendcounts),
        Ints::Int(displs),
        sendtype,
        recvbuf,
        recvcount.into(),
        recvtype,
        root,
        comm,
        info,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn scatterv_init_c(
    sendbuf: *const c_void,
    sendcounts: *const Count,
    displs: *const Aint,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: Count,
    recvtype: Datatype,
    root: c_int,
    comm: Comm,
    info: Info,
    request: *mut Request,
) -> c_int {
    api::scatterv_init(
        "MPI_Scatterv_init_c",
        sendbuf,
        Ints::Long(sendcounts),
        Ints::Long(displs),
        sendtype,
        recvbuf,
        recvcount,
        recvtype,
        root,
        comm,
        info,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn reduce_scatter_init(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    datatype: Datatype,
    op: Op,
    comm: Comm,
    info: Info,
    request: *mut Request,
) -> c_int {
    api::reduce_scatter_init(
        "MPI_Reduce_scatter_init",
        sendbuf,
        recvbuf,
        RecvCounts::Int(recvcounts),
        datatype,
        op,
        comm,
        info,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn reduce_scatter_init_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const Count,
    datatype: Datatype,
    op: Op,
    comm: Comm,
    info: Info,
    request: *mut Request,
) -> c_int {
    api::reduce_scatter_init(
        "MPI_Reduce_scatter_init_c",
        sendbuf,
        recvbuf,
        RecvCounts::Count(recvcounts),
        datatype,
        op,
        comm,
        info,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn reduce_scatter_block_init(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: c_int,
    datatype: Datatype,
    op: Op,
    comm: Comm,
    info: Info,
    request: *mut Request,
) -> c_int {
    api::reduce_scatter_block_init(
        "MPI_Reduce_scatter_block_init",
        sendbuf,
        recvbuf,
        recvcount.into(),
        datatype,
        op,
        comm,
        info,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn reduce_scatter_block_init_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: Count,
    datatype: Datatype,
    op: Op,
    comm: Comm,
    info: Info,
    request: *mut Request,
) -> c_int {
    api::reduce_scatter_block_init(
        "MPI_Reduce_scatter_block_init_c",
        sendbuf,
        recvbuf,
        recvcount,
        datatype,
        op,
        comm,
        info,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn scan_init(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: Datatype,
    op: Op,
    comm: Comm,
    info: Info,
    request: *mut Request,
) -> c_int {
    api::scan_init(
        "MPI_Scan_init",
        sendbuf,
        recvbuf,
        count.into(),
        datatype,
        op,
        comm,
        info,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn scan_init_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: Count,
    datatype: Datatype,
    op: Op,
    comm: Comm,
    info: Info,
    request: *mut Request,
) -> c_int {
    api::scan_init(
        "MPI_Scan_init_c",
        sendbuf,
        recvbuf,
        count,
        datatype,
        op,
        comm,
        info,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn exscan_init(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: Datatype,
    op: Op,
    comm: Comm,
    info: Info,
    request: *mut Request,
) -> c_int {
    api::exscan_init(
        "MPI_Exscan_init",
        sendbuf,
        recvbuf,
        count.into(),
        datatype,
        op,
        comm,
        info,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn exscan_init_c(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: Count,
    datatype: Datatype,
    op: Op,
    comm: Comm,
    info: Info,
    request: *mut Request,
) -> c_int {
    api::exscan_init(
        "MPI_Exscan_init_c",
        sendbuf,
        recvbuf,
        count,
        datatype,
        op,
        comm,
        info,
        request,
    )
}

unsafe fn send_init(
    buf: *const c_void,
    count: c_int,
    datatype: Datatype,
    dest: c_int,
    tag: c_int,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::send_init(
        "MPI_Send_init",
        buf,
        count.into(),
        datatype,
        dest,
        tag,
        comm,
        request,
    )
}

unsafe fn send_init_c(
    buf: *const c_void,
    count: Count,
    datatype: Datatype,
    dest: c_int,
    tag: c_int,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::send_init(
        "MPI_Send_init_c",
        buf,
        count,
        datatype,
        dest,
        tag,
        comm,
        request,
    )
}

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

unsafe fn recv_init(
    buf: *mut c_void,
    count: c_int,
    datatype: Datatype,
    source: c_int,
    tag: c_int,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::recv_init(
        "MPI_Recv_init",
        buf,
        count.into(),
        datatype,
        source,
        tag,
        comm,
        request,
    )
}

unsafe fn recv_init_c(
    buf: *mut c_void,
    count: Count,
    datatype: Datatype,
    source: c_int,
    tag: c_int,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::recv_init(
        "MPI_Recv_init_c",
        buf,
        count,
        datatype,
        source,
        tag,
        comm,
        request,
    )
}

export_mpi_functions! {
    fn MPI_Barrier_init / PMPI_Barrier_init(comm: Comm, info: Info, request: *mut Request) -> c_int => barrier_init;
    fn MPI_Bcast_init / PMPI_Bcast_init(buffer: *mut c_void, count: c_int, datatype: Datatype, root: c_int, comm: Comm, info: Info, request: *mut Request) -> c_int => bcast_init;
    fn MPI_Bcast_init_c / PMPI_Bcast_init_c(buffer: *mut c_void, count: Count, datatype: Datatype, root: c_int, comm: Comm, info: Info, request: *mut Request) -> c_int => bcast_init_c;
    fn MPI_Reduce_init / PMPI_Reduce_init(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Datatype, op: Op, root: c_int, comm: Comm, info: Info, request: *mut Request) -> c_int => reduce_init;
    fn MPI_Reduce_init_c / PMPI_Reduce_init_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: Datatype, op: Op, root: c_int, comm: Comm, info: Info, request: *mut Request) -> c_int => reduce_init_c;
    fn MPI_Allreduce_init / PMPI_Allreduce_init(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Datatype, op: Op, comm: Comm, info: Info, request: *mut Request) -> c_int => allreduce_init;
    fn MPI_Allreduce_init_c / PMPI_Allreduce_init_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: Datatype, op: Op, comm: Comm, info: Info, request: *mut Request) -> c_int => allreduce_init_c;
    fn MPI_Allgather_init / PMPI_Allgather_init(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, comm: Comm, info: Info, request: *mut Request) -> c_int => allgather_init;
    fn MPI_Allgather_init_c / PMPI_Allgather_init_c(sendbuf: *const c_void, sendcount: Count, sendtype: Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: Datatype, comm: Comm, info: Info, request: *mut Request) -> c_int => allgather_init_c;
    fn MPI_Allgatherv_init / PMPI_Allgatherv_init(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: Datatype, comm: Comm, info: Info, request: *mut Request) -> c_int => allgatherv_init;
    fn MPI_Allgatherv_init_c / PMPI_Allgatherv_init_c(sendbuf: *const c_void, sendcount: Count, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Aint, recvtype: Datatype, comm: Comm, info: Info, request: *mut Request) -> c_int => allgatherv_init_c;
    fn MPI_Alltoall_init / PMPI_Alltoall_init(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, comm: Comm, info: Info, request: *mut Request) -> c_int => alltoall_init;
    fn MPI_Alltoall_init_c / PMPI_Alltoall_init_c(sendbuf: *const c_void, sendcount: Count, sendtype: Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: Datatype, comm: Comm, info: Info, request: *mut Request) -> c_int => alltoall_init_c;
    fn MPI_Alltoallv_init / PMPI_Alltoallv_init(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: Datatype, comm: Comm, info: Info, request: *mut Request) -> c_int => alltoallv_init;
    fn MPI_Alltoallv_init_c / PMPI_Alltoallv_init_c(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Aint, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Aint, recvtype: Datatype, comm: Comm, info: Info, request: *mut Request) -> c_int => alltoallv_init_c;
    fn MPI_Alltoallw_init / PMPI_Alltoallw_init(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtypes: *const Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtypes: *const Datatype, comm: Comm, info: Info, request: *mut Request) -> c_int => alltoallw_init;
    fn MPI_Alltoallw_init_c / PMPI_Alltoallw_init_c(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Aint, sendtypes: *const Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Aint, recvtypes: *const Datatype, comm: Comm, info: Info, request: *mut Request) -> c_int => alltoallw_init_c;
    fn MPI_Gather_init / PMPI_Gather_init(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, root: c_int, comm: Comm, info: Info, request: *mut Request) -> c_int => gather_init;
    fn MPI_Gather_init_c / PMPI_Gather_init_c(sendbuf: *const c_void, sendcount: Count, sendtype: Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: Datatype, root: c_int, comm: Comm, info: Info, request: *mut Request) -> c_int => gather_init_c;
    fn MPI_Gatherv_init / PMPI_Gatherv_init(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: Datatype, root: c_int, comm: Comm, info: Info, request: *mut Request) -> c_int => gatherv_init;
    fn MPI_Gatherv_init_c / PMPI_Gatherv_init_c(sendbuf: *const c_void, sendcount: Count, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Aint, recvtype: Datatype, root: c_int, comm: Comm, info: Info, request: *mut Request) -> c_int => gatherv_init_c;
    fn MPI_Scatter_init / PMPI_Scatter_init(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, root: c_int, comm: Comm, info: Info, request: *mut Request) -> c_int => scatter_init;
    fn MPI_Scatter_init_c / PMPI_Scatter_init_c(sendbuf: *const c_void, sendcount: Count, sendtype: Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: Datatype, root: c_int, comm: Comm, info: Info, request: *mut Request) -> c_int => scatter_init_c;
    fn MPI_Scatterv_init / PMPI_Scatterv_init(sendbuf: *const c_void, sendcounts: *const c_int, displs: *const c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, root: c_int, comm: Comm, info: Info, request: *mut Request) -> c_int => scatterv_init;
    fn MPI_Scatterv_init_c / PMPI_Scatterv_init_c(sendbuf: *const c_void, sendcounts: *const Count, displs: *const Aint, sendtype: Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: Datatype, root: c_int, comm: Comm, info: Info, request: *mut Request) -> c_int => scatterv_init_c;
    fn MPI_Reduce_scatter_init / PMPI_Reduce_scatter_init(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const c_int, datatype: Datatype, op: Op, comm: Comm, info: Info, request: *mut Request) -> c_int => reduce_scatter_init;
    fn MPI_Reduce_scatter_init_c / PMPI_Reduce_scatter_init_c(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const Count, datatype: Datatype, op: Op, comm: Comm, info: Info, request: *mut Request) -> c_int => reduce_scatter_init_c;
    fn MPI_Reduce_scatter_block_init / PMPI_Reduce_scatter_block_init(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: c_int, datatype: Datatype, op: Op, comm: Comm, info: Info, request: *mut Request) -> c_int => reduce_scatter_block_init;
    fn MPI_Reduce_scatter_block_init_c / PMPI_Reduce_scatter_block_init_c(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: Count, datatype: Datatype, op: Op, comm: Comm, info: Info, request: *mut Request) -> c_int => reduce_scatter_block_init_c;
    fn MPI_Scan_init / PMPI_Scan_init(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Datatype, op: Op, comm: Comm, info: Info, request: *mut Request) -> c_int => scan_init;
    fn MPI_Scan_init_c / PMPI_Scan_init_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: Datatype, op: Op, comm: Comm, info: Info, request: *mut Request) -> c_int => scan_init_c;
    fn MPI_Exscan_init / PMPI_Exscan_init(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Datatype, op: Op, comm: Comm, info: Info, request: *mut Request) -> c_int => exscan_init;
    fn MPI_Exscan_init_c / PMPI_Exscan_init_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: Datatype, op: Op, comm: Comm, info: Info, request: *mut Request) -> c_int => exscan_init_c;
    fn MPI_Send_init / PMPI_Send_init(buf: *const c_void, count: c_int, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm, request: *mut Request) -> c_int => send_init;
    fn MPI_Send_init_c / PMPI_Send_init_c(buf: *const c_void, count: Count, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm, request: *mut Request) -> c_int => send_init_c;
    fn MPI_Rsend_init / PMPI_Rsend_init(buf: *const c_void, count: c_int, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm, request: *mut Request) -> c_int => rsend_init;
    fn MPI_Rsend_init_c / PMPI_Rsend_init_c(buf: *const c_void, count: Count, datatype: Datatype, dest: c_int, tag: c_int, comm: Comm, request: *mut Request) -> c_int => rsend_init_c;
    fn MPI_Recv_init / PMPI_Recv_init(buf: *mut c_void, count: c_int, datatype: Datatype, source: c_int, tag: c_int, comm: Comm, request: *mut Request) -> c_int => recv_init;
    fn MPI_Recv_init_c / PMPI_Recv_init_c(buf: *mut c_void, count: Count, datatype: Datatype, source: c_int, tag: c_int, comm: Comm, request: *mut Request) -> c_int => recv_init_c;
    fn MPI_Start / PMPI_Start(request: *mut Request) -> c_int => api::start;
    fn MPI_Startall / PMPI_Startall(count: c_int, array_of_requests: *mut Request) -> c_int => api::startall;
}
