//! MPI-4 Sessions: `MPI_Session_init`/`_finalize`, the process sets `mpi://WORLD` and
//! `mpi://SELF`, groups from them, and session error handlers.
//!
//! A session is a handle and an error handler. The first one brings the runtime up as
//! `MPI_Init` would (the same world: hcomm has one per process), and the runtime goes down
//! when neither the world model nor a session uses it ([`runtime::session_init`]). Groups
//! from a session are ordinary groups of world ranks, and `MPI_Comm_create_from_group` turns
//! them into communicators (`comm_create`).
#![allow(clippy::missing_safety_doc)]

use super::comm_create::errhandler_arg;
use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::comm_create::string_arg;
use super::info::{info_arg, new_info_with};
use super::{buffered, Count};
use crate::abi::handles::{self as h};
use crate::abi::objects::{self, CommErrhandlerFn};
use crate::abi::{guard_on, out, raise_on};
use crate::error::{Class, Error, Result};
use crate::group::Group;
use crate::runtime;

/// `MPI_SESSION_NULL` and the handle kind of sessions (MPICH ABI: kind 0xe, "direct").
pub const SESSION_NULL: c_int = 0x3800_0000;
const SESSION_BASE: c_int = 0xb800_0000_u32 as c_int;
const SESSION_MASK: c_int = 0x03ff_ffff;
/// `MPI_MAX_PSET_NAME_LEN` (MPICH), the NUL included.
const MAX_PSET_NAME: usize = 256;

/// The process sets every session offers, in `MPI_Session_get_nth_pset` order.
const PSETS: [&str; 2] = ["mpi://WORLD", "mpi://SELF"];

struct Session {
    errhandler: AtomicI32,
}

static TABLE: Mutex<Vec<Option<Arc<Session>>>> = Mutex::new(Vec::new());

fn session_of(handle: c_int) -> Result<Arc<Session>> {
    if handle == SESSION_NULL {
        return Err(Error::new(Class::Session, "session is MPI_SESSION_NULL"));
    }
    (handle & !SESSION_MASK == SESSION_BASE)
        .then(|| TABLE.lock().get((handle & SESSION_MASK) as usize).cloned())
        .flatten()
        .flatten()
        .ok_or_else(|| {
            Error::new(
                Class::Session,
                format!("session 0x{handle:x} is not a valid session (finalized or never created)"),
            )
        })
}

/// The handler a call on `session` reports to: the session's; when the handle is no
/// session, the one errors tied to no object go to (as `raise` picks for an invalid
/// communicator: `MPI_COMM_WORLD`'s while the runtime is up, else `MPI_ERRORS_ARE_FATAL`).
fn handler_of(session: c_int) -> (i32, i32) {
    match session_of(session) {
        Ok(s) => (s.errhandler.load(Ordering::Relaxed), session),
        Err(_) => match runtime::get() {
            Ok(rt) => (rt.world.errhandler.load(Ordering::Relaxed), h::COMM_WORLD),
            Err(_) => (h::ERRORS_ARE_FATAL, session),
        },
    }
}

/// Runs the body of a call on `session` with the session resolved; errors go to the
/// session's handler ([`handler_of`]).
fn on_session(
    name: &'static str,
    session: c_int,
    body: impl FnOnce(&Session) -> Result<()>,
) -> c_int {
    guard_on(
        name,
        || handler_of(session),
        || body(&*session_of(session)?),
    )
}

/// The members of process set `name` (matched without regard to case, as MPICH does).
fn pset(name: &str) -> Result<Group> {
    let rt = runtime::get()?;
    if name.eq_ignore_ascii_case(PSETS[0]) {
        Ok(Group::new(rt.world.world.clone()))
    } else if name.eq_ignore_ascii_case(PSETS[1]) {
        Ok(Group::new(vec![rt.world.rank]))
    } else {
        Err(Error::new(
            Class::Arg,
            format!(
                "pset_name \"{name}\" is not a process set (hcomm has mpi://WORLD and mpi://SELF)"
            ),
        ))
    }
}

