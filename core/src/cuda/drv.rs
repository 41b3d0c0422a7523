//! The CUDA driver calls hcomm makes, each checked: a failed `CUresult` becomes an
//! [`Error`] that names the call and the driver's name for the code.
//!
//! Everything goes through cudarc's raw `sys` layer, which resolves each symbol on its first
//! call and panics when `libcuda` or the symbol is missing. [`preflight`] therefore checks,
//! before the first call, that the library cudarc will open defines every symbol in
//! [`SYMBOLS`]; a function used here must be listed there (a unit test compares the list
//! with the calls in this directory).

use std::ffi::{CStr, CString};

pub(crate) use cudarc::driver::sys;
use sys::CUresult;

use crate::error::{Error, Result};

/// Every driver symbol hcomm calls (cudarc loads each by exactly this name).
pub const SYMBOLS: &[&str] = &[
    "cuInit",
    "cuDriverGetVersion",
    "cuGetErrorName",
    "cuPointerGetAttributes",
    "cuCtxGetCurrent",
    "cuCtxSetCurrent",
    "cuDeviceGet",
    "cuDeviceGetCount",
    "cuDeviceGetName",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxGetState",
    "cuMemGetAddressRange_v2",
    "cuIpcGetMemHandle",
    "cuIpcOpenMemHandle_v2",
    "cuIpcCloseMemHandle",
    "cuModuleLoadData",
    "cuModuleGetFunction",
    "cuLaunchKernel",
    "cuStreamCreate",
    "cuEventCreate",
    "cuEventRecord",
    "cuEventQuery",
    "cuEventSynchronize",
    "cuMemcpyDtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuMemcpyHtoDAsync_v2",
    "cuMemsetD8Async",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemHostAlloc",
    "cuMemFreeHost",
];

/// Driver symbols hcomm uses only when the library defines them (`cuCtxGetId`: driver ≥ 525;
/// without it, contexts are told apart by handle, see `ctx.rs`). Not required by [`preflight`].
pub const OPTIONAL: &[&str] = &["cuCtxGetId"];

/// `Ok` for `CUDA_SUCCESS`, else an error naming `what` and the driver's code.
pub(crate) fn check(r: CUresult, what: &str) -> Result<()> {
    if r == CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    Err(error(r, what))
}

/// The error for a failed call `what` (`r` is not `CUDA_SUCCESS`).
pub(crate) fn error(r: CUresult, what: &str) -> Error {
    Error::other(format!("CUDA {what} failed: {}", code_name(r)))
}

/// `CUDA_ERROR_X (n)`, or just the number when the driver does not know it.
pub(crate) fn code_name(r: CUresult) -> String {
    let mut p: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: cuGetErrorName writes a pointer to a static string (or leaves it null).
    let ok = unsafe { sys::cuGetErrorName(r, &mut p) } == CUresult::CUDA_SUCCESS;
    if ok && !p.is_null() {
        // SAFETY: non-null, NUL-terminated, static in the driver.
        let s = unsafe { CStr::from_ptr(p) }.to_string_lossy();
        format!("{s} ({})", r as u32)
    } else {
        format!("error {}", r as u32)
    }
}

/// Checks that the library cudarc will open defines every symbol of [`SYMBOLS`], so that
/// cudarc's loader cannot panic later. cudarc tries a list of names in order and keeps the
/// first that opens; this walks the same list with the same `dlopen` flags (libloading's:
/// `RTLD_LAZY | RTLD_LOCAL`). When the process already has `libcuda.so.1` loaded, the library
/// chosen must be that very object: cudarc tries `libcuda.so` first, and a toolkit stub of
/// that name earlier on `LD_LIBRARY_PATH` would be a second, non-working driver. Returns the
/// name of the library and which [`OPTIONAL`] symbols it defines, or why it cannot be used.
pub(crate) fn preflight() -> std::result::Result<(String, Vec<&'static str>), String> {
    let names = cudarc::get_lib_name_candidates("cuda");
    for name in &names {
        let Ok(c) = CString::new(name.as_str()) else {
            continue;
        };
        // SAFETY: a NUL-terminated name; the handle is closed below.
        let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL) };
        if h.is_null() {
            continue;
        }
        let missing = SYMBOLS.iter().find(|s| {
            let Ok(sym) = CString::new(**s) else {
                return true;
            };
            // SAFETY: `h` is a live handle, `sym` NUL-terminated.
            unsafe { libc::dlsym(h, sym.as_ptr()) }.is_null()
        });
        let optional = OPTIONAL
            .iter()
            .copied()
            .filter(|s| {
                CString::new(*s)
                    // SAFETY: `h` is a live handle, `sym` NUL-terminated.
                    .is_ok_and(|sym| !unsafe { libc::dlsym(h, sym.as_ptr()) }.is_null())
            })
            .collect();
        // SAFETY: a NUL-terminated name; RTLD_NOLOAD only finds an object already loaded.
        let loaded = unsafe {
            libc::dlopen(
                c"libcuda.so.1".as_ptr(),
                libc::RTLD_NOLOAD | libc::RTLD_LAZY,
            )
        };
        let other = !loaded.is_null() && loaded != h;
        // SAFETY: drop the references taken above (cudarc takes its own).
        unsafe {
            if !loaded.is_null() {
                libc::dlclose(loaded);
            }
            libc::dlclose(h);
        }
        if other {
            return Err(format!(
                "{name}, the driver library hcomm would open, is not the libcuda.so.1 this process loaded (a CUDA toolkit stub on LD_LIBRARY_PATH?)"
            ));
        }
        return match missing {
            Some(s) => Err(format!("{name} has no {s}")),
            None => Ok((name.clone(), optional)),
        };
    }
    Err(format!(
        "no CUDA driver library found (tried {})",
        names.join(", ")
    ))
}

/// A device pointer as the driver API takes it.
pub(crate) fn dptr<T>(p: *const T) -> sys::CUdeviceptr {
    p as usize as sys::CUdeviceptr
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every driver call (`sys::` followed by a `cu` name and a parenthesis) in this directory
    /// names a listed symbol.
    #[test]
    fn every_called_symbol_is_listed() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/cuda");
        let mut called = Vec::new();
        for e in std::fs::read_dir(dir).unwrap() {
            let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
            for (i, _) in text.match_indices("sys::cu") {
                let rest = &text[i + 5..];
                let end = rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                if rest[end..].starts_with('(') {
                    called.push(rest[..end].to_string());
                }
            }
        }
        assert!(called.len() > 10, "found too few calls: {called:?}");
        for c in called {
            assert!(
                SYMBOLS.contains(&c.as_str()) || OPTIONAL.contains(&c.as_str()),
                "{c} is called but not in SYMBOLS or OPTIONAL"
            );
        }
    }

    #[test]
    fn preflight_without_a_driver_says_why() {
        // No CUDA on the build machine: the answer names what is missing. (On a machine
        // with a driver it names the library; both are fine, neither may panic.)
        match preflight() {
            Ok((lib, _)) => assert!(lib.contains("cuda")),
            Err(why) => assert!(why.contains("cuda"), "{why}"),
        }
    }
}
