//! Exports of attribute caching (see `core/src/abi/api/attributes.rs`): communicator and
//! datatype keyvals and attributes, and MPI-1's names for the communicator ones.

use std::ffi::{c_int, c_void};

use hcomm_core::abi::api::attributes::{self as attr, CopyFn, DeleteFn, Kind};
use hcomm_core::export_mpi_functions;

type Comm = c_int;
type Datatype = c_int;

unsafe fn comm_create_keyval(
    c: Option<CopyFn>,
    d: Option<DeleteFn>,
    k: *mut c_int,
    x: *mut c_void,
) -> c_int {
    attr::create_keyval("MPI_Comm_create_keyval", Kind::Comm, c, d, k, x)
}
unsafe fn keyval_create(
    c: Option<CopyFn>,
    d: Option<DeleteFn>,
    k: *mut c_int,
    x: *mut c_void,
) -> c_int {
    attr::create_keyval("MPI_Keyval_create", Kind::Comm, c, d, k, x)
}
unsafe fn type_create_keyval(
    c: Option<CopyFn>,
    d: Option<DeleteFn>,
    k: *mut c_int,
    x: *mut c_void,
) -> c_int {
    attr::create_keyval("MPI_Type_create_keyval", Kind::Type, c, d, k, x)
}
unsafe fn comm_free_keyval(k: *mut c_int) -> c_int {
    attr::free_keyval("MPI_Comm_free_keyval", Kind::Comm, k)
}
unsafe fn keyval_free(k: *mut c_int) -> c_int {
    attr::free_keyval("MPI_Keyval_free", Kind::Comm, k)
}
unsafe fn type_free_keyval(k: *mut c_int) -> c_int {
    attr::free_keyval("MPI_Type_free_keyval", Kind::Type, k)
}
unsafe fn comm_set_attr(c: Comm, k: c_int, v: *mut c_void) -> c_int {
    attr::set_attr("MPI_Comm_set_attr", Kind::Comm, c, k, v)
}
unsafe fn attr_put(c: Comm, k: c_int, v: *mut c_void) -> c_int {
    attr::set_attr("MPI_Attr_put", Kind::Comm, c, k, v)
}
unsafe fn type_set_attr(t: Datatype, k: c_int, v: *mut c_void) -> c_int {
    attr::set_attr("MPI_Type_set_attr", Kind::Type, t, k, v)
}
unsafe fn attr_get(c: Comm, k: c_int, v: *mut c_void, flag: *mut c_int) -> c_int {
    hcomm_core::abi::api::comm_get_attr(c, k, v, flag)
}
unsafe fn comm_delete_attr(c: Comm, k: c_int) -> c_int {
    attr::delete_attr("MPI_Comm_delete_attr", Kind::Comm, c, k)
}
unsafe fn attr_delete(c: Comm, k: c_int) -> c_int {
    attr::delete_attr("MPI_Attr_delete", Kind::Comm, c, k)
}
unsafe fn type_delete_attr(t: Datatype, k: c_int) -> c_int {
    attr::delete_attr("MPI_Type_delete_attr", Kind::Type, t, k)
}

export_mpi_functions! {
    fn MPI_Comm_create_keyval / PMPI_Comm_create_keyval(comm_copy_attr_fn: Option<CopyFn>, comm_delete_attr_fn: Option<DeleteFn>, comm_keyval: *mut c_int, extra_state: *mut c_void) -> c_int => comm_create_keyval;
    fn MPI_Keyval_create / PMPI_Keyval_create(copy_fn: Option<CopyFn>, delete_fn: Option<DeleteFn>, keyval: *mut c_int, extra_state: *mut c_void) -> c_int => keyval_create;
    fn MPI_Type_create_keyval / PMPI_Type_create_keyval(type_copy_attr_fn: Option<CopyFn>, type_delete_attr_fn: Option<DeleteFn>, type_keyval: *mut c_int, extra_state: *mut c_void) -> c_int => type_create_keyval;
    fn MPI_Comm_free_keyval / PMPI_Comm_free_keyval(comm_keyval: *mut c_int) -> c_int => comm_free_keyval;
    fn MPI_Keyval_free / PMPI_Keyval_free(keyval: *mut c_int) -> c_int => keyval_free;
    fn MPI_Type_free_keyval / PMPI_Type_free_keyval(type_keyval: *mut c_int) -> c_int => type_free_keyval;
    fn MPI_Comm_set_attr / PMPI_Comm_set_attr(comm: Comm, comm_keyval: c_int, attribute_val: *mut c_void) -> c_int => comm_set_attr;
    fn MPI_Attr_put / PMPI_Attr_put(comm: Comm, keyval: c_int, attribute_val: *mut c_void) -> c_int => attr_put;
    fn MPI_Type_set_attr / PMPI_Type_set_attr(datatype: Datatype, type_keyval: c_int, attribute_val: *mut c_void) -> c_int => type_set_attr;
    fn MPI_Attr_get / PMPI_Attr_get(comm: Comm, keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) -> c_int => attr_get;
    fn MPI_Comm_delete_attr / PMPI_Comm_delete_attr(comm: Comm, comm_keyval: c_int) -> c_int => comm_delete_attr;
    fn MPI_Attr_delete / PMPI_Attr_delete(comm: Comm, keyval: c_int) -> c_int => attr_delete;
    fn MPI_Type_delete_attr / PMPI_Type_delete_attr(datatype: Datatype, type_keyval: c_int) -> c_int => type_delete_attr;
}
