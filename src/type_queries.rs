//! Exports of the datatype queries (see `core/src/abi/api/type_queries.rs`) and of packing
//! (`core/src/abi/api/pack.rs`).

use std::ffi::{c_int, c_void};

use hcomm_core::abi::api::{self, Bound, Count, Status};
use hcomm_core::export_mpi_functions;

type Datatype = c_int;
type Comm = c_int;
type Aint = i64;

unsafe fn type_get_true_extent(t: Datatype, lb: *mut Aint, ext: *mut Aint) -> c_int {
    api::type_get_true_extent("MPI_Type_get_true_extent", t, lb, ext)
}
unsafe fn type_get_true_extent_c(t: Datatype, lb: *mut Count, ext: *mut Count) -> c_int {
    api::type_get_true_extent("MPI_Type_get_true_extent_c", t, lb, ext)
}
unsafe fn type_get_true_extent_x(t: Datatype, lb: *mut Count, ext: *mut Count) -> c_int {
    api::type_get_true_extent("MPI_Type_get_true_extent_x", t, lb, ext)
}
unsafe fn type_get_extent_x(t: Datatype, lb: *mut Count, ext: *mut Count) -> c_int {
    api::type_get_extent("MPI_Type_get_extent_x", t, lb, ext)
}
unsafe fn type_size_x(t: Datatype, size: *mut Count) -> c_int {
    api::type_size_as("MPI_Type_size_x", t, size)
}
unsafe fn type_lb(t: Datatype, d: *mut Aint) -> c_int {
    api::type_bound("MPI_Type_lb", t, Bound::Lb, d)
}
unsafe fn type_ub(t: Datatype, d: *mut Aint) -> c_int {
    api::type_bound("MPI_Type_ub", t, Bound::Ub, d)
}
unsafe fn type_extent(t: Datatype, d: *mut Aint) -> c_int {
    api::type_bound("MPI_Type_extent", t, Bound::Extent, d)
}
unsafe fn get_elements(s: *const Status, t: Datatype, n: *mut c_int) -> c_int {
    api::get_elements("MPI_Get_elements", s, t, n)
}
unsafe fn get_elements_c(s: *const Status, t: Datatype, n: *mut Count) -> c_int {
    api::get_elements("MPI_Get_elements_c", s, t, n)
}
unsafe fn get_elements_x(s: *const Status, t: Datatype, n: *mut Count) -> c_int {
    api::get_elements("MPI_Get_elements_x", s, t, n)
}
#[allow(clippy::too_many_arguments)]
unsafe fn pack(
    i: *const c_void,
    n: c_int,
    t: Datatype,
    o: *mut c_void,
    sz: c_int,
    pos: *mut c_int,
    c: Comm,
) -> c_int {
    api::pack("MPI_Pack", i, n.into(), t, o, sz.into(), pos, c)
}
#[allow(clippy::too_many_arguments)]
unsafe fn pack_c(
    i: *const c_void,
    n: Count,
    t: Datatype,
    o: *mut c_void,
    sz: Count,
    pos: *mut Count,
    c: Comm,
) -> c_int {
    api::pack("MPI_Pack_c", i, n, t, o, sz, pos, c)
}
#[allow(clippy::too_many_arguments)]
unsafe fn unpack(
    i: *const c_void,
    sz: c_int,
    pos: *mut c_int,
    o: *mut c_void,
    n: c_int,
    t: Datatype,
    c: Comm,
) -> c_int {
    api::unpack("MPI_Unpack", i, sz.into(), pos, o, n.into(), t, c)
}
#[allow(clippy::too_many_arguments)]
unsafe fn unpack_c(
    i: *const c_void,
    sz: Count,
    pos: *mut Count,
    o: *mut c_void,
    n: Count,
    t: Datatype,
    c: Comm,
) -> c_int {
    api::unpack("MPI_Unpack_c", i, sz, pos, o, n, t, c)
}
unsafe fn pack_size(n: c_int, t: Datatype, c: Comm, size: *mut c_int) -> c_int {
    api::pack_size("MPI_Pack_size", n.into(), t, c, size)
}
unsafe fn pack_size_c(n: Count, t: Datatype, c: Comm, size: *mut Count) -> c_int {
    api::pack_size("MPI_Pack_size_c", n, t, c, size)
}

export_mpi_functions! {
    fn MPI_Type_get_true_extent / PMPI_Type_get_true_extent(datatype: Datatype, true_lb: *mut Aint, true_extent: *mut Aint) -> c_int => type_get_true_extent;
    fn MPI_Type_get_true_extent_c / PMPI_Type_get_true_extent_c(datatype: Datatype, true_lb: *mut Count, true_extent: *mut Count) -> c_int => type_get_true_extent_c;
    fn MPI_Type_get_true_extent_x / PMPI_Type_get_true_extent_x(datatype: Datatype, true_lb: *mut Count, true_extent: *mut Count) -> c_int => type_get_true_extent_x;
    fn MPI_Type_get_extent_x / PMPI_Type_get_extent_x(datatype: Datatype, lb: *mut Count, extent: *mut Count) -> c_int => type_get_extent_x;
    fn MPI_Type_size_x / PMPI_Type_size_x(datatype: Datatype, size: *mut Count) -> c_int => type_size_x;
    fn MPI_Type_lb / PMPI_Type_lb(datatype: Datatype, displacement: *mut Aint) -> c_int => type_lb;
    fn MPI_Type_ub / PMPI_Type_ub(datatype: Datatype, displacement: *mut Aint) -> c_int => type_ub;
    fn MPI_Type_extent / PMPI_Type_extent(datatype: Datatype, extent: *mut Aint) -> c_int => type_extent;
    fn MPI_Get_elements / PMPI_Get_elements(status: *const Status, datatype: Datatype, count: *mut c_int) -> c_int => get_elements;
    fn MPI_Get_elements_c / PMPI_Get_elements_c(status: *const Status, datatype: Datatype, count: *mut Count) -> c_int => get_elements_c;
    fn MPI_Get_elements_x / PMPI_Get_elements_x(status: *const Status, datatype: Datatype, count: *mut Count) -> c_int => get_elements_x;
    fn MPI_Pack / PMPI_Pack(inbuf: *const c_void, incount: c_int, datatype: Datatype, outbuf: *mut c_void, outsize: c_int, position: *mut c_int, comm: Comm) -> c_int => pack;
    fn MPI_Pack_c / PMPI_Pack_c(inbuf: *const c_void, incount: Count, datatype: Datatype, outbuf: *mut c_void, outsize: Count, position: *mut Count, comm: Comm) -> c_int => pack_c;
    fn MPI_Unpack / PMPI_Unpack(inbuf: *const c_void, insize: c_int, position: *mut c_int, outbuf: *mut c_void, outcount: c_int, datatype: Datatype, comm: Comm) -> c_int => unpack;
    fn MPI_Unpack_c / PMPI_Unpack_c(inbuf: *const c_void, insize: Count, position: *mut Count, outbuf: *mut c_void, outcount: Count, datatype: Datatype, comm: Comm) -> c_int => unpack_c;
    fn MPI_Pack_size / PMPI_Pack_size(incount: c_int, datatype: Datatype, comm: Comm, size: *mut c_int) -> c_int => pack_size;
    fn MPI_Pack_size_c / PMPI_Pack_size_c(incount: Count, datatype: Datatype, comm: Comm, size: *mut Count) -> c_int => pack_size_c;
}
