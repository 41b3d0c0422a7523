//! Communicator creation beyond `MPI_Comm_dup`/`_split`/`_create`: duplicates with info and
//! nonblocking duplicates, `MPI_Comm_create_group` (collective over the group only) and
//! `MPI_Comm_create_from_group` (from a group alone, the Sessions way).
//!
//! None of them communicates: ids are derived as [`crate::comm`] explains, so
//! `MPI_Comm_idup` completes at once (its request is complete when returned, which MPI
//! allows: a nonblocking call may complete before it returns).
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, CStr};
use std::sync::Arc;

use super::info::info_arg;
use super::{any_comm_of, comm_of};
use crate::abi::handles::{self as h};
use crate::abi::{guard, guard_on, objects, out};
use crate::error::{Class, Error, Result};
use crate::request::{Completion, Request};
use crate::runtime;

/// `MPI_MAX_STRINGTAG_LEN` (MPICH), the NUL included.
pub(super) const MAX_STRINGTAG: usize = 256;

fn non_null<T>(p: *mut T, what: &str) -> Result<()> {
    if p.is_null() {
        return Err(Error::new(Class::Arg, format!("{what} is NULL")));
    }
    Ok(())
}

/// Duplicates `comm` (intra- or intercommunicator) with its cached attributes; returns the
/// new handle.
pub(super) fn dup_of(comm: c_int) -> Result<c_int> {
    let rt = runtime::get()?;
    let c = any_comm_of(rt, comm)?;
    let dup = match c.inter() {
        Some(inter) => crate::intercomm::dup(&c, inter)?,
        None => c.dup(),
    };
    let handle = rt.add_comm(dup)?;
    super::attributes::copy_comm_attrs(comm, handle)?;
    Ok(handle)
}

/// `MPI_Comm_dup_with_info`: a duplicate whose hints are `info` (checked; hcomm reads no hint,
/// so `MPI_Comm_get_info` on it is empty).
pub unsafe fn comm_dup_with_info(
    name: &'static str,
    comm: c_int,
    info: c_int,
    newcomm: *mut c_int,
) -> c_int {
    guard(name, Some(comm), || {
        any_comm_of(runtime::get()?, comm)?;
        info_arg(info)?;
        non_null(newcomm, "newcomm")?;
        out(newcomm, "newcomm", dup_of(comm)?)
    })
}

/// `MPI_Comm_idup`: the duplicate is made at once and the request is already complete.
pub unsafe fn comm_idup(
    name: &'static str,
    comm: c_int,
    newcomm: *mut c_int,
    request: *mut c_int,
) -> c_int {
    unsafe { comm_idup_with_info(name, comm, super::info::INFO_NULL, newcomm, request) }
}

/// `MPI_Comm_idup_with_info`: as [`comm_idup`], with hints checked as `MPI_Comm_dup_with_info`.
pub unsafe fn comm_idup_with_info(
    name: &'static str,
    comm: c_int,
    info: c_int,
    newcomm: *mut c_int,
    request: *mut c_int,
) -> c_int {
    guard(name, Some(comm), || {
        let c = any_comm_of(runtime::get()?, comm)?;
        info_arg(info)?;
        non_null(newcomm, "newcomm")?;
        non_null(request, "request")?;
        let handle = dup_of(comm)?;
        out(newcomm, "newcomm", handle)?;
        let r = Request::completed(name, comm, c.ep.clone(), Completion::empty());
        super::nb::publish(Arc::new(r), request)
    })
}

