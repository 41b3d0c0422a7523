//! Communicator management beyond dup/split: groups and `MPI_Comm_create`,
//! `MPI_Comm_split_type`, predefined attributes, names, user error handlers.
//!
//! Group handles and user error handlers live in [`crate::abi::objects`]; the group algebra in
//! [`crate::group`]; creating communicators in [`crate::comm`]. Here: argument checks (all
//! before anything is created or written) and handle mapping.
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicI32, Ordering};

use super::env::write_string;
use super::*;
use crate::abi::handles::{self as h};
use crate::abi::objects::{self, CommErrhandlerFn};
use crate::abi::{guard, out, raise};
use crate::comm::Inter;
use crate::error::{Class, Error};
use crate::group::{Compare, Group};
use crate::runtime;

/// An `int` array argument of length `n` (`n >= 0` checked by the caller).
unsafe fn ints<'a>(p: *const c_int, n: usize, what: &str) -> Result<&'a [c_int]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Error::new(
            Class::Arg,
            format!("{what} is NULL but n is {n}"),
        ));
    }
    // SAFETY: the caller passes an array of n ints (MPI contract); non-NULL checked above.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

fn n_arg(n: c_int) -> Result<usize> {
    usize::try_from(n).map_err(|_| Error::new(Class::Arg, format!("n is negative ({n})")))
}

