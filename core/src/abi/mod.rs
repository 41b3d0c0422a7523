//! The C ABI layer below the entry points: panic boundary, init-state check, argument checks,
//! error-handler dispatch, and the implementation of every MPI function hcomm exports.
//!
//! The libraries' `#[no_mangle]` functions are one-line calls into [`api`]; see
//! [`export_mpi_functions`](crate::export_mpi_functions) for the macro they use.

pub mod api;
pub mod handles;
pub mod objects;

use std::ffi::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;

use crate::error::{Class, Error, Result};
use crate::runtime;

/// Runs the body of MPI function `name` on communicator `comm` (or `None`): catches panics
/// (they become `MPI_ERR_INTERN`), and hands errors to the communicator's error handler
/// (the world's when the communicator itself is invalid).
pub fn guard(name: &'static str, comm: Option<i32>, body: impl FnOnce() -> Result<()>) -> c_int {
    let res = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(r) => r,
        Err(p) => {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(Error::intern(format!("internal error (panic): {what}")))
        }
    };
    match res {
        Ok(()) => 0,
        Err(e) => report(name, comm, e),
    }
}

/// Applies the error handler to a failed call: see [`raise`].
fn report(name: &str, comm: Option<i32>, e: Error) -> c_int {
    raise(name, comm, e.class as c_int, &e.to_string())
}

/// Calls the error handler of communicator `comm` (the world's when `comm` is `None` or
/// invalid) for error `code`: under `MPI_ERRORS_RETURN` returns `code`; a user handler
/// (`MPI_Comm_create_errhandler`) is called with the communicator handle and the code, and
/// then `code` is returned (MPI semantics: the call fails after the handler returns);
/// `MPI_ERRORS_ARE_FATAL` / `MPI_ERRORS_ABORT` print `text` and end the job.
pub(crate) fn raise(name: &str, comm: Option<i32>, code: c_int, text: &str) -> c_int {
    let (handler, handle) = match runtime::get() {
        Ok(rt) => {
            let (c, handle) = match comm.and_then(|h| rt.comm(h).ok().map(|c| (c, h))) {
                Some(x) => x,
                None => (rt.world.clone(), handles::COMM_WORLD),
            };
            (c.errhandler.load(Ordering::Relaxed), handle)
        }
        // Before init / after finalize there is no handler to consult: MPI says fatal.
        Err(_) => (handles::ERRORS_ARE_FATAL, handles::COMM_WORLD),
    };
    raise_on(name, handler, handle, code, text)
}

/// Runs error handler `handler` for error `code` of the object `handle` (a communicator or a
/// session: a user handler receives a pointer to it), as [`raise`] describes.
pub(crate) fn raise_on(name: &str, handler: i32, handle: i32, code: c_int, text: &str) -> c_int {
    if handler == handles::ERRORS_RETURN {
        crate::info!("{name} returns {code}: {text}");
        return code;
    }
    if let Some(f) = objects::errhandler_fn(handler) {
        // A handler whose own MPI calls fail on the same communicator would be called again
        // from inside itself, without end (a stack overflow): those errors are returned.
        if IN_USER_HANDLER.with(|c| c.get()) {
            crate::info!("{name} returns {code} (raised inside a user error handler): {text}");
            return code;
        }
        crate::info!("{name} calls user error handler 0x{handler:x} with {code}: {text}");
        let (mut h, mut c) = (handle, code);
        IN_USER_HANDLER.with(|c| c.set(true));
        // SAFETY: `f` came from MPI_Comm_create_errhandler (or the session variant), typed as
        // MPI's `void (MPI_Comm *, int *, ...)` (sessions: `MPI_Session *`, also an int
        // handle); both pointers are valid for the call. No lock is held here, so the
        // handler may call MPI itself.
        unsafe { f(&mut h, &mut c) };
        IN_USER_HANDLER.with(|c| c.set(false));
        return code;
    }
    // The launcher may have told the rank already (an MPI_Init that failed part way).
    let rank = match runtime::get() {
        Ok(rt) => rt.world.rank.to_string(),
        Err(_) => crate::log::rank().map_or_else(|| "?".into(), |r| r.to_string()),
    };
    let host = crate::log::hostname();
    let line = format!(
        "hcomm: fatal error in {name} on rank {rank} ({host}:{}): {text}\nhcomm: ending the job (the error handler is MPI_ERRORS_ARE_FATAL; set MPI_ERRORS_RETURN to handle errors)\n",
        std::process::id()
    );
    use std::io::Write;
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
    // SAFETY: _exit ends the process without running atexit handlers that might call back
    // into MPI; the launcher sees the non-zero status and ends the other ranks.
    unsafe { libc::_exit(1) }
}

/// [`guard`] for calls whose errors go to error handler `handler` of object `handle` (a
/// session's, or the one `MPI_Session_init`/`MPI_Comm_create_from_group` is given).
pub fn guard_on(
    name: &'static str,
    handler: impl FnOnce() -> (i32, i32),
    body: impl FnOnce() -> Result<()>,
) -> c_int {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => 0,
        res => {
            let e = match res {
                Ok(Err(e)) => e,
                Err(_) => Error::intern("internal error (panic)"),
                Ok(Ok(())) => unreachable!(),
            };
            let (h, handle) = handler();
            raise_on(name, h, handle, e.class as c_int, &e.to_string())
        }
    }
}

thread_local! {
    /// Whether this thread is inside a user error handler (see [`raise`]).
    static IN_USER_HANDLER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Writes `v` through an output pointer, or fails with `MPI_ERR_ARG` naming it.
pub(crate) fn out<T>(p: *mut T, what: &str, v: T) -> Result<()> {
    if p.is_null() {
        return Err(Error::new(Class::Arg, format!("{what} is NULL")));
    }
    // SAFETY: non-null pointer supplied by the caller for exactly this output, per the MPI
    // function's contract.
    unsafe { p.write(v) };
    Ok(())
}

/// Defines the exported MPI functions of a library: each `name(args) => body` becomes
/// `MPI_name` and `PMPI_name` (the profiling interface) calling `body`.
#[macro_export]
macro_rules! export_mpi_functions {
    ($( fn $name:ident / $pname:ident ( $($arg:ident : $ty:ty),* ) -> $ret:ty => $body:path; )*) => {
        $(
            #[no_mangle]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
                // SAFETY: forwarded verbatim; the callee validates every pointer it uses.
                unsafe { $body($($arg),*) }
            }
            #[no_mangle]
            pub unsafe extern "C" fn $pname($($arg: $ty),*) -> $ret {
                // SAFETY: as above.
                unsafe { $body($($arg),*) }
            }
        )*
    };
}

/// Defines the entry points of functions hcomm does not implement (the generated
/// `src/unsupported.rs`): each `MPI_name` and `PMPI_name` fails with
/// `MPI_ERR_UNSUPPORTED_OPERATION` through the error handler `$on` names.
#[macro_export]
macro_rules! export_unsupported_mpi_functions {
    ($( fn $name:ident / $pname:ident ( $($arg:ident : $ty:ty),* ) => $on:expr; )*) => {
        $(
            #[no_mangle]
            pub extern "C" fn $name($($arg: $ty),*) -> ::std::ffi::c_int {
                $crate::abi::api::unsupported::unsupported(stringify!($name), $on)
            }
            #[no_mangle]
            pub extern "C" fn $pname($($arg: $ty),*) -> ::std::ffi::c_int {
                $crate::abi::api::unsupported::unsupported(stringify!($name), $on)
            }
        )*
    };
}
