//! Error classes and codes: `MPI_Error_class` / `MPI_Error_string` for the predefined ones and
//! the ones a program adds (`MPI_Add_error_class`, `_code`, `_string`, their `Remove_` forms,
//! and the `MPI_LASTUSEDCODE` attribute).
//!
//! hcomm returns error classes as its codes. Added classes and codes share one numbering
//! above `MPI_ERR_LASTCODE` (0x3fffffff), as MPICH's dynamic codes do, so a program can tell
//! them from predefined ones and `MPI_LASTUSEDCODE` (the last one added, `MPI_ERR_LASTCODE`
//! before any) only grows.
#![allow(clippy::missing_safety_doc)]

use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, CStr};
use std::sync::atomic::{AtomicI32, Ordering};

use parking_lot::Mutex;

use super::env::write_string;
use crate::abi::handles as h;
use crate::abi::{guard, out};
use crate::error::{Class, Error, Result, LAST_CLASS};

/// `MPI_ERR_LASTCODE` of the MPICH ABI.
const ERR_LASTCODE: c_int = 0x3fff_ffff;
/// MPICH's ULFM and extension classes (`MPIX_ERR_PROC_FAILED` .. `MPIX_ERR_NOREQ`).
const MPIX_CLASSES: std::ops::RangeInclusive<c_int> = 101..=105;

/// The value `MPI_Comm_get_attr(MPI_LASTUSEDCODE)` points to.
pub(crate) static LAST_USED_CODE: AtomicI32 = AtomicI32::new(ERR_LASTCODE);

/// An added class (`class == code`) or code.
struct Added {
    class: c_int,
    string: String,
}

static ADDED: Mutex<BTreeMap<c_int, Added>> = Mutex::new(BTreeMap::new());

fn predefined(code: c_int) -> bool {
    (0..=LAST_CLASS).contains(&code) || MPIX_CLASSES.contains(&code)
}

fn invalid(code: c_int) -> Error {
    Error::new(Class::Arg, format!("{code} is not a valid error code"))
}

/// The class of an added or predefined code.
pub(crate) fn class_of(code: c_int) -> Option<c_int> {
    if predefined(code) {
        return Some(code);
    }
    ADDED.lock().get(&code).map(|a| a.class)
}

pub unsafe fn error_class(code: c_int, class: *mut c_int) -> c_int {
    guard("MPI_Error_class", None, || {
        out(
            class,
            "errorclass",
            class_of(code).ok_or_else(|| invalid(code))?,
        )
    })
}

pub unsafe fn error_string(code: c_int, string: *mut c_char, resultlen: *mut c_int) -> c_int {
    guard("MPI_Error_string", None, || {
        let text = match Class::from_code(code) {
            Some(c) => format!("{}: {}", c.name(), c.description()),
            None if predefined(code) => format!("MPI error class {code}"),
            None => ADDED
                .lock()
                .get(&code)
                .map(|a| a.string.clone())
                .ok_or_else(|| invalid(code))?,
        };
        write_string(string, h::MAX_ERROR_STRING, resultlen, &text, "string")
    })
}

/// Records a new class (`class` None) or a code of `class`, and returns its value.
fn add(class: Option<c_int>) -> Result<c_int> {
    let mut added = ADDED.lock();
    let last = LAST_USED_CODE.load(Ordering::Relaxed);
    let code = last
        .checked_add(1)
        .ok_or_else(|| Error::new(Class::Other, "no error codes left"))?;
    added.insert(
        code,
        Added {
            class: class.unwrap_or(code),
            string: String::new(),
        },
    );
    LAST_USED_CODE.store(code, Ordering::Relaxed);
    Ok(code)
}

pub unsafe fn add_error_class(errorclass: *mut c_int) -> c_int {
    guard("MPI_Add_error_class", None, || {
        out(errorclass, "errorclass", add(None)?)
    })
}

pub unsafe fn add_error_code(errorclass: c_int, errorcode: *mut c_int) -> c_int {
    guard("MPI_Add_error_code", None, || {
        let is_class = predefined(errorclass)
            || ADDED
                .lock()
                .get(&errorclass)
                .is_some_and(|a| a.class == errorclass);
        if !is_class {
            return Err(Error::new(
                Class::Arg,
                format!("errorclass {errorclass} is not an error class"),
            ));
        }
        out(errorcode, "errorcode", add(Some(errorclass))?)
    })
}

/// The entry of an added class or code, for the calls that change one.
fn with_added<T>(code: c_int, what: &str, f: impl FnOnce(&mut Added) -> T) -> Result<T> {
    let mut added = ADDED.lock();
    match added.get_mut(&code) {
        Some(a) => Ok(f(a)),
        None if predefined(code) => Err(Error::new(
            Class::Arg,
            format!("{what} {code} is predefined: only added ones can change"),
        )),
        None => Err(Error::new(
            Class::Arg,
            format!("{what} {code} was not added by MPI_Add_error_class/_code"),
        )),
    }
}

pub unsafe fn add_error_string(errorcode: c_int, string: *const c_char) -> c_int {
    guard("MPI_Add_error_string", None, || {
        if string.is_null() {
            return Err(Error::new(Class::Arg, "string is NULL"));
        }
        // SAFETY: a NUL-terminated string (MPI's contract), non-NULL checked above.
        let s = unsafe { CStr::from_ptr(string) }
            .to_string_lossy()
            .into_owned();
        if s.len() >= h::MAX_ERROR_STRING {
            return Err(Error::new(
                Class::Arg,
                format!(
                    "string is {} bytes long (at most MPI_MAX_ERROR_STRING - 1 = {})",
                    s.len(),
                    h::MAX_ERROR_STRING - 1
                ),
            ));
        }
        with_added(errorcode, "errorcode", |a| a.string = s)
    })
}

pub unsafe fn remove_error_string(errorcode: c_int) -> c_int {
    guard("MPI_Remove_error_string", None, || {
        with_added(errorcode, "errorcode", |a| a.string.clear())
    })
}

pub unsafe fn remove_error_code(errorcode: c_int) -> c_int {
    guard("MPI_Remove_error_code", None, || {
        let is_class = with_added(errorcode, "errorcode", |a| a.class == errorcode)?;
        if is_class {
            return Err(Error::new(
                Class::Arg,
                format!("{errorcode} is an error class: use MPI_Remove_error_class"),
            ));
        }
        let mut added = ADDED.lock();
        if !added[&errorcode].string.is_empty() {
            return Err(Error::new(
                Class::Arg,
                format!(
                    "error code {errorcode} still has a string (MPI_Remove_error_string first)"
                ),
            ));
        }
        added.remove(&errorcode);
        Ok(())
    })
}

pub unsafe fn remove_error_class(errorclass: c_int) -> c_int {
    guard("MPI_Remove_error_class", None, || {
        let is_class = with_added(errorclass, "errorclass", |a| a.class == errorclass)?;
        let mut added = ADDED.lock();
        if !is_class {
            return Err(Error::new(
                Class::Arg,
                format!("{errorclass} is an error code, not a class"),
            ));
        }
        if added
            .iter()
            .any(|(&k, a)| k != errorclass && a.class == errorclass)
        {
            return Err(Error::new(
                Class::Arg,
                format!("error class {errorclass} still has codes (MPI_Remove_error_code first)"),
            ));
        }
        if !added[&errorclass].string.is_empty() {
            return Err(Error::new(
                Class::Arg,
                format!(
                    "error class {errorclass} still has a string (MPI_Remove_error_string first)"
                ),
            ));
        }
        added.remove(&errorclass);
        Ok(())
    })
}
