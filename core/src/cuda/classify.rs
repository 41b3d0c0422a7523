//! What kind of memory a buffer is, asked once per buffer per call.
//!
//! `cuPointerGetAttributes` is the validator: it is asked on every call while CUDA is active
//! (a freed and re-allocated buffer gets a new buffer id, so a cached answer could be stale);
//! what is expensive (IPC handles, mappings) is cached by buffer id instead (`ipc.rs`). When
//! CUDA is not active every buffer is host memory, without any CUDA call.

use std::ffi::c_void;

use std::cell::Cell;

use super::drv::{self, sys};
use super::host_range;
use crate::error::Result;

/// A buffer's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mem {
    /// No bytes move (count 0, `MPI_IN_PLACE`, an argument the call ignores).
    None,
    /// Host memory: pageable, pinned or registered (the CPU reads it directly).
    Host,
    Device(Dev),
}

/// Device memory, as the driver describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dev {
    pub ordinal: i32,
    /// `CU_POINTER_ATTRIBUTE_BUFFER_ID`: unique per allocation for the life of the process.
    pub buffer_id: u64,
    /// The context that owns the allocation (0 when the driver names none, e.g. memory
    /// from the virtual memory management API: the device's primary context serves).
    pub ctx: usize,
    /// Managed (unified) memory: device memory for hcomm, never exported through IPC.
    pub managed: bool,
}

impl Mem {
    pub fn is_device(&self) -> bool {
        matches!(self, Mem::Device(_))
    }

    pub fn dev(&self) -> Option<&Dev> {
        match self {
            Mem::Device(d) => Some(d),
            _ => None,
        }
    }
}

/// The memory of `len` bytes at `p`: [`Mem::None`] when nothing moves, [`Mem::Host`]
/// whenever CUDA is not active. `p` is never dereferenced.
pub fn classify(p: *const c_void, len: usize) -> Result<Mem> {
    Classifier::new().of(p, len)
}

/// Classifies the buffers of one call, asking whether CUDA is active at most once — and not
/// at all when every buffer is in the heap or on the stack ([`host_range`]).
#[derive(Clone)]
pub struct Classifier {
    active: Cell<Option<bool>>,
}

impl Classifier {
    #[inline]
    pub fn new() -> Classifier {
        Classifier {
            active: Cell::new(None),
        }
    }

    fn active(&self) -> bool {
        // Asked once per classifier (per call): the gate's probe is the dearest part of a
        // small call. (`Cell::get` returns a copy, so the answer must be stored back.)
        if let Some(a) = self.active.get() {
            return a;
        }
        let a = super::active().is_some();
        self.active.set(Some(a));
        a
    }

    /// As [`classify`].
    #[inline]
    pub fn of(&self, p: *const c_void, len: usize) -> Result<Mem> {
        if len == 0 || p.is_null() {
            Ok(Mem::None)
        } else if host_range::surely_host(p as usize, len) || !self.active() {
            Ok(Mem::Host)
        } else {
            query(p)
        }
    }
}

impl Default for Classifier {
    fn default() -> Self {
        Classifier::new()
    }
}

/// Whether any of the pointers is device memory (each taken as at least one byte; null and
/// the two `MPI_IN_PLACE` values are skipped). Errors count as "not device".
pub fn any_device(ptrs: &[*const c_void]) -> bool {
    let mut unknown = ptrs
        .iter()
        .filter(|p| !matches!(**p as usize, 0 | 1 | usize::MAX))
        .filter(|&&p| !host_range::surely_host(p as usize, 1))
        .peekable();
    if unknown.peek().is_none() || super::active().is_none() {
        return false;
    }
    unknown.any(|&p| matches!(query(p), Ok(Mem::Device(_))))
}

/// Asks the driver (CUDA is active).
pub(crate) fn query(p: *const c_void) -> Result<Mem> {
    let r = attributes(p)?;
    match r {
        Err(sys::CUresult::CUDA_ERROR_INVALID_CONTEXT) => {
            // A thread with no current context (the program's CUDA work runs on another
            // thread): ask again from a primary context that is already active, restoring
            // "none" after. Never create one (that would cost hundreds of MiB on a GPU the
            // program may not use): with no active primary context the program works through
            // its own contexts only, if any, and the buffer is taken for host memory.
            let Some(ordinal) = active_primary()? else {
                return Ok(Mem::Host);
            };
            let _bound = super::cuda()?.ctxs.bind(&Dev {
                ordinal,
                buffer_id: 0,
                ctx: 0,
                managed: false,
            })?;
            attributes(p)?.map_err(|r| drv::error(r, "cuPointerGetAttributes"))
        }
        Err(r) => Err(drv::error(r, "cuPointerGetAttributes")),
        Ok(m) => Ok(m),
    }
}

