//! Communicators, error handlers and classes, datatype sizes.
#![allow(clippy::missing_safety_doc)]

use std::ffi::c_int;
use std::sync::atomic::Ordering;

use super::*;
use crate::abi::handles::{self as h};
use crate::abi::{guard, out};
use crate::error::{Class, Error};
use crate::runtime;
// ---------------------------------------------------------------------------------------------
// Communicators and errors

pub unsafe fn comm_rank(comm: c_int, rank: *mut c_int) -> c_int {
    guard("MPI_Comm_rank", Some(comm), || {
        let c = any_comm_of(runtime::get()?, comm)?;
        out(rank, "rank", c.rank as c_int)
    })
}

pub unsafe fn comm_size(comm: c_int, size: *mut c_int) -> c_int {
    guard("MPI_Comm_size", Some(comm), || {
        let c = any_comm_of(runtime::get()?, comm)?;
        out(size, "size", c.local_size() as c_int)
    })
}

pub unsafe fn comm_dup(comm: c_int, newcomm: *mut c_int) -> c_int {
    guard("MPI_Comm_dup", Some(comm), || {
        any_comm_of(runtime::get()?, comm)?;
        if newcomm.is_null() {
            return Err(Error::new(Class::Arg, "newcomm is NULL"));
        }
        out(newcomm, "newcomm", super::comm_create::dup_of(comm)?)
    })
}

pub unsafe fn comm_split(comm: c_int, color: c_int, key: c_int, newcomm: *mut c_int) -> c_int {
    guard("MPI_Comm_split", Some(comm), || {
        let rt = runtime::get()?;
        let c = any_comm_of(rt, comm)?;
        if newcomm.is_null() {
            return Err(Error::new(Class::Arg, "newcomm is NULL"));
        }
        if color < 0 && color != h::UNDEFINED {
            return Err(Error::new(
                Class::Arg,
                format!("color {color} is negative and not MPI_UNDEFINED"),
            ));
        }
        let split = match c.inter() {
            Some(inter) => {
                let color = (color != h::UNDEFINED).then_some(color as u32 as u64);
                crate::intercomm::split(&c, inter, color, key)?
            }
            None => c.split(if color == h::UNDEFINED { -1 } else { color }, key)?,
        };
        let handle = match split {
            Some(child) => rt.add_comm(child)?,
            None => h::COMM_NULL,
        };
        out(newcomm, "newcomm", handle)
    })
}

pub unsafe fn comm_free(comm: *mut c_int) -> c_int {
    // SAFETY: read only after the NULL check.
    let handle = if comm.is_null() {
        None
    } else {
        Some(unsafe { *comm })
    };
    guard("MPI_Comm_free", handle, || {
        let rt = runtime::get()?;
        let handle = handle.ok_or_else(|| Error::new(Class::Arg, "comm is NULL"))?;
        any_comm_of(rt, handle)?;
        release(rt, comm, handle)
    })
}

/// The end of `MPI_Comm_free` and `MPI_Comm_disconnect`: the attributes' delete callbacks,
/// the handle released, `*comm` set to `MPI_COMM_NULL`.
fn release(rt: &runtime::Runtime, comm: *mut c_int, handle: c_int) -> Result<()> {
    super::attributes::delete_all(super::attributes::Kind::Comm, handle)?;
    rt.free_comm(handle)?;
    out(comm, "comm", h::COMM_NULL)
}

/// `MPI_Comm_disconnect`: collective; every rank waits until all have reached it (messages
/// sent before it then have arrived: each link delivers in order), then the communicator is
/// freed. hcomm has no dynamic processes, so this is how a program built for them (or
/// mpi4py) lets go of a communicator.
pub unsafe fn comm_disconnect(comm: *mut c_int) -> c_int {
    // SAFETY: read only after the NULL check.
    let handle = (!comm.is_null()).then(|| unsafe { *comm });
    guard("MPI_Comm_disconnect", handle, || {
        let rt = runtime::get()?;
        let handle = handle.ok_or_else(|| Error::new(Class::Arg, "comm is NULL"))?;
        if handle == h::COMM_WORLD || handle == h::COMM_SELF {
            return Err(Error::new(
                Class::Comm,
                "MPI_COMM_WORLD and MPI_COMM_SELF cannot be disconnected",
            ));
        }
        let c = any_comm_of(rt, handle)?;
        super::coll::barrier_on(&c)?;
        release(rt, comm, handle)
    })
}

pub unsafe fn comm_compare(c1: c_int, c2: c_int, result: *mut c_int) -> c_int {
    guard("MPI_Comm_compare", Some(c1), || {
        let rt = runtime::get()?;
        let (a, b) = (any_comm_of(rt, c1)?, any_comm_of(rt, c2)?);
        // An intercommunicator's groups: local and remote (`world` is the remote one); both
        // must match for two intercommunicators to be congruent or similar (MPI 4.1 §7.4.1).
        let groups = |c: &Comm| match c.inter() {
            Some(i) => vec![i.local.clone(), c.world.clone()],
            None => vec![c.world.clone()],
        };
        let (ga, gb) = (groups(&a), groups(&b));
        let sorted = |g: &[Vec<usize>]| {
            g.iter()
                .map(|v| {
                    let mut v = v.clone();
                    v.sort_unstable();
                    v
                })
                .collect::<Vec<_>>()
        };
        let r = if c1 == c2 {
            h::IDENT
        } else if ga == gb {
            h::CONGRUENT
        } else if ga.len() == gb.len() && sorted(&ga) == sorted(&gb) {
            h::SIMILAR
        } else {
            h::UNEQUAL
        };
        out(result, "result", r)
    })
}

pub unsafe fn comm_set_errhandler(comm: c_int, errhandler: c_int) -> c_int {
    guard("MPI_Comm_set_errhandler", Some(comm), || {
        let c = any_comm_of(runtime::get()?, comm)?;
        if !crate::abi::objects::is_errhandler(errhandler) {
            return Err(Error::new(
                Class::Arg,
                format!("errhandler 0x{errhandler:x} is not a valid error handler"),
            ));
        }
        c.errhandler.store(errhandler, Ordering::Relaxed);
        Ok(())
    })
}

pub unsafe fn comm_get_errhandler(comm: c_int, errhandler: *mut c_int) -> c_int {
    guard("MPI_Comm_get_errhandler", Some(comm), || {
        let c = any_comm_of(runtime::get()?, comm)?;
        out(
            errhandler,
            "errhandler",
            c.errhandler.load(Ordering::Relaxed),
        )
    })
}

pub unsafe fn type_size(datatype: c_int, size: *mut c_int) -> c_int {
    guard("MPI_Type_size", None, || {
        let d = datatype_arg(datatype, "datatype")?;
        out(size, "size", d.size as c_int)
    })
}

pub unsafe fn type_size_c(datatype: c_int, size: *mut Count) -> c_int {
    guard("MPI_Type_size_c", None, || {
        let d = datatype_arg(datatype, "datatype")?;
        out(size, "size", d.size as Count)
    })
}
