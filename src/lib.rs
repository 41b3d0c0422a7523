//! `libhcomm.so`: the standalone MPI library (MPICH ABI, `include/mpi.h`).
//!
//! This crate is only the list of exported C symbols: each MPI function exists as `MPI_X` and
//! `PMPI_X` (the profiling interface), both calling `hcomm_core::abi::api`, where the panic
//! boundary, argument checks and error handlers live. The checked-in list of exports is
//! `src/libhcomm.symbols`; `tests/exports.rs` compares it with `nm -D --defined-only`.

#![allow(clippy::missing_safety_doc)]

mod coll2;
mod groups;
mod nb;
mod p2p;
mod types;

use std::ffi::{c_char, c_int, c_void};

use hcomm_core::abi::api::{self, Count, RecvCounts};
use hcomm_core::export_mpi_functions;

type Comm = c_int;
type Datatype = c_int;
type Op = c_int;
type Errhandler = c_int;

unsafe fn bcast(b: *mut c_void, n: c_int, t: Datatype, root: c_int, c: Comm) -> c_int {
    api::bcast("MPI_Bcast", b, n as Count, t, root, c)
}
unsafe fn bcast_c(b: *mut c_void, n: Count, t: Datatype, root: c_int, c: Comm) -> c_int {
    api::bcast("MPI_Bcast_c", b, n, t, root, c)
}
#[allow(clippy::too_many_arguments)]
unsafe fn reduce(
    s: *const c_void,
    r: *mut c_void,
    n: c_int,
    t: Datatype,
    o: Op,
    root: c_int,
    c: Comm,
) -> c_int {
    api::reduce("MPI_Reduce", s, r, n as Count, t, o, root, c)
}
#[allow(clippy::too_many_arguments)]
unsafe fn reduce_c(
    s: *const c_void,
    r: *mut c_void,
    n: Count,
    t: Datatype,
    o: Op,
    root: c_int,
    c: Comm,
) -> c_int {
    api::reduce("MPI_Reduce_c", s, r, n, t, o, root, c)
}
unsafe fn allreduce(
    s: *const c_void,
    r: *mut c_void,
    n: c_int,
    t: Datatype,
    o: Op,
    c: Comm,
) -> c_int {
    api::allreduce("MPI_Allreduce", s, r, n as Count, t, o, c)
}
unsafe fn allreduce_c(
    s: *const c_void,
    r: *mut c_void,
    n: Count,
    t: Datatype,
    o: Op,
    c: Comm,
) -> c_int {
    api::allreduce("MPI_Allreduce_c", s, r, n, t, o, c)
}
#[allow(clippy::too_many_arguments)]
unsafe fn allgather(
    s: *const c_void,
    sn: c_int,
    st: Datatype,
    r: *mut c_void,
    rn: c_int,
    rt: Datatype,
    c: Comm,
) -> c_int {
    api::allgather("MPI_Allgather", s, sn as Count, st, r, rn as Count, rt, c)
}
#[allow(clippy::too_many_arguments)]
unsafe fn allgather_c(
    s: *const c_void,
    sn: Count,
    st: Datatype,
    r: *mut c_void,
    rn: Count,
    rt: Datatype,
    c: Comm,
) -> c_int {
    api::allgather("MPI_Allgather_c", s, sn, st, r, rn, rt, c)
}
unsafe fn reduce_scatter(
    s: *const c_void,
    r: *mut c_void,
    n: *const c_int,
    t: Datatype,
    o: Op,
    c: Comm,
) -> c_int {
    api::reduce_scatter("MPI_Reduce_scatter", s, r, RecvCounts::Int(n), t, o, c)
}
unsafe fn reduce_scatter_c(
    s: *const c_void,
    r: *mut c_void,
    n: *const Count,
    t: Datatype,
    o: Op,
    c: Comm,
) -> c_int {
    api::reduce_scatter("MPI_Reduce_scatter_c", s, r, RecvCounts::Count(n), t, o, c)
}
unsafe fn reduce_scatter_block(
    s: *const c_void,
    r: *mut c_void,
    n: c_int,
    t: Datatype,
    o: Op,
    c: Comm,
) -> c_int {
    api::reduce_scatter_block("MPI_Reduce_scatter_block", s, r, n as Count, t, o, c)
}
unsafe fn reduce_scatter_block_c(
    s: *const c_void,
    r: *mut c_void,
    n: Count,
    t: Datatype,
    o: Op,
    c: Comm,
) -> c_int {
    api::reduce_scatter_block("MPI_Reduce_scatter_block_c", s, r, n, t, o, c)
}

