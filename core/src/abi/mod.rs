//! The C ABI layer below the entry points: panic boundary, init-state check, argument checks,
//! error-handler dispatch, and the implementation of every MPI function hcomm exports.
//!
//! The libraries' `#[no_mangle]` functions are one-line calls into [`api`]; see
//! [`export_mpi_functions`](crate::export_mpi_functions) for the macro they use.

pub mod api;
pub mod handles;

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

/// Applies the error handler: returns the class under `MPI_ERRORS_RETURN`; prints and ends
/// the job under `MPI_ERRORS_ARE_FATAL` / `MPI_ERRORS_ABORT`.
fn report(name: &str, comm: Option<i32>, e: Error) -> c_int {
    let class = e.class as c_int;
    let (handler, rank) = match runtime::get() {
        Ok(rt) => {
            let c = comm
                .and_then(|h| rt.comm(h).ok())
                .unwrap_or_else(|| rt.world.clone());
            (
                c.errhandler.load(Ordering::Relaxed),
                rt.world.rank.to_string(),
            )
        }
        // Before init / after finalize there is no handler to consult: MPI says fatal.
        Err(_) => (handles::ERRORS_ARE_FATAL, "?".into()),
    };
    if handler == handles::ERRORS_RETURN {
        crate::info!("{name} returns {}: {}", e.class.name(), e.msg);
        return class;
    }
    let host = crate::log::hostname();
    let line = format!(
        "hcomm: fatal error in {name} on rank {rank} ({host}:{}): {e}\nhcomm: ending the job (the error handler is MPI_ERRORS_ARE_FATAL; set MPI_ERRORS_RETURN to handle errors)\n",
        std::process::id()
    );
    use std::io::Write;
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
    // SAFETY: _exit ends the process without running atexit handlers that might call back
    // into MPI; the launcher sees the non-zero status and ends the other ranks.
    unsafe { libc::_exit(1) }
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
