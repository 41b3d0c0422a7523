//! Device and pinned host memory for programs that want CUDA explicitly: hcomm's own
//! benchmark (`hcomm bench --memory device`) allocates its buffers here, fills and checks
//! them through host copies, and hands the device pointers to the collectives like any
//! CUDA program would.
//!
//! Getting a [`Device`] is an explicit request for CUDA ([`require`]): it initialises CUDA
//! unless `HCOMM_CUDA=0`, as `MPIX_Query_cuda_support` does, so the collectives see device
//! memory from the first call on. When CUDA cannot be used the error says so and why
//! ("no usable CUDA device: ..."), never a panic.
//!
//! Every operation binds the device's primary context for its duration (the caller's current
//! context comes back afterwards, [`super::ctx`]), runs on a stream hcomm leases for the
//! call, and returns when the work has finished (a blocking-sync event: the thread sleeps):
//! a collective started afterwards on hcomm's own streams sees the bytes.

use std::ffi::{c_char, c_int};

use super::classify::Dev;
use super::ctx::Bound;
use super::drv::{check, sys};
use super::Cuda;
use crate::error::{Class, Error, Result};

/// CUDA, initialised now if it was not yet (unless `HCOMM_CUDA=0`); the error says why it
/// cannot be used.
pub fn require() -> Result<&'static Cuda> {
    if super::mode() == super::Mode::Off {
        return Err(unusable("HCOMM_CUDA=0 keeps hcomm away from CUDA"));
    }
    super::query_support();
    match super::CUDA.get() {
        Some(Ok(c)) => Ok(c),
        Some(Err(why)) => Err(unusable(why)),
        None => Err(unusable("CUDA was not initialised")),
    }
}

fn unusable(why: &str) -> Error {
    Error::other(format!("no usable CUDA device: {why}"))
}

/// One GPU, by ordinal. Holds nothing: its primary context is retained by hcomm for the
/// life of the process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Device {
    ordinal: i32,
}

impl Device {
    /// How many devices the driver sees (at least 1; none is an error).
    pub fn count() -> Result<usize> {
        require()?;
        let mut n: c_int = 0;
        // SAFETY: writes the device count (CUDA is initialised: `require`).
        check(unsafe { sys::cuDeviceGetCount(&mut n) }, "cuDeviceGetCount")
            .map_err(|e| unusable(&e.msg))?;
        if n <= 0 {
            return Err(unusable("the driver reports no device"));
        }
        Ok(n as usize)
    }

    /// Device `ordinal` (0-based), its primary context retained.
    pub fn open(ordinal: usize) -> Result<Device> {
        let n = Device::count()?;
        if ordinal >= n {
            return Err(Error::new(
                Class::Arg,
                format!(
                    "no CUDA device {ordinal}: the driver sees {n} (ordinals 0 to {})",
                    n - 1
                ),
            ));
        }
        let d = Device {
            ordinal: ordinal as i32,
        };
        drop(d.bind()?);
        Ok(d)
    }

    pub fn ordinal(&self) -> usize {
        self.ordinal as usize
    }

    /// The device's name (`cuDeviceGetName`).
    pub fn name(&self) -> Result<String> {
        let mut dev: sys::CUdevice = 0;
        // SAFETY: writes the handle of a device `open` checked.
        check(
            unsafe { sys::cuDeviceGet(&mut dev, self.ordinal) },
            "cuDeviceGet",
        )?;
        let mut buf = [0 as c_char; 256];
        // SAFETY: the driver writes at most `len` bytes, NUL-terminated, into `buf`.
        check(
            unsafe { sys::cuDeviceGetName(buf.as_mut_ptr(), buf.len() as c_int, dev) },
            "cuDeviceGetName",
        )?;
        let bytes: Vec<u8> = buf
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Makes the device's primary context current on this thread and leaves it so, as
    /// `cudaSetDevice` does for a CUDA program.
    pub fn make_current(&self) -> Result<()> {
        let ctx = require()?.ctxs.primary(self.ordinal)?;
        // SAFETY: a primary context hcomm retained for the life of the process.
        check(
            unsafe { sys::cuCtxSetCurrent(ctx as sys::CUcontext) },
            "cuCtxSetCurrent",
        )
    }

    /// `bytes` bytes of device memory (`cuMemAlloc`), contents undefined.
    pub fn alloc(&self, bytes: usize) -> Result<DeviceBuffer> {
        let _b = self.bind()?;
        let mut p: sys::CUdeviceptr = 0;
        // SAFETY: writes the new allocation's address (the device's context is current).
        check(
            unsafe { sys::cuMemAlloc_v2(&mut p, bytes.max(1)) },
            "cuMemAlloc",
        )
        .map_err(|e| e.context(format!("{bytes} bytes on CUDA device {}", self.ordinal)))?;
        Ok(DeviceBuffer {
            dev: *self,
            ptr: p,
            bytes,
        })
    }

    /// `bytes` bytes of pinned, portable host memory (`cuMemHostAlloc`), zeroed.
    pub fn alloc_pinned(&self, bytes: usize) -> Result<PinnedBuffer> {
        let _b = self.bind()?;
        let mut p: *mut std::ffi::c_void = std::ptr::null_mut();
        // SAFETY: writes the new allocation's address.
        check(
            unsafe { sys::cuMemHostAlloc(&mut p, bytes.max(1), sys::CU_MEMHOSTALLOC_PORTABLE) },
            "cuMemHostAlloc",
        )?;
        // SAFETY: a fresh host allocation of at least `bytes` bytes, written by nobody else.
        unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0, bytes) };
        Ok(PinnedBuffer {
            dev: *self,
            ptr: p.cast(),
            bytes,
        })
    }

    fn bind(&self) -> Result<Bound> {
        require()?.ctxs.bind(&Dev {
            ordinal: self.ordinal,
            buffer_id: 0,
            ctx: 0,
            managed: false,
        })
    }
}

