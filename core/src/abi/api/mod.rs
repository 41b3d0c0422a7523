//! The MPI functions, MPICH ABI. Every function validates all arguments before any data moves
//! (a rejected call writes nothing), then calls the communicator layer.
//!
//! # Safety
//! Every function here is `unsafe`: the caller (C code) promises that non-NULL pointers point
//! to memory as MPI specifies for that argument. NULL pointers and invalid handles are errors.
//! That one contract is stated here, once, rather than on each of the functions.
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use super::handles::{self as h, IN_PLACE};
use crate::comm::Comm;
use crate::datatype::{Datatype, ElemType};
use crate::error::{Class, Error, Result};
use crate::frame::{Kind, Signature};
use crate::runtime;

mod agree;
pub mod attributes;
mod blocks;
mod buffered;
mod cart;
pub mod checks;
mod coll;
mod comm;
mod comm_create;
mod data_movement;
mod env;
mod error_codes;
mod fast_lane;
mod graph;
mod grequest;
mod groups;
pub mod info;
mod intercomm;
mod intercomm_coll;
mod isendrecv;
mod local_queries;
mod matched;
mod nb;
pub mod neighbor;
mod p2p;
mod pack;
mod persistent;
pub mod plan;
mod send_modes;
mod sessions;
mod topo_args;
mod type_contents;
mod type_ctors;
mod type_queries;
mod typearg;
mod types;
pub mod unsupported;

#[allow(unused_imports)]
pub use agree::*;
pub use blocks::Ints;
pub use buffered::*;
pub use cart::*;
pub use coll::*;
pub use comm::*;
pub use comm_create::*;
pub use data_movement::*;
pub use env::*;
pub use error_codes::*;
pub use graph::*;
pub use grequest::*;
#[allow(unused_imports)]
pub use groups::*;
pub use intercomm::*;
pub use isendrecv::*;
pub use local_queries::*;
pub use matched::*;
#[allow(unused_imports)]
pub use nb::*;
#[allow(unused_imports)]
pub use p2p::*;
#[allow(unused_imports)]
pub use pack::*;
#[allow(unused_imports)]
pub use persistent::*;
pub use send_modes::*;
pub use sessions::*;
pub use type_contents::*;
pub use type_ctors::*;
pub use type_queries::*;
pub(crate) use typearg::*;
#[allow(unused_imports)]
pub use types::*;

pub type Count = i64;

pub(crate) const VERSION: (c_int, c_int) = (4, 0);

pub(crate) fn library_version() -> String {
    format!(
        "hcomm {} (MPICH ABI; shared-memory ring collectives)",
        env!("CARGO_PKG_VERSION")
    )
}

// ---------------------------------------------------------------------------------------------
// Argument checking helpers

/// A communicator handle for the calls MPI defines on intracommunicators only (topologies,
/// Scan/Exscan, `MPI_Comm_create_group`): an intercommunicator is `MPI_ERR_COMM`.
pub(crate) fn comm_of(rt: &runtime::Runtime, c: c_int) -> Result<Arc<Comm>> {
    // One lookup per call; the Arc keeps the communicator alive even if freed meanwhile.
    let comm = rt.comm(c)?;
    if comm.inter().is_some() {
        return Err(Error::new(
            Class::Comm,
            format!(
                "communicator 0x{c:x} is an intercommunicator: this call takes an intracommunicator"
            ),
        ));
    }
    Ok(comm)
}

/// A communicator handle for the calls that take intercommunicators too (point-to-point,
/// local queries, error handlers, names, attributes, dup and free, barrier).
pub(crate) fn any_comm_of(rt: &runtime::Runtime, c: c_int) -> Result<Arc<Comm>> {
    rt.comm(c)
}

pub(crate) fn count_arg(count: Count, what: &str) -> Result<usize> {
    usize::try_from(count)
        .map_err(|_| Error::new(Class::Count, format!("{what} is negative ({count})")))
}

