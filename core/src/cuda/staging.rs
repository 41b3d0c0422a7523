//! hcomm's own memory and stream for one call: an exportable device staging buffer, a pinned
//! host buffer, a stream and its events ([`Slot`]), and how staged transfers are cut into
//! pipeline segments.
//!
//! Waiting never spins a core: every wait records an event created with
//! `CU_EVENT_BLOCKING_SYNC` and synchronizes on it, so the thread sleeps in the driver
//! whatever scheduling flags the caller's context was created with (a `cuStreamSynchronize`
//! would spin or yield under the default `CU_CTX_SCHED_AUTO` when there are fewer active
//! contexts than cores — and here ranks often outnumber cores).

use super::drv::{self, check, sys};
use crate::error::Result;

/// Bytes per pipeline segment of the staged path: large enough that a copy runs at full
/// PCIe speed, small enough that copying segment k+1 overlaps the host collective of
/// segment k for messages of a few segments already. The same on every rank (segmenting is
/// part of the wire protocol of the agreed staged path), so not a tunable.
pub(crate) const SEG_BYTES: usize = 4 << 20;

/// Elements per segment for elements of `extent` bytes (at least one).
pub(crate) fn seg_elems(extent: usize, seg_bytes: usize) -> usize {
    (seg_bytes / extent.max(1)).max(1)
}

/// The segments `(offset, count)` of `count` elements, `seg` at a time (at least one).
pub(crate) fn segments(count: usize, seg: usize) -> Vec<(usize, usize)> {
    crate::coll::chunks(count, seg).collect()
}

/// A device buffer hcomm allocated with `cuMemAlloc` (exportable through CUDA IPC), grown
/// on demand, never shrunk.
#[derive(Default)]
pub(crate) struct DevBuf {
    pub ptr: u64,
    pub size: usize,
}

impl DevBuf {
    /// At least `bytes` bytes (the bound context must be the one it lives in).
    pub fn ensure(&mut self, bytes: usize) -> Result<u64> {
        if bytes <= self.size && self.ptr != 0 {
            return Ok(self.ptr);
        }
        self.release();
        // Round up so that slowly growing messages do not reallocate every call.
        let want = bytes.max(1).next_power_of_two().max(1 << 20);
        let mut p: sys::CUdeviceptr = 0;
        // SAFETY: writes the new allocation's address.
        check(
            unsafe { sys::cuMemAlloc_v2(&mut p, want) },
            "cuMemAlloc (hcomm staging buffer)",
        )?;
        self.ptr = p;
        self.size = want;
        Ok(p)
    }

    fn release(&mut self) {
        if self.ptr != 0 {
            // SAFETY: our own allocation; every use of it was synchronized before the call
            // that used it returned. Peers that mapped it keep their mapping until they
            // close it (the driver keeps the memory alive until then).
            let r = unsafe { sys::cuMemFree_v2(self.ptr) };
            if let Err(e) = check(r, "cuMemFree (hcomm staging buffer)") {
                crate::info!("{e}");
            }
            self.ptr = 0;
            self.size = 0;
        }
    }
}

/// Pinned host memory (`cuMemHostAlloc`, portable), grown on demand.
pub(crate) struct HostBuf {
    pub ptr: *mut u8,
    pub size: usize,
}

impl Default for HostBuf {
    fn default() -> Self {
        HostBuf {
            ptr: std::ptr::null_mut(),
            size: 0,
        }
    }
}

impl HostBuf {
    pub fn ensure(&mut self, bytes: usize) -> Result<*mut u8> {
        if bytes <= self.size && !self.ptr.is_null() {
            return Ok(self.ptr);
        }
        if !self.ptr.is_null() {
            // SAFETY: our own pinned allocation, no copy in flight (calls synchronize
            // before they return).
            let r = unsafe { sys::cuMemFreeHost(self.ptr.cast()) };
            if let Err(e) = check(r, "cuMemFreeHost") {
                crate::info!("{e}");
            }
            self.ptr = std::ptr::null_mut();
            self.size = 0;
        }
        let want = bytes.max(1).next_power_of_two().max(1 << 20);
        let mut p: *mut std::ffi::c_void = std::ptr::null_mut();
        // SAFETY: writes the new allocation's address.
        check(
            unsafe { sys::cuMemHostAlloc(&mut p, want, sys::CU_MEMHOSTALLOC_PORTABLE) },
            "cuMemHostAlloc (hcomm pinned staging buffer)",
        )?;
        self.ptr = p.cast();
        self.size = want;
        Ok(self.ptr)
    }
}

/// One call's stream, events and buffers, in one context.
pub(crate) struct Slot {
    pub stream: sys::CUstream,
    /// Pipeline events, one per pinned half: its copy to the host landed ...
    pub ev: [sys::CUevent; 2],
    /// ... and its copy back to the device finished reading it.
    pub ev_back: [sys::CUevent; 2],
    /// Recorded at the end of the work, waited on by [`Slot::wait`].
    done: sys::CUevent,
    pub dev: DevBuf,
    /// Second device buffer (an output that cannot be exported).
    pub dev2: DevBuf,
    /// Where a long chain of reduce launches folds when its output is one of its late
    /// inputs (see `kernels::reduce`).
    pub scratch: DevBuf,
    pub host: HostBuf,
}

// SAFETY: stream, events and buffers are driver handles and addresses, usable from any
// thread; a slot is used by one call at a time (leased, see `ctx.rs`).
unsafe impl Send for Slot {}