/// `MPI_Session_init`: errors before the session exists go to `errhandler` (MPI-4 §11.3.1),
/// or are fatal when it is no handler. Info hints are checked and ignored.
pub unsafe fn session_init(
    name: &'static str,
    info: c_int,
    errhandler: c_int,
    session: *mut c_int,
) -> c_int {
    let on = || {
        let e = if objects::is_errhandler(errhandler) {
            errhandler
        } else {
            h::ERRORS_ARE_FATAL
        };
        (e, SESSION_NULL)
    };
    guard_on(name, on, || {
        info_arg(info)?;
        errhandler_arg(errhandler)?;
        if session.is_null() {
            return Err(Error::new(Class::Arg, "session is NULL"));
        }
        runtime::session_init()?;
        let s = Arc::new(Session {
            errhandler: AtomicI32::new(errhandler),
        });
        let handle = {
            let mut t = TABLE.lock();
            let i = match t.iter().position(|s| s.is_none()) {
                Some(i) => i,
                None => {
                    t.push(None);
                    t.len() - 1
                }
            };
            t[i] = Some(s);
            SESSION_BASE | i as c_int
        };
        out(session, "session", handle)
    })
}

/// `MPI_Session_finalize`: ends the session; the last user of the runtime tears it down
/// (a barrier over the world, so every process must finalize its sessions).
pub unsafe fn session_finalize(name: &'static str, session: *mut c_int) -> c_int {
    // SAFETY: read only when non-NULL; points to the caller's handle.
    let handle = (!session.is_null()).then(|| unsafe { *session });
    guard_on(
        name,
        || handler_of(handle.unwrap_or(SESSION_NULL)),
        || {
            let handle = handle.ok_or_else(|| Error::new(Class::Arg, "session is NULL"))?;
            session_of(handle)?;
            TABLE.lock()[(handle & SESSION_MASK) as usize] = None;
            runtime::session_finalize()?;
            out(session, "session", SESSION_NULL)
        },
    )
}

pub unsafe fn session_get_num_psets(
    name: &'static str,
    session: c_int,
    info: c_int,
    npset_names: *mut c_int,
) -> c_int {
    on_session(name, session, |_| {
        info_arg(info)?;
        out(npset_names, "npset_names", PSETS.len() as c_int)
    })
}

/// `MPI_Session_get_nth_pset`: `*pset_len == 0` asks for the length the name needs (the NUL
/// included); otherwise at most `*pset_len - 1` bytes and a NUL are written (as MPICH).
pub unsafe fn session_get_nth_pset(
    name: &'static str,
    session: c_int,
    info: c_int,
    n: c_int,
    pset_len: *mut c_int,
    pset_name: *mut c_char,
) -> c_int {
    on_session(name, session, |_| {
        info_arg(info)?;
        let p = usize::try_from(n)
            .ok()
            .and_then(|i| PSETS.get(i))
            .ok_or_else(|| {
                Error::new(
                    Class::Arg,
                    format!("n = {n} is not in 0..{} (the number of psets)", PSETS.len()),
                )
            })?;
        if pset_len.is_null() {
            return Err(Error::new(Class::Arg, "pset_len is NULL"));
        }
        // SAFETY: non-NULL; the caller's int.
        let room = unsafe { *pset_len };
        if room < 0 {
            return Err(Error::new(
                Class::Arg,
                format!("*pset_len is negative ({room})"),
            ));
        }
        if room == 0 {
            return out(pset_len, "pset_len", p.len() as c_int + 1);
        }
        if pset_name.is_null() {
            return Err(Error::new(Class::Arg, "pset_name is NULL"));
        }
        let b = &p.as_bytes()[..p.len().min(room as usize - 1)];
        // SAFETY: pset_name holds *pset_len bytes (MPI contract); b.len() + 1 fit.
        unsafe {
            std::ptr::copy_nonoverlapping(b.as_ptr(), pset_name.cast::<u8>(), b.len());
            *pset_name.add(b.len()) = 0;
        }
        Ok(())
    })
}

/// `MPI_Session_get_info`: the thread level the session provides (the key MPI-4 §11.3.1
/// names).
pub unsafe fn session_get_info(name: &'static str, session: c_int, info_used: *mut c_int) -> c_int {
    on_session(name, session, |_| {
        let level = match runtime::get()?.thread_level {
            0 => "MPI_THREAD_SINGLE",
            1 => "MPI_THREAD_FUNNELED",
            2 => "MPI_THREAD_SERIALIZED",
            _ => "MPI_THREAD_MULTIPLE",
        };
        if info_used.is_null() {
            return Err(Error::new(Class::Arg, "info_used is NULL"));
        }
        let i = new_info_with(vec![("mpi_thread_support_level".into(), level.into())]);
        out(info_used, "info_used", i)
    })
}

