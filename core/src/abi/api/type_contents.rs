//! `MPI_Type_get_envelope` and `MPI_Type_get_contents` (and their `_c` forms): every
//! constructor records its arguments ([`Made`]) so a program (mpi4py's `decode`, for one) can
//! ask how a type was made. A `_c` constructor records its counts and displacements as
//! `MPI_Count`s ("large counts"), as MPI 4.0 specifies; the plain `MPI_Type_get_envelope`
//! then refuses the type (its arguments have no place there).
#![allow(clippy::missing_safety_doc)]

use std::ffi::c_int;

use super::types::bad_type;
use super::Count;
use crate::abi::handles::{self as h, Contents, TypeRef};
use crate::abi::{guard, out};
use crate::error::{Class, Error, Result};

/// `MPI_COMBINER_*`, MPICH's values.
pub mod combiner {
    pub const NAMED: i32 = 1;
    pub const DUP: i32 = 2;
    pub const CONTIGUOUS: i32 = 3;
    pub const VECTOR: i32 = 4;
    pub const HVECTOR: i32 = 6;
    pub const INDEXED: i32 = 7;
    pub const HINDEXED: i32 = 9;
    pub const INDEXED_BLOCK: i32 = 10;
    pub const STRUCT: i32 = 12;
    pub const SUBARRAY: i32 = 13;
    pub const DARRAY: i32 = 14;
    pub const F90_REAL: i32 = 15;
    pub const F90_COMPLEX: i32 = 16;
    pub const F90_INTEGER: i32 = 17;
    pub const RESIZED: i32 = 18;
    pub const HINDEXED_BLOCK: i32 = 19;
}

/// The record of one constructor call, built argument by argument in MPI's order.
pub(crate) struct Made(pub Contents, bool);

impl Made {
    /// A call of constructor `name` (a `_c` name records large counts).
    pub fn new(combiner: i32, name: &str) -> Made {
        Made(
            Contents {
                combiner,
                ..Contents::default()
            },
            name.ends_with("_c"),
        )
    }

    /// A count argument: an integer, or a large count for a `_c` constructor.
    pub fn count(mut self, v: i64) -> Made {
        if self.1 {
            self.0.large.push(v);
        } else {
            self.0.ints.push(v);
        }
        self
    }

    pub fn counts(self, vs: impl IntoIterator<Item = i64>) -> Made {
        vs.into_iter().fold(self, Made::count)
    }

    /// An address argument: an address, or a large count for a `_c` constructor.
    pub fn addr(mut self, v: i64) -> Made {
        if self.1 {
            self.0.large.push(v);
        } else {
            self.0.addrs.push(v);
        }
        self
    }

    pub fn addrs(self, vs: impl IntoIterator<Item = i64>) -> Made {
        vs.into_iter().fold(self, Made::addr)
    }

    /// An integer argument that stays an `int` in the `_c` form (ndims, order, ...).
    pub fn int(mut self, v: i64) -> Made {
        self.0.ints.push(v);
        self
    }

    pub fn ints(self, vs: impl IntoIterator<Item = i64>) -> Made {
        vs.into_iter().fold(self, Made::int)
    }

    /// An input datatype (already validated by the constructor).
    pub fn ty(mut self, t: c_int) -> Made {
        self.0.types.push(match h::user_type(t) {
            Some(u) => TypeRef::User(u),
            None => TypeRef::Named(t),
        });
        self
    }

    pub fn tys(self, ts: impl IntoIterator<Item = c_int>) -> Made {
        ts.into_iter().fold(self, Made::ty)
    }
}

/// The contents of a valid datatype, or `None` for a predefined one (`MPI_COMBINER_NAMED`).
fn contents_of(dt: c_int) -> Result<Option<std::sync::Arc<h::UserType>>> {
    if h::datatype(dt).is_some() {
        return Ok(None);
    }
    h::user_type(dt).map(Some).ok_or_else(|| bad_type(dt))
}