/// Device memory from [`Device::alloc`]; freed when dropped.
#[derive(Debug)]
pub struct DeviceBuffer {
    dev: Device,
    ptr: sys::CUdeviceptr,
    bytes: usize,
}

impl DeviceBuffer {
    /// The device address, for the collectives (never dereference it on the host).
    pub fn as_ptr(&self) -> *mut std::ffi::c_void {
        self.ptr as usize as *mut std::ffi::c_void
    }

    pub fn len(&self) -> usize {
        self.bytes
    }

    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    pub fn device(&self) -> Device {
        self.dev
    }

    fn range(&self, offset: usize, len: usize) -> Result<sys::CUdeviceptr> {
        match offset.checked_add(len) {
            Some(end) if end <= self.bytes => Ok(self.ptr + offset as u64),
            _ => Err(Error::new(
                Class::Buffer,
                format!(
                    "{len} bytes at offset {offset} do not fit a device buffer of {}",
                    self.bytes
                ),
            )),
        }
    }

    /// Copies `src` into the buffer at `offset`.
    pub fn copy_from_host(&mut self, offset: usize, src: &[u8]) -> Result<()> {
        let dst = self.range(offset, src.len())?;
        let b = self.dev.bind()?;
        let slot = b.res.lease()?;
        slot.h2d(dst, src.as_ptr(), src.len())?;
        slot.wait()
    }

    /// Copies `dst.len()` bytes from `offset` of the buffer into `dst`.
    pub fn copy_to_host(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        let src = self.range(offset, dst.len())?;
        let b = self.dev.bind()?;
        let slot = b.res.lease()?;
        slot.d2h(dst.as_mut_ptr(), src, dst.len())?;
        slot.wait()
    }

    /// Sets `len` bytes from `offset` to `byte` (`cuMemsetD8Async`).
    pub fn fill(&mut self, offset: usize, len: usize, byte: u8) -> Result<()> {
        let dst = self.range(offset, len)?;
        if len == 0 {
            return Ok(());
        }
        let b = self.dev.bind()?;
        let slot = b.res.lease()?;
        // SAFETY: `dst..dst + len` lies inside this allocation (`range`); the stream
        // belongs to the bound context.
        check(
            unsafe { sys::cuMemsetD8Async(dst, byte, len, slot.stream) },
            "cuMemsetD8Async",
        )?;
        slot.wait()
    }

    /// Sets the whole buffer to zero.
    pub fn zero(&mut self) -> Result<()> {
        self.fill(0, self.bytes, 0)
    }

    /// Copies the first `bytes` bytes of `src` (any device) to the start of this buffer,
    /// `times` times back to back on one stream, and returns when the last copy has
    /// finished: one wait for the batch, so that a bandwidth measurement times the copies
    /// and not a wait per copy. `times` 0 copies nothing.
    pub fn copy_from_device(
        &mut self,
        src: &DeviceBuffer,
        bytes: usize,
        times: usize,
    ) -> Result<()> {
        let dst = self.range(0, bytes)?;
        let from = src.range(0, bytes)?;
        let b = self.dev.bind()?;
        let slot = b.res.lease()?;
        for _ in 0..times {
            slot.d2d(dst, from, bytes)?;
        }
        slot.wait()
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        let free = || -> Result<()> {
            let _b = self.dev.bind()?;
            // SAFETY: our own allocation; every operation on it waited before returning, and
            // collectives do not outlive their call. Peers that mapped it through IPC keep
            // the memory alive until they close their mapping.
            check(unsafe { sys::cuMemFree_v2(self.ptr) }, "cuMemFree")
        };
        if let Err(e) = free() {
            crate::warn!("freeing a device buffer: {e}");
        }
    }
}

/// Pinned host memory from [`Device::alloc_pinned`]; freed when dropped.
#[derive(Debug)]
pub struct PinnedBuffer {
    dev: Device,
    ptr: *mut u8,
    bytes: usize,
}

impl PinnedBuffer {
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }

    pub fn len(&self) -> usize {
        self.bytes
    }

    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: `bytes` bytes of host memory this buffer owns (zeroed at allocation, so
        // initialised); `&mut self` makes the slice the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.bytes) }
    }
}

impl Drop for PinnedBuffer {
    fn drop(&mut self) {
        let free = || -> Result<()> {
            let _b = self.dev.bind()?;
            // SAFETY: our own pinned allocation; no copy is in flight (each waited).
            check(
                unsafe { sys::cuMemFreeHost(self.ptr.cast()) },
                "cuMemFreeHost",
            )
        };
        if let Err(e) = free() {
            crate::warn!("freeing pinned host memory: {e}");
        }
    }
}
