//! Local queries on datatypes: true extents, MPI-1's `MPI_Type_lb/ub/extent`, the `_x` and
//! `_c` forms of the size and extent queries, `MPI_Get_elements`, names
//! (`MPI_Type_set_name`) and `MPI_Type_match_size`.
#![allow(clippy::missing_safety_doc)]

use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, CStr};

use parking_lot::Mutex;

use super::local_queries::status_arg;
use super::p2p::Status;
use super::type_contents::{combiner, Made};
use super::types::{bad_type, MAX_OBJECT_NAME};
use super::{datatype_arg, Count};
use crate::abi::{guard, handles as h, out};
use crate::error::{Class, Error, Result};
use crate::typemap::Layout;

const TYPECLASS_REAL: c_int = 1;
const TYPECLASS_INTEGER: c_int = 2;
const TYPECLASS_COMPLEX: c_int = 3;

/// The layout of any valid datatype (committed or not).
fn layout_of(dt: c_int) -> Result<std::sync::Arc<Layout>> {
    h::layout(dt).ok_or_else(|| bad_type(dt))
}

/// Converts a query's result to the output's C type.
fn fits<T: TryFrom<i64>>(v: i64, what: &str) -> Result<T> {
    T::try_from(v).map_err(|_| {
        Error::new(
            Class::Count,
            format!("{what} ({v}) does not fit the output type (use the _c or _x form)"),
        )
    })
}

/// `MPI_Type_get_true_extent(_c/_x)`: the bounds of the data, ignoring resizing and padding.
pub unsafe fn type_get_true_extent<T: TryFrom<i64>>(
    name: &'static str,
    datatype: c_int,
    true_lb: *mut T,
    true_extent: *mut T,
) -> c_int {
    guard(name, None, || {
        let (lo, hi) = layout_of(datatype)?.true_bounds();
        if true_lb.is_null() || true_extent.is_null() {
            return Err(Error::new(Class::Arg, "true_lb or true_extent is NULL"));
        }
        let lb = fits(lo as i64, "true_lb")?;
        let ext = fits((hi - lo) as i64, "true_extent")?;
        out(true_lb, "true_lb", lb)?;
        out(true_extent, "true_extent", ext)
    })
}

/// What MPI-1's `MPI_Type_lb`, `MPI_Type_ub` and `MPI_Type_extent` return.
#[derive(Clone, Copy)]
pub enum Bound {
    Lb,
    Ub,
    Extent,
}

pub unsafe fn type_bound(name: &'static str, datatype: c_int, b: Bound, v: *mut i64) -> c_int {
    guard(name, None, || {
        let l = layout_of(datatype)?;
        let x = match b {
            Bound::Lb => l.lb,
            Bound::Ub => l.ub,
            Bound::Extent => l.extent_signed(),
        };
        out(v, "displacement", x as i64)
    })
}

/// `MPI_Type_size(_c/_x)` with the output type of the form.
pub unsafe fn type_size_as<T: TryFrom<i64>>(
    name: &'static str,
    datatype: c_int,
    size: *mut T,
) -> c_int {
    guard(name, None, || {
        let l = layout_of(datatype)?;
        out(size, "size", fits(l.size as i64, "size")?)
    })
}

/// `MPI_Get_elements(_c/_x)`: the predefined elements a receive stored, counting those of
/// a partly received derived item; `MPI_UNDEFINED` when the data ends inside an element.
pub unsafe fn get_elements<T: TryFrom<i64>>(
    name: &'static str,
    status: *const Status,
    datatype: c_int,
    count: *mut T,
) -> c_int {
    guard(name, None, || {
        status_arg(status, "status")?;
        if datatype == h::DATATYPE_NULL {
            return Err(bad_type(datatype));
        }
        let l = layout_of(datatype)?;
        // SAFETY: a status the caller supplied for reading (checked above).
        let bytes = unsafe { (*status).bytes() };
        let n = usize::try_from(bytes).ok().and_then(|b| l.elements_in(b));
        let v = match n {
            Some(n) => fits(n as i64, "count")?,
            None => fits(i64::from(h::UNDEFINED), "count")?,
        };
        out(count, "count", v)
    })
}

/// `MPI_Status_set_elements(_c/_x)`: makes `status` say that `count` predefined elements of
/// `datatype` were received (so `MPI_Get_elements` with that type returns `count`, and
/// `MPI_Get_count` the whole items among them).
pub unsafe fn status_set_elements(
    name: &'static str,
    status: *mut Status,
    datatype: c_int,
    count: Count,
) -> c_int {
    guard(name, None, || {
        status_arg(status, "status")?;
        let l = layout_of(datatype)?;
        let n = usize::try_from(count)
            .map_err(|_| Error::new(Class::Count, format!("count {count} is negative")))?;
        let bytes = l.bytes_for_elements(n).ok_or_else(|| {
            Error::new(
                Class::Count,
                format!("{n} elements of this datatype are not a representable message"),
            )
        })?;
        // SAFETY: a status the caller supplied for writing (checked above).
        unsafe { (*status).set_bytes(bytes as u64) };
        Ok(())
    })
}

