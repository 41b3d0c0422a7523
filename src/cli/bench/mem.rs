//! Where `hcomm bench`'s buffers live (`--memory host|device`).
//!
//! Host memory is a page-aligned heap buffer the pattern code reads and writes directly.
//! Device memory (`cuMemAlloc` on the rank's GPU, through [`hcomm_core::cuda`]) is never
//! touched by the CPU: the pattern is written into a host shadow of the same size and copied
//! to the device, and a result is copied back into the shadow to be compared. Those copies
//! run outside the timed loop.

use std::alloc::{self, Layout};
use std::ffi::c_void;

use hcomm_core::cuda::{Device, DeviceBuffer};
use hcomm_core::error::Result;

/// A page-aligned heap buffer (as the C benchmark's `posix_memalign`), so that alignment is
/// the same for every implementation.
pub struct Buf {
    pub ptr: *mut u8,
    layout: Layout,
}

impl Buf {
    pub fn new(len: usize) -> Buf {
        let layout = Layout::from_size_align(len.max(1), 4096).expect("buffer size");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            alloc::handle_alloc_error(layout);
        }
        Buf { ptr, layout }
    }

    pub fn bytes(&mut self, from: usize, len: usize) -> &mut [u8] {
        assert!(from + len <= self.layout.size());
        // SAFETY: in bounds (checked above) of an allocation this Buf owns; &mut self makes
        // the slice the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(from), len) }
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { alloc::dealloc(self.ptr, self.layout) }
    }
}

/// One of the benchmark's buffers: host memory, or device memory with a host shadow.
pub struct Space {
    /// The buffer itself (host), or the shadow the pattern is written to and read from.
    host: Buf,
    dev: Option<DeviceBuffer>,
}

impl Space {
    pub fn host(len: usize) -> Space {
        Space {
            host: Buf::new(len),
            dev: None,
        }
    }

    pub fn device(d: &Device, len: usize) -> Result<Space> {
        let mut dev = d.alloc(len)?;
        // Defined contents from the start, as the host buffers (zeroed) have.
        dev.zero()?;
        Ok(Space {
            host: Buf::new(len),
            dev: Some(dev),
        })
    }

    /// The pointer the collectives get.
    pub fn ptr(&self) -> *mut c_void {
        match &self.dev {
            Some(d) => d.as_ptr(),
            None => self.host.ptr.cast(),
        }
    }

    pub fn device_buffer(&self) -> Option<&DeviceBuffer> {
        self.dev.as_ref()
    }

    pub fn device_buffer_mut(&mut self) -> Option<&mut DeviceBuffer> {
        self.dev.as_mut()
    }

    /// Sets `len` bytes from `from` to `byte`.
    pub fn fill(&mut self, from: usize, len: usize, byte: u8) -> Result<()> {
        match &mut self.dev {
            Some(d) => d.fill(from, len, byte),
            None => {
                self.host.bytes(from, len).fill(byte);
                Ok(())
            }
        }
    }

    /// Lets `f` write `len` bytes from `from` (on device memory: into the shadow, then
    /// copied to the device).
    pub fn write(&mut self, from: usize, len: usize, f: impl FnOnce(&mut [u8])) -> Result<()> {
        f(self.host.bytes(from, len));
        match &mut self.dev {
            Some(d) => d.copy_from_host(from, self.host.bytes(from, len)),
            None => Ok(()),
        }
    }

    /// The `len` bytes from `from` (on device memory: copied into the shadow first).
    pub fn read(&mut self, from: usize, len: usize) -> Result<&mut [u8]> {
        if let Some(d) = &self.dev {
            d.copy_to_host(from, self.host.bytes(from, len))?;
        }
        Ok(self.host.bytes(from, len))
    }
}
