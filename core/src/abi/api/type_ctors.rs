//! The datatype constructors beyond the four basic ones (`types.rs`): byte-strided and
//! byte-displaced forms (hvector, hindexed, their block forms), `MPI_Type_create_resized`,
//! `MPI_Type_dup`, and the array constructors `MPI_Type_create_subarray` / `_darray`. Each
//! validates every argument, builds the layout (`typemap`), and records its arguments for
//! `MPI_Type_get_contents`.
#![allow(clippy::missing_safety_doc)]

use std::ffi::c_int;

use super::attributes::{self, Kind};
use super::type_contents::{combiner, Made};
use super::types::{disp, nonneg, old_type, register};
use super::{Count, Ints};
use crate::abi::{guard, handles as h, out};
use crate::error::{Class, Error, Result};
use crate::typemap::arrays::{self, Distrib, Order};
use crate::typemap::Layout;

const ORDER_C: c_int = 56;
const ORDER_FORTRAN: c_int = 57;
const DISTRIBUTE_BLOCK: c_int = 121;
const DISTRIBUTE_CYCLIC: c_int = 122;
const DISTRIBUTE_NONE: c_int = 123;
const DISTRIBUTE_DFLT_DARG: c_int = -49767;

pub unsafe fn type_create_hvector(
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
        let made = Made::new(combiner::HVECTOR, name)
            .counts([count, blocklength])
            .addr(stride)
            .ty(old);
        register(newtype, Layout::hvector(n, bl, st, &l), made)
    })
}

/// Reads `n` block lengths (non-negative) and displacements.
unsafe fn blocks(n: usize, lens: Ints, disps: Ints) -> Result<(Vec<i64>, Vec<i64>)> {
    // SAFETY: MPI: both arrays have `count` elements.
    let (b, d) = unsafe {
        (
            lens.read(n, "array_of_blocklengths")?,
            disps.read(n, "array_of_displacements")?,
        )
    };
    for (i, &v) in b.iter().enumerate() {
        nonneg(v, Class::Arg, &format!("array_of_blocklengths[{i}]"))?;
    }
    Ok((b, d))
}

/// Converts displacements to `isize`, naming the one that does not fit.
fn disps(d: &[i64]) -> Result<Vec<isize>> {
    d.iter()
        .enumerate()
        .map(|(i, &v)| disp(v, &format!("array_of_displacements[{i}]")))
        .collect()
}

/// `MPI_Type_create_hindexed(_c)` and MPI-1's `MPI_Type_hindexed`: displacements in bytes.
pub unsafe fn type_create_hindexed(
    name: &'static str,
    count: Count,
    blocklengths: Ints,
    displacements: Ints,
    old: c_int,
    newtype: *mut c_int,
) -> c_int {
    guard(name, None, || {
        let n = nonneg(count, Class::Count, "count")?;
        // SAFETY: forwarded contract.
        let (b, d) = unsafe { blocks(n, blocklengths, displacements) }?;
        let dd = disps(&d)?;
        let l = old_type(old, "oldtype")?;
        let made = Made::new(combiner::HINDEXED, name)
            .count(count)
            .counts(b.iter().copied())
            .addrs(d.iter().copied())
            .ty(old);
        let it = b.iter().zip(dd).map(|(&b, d)| (b as usize, d));
        register(newtype, Layout::indexed(it, 1, &l), made)
    })
}

/// `MPI_Type_create_indexed_block(_c)` (displacements in extents of `old`) and
/// `MPI_Type_create_hindexed_block(_c)` (in bytes, when `bytes`).
#[allow(clippy::too_many_arguments)]
pub unsafe fn type_create_indexed_block(
    name: &'static str,
    bytes: bool,
    count: Count,
    blocklength: Count,
    displacements: Ints,
    old: c_int,
    newtype: *mut c_int,
) -> c_int {
    guard(name, None, || {
        let n = nonneg(count, Class::Count, "count")?;
        let bl = nonneg(blocklength, Class::Arg, "blocklength")?;
        // SAFETY: MPI: the array has `count` elements.
        let d = unsafe { displacements.read(n, "array_of_displacements") }?;
        let dd = disps(&d)?;
        let l = old_type(old, "oldtype")?;
        let (comb, unit) = if bytes {
            (combiner::HINDEXED_BLOCK, 1)
        } else {
            (combiner::INDEXED_BLOCK, l.extent_signed())
        };
        let made = Made::new(comb, name).counts([count, blocklength]);
        let made = if bytes {
            made.addrs(d.iter().copied())
        } else {
            made.counts(d.iter().copied())
        }
        .ty(old);
        let it = dd.into_iter().map(|d| (bl, d));
        register(newtype, Layout::indexed(it, unit, &l), made)
    })
}

pub unsafe fn type_create_resized(
    name: &'static str,
    old: c_int,
    lb: Count,
    extent: Count,
    newtype: *mut c_int,
) -> c_int {
    guard(name, None, || {
        let l = old_type(old, "oldtype")?;
        let (lo, ext) = (disp(lb, "lb")?, disp(extent, "extent")?);
        let made = Made::new(combiner::RESIZED, name)
            .addrs([lb, extent])
            .ty(old);
        register(newtype, Layout::resized(&l, lo, ext), made)
    })
}

