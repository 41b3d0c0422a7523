//! Exports of `MPI_Info` (see `core/src/abi/api/info.rs`).

use std::ffi::{c_char, c_int};

use hcomm_core::abi::api::info;
use hcomm_core::export_mpi_functions;

type Info = c_int;
type Comm = c_int;

unsafe fn get_hw_resource_info(i: *mut Info) -> c_int {
    info::get_hw_resource_info("MPI_Get_hw_resource_info", i)
}

export_mpi_functions! {
    fn MPI_Info_create / PMPI_Info_create(info: *mut Info) -> c_int => info::info_create;
    fn MPI_Info_create_env / PMPI_Info_create_env(argc: c_int, argv: *mut *mut c_char, info: *mut Info) -> c_int => info::info_create_env;
    fn MPI_Info_dup / PMPI_Info_dup(info: Info, newinfo: *mut Info) -> c_int => info::info_dup;
    fn MPI_Info_free / PMPI_Info_free(info: *mut Info) -> c_int => info::info_free;
    fn MPI_Info_set / PMPI_Info_set(info: Info, key: *const c_char, value: *const c_char) -> c_int => info::info_set;
    fn MPI_Info_delete / PMPI_Info_delete(info: Info, key: *const c_char) -> c_int => info::info_delete;
    fn MPI_Info_get / PMPI_Info_get(info: Info, key: *const c_char, valuelen: c_int, value: *mut c_char, flag: *mut c_int) -> c_int => info::info_get;
    fn MPI_Info_get_valuelen / PMPI_Info_get_valuelen(info: Info, key: *const c_char, valuelen: *mut c_int, flag: *mut c_int) -> c_int => info::info_get_valuelen;
    fn MPI_Info_get_string / PMPI_Info_get_string(info: Info, key: *const c_char, buflen: *mut c_int, value: *mut c_char, flag: *mut c_int) -> c_int => info::info_get_string;
    fn MPI_Info_get_nkeys / PMPI_Info_get_nkeys(info: Info, nkeys: *mut c_int) -> c_int => info::info_get_nkeys;
    fn MPI_Info_get_nthkey / PMPI_Info_get_nthkey(info: Info, n: c_int, key: *mut c_char) -> c_int => info::info_get_nthkey;
    fn MPI_Get_hw_resource_info / PMPI_Get_hw_resource_info(hw_info: *mut Info) -> c_int => get_hw_resource_info;
    fn MPI_Comm_set_info / PMPI_Comm_set_info(comm: Comm, info: Info) -> c_int => info::comm_set_info;
    fn MPI_Comm_get_info / PMPI_Comm_get_info(comm: Comm, info_used: *mut Info) -> c_int => info::comm_get_info;
}
