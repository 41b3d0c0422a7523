//! Exports of the groups area (see `core/src/abi/api/groups.rs`): groups, `MPI_Comm_create`,
//! `MPI_Comm_split_type`, predefined attributes, communicator names, user error handlers.

use std::ffi::{c_char, c_int, c_void};

use hcomm_core::abi::api;
use hcomm_core::abi::objects::CommErrhandlerFn;
use hcomm_core::export_mpi_functions;

type Comm = c_int;
type Group = c_int;
type Info = c_int;
type Errhandler = c_int;

unsafe fn group_union(a: Group, b: Group, g: *mut Group) -> c_int {
    api::group_union("MPI_Group_union", a, b, g)
}
unsafe fn group_intersection(a: Group, b: Group, g: *mut Group) -> c_int {
    api::group_intersection("MPI_Group_intersection", a, b, g)
}
unsafe fn group_difference(a: Group, b: Group, g: *mut Group) -> c_int {
    api::group_difference("MPI_Group_difference", a, b, g)
}
unsafe fn group_range_incl(g: Group, n: c_int, r: *const [c_int; 3], ng: *mut Group) -> c_int {
    api::group_range_incl("MPI_Group_range_incl", g, n, r, ng)
}
unsafe fn group_range_excl(g: Group, n: c_int, r: *const [c_int; 3], ng: *mut Group) -> c_int {
    api::group_range_excl("MPI_Group_range_excl", g, n, r, ng)
}

export_mpi_functions! {
    fn MPI_Comm_split_type / PMPI_Comm_split_type(comm: Comm, split_type: c_int, key: c_int, info: Info, newcomm: *mut Comm) -> c_int => api::comm_split_type;
    fn MPI_Comm_create / PMPI_Comm_create(comm: Comm, group: Group, newcomm: *mut Comm) -> c_int => api::comm_create;
    fn MPI_Comm_group / PMPI_Comm_group(comm: Comm, group: *mut Group) -> c_int => api::comm_group;
    fn MPI_Group_incl / PMPI_Group_incl(group: Group, n: c_int, ranks: *const c_int, newgroup: *mut Group) -> c_int => api::group_incl;
    fn MPI_Group_excl / PMPI_Group_excl(group: Group, n: c_int, ranks: *const c_int, newgroup: *mut Group) -> c_int => api::group_excl;
    fn MPI_Group_free / PMPI_Group_free(group: *mut Group) -> c_int => api::group_free;
    fn MPI_Group_size / PMPI_Group_size(group: Group, size: *mut c_int) -> c_int => api::group_size;
    fn MPI_Group_rank / PMPI_Group_rank(group: Group, rank: *mut c_int) -> c_int => api::group_rank;
    fn MPI_Group_translate_ranks / PMPI_Group_translate_ranks(group1: Group, n: c_int, ranks1: *const c_int, group2: Group, ranks2: *mut c_int) -> c_int => api::group_translate_ranks;
    fn MPI_Group_compare / PMPI_Group_compare(group1: Group, group2: Group, result: *mut c_int) -> c_int => api::group_compare;
    fn MPI_Group_union / PMPI_Group_union(group1: Group, group2: Group, newgroup: *mut Group) -> c_int => group_union;
    fn MPI_Group_intersection / PMPI_Group_intersection(group1: Group, group2: Group, newgroup: *mut Group) -> c_int => group_intersection;
    fn MPI_Group_difference / PMPI_Group_difference(group1: Group, group2: Group, newgroup: *mut Group) -> c_int => group_difference;
    fn MPI_Group_range_incl / PMPI_Group_range_incl(group: Group, n: c_int, ranges: *const [c_int; 3], newgroup: *mut Group) -> c_int => group_range_incl;
    fn MPI_Group_range_excl / PMPI_Group_range_excl(group: Group, n: c_int, ranges: *const [c_int; 3], newgroup: *mut Group) -> c_int => group_range_excl;
    fn MPI_Comm_get_attr / PMPI_Comm_get_attr(comm: Comm, comm_keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) -> c_int => api::comm_get_attr;
    fn MPI_Comm_set_name / PMPI_Comm_set_name(comm: Comm, comm_name: *const c_char) -> c_int => api::comm_set_name;
    fn MPI_Comm_get_name / PMPI_Comm_get_name(comm: Comm, comm_name: *mut c_char, resultlen: *mut c_int) -> c_int => api::comm_get_name;
    fn MPI_Comm_create_errhandler / PMPI_Comm_create_errhandler(comm_errhandler_fn: Option<CommErrhandlerFn>, errhandler: *mut Errhandler) -> c_int => api::comm_create_errhandler;
    fn MPI_Errhandler_free / PMPI_Errhandler_free(errhandler: *mut Errhandler) -> c_int => api::errhandler_free;
    fn MPI_Comm_call_errhandler / PMPI_Comm_call_errhandler(comm: Comm, errorcode: c_int) -> c_int => api::comm_call_errhandler;
}