/// `MPI_Session_get_pset_info`: `mpi_size`, the number of processes in the set.
pub unsafe fn session_get_pset_info(
    name: &'static str,
    session: c_int,
    pset_name: *const c_char,
    info: *mut c_int,
) -> c_int {
    on_session(name, session, |_| {
        let g = pset(&string_arg(pset_name, "pset_name", MAX_PSET_NAME)?)?;
        if info.is_null() {
            return Err(Error::new(Class::Arg, "info is NULL"));
        }
        let i = new_info_with(vec![("mpi_size".into(), g.size().to_string())]);
        out(info, "info", i)
    })
}

pub unsafe fn group_from_session_pset(
    name: &'static str,
    session: c_int,
    pset_name: *const c_char,
    newgroup: *mut c_int,
) -> c_int {
    on_session(name, session, |_| {
        let g = pset(&string_arg(pset_name, "pset_name", MAX_PSET_NAME)?)?;
        if newgroup.is_null() {
            return Err(Error::new(Class::Arg, "newgroup is NULL"));
        }
        out(newgroup, "newgroup", objects::add_group(g)?)
    })
}

// ---------------------------------------------------------------------------------------------
// Error handlers

/// `MPI_Session_create_errhandler`: `MPI_Session_errhandler_function` has the shape of the
/// communicator one (a pointer to an int handle, a pointer to the code), so both live in one
/// table and either kind may be attached to either object, as in MPICH.
pub unsafe fn session_create_errhandler(
    name: &'static str,
    session_errhandler_fn: Option<CommErrhandlerFn>,
    errhandler: *mut c_int,
) -> c_int {
    guard_on(
        name,
        || (h::ERRORS_ARE_FATAL, SESSION_NULL),
        || {
            let f = session_errhandler_fn
                .ok_or_else(|| Error::new(Class::Arg, "session_errhandler_fn is NULL"))?;
            if errhandler.is_null() {
                return Err(Error::new(Class::Arg, "errhandler is NULL"));
            }
            out(errhandler, "errhandler", objects::add_errhandler(f)?)
        },
    )
}

pub unsafe fn session_set_errhandler(
    name: &'static str,
    session: c_int,
    errhandler: c_int,
) -> c_int {
    on_session(name, session, |s| {
        errhandler_arg(errhandler)?;
        s.errhandler.store(errhandler, Ordering::Relaxed);
        Ok(())
    })
}

pub unsafe fn session_get_errhandler(
    name: &'static str,
    session: c_int,
    errhandler: *mut c_int,
) -> c_int {
    on_session(name, session, |s| {
        out(
            errhandler,
            "errhandler",
            s.errhandler.load(Ordering::Relaxed),
        )
    })
}

/// `MPI_Session_call_errhandler`: runs the session's handler on `errorcode`; returns
/// `MPI_SUCCESS` once the handler returns.
pub unsafe fn session_call_errhandler(
    name: &'static str,
    session: c_int,
    errorcode: c_int,
) -> c_int {
    let rc = on_session(name, session, |_| Ok(()));
    if rc != 0 {
        return rc;
    }
    let (e, handle) = handler_of(session);
    raise_on(
        name,
        e,
        handle,
        errorcode,
        &format!("error code {errorcode} raised by the program"),
    );
    0
}

// ---------------------------------------------------------------------------------------------
// Buffers for buffered sends (MPI 4.1 §3.6.1): attached to a session (see `buffered::Owner`).

pub unsafe fn session_attach_buffer(
    name: &'static str,
    session: c_int,
    buffer: *mut c_void,
    size: Count,
) -> c_int {
    on_session(name, session, |_| {
        buffered::attach(buffered::Owner::Session(session), buffer, size)
    })
}

pub unsafe fn session_detach_buffer(
    name: &'static str,
    session: c_int,
    buffer_addr: *mut c_void,
    size: buffered::CountOut,
) -> c_int {
    on_session(name, session, |_| {
        let ep = runtime::get()?.world.ep.clone();
        buffered::detach(buffered::Owner::Session(session), &ep, buffer_addr, size)
    })
}

pub unsafe fn session_flush_buffer(name: &'static str, session: c_int) -> c_int {
    on_session(name, session, |_| {
        let ep = runtime::get()?.world.ep.clone();
        buffered::flush(buffered::Owner::Session(session), &ep);
        Ok(())
    })
}

pub unsafe fn session_iflush_buffer(
    name: &'static str,
    session: c_int,
    request: *mut c_int,
) -> c_int {
    on_session(name, session, |_| {
        super::nb::req_arg(request)?;
        let ep = runtime::get()?.world.ep.clone();
        buffered::iflush(
            name,
            h::COMM_WORLD,
            buffered::Owner::Session(session),
            ep,
            request,
        )
    })
}