/// `MPI_Type_dup`: the same type under a new handle, committed if `old` is, with the
/// attributes whose copy callbacks say so.
pub unsafe fn type_dup(old: c_int, newtype: *mut c_int) -> c_int {
    guard("MPI_Type_dup", None, || {
        let (layout, committed) = match h::user_type(old) {
            Some(t) => (t.layout.clone(), t.committed()),
            None => (old_type(old, "oldtype")?, true),
        };
        if newtype.is_null() {
            return Err(Error::new(Class::Arg, "newtype is NULL"));
        }
        let made = Made::new(combiner::DUP, "MPI_Type_dup").ty(old);
        let handle = h::add_type_with(layout, made.0, committed)
            .ok_or_else(|| Error::new(Class::Intern, "out of datatype handles"))?;
        if let Err(e) = attributes::copy_attrs(Kind::Type, old, handle) {
            attributes::delete_all(Kind::Type, handle)?;
            h::free_type(handle);
            return Err(e);
        }
        out(newtype, "newtype", handle)
    })
}

fn order_arg(order: c_int) -> Result<Order> {
    match order {
        ORDER_C => Ok(Order::C),
        ORDER_FORTRAN => Ok(Order::Fortran),
        _ => Err(Error::new(
            Class::Arg,
            format!("order {order} is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN"),
        )),
    }
}

fn ndims_arg(ndims: c_int) -> Result<usize> {
    usize::try_from(ndims)
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| Error::new(Class::Arg, format!("ndims ({ndims}) is not positive")))
}

/// Non-negative values of an array argument, named `what[i]` in errors.
fn all_nonneg(v: &[i64], what: &str) -> Result<Vec<usize>> {
    v.iter()
        .enumerate()
        .map(|(i, &x)| nonneg(x, Class::Arg, &format!("{what}[{i}]")))
        .collect()
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn type_create_subarray(
    name: &'static str,
    ndims: c_int,
    sizes: Ints,
    subsizes: Ints,
    starts: Ints,
    order: c_int,
    old: c_int,
    newtype: *mut c_int,
) -> c_int {
    guard(name, None, || {
        let n = ndims_arg(ndims)?;
        // SAFETY: MPI: each array has `ndims` elements.
        let (sz, sub, st) = unsafe {
            (
                sizes.read(n, "array_of_sizes")?,
                subsizes.read(n, "array_of_subsizes")?,
                starts.read(n, "array_of_starts")?,
            )
        };
        let o = order_arg(order)?;
        let l = old_type(old, "oldtype")?;
        let (a, b, c) = (
            all_nonneg(&sz, "array_of_sizes")?,
            all_nonneg(&sub, "array_of_subsizes")?,
            all_nonneg(&st, "array_of_starts")?,
        );
        let dims: Vec<_> = (0..n).map(|i| (a[i], b[i], c[i])).collect();
        let made = Made::new(combiner::SUBARRAY, name)
            .int(ndims.into())
            .counts(sz)
            .counts(sub)
            .counts(st)
            .int(order.into())
            .ty(old);
        register(newtype, arrays::subarray(&dims, o, &l), made)
    })
}

/// Reads an `int` array of `n` elements.
///
/// # Safety
/// A non-NULL `p` points to `n` elements.
unsafe fn int_array(p: *const c_int, n: usize, what: &str) -> Result<Vec<i64>> {
    // SAFETY: forwarded contract.
    unsafe { Ints::Int(p).read(n, what) }
}

#[allow(clippy::too_many_arguments)]
pub unsafe fn type_create_darray(
    name: &'static str,
    size: c_int,
    rank: c_int,
    ndims: c_int,
    gsizes: Ints,
    distribs: *const c_int,
    dargs: *const c_int,
    psizes: *const c_int,
    order: c_int,
    old: c_int,
    newtype: *mut c_int,
) -> c_int {
    guard(name, None, || {
        let sz = usize::try_from(size)
            .ok()
            .filter(|&s| s > 0)
            .ok_or_else(|| Error::new(Class::Arg, format!("size ({size}) is not positive")))?;
        let rk = usize::try_from(rank)
            .ok()
            .filter(|&r| r < sz)
            .ok_or_else(|| {
                Error::new(Class::Arg, format!("rank ({rank}) is not in [0, {size})"))
            })?;
        let n = ndims_arg(ndims)?;
        // SAFETY: MPI: each array has `ndims` elements.
        let (g, di, da, ps) = unsafe {
            (
                gsizes.read(n, "array_of_gsizes")?,
                int_array(distribs, n, "array_of_distribs")?,
                int_array(dargs, n, "array_of_dargs")?,
                int_array(psizes, n, "array_of_psizes")?,
            )
        };
        let o = order_arg(order)?;
        let l = old_type(old, "oldtype")?;
        let gs = all_nonneg(&g, "array_of_gsizes")?;
        let mut dims = Vec::with_capacity(n);
        for i in 0..n {
            let darg = match da[i] as c_int {
                DISTRIBUTE_DFLT_DARG => None,
                v => Some(nonneg(
                    v.into(),
                    Class::Arg,
                    &format!("array_of_dargs[{i}]"),
                )?),
            };
            let dist = match di[i] as c_int {
                DISTRIBUTE_BLOCK => Distrib::Block(darg),
                DISTRIBUTE_CYCLIC => Distrib::Cyclic(darg),
                DISTRIBUTE_NONE => Distrib::None,
                v => {
                    return Err(Error::new(
                        Class::Arg,
                        format!("array_of_distribs[{i}] ({v}) is not an MPI_DISTRIBUTE_ value"),
                    ))
                }
            };
            let p = usize::try_from(ps[i])
                .ok()
                .filter(|&p| p > 0)
                .ok_or_else(|| {
                    Error::new(
                        Class::Arg,
                        format!("array_of_psizes[{i}] ({}) is not positive", ps[i]),
                    )
                })?;
            dims.push((gs[i], dist, p));
        }
        let made = Made::new(combiner::DARRAY, name)
            .ints([size.into(), rank.into(), ndims.into()])
            .counts(g)
            .ints(di)
            .ints(da)
            .ints(ps)
            .int(order.into())
            .ty(old);
        register(newtype, arrays::darray(sz, rk, &dims, o, &l), made)
    })
}
