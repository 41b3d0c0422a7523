//! Exports of the groups area (see `core/src/abi/api/groups.rs`): groups, `MPI_Comm_create`,
//! `MPI_Comm_split_type`, predefined attributes, communicator names, user error handlers.

use std::ffi::c_int;

use hcomm_core::abi::api;
use hcomm_core::export_mpi_functions;

type Group = c_int;

unsafe fn group_range_incl(g: Group, n: c_int, r: *const [c_int; 3], ng: *mut Group) -> c_int {
    api::group_range_incl("MPI_Group_range_incl", g, n, r, ng)
}
unsafe fn group_range_excl(g: Group, n: c_int, r: *const [c_int; 3], ng: *mut Group) -> c_int {
    api::group_range_excl("MPI_Group_range_excl", g, n, r, ng)
}

export_mpi_functions! {
    fn MPI_Group_range_incl / PMPI_Group_range_incl(group: Group, n: c_int, ranges: *const [c_int; 3], newgroup: *mut Group) -> c_int => group_range_incl;
    fn MPI_Group_range_excl / PMPI_Group_range_excl(group: Group, n: c_int, ranges: *const [c_int; 3], newgroup: *mut Group) -> c_int => group_range_excl;
}