/// `MPI_Comm_create_group`: called by the members of `group` (a subgroup of `comm`) only; a
/// process outside `group` gets `MPI_COMM_NULL`.
pub unsafe fn comm_create_group(
    name: &'static str,
    comm: c_int,
    group: c_int,
    tag: c_int,
    newcomm: *mut c_int,
) -> c_int {
    guard(name, Some(comm), || {
        let rt = runtime::get()?;
        let c = comm_of(rt, comm)?;
        let g = objects::group(group, "group")?;
        if tag < 0 {
            return Err(Error::new(Class::Tag, format!("tag is negative ({tag})")));
        }
        non_null(newcomm, "newcomm")?;
        if let Some(w) = g.world.iter().find(|w| !c.world.contains(w)) {
            return Err(Error::new(
                Class::Group,
                format!("group holds world rank {w}, which is not in the communicator"),
            ));
        }
        let mut key = b"create_group".to_vec();
        key.extend(c.id.to_le_bytes());
        key.extend(tag.to_le_bytes());
        let errh = c.errhandler.load(std::sync::atomic::Ordering::Relaxed);
        let handle =
            match crate::comm::create_tagged(&key, &g.world, c.my_world_rank(), c.ep.clone(), errh)
            {
                Some(child) => rt.add_comm(child)?,
                None => h::COMM_NULL,
            };
        out(newcomm, "newcomm", handle)
    })
}

/// The error handler `MPI_Comm_create_from_group` reports its own errors to: its
/// `errhandler` argument when that is one (MPI-4 §7.4.2), else `MPI_ERRORS_ARE_FATAL`.
pub(super) fn handler_or_fatal(errhandler: c_int) -> (i32, i32) {
    let e = if objects::is_errhandler(errhandler) {
        errhandler
    } else {
        h::ERRORS_ARE_FATAL
    };
    (e, h::COMM_NULL)
}

/// The `errhandler` argument of the calls that take one (Sessions, communicators from groups).
pub(super) fn errhandler_arg(errhandler: c_int) -> Result<()> {
    if !objects::is_errhandler(errhandler) {
        return Err(Error::new(
            Class::Arg,
            format!("errhandler 0x{errhandler:x} is not a valid error handler"),
        ));
    }
    Ok(())
}

/// A string argument of at most `max - 1` bytes.
pub(crate) fn string_arg(p: *const c_char, what: &str, max: usize) -> Result<String> {
    if p.is_null() {
        return Err(Error::new(Class::Arg, format!("{what} is NULL")));
    }
    // SAFETY: non-NULL; a NUL-terminated string (MPI contract).
    let s = unsafe { CStr::from_ptr(p) }.to_bytes();
    if s.len() >= max {
        return Err(Error::new(
            Class::Arg,
            format!(
                "{what} is {} bytes long (at most {} allowed)",
                s.len(),
                max - 1
            ),
        ));
    }
    Ok(String::from_utf8_lossy(s).into_owned())
}

/// `MPI_Comm_create_from_group`: a communicator of `group`'s members, in its order, made by
/// the members only (a non-member's call is an error), told apart by `stringtag`; its error
/// handler is `errhandler`.
pub unsafe fn comm_create_from_group(
    name: &'static str,
    group: c_int,
    stringtag: *const c_char,
    info: c_int,
    errhandler: c_int,
    newcomm: *mut c_int,
) -> c_int {
    guard_on(
        name,
        || handler_or_fatal(errhandler),
        || {
            let rt = runtime::get()?;
            let g = objects::group(group, "group")?;
            let tag = string_arg(stringtag, "stringtag", MAX_STRINGTAG)?;
            info_arg(info)?;
            errhandler_arg(errhandler)?;
            non_null(newcomm, "newcomm")?;
            let mut key = b"from_group".to_vec();
            key.extend(tag.as_bytes());
            let child = crate::comm::create_tagged(
                &key,
                &g.world,
                rt.world.rank,
                rt.world.ep.clone(),
                errhandler,
            )
            .ok_or_else(|| {
                Error::new(
                    Class::Group,
                    format!(
                        "this process (world rank {}) is not a member of group",
                        rt.world.rank
                    ),
                )
            })?;
            out(newcomm, "newcomm", rt.add_comm(child)?)
        },
    )
}