fn event() -> Result<sys::CUevent> {
    let mut e: sys::CUevent = std::ptr::null_mut();
    let flags = sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC as u32
        | sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32;
    // SAFETY: writes a new event of the current context.
    check(
        unsafe { sys::cuEventCreate(&mut e, flags) },
        "cuEventCreate",
    )?;
    Ok(e)
}

impl Slot {
    /// A new slot in the current context.
    pub fn new() -> Result<Slot> {
        let mut s: sys::CUstream = std::ptr::null_mut();
        // Non-blocking: our stream never waits for the legacy default stream (the caller
        // has finished writing its buffers before the call, MPI's CUDA-aware contract).
        // SAFETY: writes a new stream of the current context.
        check(
            unsafe {
                sys::cuStreamCreate(&mut s, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32)
            },
            "cuStreamCreate",
        )?;
        Ok(Slot {
            stream: s,
            ev: [event()?, event()?],
            ev_back: [event()?, event()?],
            done: event()?,
            dev: DevBuf::default(),
            dev2: DevBuf::default(),
            scratch: DevBuf::default(),
            host: HostBuf::default(),
        })
    }

    /// Waits (asleep) until everything queued on the stream so far has finished.
    pub fn wait(&self) -> Result<()> {
        self.record(self.done)?;
        sync(self.done)
    }

    pub fn record(&self, e: sys::CUevent) -> Result<()> {
        // SAFETY: an event and a stream of the bound context.
        check(
            unsafe { sys::cuEventRecord(e, self.stream) },
            "cuEventRecord",
        )
    }

    /// Device to device (either may be a peer's mapping).
    pub fn d2d(&self, dst: u64, src: u64, bytes: usize) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: the callers pass ranges inside live allocations (user buffers validated
        // by MPI's contract, our staging, or mapped peers' buffers) of at least `bytes`.
        check(
            unsafe { sys::cuMemcpyDtoDAsync_v2(dst, src, bytes, self.stream) },
            "cuMemcpyDtoDAsync",
        )
    }

    /// Device to host (pinned: truly asynchronous).
    pub fn d2h(&self, dst: *mut u8, src: u64, bytes: usize) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: as in `d2d`; `dst` is host memory of at least `bytes` that nothing else
        // touches until the copy is waited for.
        check(
            unsafe { sys::cuMemcpyDtoHAsync_v2(dst.cast(), src, bytes, self.stream) },
            "cuMemcpyDtoHAsync",
        )
    }

    /// Host to device.
    pub fn h2d(&self, dst: u64, src: *const u8, bytes: usize) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: as in `d2h`.
        check(
            unsafe { sys::cuMemcpyHtoDAsync_v2(dst, src.cast(), bytes, self.stream) },
            "cuMemcpyHtoDAsync",
        )
    }
}

/// Waits for a recorded event: polls it for the `HCOMM_CUDA_POLL` budget (giving the core
/// away between polls), then sleeps in the driver (blocking-sync event). Polling first
/// because a blocking-sync wake-up (an interrupt, then the thread's reschedule) costs tens to
/// hundreds of microseconds, more than most of the device work of one call takes; sleeping
/// after it because a rank that waits long must not hold a core its peers may need.
pub(crate) fn sync(e: sys::CUevent) -> Result<()> {
    let budget = poll_budget();
    if !budget.is_zero() {
        let t0 = std::time::Instant::now();
        loop {
            // SAFETY: an event of the bound context; querying has no side effects.
            match unsafe { sys::cuEventQuery(e) } {
                sys::CUresult::CUDA_SUCCESS => return Ok(()),
                sys::CUresult::CUDA_ERROR_NOT_READY => {}
                r => return check(r, "cuEventQuery"),
            }
            if t0.elapsed() >= budget {
                break;
            }
            // SAFETY: sched_yield has no preconditions.
            unsafe { libc::sched_yield() };
        }
    }
    // SAFETY: an event of the bound context.
    check(unsafe { sys::cuEventSynchronize(e) }, "cuEventSynchronize")
}

/// `HCOMM_CUDA_POLL`, else [`POLL_US`] (0 when this host's ranks outnumber its cores: a
/// polling rank would then take the core a peer needs).
fn poll_budget() -> std::time::Duration {
    if let Some(us) = crate::param::cuda_poll_us() {
        return std::time::Duration::from_micros(us as u64);
    }
    if crate::wait::oversubscribed() {
        std::time::Duration::ZERO
    } else {
        std::time::Duration::from_micros(POLL_US)
    }
}

/// Default event-poll budget (µs) before sleeping in the driver.
pub const POLL_US: u64 = 200;

/// A device address `off` bytes into the buffer at `p`.
pub(crate) fn at(p: *const u8, off: usize) -> u64 {
    drv::dptr(p) + off as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_sizes() {
        assert_eq!(seg_elems(4, SEG_BYTES), 1 << 20);
        assert_eq!(seg_elems(16, 64), 4);
        assert_eq!(seg_elems(100, 64), 1, "an element larger than a segment");
        assert_eq!(seg_elems(0, 64), 64);
    }

    #[test]
    fn segments_cover_the_buffer_once() {
        for count in [1usize, 2, 5, 1000, 4097] {
            for seg in [1usize, 3, 1024, 5000] {
                let s = segments(count, seg);
                assert_eq!(s.len(), count.div_ceil(seg));
                let mut next = 0;
                for &(off, n) in &s {
                    assert_eq!(off, next);
                    assert!(n > 0 && n <= seg);
                    next += n;
                }
                assert_eq!(next, count);
            }
        }
    }
}
