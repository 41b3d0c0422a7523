//! Exports of the types area: derived datatypes and user-defined ops (see
//! `core/src/abi/api/types.rs`). `MPI_Aint` and `MPI_Count` are `long` (i64) in MPICH's ABI.

use std::ffi::c_int;

use hcomm_core::abi::api::{self, Count};
use hcomm_core::export_mpi_functions;

type Datatype = c_int;
type Aint = i64;

unsafe fn type_indexed(
    n: c_int,
    bl: *const c_int,
    d: *const c_int,
    old: Datatype,
    new: *mut Datatype,
) -> c_int {
    api::type_indexed("MPI_Type_indexed", n as Count, bl, d, old, new)
}
unsafe fn type_indexed_c(
    n: Count,
    bl: *const Count,
    d: *const Count,
    old: Datatype,
    new: *mut Datatype,
) -> c_int {
    api::type_indexed("MPI_Type_indexed_c", n, bl, d, old, new)
}
unsafe fn type_create_struct(
    n: c_int,
    bl: *const c_int,
    d: *const Aint,
    t: *const Datatype,
    new: *mut Datatype,
) -> c_int {
    api::type_create_struct("MPI_Type_create_struct", n as Count, bl, d, t, new)
}
unsafe fn type_create_struct_c(
    n: Count,
    bl: *const Count,
    d: *const Count,
    t: *const Datatype,
    new: *mut Datatype,
) -> c_int {
    api::type_create_struct("MPI_Type_create_struct_c", n, bl, d, t, new)
}
unsafe fn type_get_extent(t: Datatype, lb: *mut Aint, extent: *mut Aint) -> c_int {
    api::type_get_extent("MPI_Type_get_extent", t, lb, extent)
}
unsafe fn type_get_extent_c(t: Datatype, lb: *mut Count, extent: *mut Count) -> c_int {
    api::type_get_extent("MPI_Type_get_extent_c", t, lb, extent)
}

export_mpi_functions! {
    fn MPI_Type_indexed / PMPI_Type_indexed(count: c_int, array_of_blocklengths: *const c_int, array_of_displacements: *const c_int, oldtype: Datatype, newtype: *mut Datatype) -> c_int => type_indexed;
    fn MPI_Type_indexed_c / PMPI_Type_indexed_c(count: Count, array_of_blocklengths: *const Count, array_of_displacements: *const Count, oldtype: Datatype, newtype: *mut Datatype) -> c_int => type_indexed_c;
    fn MPI_Type_create_struct / PMPI_Type_create_struct(count: c_int, array_of_blocklengths: *const c_int, array_of_displacements: *const Aint, array_of_types: *const Datatype, newtype: *mut Datatype) -> c_int => type_create_struct;
    fn MPI_Type_create_struct_c / PMPI_Type_create_struct_c(count: Count, array_of_blocklengths: *const Count, array_of_displacements: *const Count, array_of_types: *const Datatype, newtype: *mut Datatype) -> c_int => type_create_struct_c;
    fn MPI_Type_get_extent / PMPI_Type_get_extent(datatype: Datatype, lb: *mut Aint, extent: *mut Aint) -> c_int => type_get_extent;
    fn MPI_Type_get_extent_c / PMPI_Type_get_extent_c(datatype: Datatype, lb: *mut Count, extent: *mut Count) -> c_int => type_get_extent_c;
}