pub unsafe fn type_get_envelope(
    datatype: c_int,
    num_integers: *mut c_int,
    num_addresses: *mut c_int,
    num_datatypes: *mut c_int,
    comb: *mut c_int,
) -> c_int {
    guard("MPI_Type_get_envelope", None, || {
        let t = contents_of(datatype)?;
        let (ni, na, nd, c) = match &t {
            None => (0, 0, 0, combiner::NAMED),
            Some(t) => {
                let c = &t.contents;
                if !c.large.is_empty() {
                    return Err(Error::new(
                        Class::Type,
                        "the datatype was made by a large-count (_c) constructor: use MPI_Type_get_envelope_c",
                    ));
                }
                (c.ints.len(), c.addrs.len(), c.types.len(), c.combiner)
            }
        };
        for (p, what) in [
            (num_integers, "num_integers"),
            (num_addresses, "num_addresses"),
            (num_datatypes, "num_datatypes"),
            (comb, "combiner"),
        ] {
            if p.is_null() {
                return Err(Error::new(Class::Arg, format!("{what} is NULL")));
            }
        }
        out(num_integers, "num_integers", ni as c_int)?;
        out(num_addresses, "num_addresses", na as c_int)?;
        out(num_datatypes, "num_datatypes", nd as c_int)?;
        out(comb, "combiner", c)
    })
}

pub unsafe fn type_get_envelope_c(
    datatype: c_int,
    num_integers: *mut Count,
    num_addresses: *mut Count,
    num_large_counts: *mut Count,
    num_datatypes: *mut Count,
    comb: *mut c_int,
) -> c_int {
    guard("MPI_Type_get_envelope_c", None, || {
        let t = contents_of(datatype)?;
        let (n, c) = match &t {
            None => ([0; 4], combiner::NAMED),
            Some(t) => {
                let c = &t.contents;
                let n = [c.ints.len(), c.addrs.len(), c.large.len(), c.types.len()];
                (n.map(|v| v as Count), c.combiner)
            }
        };
        let ptrs = [num_integers, num_addresses, num_large_counts, num_datatypes];
        if ptrs.iter().any(|p| p.is_null()) || comb.is_null() {
            return Err(Error::new(Class::Arg, "an output argument is NULL"));
        }
        for (p, v) in ptrs.into_iter().zip(n) {
            out(p, "num", v)?;
        }
        out(comb, "combiner", c)
    })
}

/// Checks that an output array holds the values: `max` at least their number, not NULL.
fn room<T>(p: *mut T, max: i64, n: usize, what: &str) -> Result<()> {
    if max < n as i64 {
        return Err(Error::new(
            Class::Arg,
            format!("max_{what} ({max}) is less than the {n} {what} of the datatype"),
        ));
    }
    if n > 0 && p.is_null() {
        return Err(Error::new(Class::Arg, format!("array_of_{what} is NULL")));
    }
    Ok(())
}

/// `MPI_Type_get_contents(_c)`. Input datatypes that are derived come back as new handles
/// the program frees with `MPI_Type_free`, as MPI asks; predefined ones as themselves.
#[allow(clippy::too_many_arguments)]
pub unsafe fn type_get_contents(
    name: &'static str,
    datatype: c_int,
    max_integers: Count,
    max_addresses: Count,
    max_large_counts: Option<Count>,
    max_datatypes: Count,
    integers: *mut c_int,
    addresses: *mut i64,
    large_counts: *mut i64,
    datatypes: *mut c_int,
) -> c_int {
    guard(name, None, || {
        let t = contents_of(datatype)?.ok_or_else(|| {
            Error::new(
                Class::Type,
                "the datatype is predefined (MPI_COMBINER_NAMED): it has no contents",
            )
        })?;
        let c = &t.contents;
        match max_large_counts {
            Some(m) => room(large_counts, m, c.large.len(), "large_counts")?,
            None if !c.large.is_empty() => {
                return Err(Error::new(
                    Class::Type,
                    "the datatype was made by a large-count (_c) constructor: use MPI_Type_get_contents_c",
                ))
            }
            None => {}
        }
        room(integers, max_integers, c.ints.len(), "integers")?;
        room(addresses, max_addresses, c.addrs.len(), "addresses")?;
        room(datatypes, max_datatypes, c.types.len(), "datatypes")?;
        let handles = c
            .types
            .iter()
            .map(|r| match r {
                TypeRef::Named(h) => Ok(*h),
                TypeRef::User(u) => h::add_type_ref(u.clone())
                    .ok_or_else(|| Error::new(Class::Intern, "out of datatype handles")),
            })
            .collect::<Result<Vec<_>>>()?;
        // SAFETY: each array was checked non-NULL with room for its values above.
        unsafe {
            for (i, &v) in c.ints.iter().enumerate() {
                // Integer arguments came in as `int`s: they fit.
                *integers.add(i) = v as c_int;
            }
            for (i, &v) in c.addrs.iter().enumerate() {
                *addresses.add(i) = v;
            }
            for (i, &v) in c.large.iter().enumerate() {
                *large_counts.add(i) = v;
            }
            for (i, &v) in handles.iter().enumerate() {
                *datatypes.add(i) = v;
            }
        }
        Ok(())
    })
}
