//! Derived datatypes (`MPI_Type_contiguous`, `_vector`, `_indexed`, `_create_struct`,
//! `_commit`, `_free`, `_get_extent`, `_get_name`) and user-defined ops (`MPI_Op_create`,
//! `MPI_Op_free`, `MPI_Op_commutative`).
//!
//! A constructor flattens its result into a [`Layout`] right away (so freeing an input type
//! later changes nothing) and registers it under a new handle, uncommitted: constructors and
//! queries accept uncommitted types, communication refuses them (see `typearg.rs`). `name`
//! lets the `_c` variants (counts and displacements as `MPI_Count`) report their own name.
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int};
use std::sync::Arc;

use super::env::write_string;
use super::type_contents::{combiner, Made};
use super::Count;
use crate::abi::handles::{self as h, UserOpDef};
use crate::abi::{guard, out};
use crate::coll::{LargeUserFn, UserFn, UserFunction};
use crate::error::{Class, Error, Result};
use crate::typemap::Layout;

/// MPICH's `MPI_MAX_OBJECT_NAME`.
pub(super) const MAX_OBJECT_NAME: usize = 128;

/// The layout of an input type of a constructor (committed or not).
pub(super) fn old_type(dt: c_int, what: &str) -> Result<Arc<Layout>> {
    if dt == h::DATATYPE_NULL {
        return Err(Error::new(
            Class::Type,
            format!("{what} is MPI_DATATYPE_NULL"),
        ));
    }
    h::layout(dt).ok_or_else(|| {
        Error::new(
            Class::Type,
            format!("{what} 0x{dt:x} is not a valid datatype (freed, or never created)"),
        )
    })
}

pub(super) fn nonneg(v: i64, class: Class, what: &str) -> Result<usize> {
    usize::try_from(v).map_err(|_| Error::new(class, format!("{what} is negative ({v})")))
}

pub(super) fn disp(v: i64, what: &str) -> Result<isize> {
    isize::try_from(v).map_err(|_| Error::new(Class::Arg, format!("{what} ({v}) is too large")))
}

/// Element `i` of a C array argument of `int` or `MPI_Count`/`MPI_Aint`.
///
/// # Safety
/// `p` points to at least `i + 1` elements.
pub(super) unsafe fn at<T: Copy + Into<i64>>(p: *const T, i: usize) -> i64 {
    // SAFETY: per the contract.
    unsafe { (*p.add(i)).into() }
}

pub(super) fn array<T>(p: *const T, count: usize, what: &str) -> Result<()> {
    if count > 0 && p.is_null() {
        return Err(Error::new(Class::Arg, format!("{what} is NULL")));
    }
    Ok(())
}

/// Builds a layout and stores the new handle, made by the call `made`, through `newtype`.
pub(super) fn register(
    newtype: *mut c_int,
    built: std::result::Result<Layout, String>,
    made: Made,
) -> Result<()> {
    if newtype.is_null() {
        return Err(Error::new(Class::Arg, "newtype is NULL"));
    }
    let l = built.map_err(|m| Error::new(Class::Arg, m))?;
    let handle = h::add_type_with(Arc::new(l), made.0, false)
        .ok_or_else(|| Error::new(Class::Intern, "out of datatype handles"))?;
    out(newtype, "newtype", handle)
}

pub unsafe fn type_contiguous(
    name: &'static str,
    count: Count,
    old: c_int,
    newtype: *mut c_int,
) -> c_int {
    guard(name, None, || {
        let n = nonneg(count, Class::Count, "count")?;
        let l = old_type(old, "oldtype")?;
        let made = Made::new(combiner::CONTIGUOUS, name).count(count).ty(old);
        register(newtype, Layout::contiguous(n, &l), made)
    })
}

pub unsafe fn type_vector(
    name: &'static str,
    count: Count,
    blocklength: Count,
    stride: Count,
    old: c_int,
    newtype: *mut c_int,
) -> c_int {
    guard(name, None, || {
        let n = nonneg(count, Class::Count, "count")?;
        let bl = nonneg(blocklength, Class::Arg, "blocklength")?;
        let st = disp(stride, "stride")?;
        let l = old_type(old, "oldtype")?;
        let made = Made::new(combiner::VECTOR, name)
            .counts([count, blocklength, stride])
            .ty(old);
        register(newtype, Layout::vector(n, bl, st, &l), made)
    })
}

