//! Exports of communicator creation (see `core/src/abi/api/comm_create.rs`): duplicates with
//! info and nonblocking ones, `MPI_Comm_create_group`, `MPI_Comm_create_from_group`.

use std::ffi::{c_char, c_int};

use hcomm_core::abi::api;
use hcomm_core::export_mpi_functions;

type Comm = c_int;
type Group = c_int;
type Info = c_int;
type Errhandler = c_int;
type Request = c_int;

unsafe fn comm_dup_with_info(c: Comm, i: Info, n: *mut Comm) -> c_int {
    api::comm_dup_with_info("MPI_Comm_dup_with_info", c, i, n)
}
unsafe fn comm_idup(c: Comm, n: *mut Comm, r: *mut Request) -> c_int {
    api::comm_idup("MPI_Comm_idup", c, n, r)
}
unsafe fn comm_idup_with_info(c: Comm, i: Info, n: *mut Comm, r: *mut Request) -> c_int {
    api::comm_idup_with_info("MPI_Comm_idup_with_info", c, i, n, r)
}
unsafe fn comm_create_group(c: Comm, g: Group, tag: c_int, n: *mut Comm) -> c_int {
    api::comm_create_group("MPI_Comm_create_group", c, g, tag, n)
}
unsafe fn comm_create_from_group(
    g: Group,
    tag: *const c_char,
    i: Info,
    e: Errhandler,
    n: *mut Comm,
) -> c_int {
    api::comm_create_from_group("MPI_Comm_create_from_group", g, tag, i, e, n)
}

export_mpi_functions! {
    fn MPI_Comm_dup_with_info / PMPI_Comm_dup_with_info(comm: Comm, info: Info, newcomm: *mut Comm) -> c_int => comm_dup_with_info;
    fn MPI_Comm_idup / PMPI_Comm_idup(comm: Comm, newcomm: *mut Comm, request: *mut Request) -> c_int => comm_idup;
    fn MPI_Comm_idup_with_info / PMPI_Comm_idup_with_info(comm: Comm, info: Info, newcomm: *mut Comm, request: *mut Request) -> c_int => comm_idup_with_info;
    fn MPI_Comm_create_group / PMPI_Comm_create_group(comm: Comm, group: Group, tag: c_int, newcomm: *mut Comm) -> c_int => comm_create_group;
    fn MPI_Comm_create_from_group / PMPI_Comm_create_from_group(group: Group, stringtag: *const c_char, info: Info, errhandler: Errhandler, newcomm: *mut Comm) -> c_int => comm_create_from_group;
}
