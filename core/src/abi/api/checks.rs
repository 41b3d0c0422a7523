//! The argument checks that are the same for every function, which `scripts/gen-mpi-api.py`
//! writes into the generated entry points from the MPI Forum's description of each parameter
//! (its kind, and whether the C parameter is an array or a scalar pointer):
//!
//! - a scalar of a non-negative kind (`..._NNI`: element counts, byte counts, array lengths)
//!   must not be negative: `MPI_ERR_COUNT` for counts of elements, `MPI_ERR_ARG` for byte
//!   counts and array lengths;
//! - a scalar output pointer (a handle, an int or an address the call writes: `MPI_Comm *`,
//!   `int *flag`, `MPI_Request *`, ...) must not be NULL: `MPI_ERR_ARG`. Statuses (which may be
//!   `MPI_STATUS_IGNORE`), buffers, strings, attribute values and arrays are the
//!   implementation's to check (their rules depend on other arguments).
//!
//! The check runs before the implementation, so the hot path pays one compare per such
//! argument; these functions, which report a failed check through the communicator's error
//! handler (the process's where the call has no communicator), stay out of line. The
//! implementations keep their own conversions (`count_arg`, ...), which Rust callers of
//! `hcomm_core::abi::api` (the benchmark) still rely on.

use std::ffi::c_int;

use crate::abi::guard;
use crate::error::{Class, Error};

/// `what` (a count of elements) is negative: `MPI_ERR_COUNT`.
#[cold]
#[inline(never)]
pub fn negative_count(
    name: &'static str,
    comm: Option<c_int>,
    what: &str,
    v: impl Into<i64>,
) -> c_int {
    let v = v.into();
    guard(name, comm, || {
        Err(Error::new(
            Class::Count,
            format!("{what} is negative ({v})"),
        ))
    })
}

/// `what` (a byte count or an array length) is negative: `MPI_ERR_ARG`.
#[cold]
#[inline(never)]
pub fn negative_arg(
    name: &'static str,
    comm: Option<c_int>,
    what: &str,
    v: impl Into<i64>,
) -> c_int {
    let v = v.into();
    guard(name, comm, || {
        Err(Error::new(Class::Arg, format!("{what} is negative ({v})")))
    })
}

/// Output argument `what` is NULL: `MPI_ERR_ARG`.
#[cold]
#[inline(never)]
pub fn null(name: &'static str, comm: Option<c_int>, what: &str) -> c_int {
    guard(name, comm, || {
        Err(Error::new(Class::Arg, format!("{what} is NULL")))
    })
}
