//! The entry points of functions hcomm does not implement yet (generated into
//! `src/unsupported.rs` by `scripts/gen-mpi-api.py`): each fails with
//! `MPI_ERR_UNSUPPORTED_OPERATION`, naming itself, through the error handler MPI assigns.

use std::ffi::c_int;

use crate::error::{Class, Error};

/// Whose error handler reports an unsupported call.
#[derive(Clone, Copy, Debug)]
pub enum On {
    /// The call's communicator (the world's when the handle is invalid).
    Comm(c_int),
    /// Calls on files: their default handler is `MPI_ERRORS_RETURN` (MPI-4.1 §9.3), and hcomm
    /// cannot open a file to change it, so the code is returned.
    File,
    /// Calls on windows and sessions (hcomm cannot create one yet, so none has a handler of
    /// its own) and calls on no object: the process's handler, `MPI_COMM_WORLD`'s (MPI says
    /// such errors are raised on `MPI_COMM_SELF`; hcomm's self and world handlers start out
    /// alike, and the world's is the one programs set).
    Win,
    Session,
    Process,
}

/// The error of an unsupported call `name`.
pub fn error(name: &str) -> Error {
    Error::new(
        Class::UnsupportedOperation,
        format!("{name} is not implemented by hcomm yet (docs/API-COVERAGE.md lists what is)"),
    )
}

/// Reports unsupported call `name` and returns the error code.
pub fn unsupported(name: &'static str, on: On) -> c_int {
    match on {
        On::Comm(c) => crate::abi::guard(name, Some(c), || Err(error(name))),
        On::File => {
            crate::info!("{name} returns MPI_ERR_UNSUPPORTED_OPERATION: not implemented");
            Class::UnsupportedOperation as c_int
        }
        On::Win | On::Session | On::Process => crate::abi::guard(name, None, || Err(error(name))),
    }
}
