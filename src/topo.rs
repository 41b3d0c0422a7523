//! Exports of the process-topology calls and the neighbor collectives (see
//! `core/src/abi/api/{cart,graph,neighbor}.rs`).

use std::ffi::{c_int, c_void};

use hcomm_core::abi::api::{self, Count, Ints};
use hcomm_core::export_mpi_functions;

type Comm = c_int;
type Datatype = c_int;
type Info = c_int;
type Request = c_int;
type Aint = i64;

#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_allgather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Datatype,
    comm: Comm,
) -> c_int {
    api::neighbor_allgather(
        "MPI_Neighbor_allgather",
        sendbuf,
        sendcount as Count,
        sendtype,
        recvbuf,
        recvcount as Count,
        recvtype,
        comm,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_allgather_c(
    sendbuf: *const c_void,
    sendcount: Count,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: Count,
    recvtype: Datatype,
    comm: Comm,
) -> c_int {
    api::neighbor_allgather(
        "MPI_Neighbor_allgather_c",
        sendbuf,
        sendcount,
        sendtype,
        recvbuf,
        recvcount,
        recvtype,
        comm,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn ineighbor_allgather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Datatype,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::ineighbor_allgather(
        "MPI_Ineighbor_allgather",
        sendbuf,
        sendcount as Count,
        sendtype,
        recvbuf,
        recvcount as Count,
        recvtype,
        comm,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn ineighbor_allgather_c(
    sendbuf: *const c_void,
    sendcount: Count,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: Count,
    recvtype: Datatype,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::ineighbor_allgather(
        "MPI_Ineighbor_allgather_c",
        sendbuf,
        sendcount,
        sendtype,
        recvbuf,
        recvcount,
        recvtype,
        comm,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_allgatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: Datatype,
    comm: Comm,
) -> c_int {
    api::neighbor_allgatherv(
        "MPI_Neighbor_allgatherv",
        sendbuf,
        sendcount as Count,
        sendtype,
        recvbuf,
        Ints::Int(recvcounts),
        Ints::Int(displs),
        recvtype,
        comm,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_allgatherv_c(
    sendbuf: *const c_void,
    sendcount: Count,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const Count,
    displs: *const Aint,
    recvtype: Datatype,
    comm: Comm,
) -> c_int {
    api::neighbor_allgatherv(
        "MPI_Neighbor_allgatherv_c",
        sendbuf,
        sendcount,
        sendtype,
        recvbuf,
        Ints::Long(recvcounts),
        Ints::Long(displs),
        recvtype,
        comm,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn ineighbor_allgatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: Datatype,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::ineighbor_allgatherv(
        "MPI_Ineighbor_allgatherv",
        sendbuf,
        sendcount as Count,
        sendtype,
        recvbuf,
        Ints::Int(recvcounts),
        Ints::Int(displs),
        recvtype,
        comm,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn ineighbor_allgatherv_c(
    sendbuf: *const c_void,
    sendcount: Count,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const Count,
    displs: *const Aint,
    recvtype: Datatype,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::ineighbor_allgatherv(
        "MPI_Ineighbor_allgatherv_c",
        sendbuf,
        sendcount,
        sendtype,
        recvbuf,
        Ints::Long(recvcounts),
        Ints::Long(displs),
        recvtype,
        comm,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_alltoall(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Datatype,
    comm: Comm,
) -> c_int {
    api::neighbor_alltoall(
        "MPI_Neighbor_alltoall",
        sendbuf,
        sendcount as Count,
        sendtype,
        recvbuf,
        recvcount as Count,
        recvtype,
        comm,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_alltoall_c(
    sendbuf: *const c_void,
    sendcount: Count,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: Count,
    recvtype: Datatype,
    comm: Comm,
) -> c_int {
    api::neighbor_alltoall(
        "MPI_Neighbor_alltoall_c",
        sendbuf,
        sendcount,
        sendtype,
        recvbuf,
        recvcount,
        recvtype,
        comm,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn ineighbor_alltoall(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Datatype,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::ineighbor_alltoall(
        "MPI_Ineighbor_alltoall",
        sendbuf,
        sendcount as Count,
        sendtype,
        recvbuf,
        recvcount as Count,
        recvtype,
        comm,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn ineighbor_alltoall_c(
    sendbuf: *const c_void,
    sendcount: Count,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcount: Count,
    recvtype: Datatype,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::ineighbor_alltoall(
        "MPI_Ineighbor_alltoall_c",
        sendbuf,
        sendcount,
        sendtype,
        recvbuf,
        recvcount,
        recvtype,
        comm,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_alltoallv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: Datatype,
    comm: Comm,
) -> c_int {
    api::neighbor_alltoallv(
        "MPI_Neighbor_alltoallv",
        sendbuf,
        Ints::Int(sendcounts),
        Ints::Int(sdispls),
        sendtype,
        recvbuf,
        Ints::Int(recvcounts),
        Ints::Int(rdispls),
        recvtype,
        comm,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_alltoallv_c(
    sendbuf: *const c_void,
    sendcounts: *const Count,
    sdispls: *const Aint,
    sendtype: Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const Count,
    rdispls: *const Aint,
    recvtype: Datatype,
    comm: Comm,
) -> c_int {
    api::neighbor_alltoallv(
        "MPI_Neighbor_alltoallv_c",
        sendbuf,
        Ints::Long(sendcounts),
        Ints::Long(sdispls),
        sendtype,
        recvbuf,
        Ints::Long(recvcounts),
        Ints::Long(rdispls),
        recvtype,
        comm,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn ineighbor_alltoallv(
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
    api::ineighbor_alltoallv(
        "MPI_Ineighbor_alltoallv",
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
unsafe fn ineighbor_alltoallv_c(
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
    api::ineighbor_alltoallv(
        "MPI_Ineighbor_alltoallv_c",
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
unsafe fn neighbor_alltoallw(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const Aint,
    sendtypes: *const Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const Aint,
    recvtypes: *const Datatype,
    comm: Comm,
) -> c_int {
    api::neighbor_alltoallw(
        "MPI_Neighbor_alltoallw",
        sendbuf,
        Ints::Int(sendcounts),
        Ints::Long(sdispls),
        sendtypes,
        recvbuf,
        Ints::Int(recvcounts),
        Ints::Long(rdispls),
        recvtypes,
        comm,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_alltoallw_c(
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
    api::neighbor_alltoallw(
        "MPI_Neighbor_alltoallw_c",
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

#[allow(clippy::too_many_arguments)]
unsafe fn ineighbor_alltoallw(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const Aint,
    sendtypes: *const Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const Aint,
    recvtypes: *const Datatype,
    comm: Comm,
    request: *mut Request,
) -> c_int {
    api::ineighbor_alltoallw(
        "MPI_Ineighbor_alltoallw",
        sendbuf,
        Ints::Int(sendcounts),
        Ints::Long(sdispls),
        sendtypes,
        recvbuf,
        Ints::Int(recvcounts),
        Ints::Long(rdispls),
        recvtypes,
        comm,
        request,
    )
}

#[allow(clippy::too_many_arguments)]
unsafe fn ineighbor_alltoallw_c(
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
    api::ineighbor_alltoallw(
        "MPI_Ineighbor_alltoallw_c",
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

export_mpi_functions! {
    fn MPI_Cart_create / PMPI_Cart_create(comm_old: Comm, ndims: c_int, dims: *const c_int, periods: *const c_int, reorder: c_int, comm_cart: *mut Comm) -> c_int => api::cart_create;
    fn MPI_Cart_map / PMPI_Cart_map(comm: Comm, ndims: c_int, dims: *const c_int, periods: *const c_int, newrank: *mut c_int) -> c_int => api::cart_map;
    fn MPI_Cartdim_get / PMPI_Cartdim_get(comm: Comm, ndims: *mut c_int) -> c_int => api::cartdim_get;
    fn MPI_Cart_get / PMPI_Cart_get(comm: Comm, maxdims: c_int, dims: *mut c_int, periods: *mut c_int, coords: *mut c_int) -> c_int => api::cart_get;
    fn MPI_Cart_rank / PMPI_Cart_rank(comm: Comm, coords: *const c_int, rank: *mut c_int) -> c_int => api::cart_rank;
    fn MPI_Cart_coords / PMPI_Cart_coords(comm: Comm, rank: c_int, maxdims: c_int, coords: *mut c_int) -> c_int => api::cart_coords;
    fn MPI_Cart_shift / PMPI_Cart_shift(comm: Comm, direction: c_int, disp: c_int, rank_source: *mut c_int, rank_dest: *mut c_int) -> c_int => api::cart_shift;
    fn MPI_Cart_sub / PMPI_Cart_sub(comm: Comm, remain_dims: *const c_int, newcomm: *mut Comm) -> c_int => api::cart_sub;
    fn MPI_Graph_create / PMPI_Graph_create(comm_old: Comm, nnodes: c_int, index: *const c_int, edges: *const c_int, reorder: c_int, comm_graph: *mut Comm) -> c_int => api::graph_create;
    fn MPI_Graph_map / PMPI_Graph_map(comm: Comm, nnodes: c_int, index: *const c_int, edges: *const c_int, newrank: *mut c_int) -> c_int => api::graph_map;
    fn MPI_Graphdims_get / PMPI_Graphdims_get(comm: Comm, nnodes: *mut c_int, nedges: *mut c_int) -> c_int => api::graphdims_get;
    fn MPI_Graph_get / PMPI_Graph_get(comm: Comm, maxindex: c_int, maxedges: c_int, index: *mut c_int, edges: *mut c_int) -> c_int => api::graph_get;
    fn MPI_Graph_neighbors_count / PMPI_Graph_neighbors_count(comm: Comm, rank: c_int, nneighbors: *mut c_int) -> c_int => api::graph_neighbors_count;
    fn MPI_Graph_neighbors / PMPI_Graph_neighbors(comm: Comm, rank: c_int, maxneighbors: c_int, neighbors: *mut c_int) -> c_int => api::graph_neighbors;
    fn MPI_Dist_graph_create_adjacent / PMPI_Dist_graph_create_adjacent(comm_old: Comm, indegree: c_int, sources: *const c_int, sourceweights: *const c_int, outdegree: c_int, destinations: *const c_int, destweights: *const c_int, info: Info, reorder: c_int, comm_dist_graph: *mut Comm) -> c_int => api::dist_graph_create_adjacent;
    fn MPI_Dist_graph_create / PMPI_Dist_graph_create(comm_old: Comm, n: c_int, sources: *const c_int, degrees: *const c_int, destinations: *const c_int, weights: *const c_int, info: Info, reorder: c_int, comm_dist_graph: *mut Comm) -> c_int => api::dist_graph_create;
    fn MPI_Dist_graph_neighbors_count / PMPI_Dist_graph_neighbors_count(comm: Comm, indegree: *mut c_int, outdegree: *mut c_int, weighted: *mut c_int) -> c_int => api::dist_graph_neighbors_count;
    fn MPI_Dist_graph_neighbors / PMPI_Dist_graph_neighbors(comm: Comm, maxindegree: c_int, sources: *mut c_int, sourceweights: *mut c_int, maxoutdegree: c_int, destinations: *mut c_int, destweights: *mut c_int) -> c_int => api::dist_graph_neighbors;
    fn MPI_Topo_test / PMPI_Topo_test(comm: Comm, status: *mut c_int) -> c_int => api::topo_test;
    fn MPI_Neighbor_allgather / PMPI_Neighbor_allgather(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, comm: Comm) -> c_int => neighbor_allgather;
    fn MPI_Neighbor_allgather_c / PMPI_Neighbor_allgather_c(sendbuf: *const c_void, sendcount: Count, sendtype: Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: Datatype, comm: Comm) -> c_int => neighbor_allgather_c;
    fn MPI_Ineighbor_allgather / PMPI_Ineighbor_allgather(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, comm: Comm, request: *mut Request) -> c_int => ineighbor_allgather;
    fn MPI_Ineighbor_allgather_c / PMPI_Ineighbor_allgather_c(sendbuf: *const c_void, sendcount: Count, sendtype: Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: Datatype, comm: Comm, request: *mut Request) -> c_int => ineighbor_allgather_c;
    fn MPI_Neighbor_allgatherv / PMPI_Neighbor_allgatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: Datatype, comm: Comm) -> c_int => neighbor_allgatherv;
    fn MPI_Neighbor_allgatherv_c / PMPI_Neighbor_allgatherv_c(sendbuf: *const c_void, sendcount: Count, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Aint, recvtype: Datatype, comm: Comm) -> c_int => neighbor_allgatherv_c;
    fn MPI_Ineighbor_allgatherv / PMPI_Ineighbor_allgatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: Datatype, comm: Comm, request: *mut Request) -> c_int => ineighbor_allgatherv;
    fn MPI_Ineighbor_allgatherv_c / PMPI_Ineighbor_allgatherv_c(sendbuf: *const c_void, sendcount: Count, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const Count, displs: *const Aint, recvtype: Datatype, comm: Comm, request: *mut Request) -> c_int => ineighbor_allgatherv_c;
    fn MPI_Neighbor_alltoall / PMPI_Neighbor_alltoall(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, comm: Comm) -> c_int => neighbor_alltoall;
    fn MPI_Neighbor_alltoall_c / PMPI_Neighbor_alltoall_c(sendbuf: *const c_void, sendcount: Count, sendtype: Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: Datatype, comm: Comm) -> c_int => neighbor_alltoall_c;
    fn MPI_Ineighbor_alltoall / PMPI_Ineighbor_alltoall(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, comm: Comm, request: *mut Request) -> c_int => ineighbor_alltoall;
    fn MPI_Ineighbor_alltoall_c / PMPI_Ineighbor_alltoall_c(sendbuf: *const c_void, sendcount: Count, sendtype: Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: Datatype, comm: Comm, request: *mut Request) -> c_int => ineighbor_alltoall_c;
    fn MPI_Neighbor_alltoallv / PMPI_Neighbor_alltoallv(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: Datatype, comm: Comm) -> c_int => neighbor_alltoallv;
    fn MPI_Neighbor_alltoallv_c / PMPI_Neighbor_alltoallv_c(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Aint, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Aint, recvtype: Datatype, comm: Comm) -> c_int => neighbor_alltoallv_c;
    fn MPI_Ineighbor_alltoallv / PMPI_Ineighbor_alltoallv(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: Datatype, comm: Comm, request: *mut Request) -> c_int => ineighbor_alltoallv;
    fn MPI_Ineighbor_alltoallv_c / PMPI_Ineighbor_alltoallv_c(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Aint, sendtype: Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Aint, recvtype: Datatype, comm: Comm, request: *mut Request) -> c_int => ineighbor_alltoallv_c;
    fn MPI_Neighbor_alltoallw / PMPI_Neighbor_alltoallw(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const Aint, sendtypes: *const Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const Aint, recvtypes: *const Datatype, comm: Comm) -> c_int => neighbor_alltoallw;
    fn MPI_Neighbor_alltoallw_c / PMPI_Neighbor_alltoallw_c(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Aint, sendtypes: *const Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Aint, recvtypes: *const Datatype, comm: Comm) -> c_int => neighbor_alltoallw_c;
    fn MPI_Ineighbor_alltoallw / PMPI_Ineighbor_alltoallw(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const Aint, sendtypes: *const Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const Aint, recvtypes: *const Datatype, comm: Comm, request: *mut Request) -> c_int => ineighbor_alltoallw;
    fn MPI_Ineighbor_alltoallw_c / PMPI_Ineighbor_alltoallw_c(sendbuf: *const c_void, sendcounts: *const Count, sdispls: *const Aint, sendtypes: *const Datatype, recvbuf: *mut c_void, recvcounts: *const Count, rdispls: *const Aint, recvtypes: *const Datatype, comm: Comm, request: *mut Request) -> c_int => ineighbor_alltoallw_c;
}