/// The first device whose primary context is active (`cuDevicePrimaryCtxGetState`), if any.
fn active_primary() -> Result<Option<i32>> {
    for ordinal in 0..1024 {
        let mut dev: sys::CUdevice = 0;
        // SAFETY: writes the device handle of `ordinal`; fails past the last device.
        if unsafe { sys::cuDeviceGet(&mut dev, ordinal) } != sys::CUresult::CUDA_SUCCESS {
            break;
        }
        let (mut flags, mut active) = (0u32, 0i32);
        // SAFETY: a valid device handle; writes the primary context's flags and state.
        let r = unsafe { sys::cuDevicePrimaryCtxGetState(dev, &mut flags, &mut active) };
        drv::check(r, "cuDevicePrimaryCtxGetState")?;
        if active != 0 {
            return Ok(Some(ordinal));
        }
    }
    Ok(None)
}

/// One `cuPointerGetAttributes`; the driver's code when it fails.
fn attributes(p: *const c_void) -> Result<std::result::Result<Mem, sys::CUresult>> {
    use sys::CUpointer_attribute as A;
    let mut attrs = [
        A::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
        A::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        A::CU_POINTER_ATTRIBUTE_BUFFER_ID,
        A::CU_POINTER_ATTRIBUTE_IS_MANAGED,
        A::CU_POINTER_ATTRIBUTE_CONTEXT,
    ];
    // One zeroed 8-byte slot per attribute, whatever its C type (a 4-byte enum or int, a
    // bool, a 64-bit id, a pointer): little-endian, a narrower value reads back unchanged.
    let mut slots = [0u64; 5];
    let mut data: [*mut c_void; 5] = std::array::from_fn(|i| (&mut slots[i] as *mut u64).cast());
    // SAFETY: five attributes and five writable 8-byte slots; the pointer is only looked
    // up, never dereferenced. For memory CUDA does not know, the call succeeds and leaves
    // the defaults (memory type 0).
    let r = unsafe {
        sys::cuPointerGetAttributes(
            attrs.len() as u32,
            attrs.as_mut_ptr(),
            data.as_mut_ptr(),
            drv::dptr(p),
        )
    };
    if r == sys::CUresult::CUDA_ERROR_DEINITIALIZED {
        // The driver is shutting down (process exit): no device buffer can be in use.
        return Ok(Ok(Mem::Host));
    }
    if r != sys::CUresult::CUDA_SUCCESS {
        return Ok(Err(r));
    }
    Ok(Ok(from_attrs(
        slots[0] as u32,
        slots[1] as u32 as i32,
        slots[2],
        slots[3] as u32 != 0,
        slots[4] as usize,
    )))
}

/// The classification from the attribute values (`CUmemorytype`: 1 host, 2 device, 3
/// array, 4 unified; 0 when CUDA does not know the pointer).
pub(crate) fn from_attrs(
    memtype: u32,
    ordinal: i32,
    buffer_id: u64,
    managed: bool,
    ctx: usize,
) -> Mem {
    let dev = |managed| {
        Mem::Device(Dev {
            ordinal,
            buffer_id,
            ctx,
            managed,
        })
    };
    match memtype {
        _ if managed => dev(true),
        2 => dev(false),
        4 => dev(true),
        // Unknown to CUDA (pageable), pinned or registered host memory, and anything else:
        // the CPU can read it.
        _ => Mem::Host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_from_attributes() {
        assert_eq!(from_attrs(0, -2, 0, false, 0), Mem::Host);
        assert_eq!(from_attrs(1, 0, 7, false, 0x10), Mem::Host);
        let d = from_attrs(2, 3, 42, false, 0x10);
        assert_eq!(
            d,
            Mem::Device(Dev {
                ordinal: 3,
                buffer_id: 42,
                ctx: 0x10,
                managed: false
            })
        );
        assert!(d.is_device());
        assert!(from_attrs(2, 0, 1, true, 0).dev().unwrap().managed);
        assert!(from_attrs(4, 0, 1, false, 0).dev().unwrap().managed);
    }

    #[test]
    fn without_cuda_everything_is_host() {
        // This test process never loads libcuda (and HCOMM_CUDA is not 1 under `cargo
        // test`), so no CUDA call is made.
        let x = [1u8; 4];
        assert_eq!(classify(x.as_ptr().cast(), 4).unwrap(), Mem::Host);
        assert_eq!(classify(x.as_ptr().cast(), 0).unwrap(), Mem::None);
        assert_eq!(classify(std::ptr::null(), 4).unwrap(), Mem::None);
        assert!(!any_device(&[x.as_ptr().cast()]));
    }

    #[test]
    fn a_classifier_asks_the_gate_once() {
        // 1 MiB: above malloc's mmap threshold, so neither stack nor brk heap, and the
        // classifier must ask whether CUDA is active.
        let big = vec![0u8; 1 << 20];
        let k = Classifier::new();
        assert_eq!(k.active.get(), None);
        assert_eq!(k.of(big.as_ptr().cast(), big.len()).unwrap(), Mem::Host);
        assert_eq!(
            k.active.get(),
            Some(false),
            "the answer is kept for the next buffer"
        );
    }
}