/// Names given by `MPI_Type_set_name`, by handle (predefined types included).
static NAMES: Mutex<BTreeMap<c_int, String>> = Mutex::new(BTreeMap::new());

/// The name `MPI_Type_set_name` gave a datatype, if any.
pub(crate) fn name_of(dt: c_int) -> Option<String> {
    NAMES.lock().get(&dt).cloned()
}

/// Drops the name of a freed datatype.
pub(crate) fn forget_name(dt: c_int) {
    NAMES.lock().remove(&dt);
}

pub unsafe fn type_set_name(datatype: c_int, type_name: *const c_char) -> c_int {
    guard("MPI_Type_set_name", None, || {
        layout_of(datatype)?;
        if type_name.is_null() {
            return Err(Error::new(Class::Arg, "type_name is NULL"));
        }
        // SAFETY: a NUL-terminated string from the caller (checked non-NULL).
        let s = unsafe { CStr::from_ptr(type_name) }.to_string_lossy();
        // MPICH keeps at most MPI_MAX_OBJECT_NAME - 1 characters.
        let s: String = s.chars().take(MAX_OBJECT_NAME - 1).collect();
        NAMES.lock().insert(datatype, s);
        Ok(())
    })
}

/// `MPI_Type_match_size`: MPICH's answers (the Fortran sized types).
pub unsafe fn type_match_size(typeclass: c_int, size: c_int, datatype: *mut c_int) -> c_int {
    guard("MPI_Type_match_size", None, || {
        let t = match (typeclass, size) {
            (TYPECLASS_REAL, 4) => 0x4c00_0427,
            (TYPECLASS_REAL, 8) => 0x4c00_0829,
            (TYPECLASS_REAL, 16) => 0x4c00_102b,
            (TYPECLASS_INTEGER, 1) => 0x4c00_012d,
            (TYPECLASS_INTEGER, 2) => 0x4c00_022f,
            (TYPECLASS_INTEGER, 4) => 0x4c00_0430,
            (TYPECLASS_INTEGER, 8) => 0x4c00_0831,
            (TYPECLASS_COMPLEX, 8) => 0x4c00_0828,
            (TYPECLASS_COMPLEX, 16) => 0x4c00_102a,
            (TYPECLASS_COMPLEX, 32) => 0x4c00_202c,
            (TYPECLASS_REAL | TYPECLASS_INTEGER | TYPECLASS_COMPLEX, _) => {
                return Err(Error::new(
                    Class::Arg,
                    format!("no datatype of typeclass {typeclass} has size {size}"),
                ))
            }
            _ => {
                return Err(Error::new(
                    Class::Arg,
                    format!("typeclass {typeclass} is not an MPI_TYPECLASS_ value"),
                ))
            }
        };
        out(datatype, "datatype", t)
    })
}

/// `MPI_UNDEFINED` (MPICH ABI): "no constraint" for the precision or range of the f90 types.
const UNDEFINED: c_int = -32766;

/// `MPI_Type_get_value_index` (MPI 4.1): the predefined pair type `MPI_MINLOC`/`MPI_MAXLOC`
/// reduce for a value type and an index type, `MPI_DATATYPE_NULL` where there is none (any
/// other valid pair, derived types included).
pub unsafe fn type_get_value_index(
    value_type: c_int,
    index_type: c_int,
    pair_type: *mut c_int,
) -> c_int {
    guard("MPI_Type_get_value_index", None, || {
        datatype_arg(value_type, "value_type")?;
        datatype_arg(index_type, "index_type")?;
        let pair = match (h::datatype_name(value_type), h::datatype_name(index_type)) {
            (Some("MPI_FLOAT"), Some("MPI_INT")) => 0x8c00_0000_u32 as i32,
            (Some("MPI_DOUBLE"), Some("MPI_INT")) => 0x8c00_0001_u32 as i32,
            (Some("MPI_LONG"), Some("MPI_INT")) => 0x8c00_0002_u32 as i32,
            (Some("MPI_SHORT"), Some("MPI_INT")) => 0x8c00_0003_u32 as i32,
            (Some("MPI_LONG_DOUBLE"), Some("MPI_INT")) => 0x8c00_0004_u32 as i32,
            (Some("MPI_INT"), Some("MPI_INT")) => 0x4c00_0816,
            (Some("MPI_INTEGER"), Some("MPI_INTEGER")) => 0x4c00_0820,
            (Some("MPI_REAL"), Some("MPI_REAL")) => 0x4c00_0821,
            (Some("MPI_DOUBLE_PRECISION"), Some("MPI_DOUBLE_PRECISION")) => 0x4c00_1023,
            _ => h::DATATYPE_NULL,
        };
        out(pair_type, "pair_type", pair)
    })
}