/// Checks element `i` of an argument array: `check(name)` with the array's name, then, only if
/// that fails, again with `name[i]` for the message. Formatting the indexed name up front for
/// every element cost a visible share of a small collective.
pub(crate) fn indexed<T>(name: &str, i: usize, check: impl Fn(&str) -> Result<T>) -> Result<T> {
    check(name).or_else(|_| check(&format!("{name}[{i}]")))
}

/// A datatype's size and extent (`MPI_Type_size`), for any valid datatype, committed or not.
/// Calls that move data use [`type_arg`] instead, which handles derived datatypes' layouts.
pub(crate) fn datatype_arg(dt: c_int, what: &str) -> Result<Datatype> {
    if dt == h::DATATYPE_NULL {
        return Err(Error::new(
            Class::Type,
            format!("{what} is MPI_DATATYPE_NULL"),
        ));
    }
    if let Some(t) = h::user_type(dt) {
        let l = &t.layout;
        return Ok(Datatype::new(ElemType::Opaque, l.size, l.extent()));
    }
    h::datatype(dt)
        .map(|d| d.0)
        .filter(|d| d.size > 0)
        .ok_or_else(|| {
            Error::new(
                Class::Type,
                format!("{what} 0x{dt:x} is not a valid datatype"),
            )
        })
}

pub(crate) fn root_arg(root: c_int, comm: &Comm) -> Result<usize> {
    usize::try_from(root)
        .ok()
        .filter(|&r| r < comm.size())
        .ok_or_else(|| {
            Error::new(
                Class::Root,
                format!(
                    "root {root} is not a rank of a communicator of size {}",
                    comm.size()
                ),
            )
        })
}

pub(crate) fn is_in_place(p: *const c_void) -> bool {
    p as usize == IN_PLACE
}

/// A buffer that must be valid for `len` bytes: NULL is allowed only when `len == 0`.
pub(crate) fn buf_arg(p: *const c_void, len: usize, what: &str) -> Result<()> {
    if len > 0 && p.is_null() {
        return Err(Error::new(
            Class::Buffer,
            format!("{what} is NULL but the count is not zero"),
        ));
    }
    if is_in_place(p) {
        return Err(Error::new(
            Class::Buffer,
            format!("{what} may not be MPI_IN_PLACE here"),
        ));
    }
    Ok(())
}

/// As [`buf_arg`], where NULL is also `MPI_BOTTOM` (the MPICH ABI's value): valid when the
/// data of every block that moves lies at an absolute address, i.e. `offsets` (each block's
/// displacement plus its datatype's true lower bound, in bytes) are all past the first page,
/// where no program's buffer can start (types built from `MPI_Get_address`, or byte
/// displacements that are addresses).
pub(crate) fn buf_or_bottom(
    p: *const c_void,
    len: usize,
    what: &str,
    offsets: impl IntoIterator<Item = isize>,
) -> Result<()> {
    const FIRST_PAGE: isize = 4096;
    if p.is_null() && offsets.into_iter().all(|o| o >= FIRST_PAGE) {
        return Ok(());
    }
    buf_arg(p, len, what)
}

/// Nonblocking and point-to-point calls take host buffers only: a device buffer is
/// `MPI_ERR_BUFFER` saying so (cheap: no CUDA call while CUDA is not active).
pub(crate) fn host_only(ptrs: &[*const c_void]) -> Result<()> {
    crate::cuda::refuse_device("nonblocking and point-to-point communication", ptrs)
}

pub(crate) fn no_alias(send: *const c_void, recv: *const c_void, len: usize) -> Result<()> {
    if len > 0 && send == recv {
        return Err(Error::new(
            Class::Buffer,
            "sendbuf and recvbuf are the same buffer: use MPI_IN_PLACE",
        ));
    }
    Ok(())
}

pub(crate) fn sig(kind: Kind, count: usize, dt: c_int, op: c_int, root: i32) -> Signature {
    Signature {
        kind,
        count: count as u64,
        dtype: dt as u32,
        op: op as u32,
        root,
    }
}
