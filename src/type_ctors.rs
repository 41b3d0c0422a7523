//! Exports of the datatype constructors beyond the basic four (see
//! `core/src/abi/api/type_ctors.rs`) and of the envelope/contents queries
//! (`core/src/abi/api/type_contents.rs`).

use std::ffi::c_int;

use hcomm_core::abi::api::{self, Count, Ints};
use hcomm_core::export_mpi_functions;

type Datatype = c_int;
type Aint = i64;

unsafe fn type_hvector(n: c_int, bl: c_int, st: Aint, old: Datatype, new: *mut Datatype) -> c_int {
    api::type_create_hvector("MPI_Type_hvector", n.into(), bl.into(), st, old, new)
}
unsafe fn type_hindexed(
    n: c_int,
    bl: *mut c_int,
    d: *mut Aint,
    old: Datatype,
    new: *mut Datatype,
) -> c_int {
    api::type_create_hindexed(
        "MPI_Type_hindexed",
        n.into(),
        Ints::Int(bl),
        Ints::Long(d),
        old,
        new,
    )
}
unsafe fn type_create_indexed_block(
    n: c_int,
    bl: c_int,
    d: *const c_int,
    old: Datatype,
    new: *mut Datatype,
) -> c_int {
    api::type_create_indexed_block(
        "MPI_Type_create_indexed_block",
        false,
        n.into(),
        bl.into(),
        Ints::Int(d),
        old,
        new,
    )
}
unsafe fn type_create_indexed_block_c(
    n: Count,
    bl: Count,
    d: *const Count,
    old: Datatype,
    new: *mut Datatype,
) -> c_int {
    api::type_create_indexed_block(
        "MPI_Type_create_indexed_block_c",
        false,
        n,
        bl,
        Ints::Long(d),
        old,
        new,
    )
}
unsafe fn type_create_hindexed_block(
    n: c_int,
    bl: c_int,
    d: *const Aint,
    old: Datatype,
    new: *mut Datatype,
) -> c_int {
    api::type_create_indexed_block(
        "MPI_Type_create_hindexed_block",
        true,
        n.into(),
        bl.into(),
        Ints::Long(d),
        old,
        new,
    )
}
unsafe fn type_create_hindexed_block_c(
    n: Count,
    bl: Count,
    d: *const Count,
    old: Datatype,
    new: *mut Datatype,
) -> c_int {
    api::type_create_indexed_block(
        "MPI_Type_create_hindexed_block_c",
        true,
        n,
        bl,
        Ints::Long(d),
        old,
        new,
    )
}
unsafe fn type_struct(
    n: c_int,
    bl: *mut c_int,
    d: *mut Aint,
    t: *mut Datatype,
    new: *mut Datatype,
) -> c_int {
    api::type_create_struct(
        "MPI_Type_struct",
        n.into(),
        bl.cast_const(),
        d.cast_const(),
        t.cast_const(),
        new,
    )
}
#[allow(clippy::too_many_arguments)]
unsafe fn type_get_contents(
    t: Datatype,
    mi: c_int,
    ma: c_int,
    md: c_int,
    i: *mut c_int,
    a: *mut Aint,
    d: *mut Datatype,
) -> c_int {
    let n = std::ptr::null_mut();
    api::type_get_contents(
        "MPI_Type_get_contents",
        t,
        mi.into(),
        ma.into(),
        None,
        md.into(),
        i,
        a,
        n,
        d,
    )
}
#[allow(clippy::too_many_arguments)]
unsafe fn type_get_contents_c(
    t: Datatype,
    mi: Count,
    ma: Count,
    ml: Count,
    md: Count,
    i: *mut c_int,
    a: *mut Aint,
    l: *mut Count,
    d: *mut Datatype,
) -> c_int {
    api::type_get_contents(
        "MPI_Type_get_contents_c",
        t,
        mi,
        ma,
        Some(ml),
        md,
        i,
        a,
        l,
        d,
    )
}

export_mpi_functions! {
    fn MPI_Type_hvector / PMPI_Type_hvector(count: c_int, blocklength: c_int, stride: Aint, oldtype: Datatype, newtype: *mut Datatype) -> c_int => type_hvector;
    fn MPI_Type_hindexed / PMPI_Type_hindexed(count: c_int, array_of_blocklengths: *mut c_int, array_of_displacements: *mut Aint, oldtype: Datatype, newtype: *mut Datatype) -> c_int => type_hindexed;
    fn MPI_Type_create_indexed_block / PMPI_Type_create_indexed_block(count: c_int, blocklength: c_int, array_of_displacements: *const c_int, oldtype: Datatype, newtype: *mut Datatype) -> c_int => type_create_indexed_block;
    fn MPI_Type_create_indexed_block_c / PMPI_Type_create_indexed_block_c(count: Count, blocklength: Count, array_of_displacements: *const Count, oldtype: Datatype, newtype: *mut Datatype) -> c_int => type_create_indexed_block_c;
    fn MPI_Type_create_hindexed_block / PMPI_Type_create_hindexed_block(count: c_int, blocklength: c_int, array_of_displacements: *const Aint, oldtype: Datatype, newtype: *mut Datatype) -> c_int => type_create_hindexed_block;
    fn MPI_Type_create_hindexed_block_c / PMPI_Type_create_hindexed_block_c(count: Count, blocklength: Count, array_of_displacements: *const Count, oldtype: Datatype, newtype: *mut Datatype) -> c_int => type_create_hindexed_block_c;
    fn MPI_Type_struct / PMPI_Type_struct(count: c_int, array_of_blocklengths: *mut c_int, array_of_displacements: *mut Aint, array_of_types: *mut Datatype, newtype: *mut Datatype) -> c_int => type_struct;
    fn MPI_Type_get_contents / PMPI_Type_get_contents(datatype: Datatype, max_integers: c_int, max_addresses: c_int, max_datatypes: c_int, array_of_integers: *mut c_int, array_of_addresses: *mut Aint, array_of_datatypes: *mut Datatype) -> c_int => type_get_contents;
    fn MPI_Type_get_contents_c / PMPI_Type_get_contents_c(datatype: Datatype, max_integers: Count, max_addresses: Count, max_large_counts: Count, max_datatypes: Count, array_of_integers: *mut c_int, array_of_addresses: *mut Aint, array_of_large_counts: *mut Count, array_of_datatypes: *mut Datatype) -> c_int => type_get_contents_c;
}