export_mpi_functions! {
    fn MPI_Init / PMPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int => api::init;
    fn MPI_Init_thread / PMPI_Init_thread(argc: *mut c_int, argv: *mut *mut *mut c_char, required: c_int, provided: *mut c_int) -> c_int => api::init_thread;
    fn MPI_Initialized / PMPI_Initialized(flag: *mut c_int) -> c_int => api::initialized;
    fn MPI_Finalize / PMPI_Finalize() -> c_int => api::finalize;
    fn MPI_Finalized / PMPI_Finalized(flag: *mut c_int) -> c_int => api::finalized;
    fn MPI_Abort / PMPI_Abort(comm: Comm, errorcode: c_int) -> c_int => api::abort;
    fn MPI_Query_thread / PMPI_Query_thread(provided: *mut c_int) -> c_int => api::query_thread;
    fn MPI_Is_thread_main / PMPI_Is_thread_main(flag: *mut c_int) -> c_int => api::is_thread_main;
    fn MPI_Get_version / PMPI_Get_version(version: *mut c_int, subversion: *mut c_int) -> c_int => api::get_version;
    fn MPI_Get_library_version / PMPI_Get_library_version(version: *mut c_char, resultlen: *mut c_int) -> c_int => api::get_library_version;
    fn MPI_Get_processor_name / PMPI_Get_processor_name(name: *mut c_char, resultlen: *mut c_int) -> c_int => api::get_processor_name;
    fn MPI_Wtime / PMPI_Wtime() -> f64 => api::wtime;
    fn MPI_Wtick / PMPI_Wtick() -> f64 => api::wtick;
    fn MPIX_Query_cuda_support / PMPIX_Query_cuda_support() -> c_int => api::query_cuda_support;
    fn MPI_Comm_rank / PMPI_Comm_rank(comm: Comm, rank: *mut c_int) -> c_int => api::comm_rank;
    fn MPI_Comm_size / PMPI_Comm_size(comm: Comm, size: *mut c_int) -> c_int => api::comm_size;
    fn MPI_Comm_dup / PMPI_Comm_dup(comm: Comm, newcomm: *mut Comm) -> c_int => api::comm_dup;
    fn MPI_Comm_split / PMPI_Comm_split(comm: Comm, color: c_int, key: c_int, newcomm: *mut Comm) -> c_int => api::comm_split;
    fn MPI_Comm_free / PMPI_Comm_free(comm: *mut Comm) -> c_int => api::comm_free;
    fn MPI_Comm_compare / PMPI_Comm_compare(comm1: Comm, comm2: Comm, result: *mut c_int) -> c_int => api::comm_compare;
    fn MPI_Comm_set_errhandler / PMPI_Comm_set_errhandler(comm: Comm, errhandler: Errhandler) -> c_int => api::comm_set_errhandler;
    fn MPI_Errhandler_set / PMPI_Errhandler_set(comm: Comm, errhandler: Errhandler) -> c_int => api::comm_set_errhandler;
    fn MPI_Comm_get_errhandler / PMPI_Comm_get_errhandler(comm: Comm, errhandler: *mut Errhandler) -> c_int => api::comm_get_errhandler;
    fn MPI_Error_string / PMPI_Error_string(errorcode: c_int, string: *mut c_char, resultlen: *mut c_int) -> c_int => api::error_string;
    fn MPI_Error_class / PMPI_Error_class(errorcode: c_int, errorclass: *mut c_int) -> c_int => api::error_class;
    fn MPI_Type_size / PMPI_Type_size(datatype: Datatype, size: *mut c_int) -> c_int => api::type_size;
    fn MPI_Type_size_c / PMPI_Type_size_c(datatype: Datatype, size: *mut Count) -> c_int => api::type_size_c;
    fn MPI_Barrier / PMPI_Barrier(comm: Comm) -> c_int => api::barrier;
    fn MPI_Bcast / PMPI_Bcast(buffer: *mut c_void, count: c_int, datatype: Datatype, root: c_int, comm: Comm) -> c_int => bcast;
    fn MPI_Bcast_c / PMPI_Bcast_c(buffer: *mut c_void, count: Count, datatype: Datatype, root: c_int, comm: Comm) -> c_int => bcast_c;
    fn MPI_Reduce / PMPI_Reduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Datatype, op: Op, root: c_int, comm: Comm) -> c_int => reduce;
    fn MPI_Reduce_c / PMPI_Reduce_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: Datatype, op: Op, root: c_int, comm: Comm) -> c_int => reduce_c;
    fn MPI_Allreduce / PMPI_Allreduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: Datatype, op: Op, comm: Comm) -> c_int => allreduce;
    fn MPI_Allreduce_c / PMPI_Allreduce_c(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: Datatype, op: Op, comm: Comm) -> c_int => allreduce_c;
    fn MPI_Allgather / PMPI_Allgather(sendbuf: *const c_void, sendcount: c_int, sendtype: Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: Datatype, comm: Comm) -> c_int => allgather;
    fn MPI_Allgather_c / PMPI_Allgather_c(sendbuf: *const c_void, sendcount: Count, sendtype: Datatype, recvbuf: *mut c_void, recvcount: Count, recvtype: Datatype, comm: Comm) -> c_int => allgather_c;
    fn MPI_Reduce_scatter / PMPI_Reduce_scatter(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const c_int, datatype: Datatype, op: Op, comm: Comm) -> c_int => reduce_scatter;
    fn MPI_Reduce_scatter_c / PMPI_Reduce_scatter_c(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const Count, datatype: Datatype, op: Op, comm: Comm) -> c_int => reduce_scatter_c;
    fn MPI_Reduce_scatter_block / PMPI_Reduce_scatter_block(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: c_int, datatype: Datatype, op: Op, comm: Comm) -> c_int => reduce_scatter_block;
    fn MPI_Reduce_scatter_block_c / PMPI_Reduce_scatter_block_c(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: Count, datatype: Datatype, op: Op, comm: Comm) -> c_int => reduce_scatter_block_c;
}
