//! CUDA device buffers in the collectives (see docs/GPU.md for the whole design).
//!
//! CUDA is reached through cudarc's dynamically loaded driver bindings: nothing of CUDA is
//! needed to build hcomm, and nothing is touched at run time until it can matter
//! ([`gate`]). One job per module:
//!
//! * `gate` — when CUDA counts as active (`HCOMM_CUDA`, whether libcuda is loaded);
//! * `drv` — the checked driver calls and the pre-flight check of the library;
//! * `classify` — host, device or managed memory, which device, which allocation;
//! * `ctx` — the buffer's context bound for the call, the caller's restored after;
//! * `kernels` — the reduction kernels (PTX) and their launches;
//! * `ipc` — exporting and mapping device buffers between processes, and its caches;
//! * `staging` — hcomm's streams, events, staging and pinned buffers, segments;
//! * `path` — every rank of a communicator agreeing on one path per call;
//! * `ipc_coll`, `staged` — the algorithms of the two device paths;
//! * `entry` — the device-aware front of the blocking collectives;
//! * `devmem` — device and pinned memory for programs that ask for CUDA (hcomm's benchmark).

mod classify;
mod ctx;
mod devmem;
mod drv;
mod entry;
mod gate;
mod host_range;
mod ipc;
mod ipc_coll;
mod kernels;
mod path;
mod phases;
mod staged;
mod staging;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use parking_lot::Mutex;

pub use classify::{any_device, classify, Classifier, Dev, Mem};
pub use devmem::{require, Device, DeviceBuffer, PinnedBuffer};
pub use drv::{OPTIONAL, SYMBOLS};
pub use entry::*;
pub use gate::Mode;
pub use staged::Buf;

use crate::error::{Class, Error, Result};

/// CUDA, once it works in this process.
pub struct Cuda {
    /// `cuDriverGetVersion` (e.g. 13000 for CUDA 13.0).
    pub driver_version: i32,
    /// The driver library cudarc opened.
    pub library: String,
    ctxs: ctx::Contexts,
    exports: Mutex<ipc::Exports>,
}

static GATE: gate::Gate = gate::Gate::new();
/// The first touch's outcome: CUDA, or why it cannot be used (final for the process).
static CUDA: OnceLock<std::result::Result<Cuda, String>> = OnceLock::new();

/// `HCOMM_CUDA`, read once.
pub fn mode() -> Mode {
    static M: OnceLock<Mode> = OnceLock::new();
    *M.get_or_init(|| {
        let v = crate::param::cuda();
        Mode::parse(v.as_deref()).unwrap_or_else(|why| {
            crate::warn!("{why}");
            Mode::Auto
        })
    })
}

/// CUDA, when it is active in this process (see [`gate`]). Cheap when it is not.
#[inline]
pub fn active() -> Option<&'static Cuda> {
    if GATE.query(mode, gate::loader_adds, gate::libcuda_loaded, first_touch) {
        CUDA.get().and_then(|c| c.as_ref().ok())
    } else {
        None
    }
}

/// CUDA for a call that needs it (a device buffer was seen, so it is active).
pub(crate) fn cuda() -> Result<&'static Cuda> {
    active().ok_or_else(|| Error::intern("CUDA is not active but a device buffer was seen"))
}

/// `MPIX_Query_cuda_support` in standalone mode: whether CUDA is usable in this process.
/// An explicit question, so it initialises CUDA unless `HCOMM_CUDA=0`.
pub fn query_support() -> bool {
    if mode() == Mode::Off {
        return false;
    }
    GATE.query(|| Mode::On, || 0, || true, first_touch)
}

/// "CUDA unavailable", logged once: at WARN when CUDA is wanted (`HCOMM_CUDA=1`, or libcuda
/// is loaded in this process, so device buffers may exist and would be taken for host memory),
/// else at INFO (an explicit `MPIX_Query_cuda_support` in a CPU-only program).
fn unavailable(why: &str) {
    if gate::libcuda_loaded() {
        crate::warn!(
            "CUDA unavailable: {why}. This process has libcuda.so.1 loaded, but hcomm cannot use it: \
             every buffer is taken for host memory, and a device buffer passed to MPI will crash the process"
        );
    } else if mode() == Mode::On {
        crate::warn!("CUDA unavailable: {why}; device buffers cannot be used (HCOMM_CUDA=1)");
    } else {
        crate::info!("CUDA unavailable: {why}; device buffers cannot be used");
    }
}

/// The first touch (once per process): inside a panic guard, since cudarc panics on a
/// missing library or symbol. Failure means "CUDA unavailable", logged once ([`unavailable`]).
fn first_touch() -> bool {
    CUDA.get_or_init(|| match catch_unwind(AssertUnwindSafe(init_driver)) {
        Ok(Ok(c)) => {
            crate::info!(
                "CUDA driver {}.{} ({}): device buffers supported",
                c.driver_version / 1000,
                c.driver_version % 1000 / 10,
                c.library
            );
            Ok(c)
        }
        Ok(Err(why)) => {
            unavailable(&why);
            Err(why)
        }
        Err(p) => {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic".into());
            unavailable(&what);
            Err(what)
        }
    })
    .is_ok()
}

fn init_driver() -> std::result::Result<Cuda, String> {
    let (library, optional) = drv::preflight()?;
    ctx::CTX_ID.store(
        optional.contains(&"cuCtxGetId"),
        std::sync::atomic::Ordering::Relaxed,
    );
    // SAFETY: every symbol exists (preflight); cuInit takes flags 0.
    let r = unsafe { drv::sys::cuInit(0) };
    drv::check(r, "cuInit").map_err(|e| e.msg)?;
    let mut v = 0;
    // SAFETY: writes the driver's version.
    let r = unsafe { drv::sys::cuDriverGetVersion(&mut v) };
    drv::check(r, "cuDriverGetVersion").map_err(|e| e.msg)?;
    Ok(Cuda {
        driver_version: v,
        library,
        ctxs: ctx::Contexts::default(),
        exports: Mutex::new(ipc::Exports::default()),
    })
}

/// Fails with `MPI_ERR_BUFFER` when any pointer is device memory: for the calls hcomm does
/// not take on device buffers (`what` names them).
pub fn refuse_device(what: &str, ptrs: &[*const std::ffi::c_void]) -> Result<()> {
    if any_device(ptrs) {
        return Err(Error::new(
            Class::Buffer,
            format!("{what} on device buffers is not supported by hcomm"),
        ));
    }
    Ok(())
}
