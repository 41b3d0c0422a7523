//! Exports of the local queries (see `core/src/abi/api/local_queries.rs`).

use std::ffi::{c_int, c_void};

use hcomm_core::abi::api::{self, StatusField};
use hcomm_core::export_mpi_functions;

type Comm = c_int;
type Group = c_int;

unsafe fn get_address(location: *const c_void, address: *mut i64) -> c_int {
    api::get_address("MPI_Get_address", location, address)
}
unsafe fn address_mpi1(location: *const c_void, address: *mut i64) -> c_int {
    api::get_address("MPI_Address", location, address)
}
unsafe fn set_source(s: *mut c_int, v: c_int) -> c_int {
    api::status_set("MPI_Status_set_source", s, StatusField::Source, v)
}
unsafe fn set_tag(s: *mut c_int, v: c_int) -> c_int {
    api::status_set("MPI_Status_set_tag", s, StatusField::Tag, v)
}
unsafe fn set_error(s: *mut c_int, v: c_int) -> c_int {
    api::status_set("MPI_Status_set_error", s, StatusField::Error, v)
}
unsafe fn get_source(s: *const c_int, v: *mut c_int) -> c_int {
    api::status_get("MPI_Status_get_source", s, StatusField::Source, v)
}
unsafe fn get_tag(s: *const c_int, v: *mut c_int) -> c_int {
    api::status_get("MPI_Status_get_tag", s, StatusField::Tag, v)
}
unsafe fn get_error(s: *const c_int, v: *mut c_int) -> c_int {
    api::status_get("MPI_Status_get_error", s, StatusField::Error, v)
}
unsafe fn no_support() -> c_int {
    0
}

export_mpi_functions! {
    fn MPI_Comm_test_inter / PMPI_Comm_test_inter(comm: Comm, flag: *mut c_int) -> c_int => api::comm_test_inter;
    fn MPI_Comm_remote_size / PMPI_Comm_remote_size(comm: Comm, size: *mut c_int) -> c_int => api::comm_remote_size;
    fn MPI_Comm_remote_group / PMPI_Comm_remote_group(comm: Comm, group: *mut Group) -> c_int => api::comm_remote_group;
    fn MPI_Comm_get_parent / PMPI_Comm_get_parent(parent: *mut Comm) -> c_int => api::comm_get_parent;
    fn MPI_Pcontrol / PMPI_Pcontrol(level: c_int) -> c_int => api::pcontrol;
    fn MPI_Get_address / PMPI_Get_address(location: *const c_void, address: *mut i64) -> c_int => get_address;
    fn MPI_Address / PMPI_Address(location: *const c_void, address: *mut i64) -> c_int => address_mpi1;
    fn MPI_Dims_create / PMPI_Dims_create(nnodes: c_int, ndims: c_int, dims: *mut c_int) -> c_int => api::dims_create;
    fn MPI_Status_set_source / PMPI_Status_set_source(status: *mut c_int, source: c_int) -> c_int => set_source;
    fn MPI_Status_set_tag / PMPI_Status_set_tag(status: *mut c_int, tag: c_int) -> c_int => set_tag;
    fn MPI_Status_set_error / PMPI_Status_set_error(status: *mut c_int, error: c_int) -> c_int => set_error;
    fn MPI_Status_get_source / PMPI_Status_get_source(status: *const c_int, source: *mut c_int) -> c_int => get_source;
    fn MPI_Status_get_tag / PMPI_Status_get_tag(status: *const c_int, tag: *mut c_int) -> c_int => get_tag;
    fn MPI_Status_get_error / PMPI_Status_get_error(status: *const c_int, error: *mut c_int) -> c_int => get_error;
    fn MPIX_Query_hip_support / PMPIX_Query_hip_support() -> c_int => no_support;
    fn MPIX_Query_ze_support / PMPIX_Query_ze_support() -> c_int => no_support;
    fn MPIX_GPU_query_support / PMPIX_GPU_query_support(gpu_type: c_int, is_supported: *mut c_int) -> c_int => api::gpu_query_support;
}
