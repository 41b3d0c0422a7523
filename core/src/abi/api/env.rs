//! Environment: init/finalize, versions, thread levels, time.
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int};

use super::*;
use crate::abi::handles::{self as h};
use crate::abi::{guard, out};
use crate::error::{Class, Error, Result};
use crate::runtime;
// ---------------------------------------------------------------------------------------------
// Environment

pub unsafe fn init(_argc: *mut c_int, _argv: *mut *mut *mut c_char) -> c_int {
    guard("MPI_Init", None, || {
        runtime::init(h::THREAD_SINGLE).map(|_| ())
    })
}

pub unsafe fn init_thread(
    _argc: *mut c_int,
    _argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    guard("MPI_Init_thread", None, || {
        if provided.is_null() {
            return Err(Error::new(Class::Arg, "provided is NULL"));
        }
        let level = runtime::init(required)?;
        out(provided, "provided", level)
    })
}

pub unsafe fn initialized(flag: *mut c_int) -> c_int {
    guard("MPI_Initialized", None, || {
        out(flag, "flag", runtime::is_initialized() as c_int)
    })
}

pub unsafe fn finalized(flag: *mut c_int) -> c_int {
    guard("MPI_Finalized", None, || {
        out(flag, "flag", runtime::is_finalized() as c_int)
    })
}

pub unsafe fn finalize() -> c_int {
    guard("MPI_Finalize", None, || {
        if runtime::get().is_ok() {
            // MPI: "the first thing MPI_Finalize does" is to delete MPI_COMM_SELF's attributes.
            super::attributes::delete_all(super::attributes::Kind::Comm, h::COMM_SELF)?;
        }
        runtime::finalize()
    })
}

pub unsafe fn abort(comm: c_int, errorcode: c_int) -> c_int {
    let rank = runtime::get()
        .map(|rt| rt.world.rank.to_string())
        .unwrap_or_else(|_| "?".into());
    let line = format!(
        "hcomm: MPI_Abort called on rank {rank} (communicator 0x{comm:x}) with error code {errorcode}: ending the job\n"
    );
    use std::io::Write;
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
    // The launcher ends the other ranks when one exits non-zero; 0 (or a code that wraps to
    // 0) would look like success, so it becomes 1.
    let status = if (1..=255).contains(&errorcode) {
        errorcode
    } else {
        1
    };
    // SAFETY: ends the process at once, as MPI_Abort must; no MPI state is touched after.
    unsafe { libc::_exit(status) }
}

pub unsafe fn query_thread(provided: *mut c_int) -> c_int {
    guard("MPI_Query_thread", None, || {
        let level = runtime::get()
            .map(|rt| rt.thread_level)
            .unwrap_or(h::THREAD_SINGLE);
        out(provided, "provided", level)
    })
}

pub unsafe fn is_thread_main(flag: *mut c_int) -> c_int {
    guard("MPI_Is_thread_main", None, || {
        let rt = runtime::get()?;
        out(flag, "flag", rt.is_main_thread() as c_int)
    })
}

pub unsafe fn get_version(version: *mut c_int, subversion: *mut c_int) -> c_int {
    guard("MPI_Get_version", None, || {
        out(version, "version", VERSION.0)?;
        out(subversion, "subversion", VERSION.1)
    })
}

/// Copies `s` NUL-terminated into `buf` (capacity `cap`), stores the length without the NUL.
pub(crate) fn write_string(
    buf: *mut c_char,
    cap: usize,
    len: *mut c_int,
    s: &str,
    what: &str,
) -> Result<()> {
    if buf.is_null() || len.is_null() {
        return Err(Error::new(
            Class::Arg,
            format!("{what} or its length is NULL"),
        ));
    }
    let bytes = &s.as_bytes()[..s.len().min(cap - 1)];
    // SAFETY: buf has room for `cap` bytes (the MPI_MAX_* constant of this argument); we write
    // at most cap-1 bytes and a NUL.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.cast::<u8>(), bytes.len());
        *buf.add(bytes.len()) = 0;
    }
    out(len, "resultlen", bytes.len() as c_int)
}

/// `MPIX_Query_cuda_support` (MPICH's extension, `int MPIX_Query_cuda_support(void)`): 1 when
/// device buffers can be passed to hcomm's collectives in this process, else 0. An explicit
/// question, so it initialises CUDA (unless `HCOMM_CUDA=0`); callable before `MPI_Init`.
pub unsafe fn query_cuda_support() -> c_int {
    std::panic::catch_unwind(crate::cuda::query_support).unwrap_or(false) as c_int
}

pub unsafe fn get_library_version(version: *mut c_char, resultlen: *mut c_int) -> c_int {
    guard("MPI_Get_library_version", None, || {
        write_string(
            version,
            h::MAX_LIBRARY_VERSION_STRING,
            resultlen,
            &library_version(),
            "version",
        )
    })
}

pub unsafe fn get_processor_name(name: *mut c_char, resultlen: *mut c_int) -> c_int {
    guard("MPI_Get_processor_name", None, || {
        write_string(
            name,
            h::MAX_PROCESSOR_NAME,
            resultlen,
            &crate::log::hostname(),
            "name",
        )
    })
}

pub unsafe fn wtime() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-parameter; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

pub unsafe fn wtick() -> f64 {
    1e-9
}