pub unsafe fn type_indexed<T: Copy + Into<i64>>(
    name: &'static str,
    count: Count,
    blocklengths: *const T,
    displacements: *const T,
    old: c_int,
    newtype: *mut c_int,
) -> c_int {
    guard(name, None, || {
        let n = nonneg(count, Class::Count, "count")?;
        array(blocklengths, n, "array_of_blocklengths")?;
        array(displacements, n, "array_of_displacements")?;
        let l = old_type(old, "oldtype")?;
        let blocks = (0..n)
            .map(|i| {
                // SAFETY: MPI: both arrays have `count` elements (checked non-NULL above).
                let (b, d) = unsafe { (at(blocklengths, i), at(displacements, i)) };
                Ok((
                    nonneg(b, Class::Arg, &format!("array_of_blocklengths[{i}]"))?,
                    disp(d, &format!("array_of_displacements[{i}]"))?,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let made = Made::new(combiner::INDEXED, name)
            .count(count)
            .counts(blocks.iter().map(|b| b.0 as i64))
            .counts(blocks.iter().map(|b| b.1 as i64))
            .ty(old);
        register(
            newtype,
            Layout::indexed(blocks.into_iter(), l.extent_signed(), &l),
            made,
        )
    })
}

pub unsafe fn type_create_struct<B: Copy + Into<i64>, D: Copy + Into<i64>>(
    name: &'static str,
    count: Count,
    blocklengths: *const B,
    displacements: *const D,
    types: *const c_int,
    newtype: *mut c_int,
) -> c_int {
    guard(name, None, || {
        let n = nonneg(count, Class::Count, "count")?;
        array(blocklengths, n, "array_of_blocklengths")?;
        array(displacements, n, "array_of_displacements")?;
        array(types, n, "array_of_types")?;
        let blocks = (0..n)
            .map(|i| {
                // SAFETY: MPI: the three arrays have `count` elements (checked non-NULL above).
                let (b, d, t) =
                    unsafe { (at(blocklengths, i), at(displacements, i), *types.add(i)) };
                Ok((
                    nonneg(b, Class::Arg, &format!("array_of_blocklengths[{i}]"))?,
                    disp(d, &format!("array_of_displacements[{i}]"))?,
                    old_type(t, &format!("array_of_types[{i}]"))?,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let made = Made::new(combiner::STRUCT, name)
            .count(count)
            .counts(blocks.iter().map(|b| b.0 as i64))
            .addrs(blocks.iter().map(|b| b.1 as i64))
            // SAFETY: `types` has `count` elements (checked above).
            .tys((0..n).map(|i| unsafe { *types.add(i) }));
        register(
            newtype,
            Layout::create_struct(blocks.iter().map(|(b, d, l)| (*b, *d, &**l))),
            made,
        )
    })
}

/// Reads a datatype handle through a pointer argument.
fn handle_in(p: *mut c_int, what: &str) -> Result<c_int> {
    if p.is_null() {
        return Err(Error::new(Class::Arg, format!("{what} is NULL")));
    }
    // SAFETY: non-NULL pointer to the caller's handle.
    Ok(unsafe { *p })
}

pub unsafe fn type_commit(datatype: *mut c_int) -> c_int {
    guard("MPI_Type_commit", None, || {
        let dt = handle_in(datatype, "datatype")?;
        // Committing a predefined type is allowed and does nothing (as in MPICH).
        if h::datatype(dt).is_some() || h::commit_type(dt) {
            return Ok(());
        }
        Err(bad_type(dt))
    })
}

pub(super) fn bad_type(dt: c_int) -> Error {
    if dt == h::DATATYPE_NULL {
        Error::new(Class::Type, "datatype is MPI_DATATYPE_NULL")
    } else {
        Error::new(
            Class::Type,
            format!("datatype 0x{dt:x} is not a valid datatype (freed, or never created)"),
        )
    }
}

pub unsafe fn type_free(datatype: *mut c_int) -> c_int {
    guard("MPI_Type_free", None, || {
        let dt = handle_in(datatype, "datatype")?;
        if h::datatype(dt).is_some() || super::type_queries::is_f90_type(dt) {
            return Err(Error::new(
                Class::Type,
                format!("datatype 0x{dt:x} is predefined and cannot be freed"),
            ));
        }
        if h::user_type(dt).is_some() {
            super::attributes::delete_all(super::attributes::Kind::Type, dt)?;
        }
        if !h::free_type(dt) {
            return Err(bad_type(dt));
        }
        super::type_queries::forget_name(dt);
        out(datatype, "datatype", h::DATATYPE_NULL)
    })
}

pub unsafe fn type_get_extent<T: TryFrom<isize>>(
    name: &'static str,
    datatype: c_int,
    lb: *mut T,
    extent: *mut T,
) -> c_int {
    guard(name, None, || {
        let l = h::layout(datatype).ok_or_else(|| bad_type(datatype))?;
        if lb.is_null() || extent.is_null() {
            return Err(Error::new(Class::Arg, "lb or extent is NULL"));
        }
        let conv = |v: isize| {
            T::try_from(v).map_err(|_| Error::new(Class::Count, "the value does not fit"))
        };
        out(lb, "lb", conv(l.lb)?)?;
        out(extent, "extent", conv(l.extent_signed())?)
    })
}

pub unsafe fn type_get_name(
    datatype: c_int,
    type_name: *mut c_char,
    resultlen: *mut c_int,
) -> c_int {
    guard("MPI_Type_get_name", None, || {
        // A name set by MPI_Type_set_name wins; derived types have none before: "".
        let set = super::type_queries::name_of(datatype);
        let name = match (set.as_deref(), h::datatype_name(datatype)) {
            (Some(n), _) | (None, Some(n)) => n,
            (None, None) if h::user_type(datatype).is_some() => "",
            (None, None) => return Err(bad_type(datatype)),
        };
        write_string(type_name, MAX_OBJECT_NAME, resultlen, name, "type_name")
    })
}

pub unsafe fn op_create(user_fn: Option<UserFn>, commute: c_int, op: *mut c_int) -> c_int {
    guard("MPI_Op_create", None, || {
        let f = user_fn.ok_or_else(|| Error::new(Class::Arg, "user_fn is NULL"))?;
        new_op(UserFunction::Int(f), commute, op)
    })
}

/// `MPI_Op_create_c`: the function takes an `MPI_Count` length.
pub unsafe fn op_create_c(user_fn: Option<LargeUserFn>, commute: c_int, op: *mut c_int) -> c_int {
    guard("MPI_Op_create_c", None, || {
        let f = user_fn.ok_or_else(|| Error::new(Class::Arg, "user_fn is NULL"))?;
        new_op(UserFunction::Large(f), commute, op)
    })
}

fn new_op(f: UserFunction, commute: c_int, op: *mut c_int) -> Result<()> {
    if op.is_null() {
        return Err(Error::new(Class::Arg, "op is NULL"));
    }
    let handle = h::add_op(UserOpDef {
        f,
        commute: commute != 0,
    })
    .ok_or_else(|| Error::new(Class::Intern, "out of op handles"))?;
    out(op, "op", handle)
}

fn bad_op(op: c_int) -> Error {
    if op == h::OP_NULL {
        Error::new(Class::Op, "op is MPI_OP_NULL")
    } else {
        Error::new(
            Class::Op,
            format!("op 0x{op:x} is not a valid op (freed, or never created)"),
        )
    }
}

pub unsafe fn op_free(op: *mut c_int) -> c_int {
    guard("MPI_Op_free", None, || {
        let o = handle_in(op, "op")?;
        if h::op(o).is_some() || o == h::OP_REPLACE || o == h::OP_NO_OP {
            return Err(Error::new(
                Class::Op,
                format!("op 0x{o:x} is predefined and cannot be freed"),
            ));
        }
        if !h::free_op(o) {
            return Err(bad_op(o));
        }
        out(op, "op", h::OP_NULL)
    })
}

pub unsafe fn op_commutative(op: c_int, commute: *mut c_int) -> c_int {
    guard("MPI_Op_commutative", None, || {
        let c = if h::op(op).is_some() {
            true
        } else if op == h::OP_REPLACE || op == h::OP_NO_OP {
            // As MPICH: the order of the operands matters to these two.
            false
        } else {
            h::user_op(op).ok_or_else(|| bad_op(op))?.commute
        };
        out(commute, "commute", c_int::from(c))
    })
}