/// The smallest of `choices` (decimal precision, decimal exponent range, handle) that has
/// precision `p` and range `r` (`MPI_UNDEFINED`: any).
fn f90_choice(name: &str, p: c_int, r: c_int, choices: &[(c_int, c_int, c_int)]) -> Result<c_int> {
    if p == UNDEFINED && r == UNDEFINED {
        return Err(Error::new(Class::Arg, "p and r are both MPI_UNDEFINED"));
    }
    for (what, v) in [("p", p), ("r", r)] {
        if v < 0 && v != UNDEFINED {
            return Err(Error::new(Class::Arg, format!("{what} is negative ({v})")));
        }
    }
    let fits = |&&(cp, cr, _): &&(c_int, c_int, c_int)| {
        (p == UNDEFINED || p <= cp) && (r == UNDEFINED || r <= cr)
    };
    choices.iter().find(fits).map(|c| c.2).ok_or_else(|| {
        Error::new(
            Class::Arg,
            format!(
                "no {name} type has precision {p} and range {r} (MPI_UNDEFINED is {UNDEFINED})"
            ),
        )
    })
}

/// The parameterized types of `MPI_Type_create_f90_*`, one per combiner and arguments.
static F90_TYPES: Mutex<BTreeMap<(c_int, Vec<c_int>), c_int>> = Mutex::new(BTreeMap::new());

/// The parameterized type (`combiner`, `args`): the layout of the predefined sized type
/// `sized`, with envelope `MPI_COMBINER_F90_*` and the arguments as its contents (MPI 4.1
/// §19.1.9: mpi4py's and MPICH's reading). Made once and returned again for the same
/// arguments; like a predefined type, it cannot be freed ([`is_f90_type`]).
fn f90_type(combiner: c_int, args: &[c_int], sized: c_int) -> Result<c_int> {
    let mut made = F90_TYPES.lock();
    let key = (combiner, args.to_vec());
    if let Some(&t) = made.get(&key) {
        return Ok(t);
    }
    let layout = layout_of(sized)?;
    let contents =
        Made::new(combiner, "MPI_Type_create_f90").ints(args.iter().map(|&a| i64::from(a)));
    let t = h::add_type_with(layout, contents.0, true)
        .ok_or_else(|| Error::new(Class::Intern, "out of datatype handles"))?;
    made.insert(key, t);
    Ok(t)
}

/// Whether `dt` is a parameterized type of `MPI_Type_create_f90_*` (predefined: not freed):
/// its envelope says so (only [`f90_type`] makes types with these combiners).
pub(crate) fn is_f90_type(dt: c_int) -> bool {
    h::user_type(dt).is_some_and(|t| {
        matches!(
            t.contents.combiner,
            combiner::F90_INTEGER | combiner::F90_REAL | combiner::F90_COMPLEX
        )
    })
}

/// `MPI_Type_create_f90_integer`: the smallest Fortran sized integer type (`MPI_INTEGER1` ..
/// `MPI_INTEGER8`) with `r` decimal digits, as a parameterized type ([`f90_type`]).
pub unsafe fn type_create_f90_integer(r: c_int, newtype: *mut c_int) -> c_int {
    guard("MPI_Type_create_f90_integer", None, || {
        if r == UNDEFINED {
            return Err(Error::new(Class::Arg, "r is MPI_UNDEFINED"));
        }
        let choices = [
            (0, 2, 0x4c00_012d),
            (0, 4, 0x4c00_022f),
            (0, 9, 0x4c00_0430),
            (0, 18, 0x4c00_0831),
        ];
        let t = f90_choice("integer", UNDEFINED, r, &choices)?;
        out(
            newtype,
            "newtype",
            f90_type(combiner::F90_INTEGER, &[r], t)?,
        )
    })
}

/// `MPI_Type_create_f90_real`: `MPI_REAL4`, `MPI_REAL8` or `MPI_REAL16` (here C `long double`:
/// 18 digits), the smallest with precision `p` and range `r` (see `type_create_f90_integer`).
pub unsafe fn type_create_f90_real(p: c_int, r: c_int, newtype: *mut c_int) -> c_int {
    guard("MPI_Type_create_f90_real", None, || {
        let choices = [
            (6, 37, 0x4c00_0427),
            (15, 307, 0x4c00_0829),
            (18, 4931, 0x4c00_102b),
        ];
        let t = f90_choice("real", p, r, &choices)?;
        out(
            newtype,
            "newtype",
            f90_type(combiner::F90_REAL, &[p, r], t)?,
        )
    })
}

/// `MPI_Type_create_f90_complex`: `MPI_COMPLEX8`, `MPI_COMPLEX16` or `MPI_COMPLEX32` (as
/// `type_create_f90_real`, for pairs).
pub unsafe fn type_create_f90_complex(p: c_int, r: c_int, newtype: *mut c_int) -> c_int {
    guard("MPI_Type_create_f90_complex", None, || {
        let choices = [
            (6, 37, 0x4c00_0828),
            (15, 307, 0x4c00_102a),
            (18, 4931, 0x4c00_202c),
        ];
        let t = f90_choice("complex", p, r, &choices)?;
        out(
            newtype,
            "newtype",
            f90_type(combiner::F90_COMPLEX, &[p, r], t)?,
        )
    })
}