fn non_null<T>(p: *mut T, what: &str) -> Result<()> {
    if p.is_null() {
        return Err(Error::new(Class::Arg, format!("{what} is NULL")));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// New communicators

pub unsafe fn comm_split_type(
    comm: c_int,
    split_type: c_int,
    key: c_int,
    info: c_int,
    newcomm: *mut c_int,
) -> c_int {
    guard("MPI_Comm_split_type", Some(comm), || {
        let rt = runtime::get()?;
        let c = any_comm_of(rt, comm)?;
        non_null(newcomm, "newcomm")?;
        super::info::info_arg(info)?;
        if let Some(inter) = c.inter() {
            // On an intercommunicator: the processes of this host on both sides (MPI 4.1
            // §7.4.2), the hardware-guided kinds having no meaning across two groups.
            let color = match split_type {
                h::COMM_TYPE_SHARED => Some(crate::comm::hash_bytes(rt.host.as_bytes())),
                h::UNDEFINED => None,
                _ => {
                    return Err(Error::new(
                        Class::Arg,
                        format!("split_type {split_type} on an intercommunicator: only MPI_COMM_TYPE_SHARED or MPI_UNDEFINED"),
                    ))
                }
            };
            let handle = match crate::intercomm::split(&c, inter, color, key)? {
                Some(child) => rt.add_comm(child)?,
                None => h::COMM_NULL,
            };
            return out(newcomm, "newcomm", handle);
        }
        let host = match split_type {
            h::COMM_TYPE_SHARED => Some(rt.host.as_str()),
            // The one hardware resource hcomm knows is the host's shared memory (MPI-4
            // §7.4.2 names "mpi_shared_memory"); any other value, or none, is a resource it
            // cannot find, so this process gets MPI_COMM_NULL.
            h::COMM_TYPE_HW_GUIDED => {
                let v = super::info::info_value(info, "mpi_hw_resource_type")?;
                (v.as_deref() == Some("mpi_shared_memory")).then_some(rt.host.as_str())
            }
            // A strictly smaller resource than the parent spans: the host is the only level
            // hcomm knows, so this is the host split, kept only where it is smaller.
            h::COMM_TYPE_HW_UNGUIDED => Some(rt.host.as_str()),
            h::UNDEFINED => None,
            _ => {
                return Err(Error::new(
                    Class::Arg,
                    format!("split_type {split_type} is not MPI_COMM_TYPE_SHARED, MPI_COMM_TYPE_HW_GUIDED, MPI_COMM_TYPE_HW_UNGUIDED or MPI_UNDEFINED"),
                ))
            }
        };
        let unguided = split_type == h::COMM_TYPE_HW_UNGUIDED;
        // MPI-4 §7.4.2: an unguided split that would give the whole parent gives
        // MPI_COMM_NULL instead (every member sees the same sizes, so all agree).
        let handle = match c.split_shared(host, key)? {
            Some(child) if unguided && child.size() == c.size() => h::COMM_NULL,
            Some(child) => rt.add_comm(child)?,
            None => h::COMM_NULL,
        };
        out(newcomm, "newcomm", handle)
    })
}

pub unsafe fn comm_create(comm: c_int, group: c_int, newcomm: *mut c_int) -> c_int {
    guard("MPI_Comm_create", Some(comm), || {
        let rt = runtime::get()?;
        let c = any_comm_of(rt, comm)?;
        let g = objects::group(group, "group")?;
        non_null(newcomm, "newcomm")?;
        let created = match c.inter() {
            Some(inter) => create_inter(&c, inter, &g.world)?,
            None => c.create(&g.world)?,
        };
        let handle = match created {
            Some(child) => rt.add_comm(child)?,
            None => h::COMM_NULL,
        };
        out(newcomm, "newcomm", handle)
    })
}

/// `MPI_Comm_create` of an intercommunicator (MPI 4.1 §7.4.2): each side passes a subgroup of
/// its local group; the members get an intercommunicator between their side's subgroup (in the
/// group's order) and the other side's, the others `MPI_COMM_NULL` (so does everyone when the
/// other side's subgroup is empty). That is the intercommunicator split with one color for the
/// members, keyed by their rank in the group.
fn create_inter(c: &Comm, inter: &Inter, members: &[usize]) -> Result<Option<Comm>> {
    if let Some(w) = members.iter().find(|w| !inter.local.contains(w)) {
        return Err(Error::new(
            Class::Group,
            format!("group is not a subgroup of the local group (world rank {w} is not in it)"),
        ));
    }
    let me = inter.local[inter.local_comm.rank];
    let pos = members.iter().position(|&w| w == me);
    let key = pos.map_or(0, |p| p as i32);
    crate::intercomm::split(c, inter, pos.map(|_| 0), key)
}

// ---------------------------------------------------------------------------------------------
// Groups

pub unsafe fn comm_group(comm: c_int, group: *mut c_int) -> c_int {
    guard("MPI_Comm_group", Some(comm), || {
        let c = any_comm_of(runtime::get()?, comm)?;
        non_null(group, "group")?;
        // The local group (on an intercommunicator `world` is the remote one).
        let members = c
            .inter()
            .map_or_else(|| c.world.clone(), |i| i.local.clone());
        let g = objects::add_group(Group::new(members))?;
        out(group, "group", g)
    })
}

unsafe fn incl_or_excl(
    name: &'static str,
    group: c_int,
    n: c_int,
    ranks: *const c_int,
    newgroup: *mut c_int,
    incl: bool,
) -> c_int {
    guard(name, None, || {
        runtime::get()?;
        let g = objects::group(group, "group")?;
        // SAFETY: length checked non-negative; the array holds n ints (MPI contract).
        let r = unsafe { ints(ranks, n_arg(n)?, "ranks")? };
        non_null(newgroup, "newgroup")?;
        let ng = if incl { g.incl(r)? } else { g.excl(r)? };
        out(newgroup, "newgroup", objects::add_group(ng)?)
    })
}

pub unsafe fn group_incl(
    group: c_int,
    n: c_int,
    ranks: *const c_int,
    newgroup: *mut c_int,
) -> c_int {
    incl_or_excl("MPI_Group_incl", group, n, ranks, newgroup, true)
}

pub unsafe fn group_excl(
    group: c_int,
    n: c_int,
    ranks: *const c_int,
    newgroup: *mut c_int,
) -> c_int {
    incl_or_excl("MPI_Group_excl", group, n, ranks, newgroup, false)
}

/// `MPI_Group_union`, `_intersection`, `_difference`: `op` combines the two groups.
unsafe fn set_op(
    name: &'static str,
    group1: c_int,
    group2: c_int,
    newgroup: *mut c_int,
    op: fn(&Group, &Group) -> Group,
) -> c_int {
    guard(name, None, || {
        runtime::get()?;
        let g1 = objects::group(group1, "group1")?;
        let g2 = objects::group(group2, "group2")?;
        non_null(newgroup, "newgroup")?;
        out(newgroup, "newgroup", objects::add_group(op(&g1, &g2))?)
    })
}

pub unsafe fn group_union(
    name: &'static str,
    group1: c_int,
    group2: c_int,
    newgroup: *mut c_int,
) -> c_int {
    set_op(name, group1, group2, newgroup, Group::union)
}

pub unsafe fn group_intersection(
    name: &'static str,
    group1: c_int,
    group2: c_int,
    newgroup: *mut c_int,
) -> c_int {
    set_op(name, group1, group2, newgroup, Group::intersection)
}

pub unsafe fn group_difference(
    name: &'static str,
    group1: c_int,
    group2: c_int,
    newgroup: *mut c_int,
) -> c_int {
    set_op(name, group1, group2, newgroup, Group::difference)
}

/// `MPI_Group_range_incl` / `_excl`: `incl` picks which.
unsafe fn range_common(
    name: &'static str,
    group: c_int,
    n: c_int,
    ranges: *const [c_int; 3],
    newgroup: *mut c_int,
    incl: bool,
) -> c_int {
    guard(name, None, || {
        runtime::get()?;
        let g = objects::group(group, "group")?;
        let n = n_arg(n)?;
        let r: &[[c_int; 3]] = if n == 0 {
            &[]
        } else if ranges.is_null() {
            return Err(Error::new(
                Class::Arg,
                format!("ranges is NULL but n is {n}"),
            ));
        } else {
            // SAFETY: non-NULL; the caller passes n triplets (`int ranges[][3]`, MPI contract).
            unsafe { std::slice::from_raw_parts(ranges, n) }
        };
        non_null(newgroup, "newgroup")?;
        let ng = if incl {
            g.range_incl(r)?
        } else {
            g.range_excl(r)?
        };
        out(newgroup, "newgroup", objects::add_group(ng)?)
    })
}

pub unsafe fn group_range_incl(
    name: &'static str,
    group: c_int,
    n: c_int,
    ranges: *const [c_int; 3],
    newgroup: *mut c_int,
) -> c_int {
    range_common(name, group, n, ranges, newgroup, true)
}

pub unsafe fn group_range_excl(
    name: &'static str,
    group: c_int,
    n: c_int,
    ranges: *const [c_int; 3],
    newgroup: *mut c_int,
) -> c_int {
    range_common(name, group, n, ranges, newgroup, false)
}

pub unsafe fn group_free(group: *mut c_int) -> c_int {
    guard("MPI_Group_free", None, || {
        runtime::get()?;
        non_null(group, "group")?;
        // SAFETY: non-NULL checked above; points to the caller's handle.
        objects::free_group(unsafe { *group })?;
        out(group, "group", h::GROUP_NULL)
    })
}

pub unsafe fn group_size(group: c_int, size: *mut c_int) -> c_int {
    guard("MPI_Group_size", None, || {
        runtime::get()?;
        let g = objects::group(group, "group")?;
        out(size, "size", g.size() as c_int)
    })
}

pub unsafe fn group_rank(group: c_int, rank: *mut c_int) -> c_int {
    guard("MPI_Group_rank", None, || {
        let rt = runtime::get()?;
        let g = objects::group(group, "group")?;
        let r = g
            .rank_of(rt.world.rank)
            .map_or(h::UNDEFINED, |r| r as c_int);
        out(rank, "rank", r)
    })
}

pub unsafe fn group_translate_ranks(
    group1: c_int,
    n: c_int,
    ranks1: *const c_int,
    group2: c_int,
    ranks2: *mut c_int,
) -> c_int {
    guard("MPI_Group_translate_ranks", None, || {
        runtime::get()?;
        let g1 = objects::group(group1, "group1")?;
        let g2 = objects::group(group2, "group2")?;
        let n = n_arg(n)?;
        // SAFETY: the array holds n ints (MPI contract); NULL checked inside.
        let r1 = unsafe { ints(ranks1, n, "ranks1")? };
        if n > 0 {
            non_null(ranks2, "ranks2")?;
        }
        let r2 = g1.translate(r1, &g2, h::PROC_NULL, h::UNDEFINED)?;
        // SAFETY: ranks2 is non-NULL (n > 0) and holds n ints (MPI contract); it may not
        // alias ranks1 (MPI forbids aliased arguments), and r1 is no longer used.
        unsafe { std::ptr::copy_nonoverlapping(r2.as_ptr(), ranks2, n) };
        Ok(())
    })
}

pub unsafe fn group_compare(group1: c_int, group2: c_int, result: *mut c_int) -> c_int {
    guard("MPI_Group_compare", None, || {
        runtime::get()?;
        let g1 = objects::group(group1, "group1")?;
        let g2 = objects::group(group2, "group2")?;
        let r = match g1.compare(&g2) {
            Compare::Ident => h::IDENT,
            Compare::Similar => h::SIMILAR,
            Compare::Unequal => h::UNEQUAL,
        };
        out(result, "result", r)
    })
}

// ---------------------------------------------------------------------------------------------
// Predefined attributes

// The values `MPI_Comm_get_attr` points to. MPI hands out a pointer to the value (C:
// `int *`), so each lives at a fixed address for the whole run; atomics, because writable
// memory is kinder to a program that (wrongly) writes through the pointer.
static TAG_UB: AtomicI32 = AtomicI32::new(h::MAX_TAG);
static HOST: AtomicI32 = AtomicI32::new(h::PROC_NULL);
/// Every rank can do I/O.
static IO: AtomicI32 = AtomicI32::new(h::ANY_SOURCE);
/// 0: `MPI_Wtime` reads each host's `CLOCK_MONOTONIC`, which one host's processes share but
/// hosts do not (MPICH and Open MPI also say 0).
static WTIME_IS_GLOBAL: AtomicI32 = AtomicI32::new(0);
/// The world size (hcomm cannot spawn processes, so the universe is the world).
static UNIVERSE_SIZE: AtomicI32 = AtomicI32::new(0);
static APPNUM: AtomicI32 = AtomicI32::new(0);

/// `MPI_Comm_get_attr` for the predefined keys, on any communicator (as MPICH; Open MPI
/// caches them on `MPI_COMM_WORLD` and its duplicates only). No user keys exist, so any other
/// key is invalid.
pub unsafe fn comm_get_attr(
    comm: c_int,
    keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    guard("MPI_Comm_get_attr", Some(comm), || {
        let rt = runtime::get()?;
        any_comm_of(rt, comm)?;
        non_null(attribute_val, "attribute_val")?;
        non_null(flag, "flag")?;
        let v = match keyval {
            h::KEYVAL_TAG_UB => &TAG_UB,
            h::KEYVAL_HOST => &HOST,
            h::KEYVAL_IO => &IO,
            h::KEYVAL_WTIME_IS_GLOBAL => &WTIME_IS_GLOBAL,
            h::KEYVAL_UNIVERSE_SIZE => {
                UNIVERSE_SIZE.store(rt.world.size() as c_int, Ordering::Relaxed);
                &UNIVERSE_SIZE
            }
            h::KEYVAL_APPNUM => &APPNUM,
            h::KEYVAL_LASTUSEDCODE => &super::error_codes::LAST_USED_CODE,
            h::KEYVAL_INVALID => {
                return Err(Error::new(
                    Class::Keyval,
                    "comm_keyval is MPI_KEYVAL_INVALID",
                ))
            }
            _ => {
                let v =
                    super::attributes::get_user_attr(super::attributes::Kind::Comm, comm, keyval)?;
                return super::attributes::write_attr(v, attribute_val, flag);
            }
        };
        out(
            attribute_val.cast::<*mut c_int>(),
            "attribute_val",
            v.as_ptr(),
        )?;
        out(flag, "flag", 1)
    })
}

// ---------------------------------------------------------------------------------------------
// Names

pub unsafe fn comm_set_name(comm: c_int, comm_name: *const c_char) -> c_int {
    guard("MPI_Comm_set_name", Some(comm), || {
        let c = any_comm_of(runtime::get()?, comm)?;
        if comm_name.is_null() {
            return Err(Error::new(Class::Arg, "comm_name is NULL"));
        }
        // SAFETY: a NUL-terminated string (MPI contract), non-NULL checked above.
        let s = unsafe { CStr::from_ptr(comm_name) }.to_bytes();
        c.set_name(&String::from_utf8_lossy(
            &s[..s.len().min(crate::comm::MAX_NAME)],
        ));
        Ok(())
    })
}

pub unsafe fn comm_get_name(comm: c_int, comm_name: *mut c_char, resultlen: *mut c_int) -> c_int {
    guard("MPI_Comm_get_name", Some(comm), || {
        let c = any_comm_of(runtime::get()?, comm)?;
        write_string(
            comm_name,
            h::MAX_OBJECT_NAME,
            resultlen,
            &c.name(),
            "comm_name",
        )
    })
}

// ---------------------------------------------------------------------------------------------
// User error handlers

pub unsafe fn comm_create_errhandler(
    function: Option<CommErrhandlerFn>,
    errhandler: *mut c_int,
) -> c_int {
    guard("MPI_Comm_create_errhandler", None, || {
        runtime::get()?;
        let f = function.ok_or_else(|| Error::new(Class::Arg, "comm_errhandler_fn is NULL"))?;
        non_null(errhandler, "errhandler")?;
        out(errhandler, "errhandler", objects::add_errhandler(f)?)
    })
}

/// `MPI_Errhandler_free`: sets the handle to `MPI_ERRHANDLER_NULL`. Communicators using the
/// handler keep it (see `objects`); predefined handlers may be freed too (a handle from
/// `MPI_Comm_get_errhandler` is a new reference that the program frees, whatever it is).
pub unsafe fn errhandler_free(errhandler: *mut c_int) -> c_int {
    guard("MPI_Errhandler_free", None, || {
        runtime::get()?;
        non_null(errhandler, "errhandler")?;
        // SAFETY: non-NULL checked above; points to the caller's handle.
        let e = unsafe { *errhandler };
        if !objects::is_errhandler(e) {
            return Err(Error::new(
                Class::Arg,
                format!("errhandler 0x{e:x} is not a valid error handler"),
            ));
        }
        out(errhandler, "errhandler", h::ERRHANDLER_NULL)
    })
}

/// `MPI_Comm_call_errhandler`: runs the communicator's handler on `errorcode`; returns
/// `MPI_SUCCESS` once the handler returns (MPI-4 §9.3.6).
pub unsafe fn comm_call_errhandler(comm: c_int, errorcode: c_int) -> c_int {
    let rc = guard("MPI_Comm_call_errhandler", Some(comm), || {
        any_comm_of(runtime::get()?, comm).map(|_| ())
    });
    if rc != 0 {
        return rc;
    }
    raise(
        "MPI_Comm_call_errhandler",
        Some(comm),
        errorcode,
        &format!("error code {errorcode} raised by the program"),
    );
    0
}
