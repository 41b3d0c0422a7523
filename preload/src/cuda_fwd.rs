//! Device buffers in calls hcomm does not take: forwarded only to a CUDA-aware host MPI.
//!
//! A host MPI that is not CUDA-aware would read a device pointer as host memory (a crash, or
//! garbage). So a call that hcomm leaves to the host and that passes device memory goes on
//! only when the host's own `MPIX_Query_cuda_support` exists and returns 1; otherwise it
//! fails with `MPI_ERR_BUFFER` through the host's error handler, after a line that says why.
//! The interposer does not export `MPIX_Query_cuda_support` itself, so programs see the host
//! MPI's answer.
//!
//! The check costs nothing while CUDA is not active in the process (`hcomm_core::cuda`).

use std::ffi::{c_int, c_void};
use std::io::Write;
use std::sync::OnceLock;

use crate::real::Sym;
use crate::{host, world, xlate};

static HOST_QUERY: Sym = Sym::quiet(c"MPIX_Query_cuda_support");
static PMPI_CALL_ERRHANDLER: Sym = Sym::quiet(c"PMPI_Comm_call_errhandler");

/// `MPI_ERR_BUFFER`: 1 in MPICH's numbering and in the standard's (Open MPI, MPI-5).
const ERR_BUFFER: c_int = 1;

/// The host MPI's answer to `MPIX_Query_cuda_support` (`None`: it has no such function).
fn host_answer() -> Option<c_int> {
    static A: OnceLock<Option<c_int>> = OnceLock::new();
    *A.get_or_init(|| {
        let addr = HOST_QUERY.get()?;
        // SAFETY: the host's `int MPIX_Query_cuda_support(void)`.
        let f = unsafe { std::mem::transmute::<usize, unsafe extern "C" fn() -> c_int>(addr) };
        // SAFETY: no arguments; the host MPI is initialised (we are inside a collective).
        Some(unsafe { f() })
    })
}

/// `Some(rc)` when the forwarded call `name` must not reach the host: one of `bufs` is
/// device memory and the host MPI is not CUDA-aware. The error goes through the host's error
/// handler of `comm` first.
pub fn refuse(name: &str, bufs: &[*const c_void], comm: usize) -> Option<c_int> {
    if !hcomm_core::cuda::any_device(bufs) {
        return None;
    }
    let answer = host_answer();
    if answer == Some(1) {
        return None;
    }
    let why = match answer {
        None => "it has no MPIX_Query_cuda_support".to_string(),
        Some(v) => format!("its MPIX_Query_cuda_support returns {v}"),
    };
    let rank = host::world_rank().map_or("?".to_string(), |r| r.to_string());
    let line = format!(
        "hcomm-preload: {name} (rank {rank}): a buffer is GPU device memory, hcomm does not take \
         this call (a datatype, op or communicator it does not handle, or hcomm is off), and the \
         host MPI is not CUDA-aware ({why}); failing with MPI_ERR_BUFFER instead of passing a \
         device pointer to it\n"
    );
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
    if xlate::tables().is_some() {
        if let Ok(f) =
            world::sym::<unsafe extern "C" fn(usize, c_int) -> c_int>(&PMPI_CALL_ERRHANDLER)
        {
            // SAFETY: the caller's communicator handle, passed through as received, and an
            // error class every ABI numbers 1.
            let _ = unsafe { f(comm, ERR_BUFFER) };
        }
    }
    Some(ERR_BUFFER)
}
