//! Whether a single copy pays on this machine: the `HCOMM_CMA=auto` decision.
//!
//! A single copy replaces the slots' two user-space copies (the sender's into a slot, the
//! receiver's out of it, both on busy cores in a ring) by one kernel copy
//! (`process_vm_readv`). Which is faster depends on the CPU and its caches, not on hcomm: on
//! the Intel Xeon VM of docs/PERFORMANCE.md the kernel read 1 MiB pieces at 10–11 GB/s while
//! `memcpy` ran at 14–15 (so one kernel copy beat two user copies), on an AMD EPYC VM the
//! kernel read at 8–10 GB/s while two `memcpy`s through a cache-resident bounce buffer ran at
//! 16–20 — there the slots were up to 2× faster for allgather and bcast. So `auto` measures
//! both, once per process, at setup: one kernel read of [`PIECE`] from this process's own
//! memory against the same bytes copied twice through a slot-sized buffer, the best of
//! [`TRIES`] each (an oversubscribed start can deschedule any single try). About a
//! millisecond, only where some local peer passed the probe.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Bytes one kernel read moves in the rings' single copies (their 1 MiB chunks).
const PIECE: usize = 1 << 20;
/// Bytes per try: larger than a core's L2 (1–2 MiB on the machines measured), so the two
/// user copies are not measured all in cache, as a ring's source and destination are not.
const SPAN: usize = 4 * PIECE;
const TRIES: usize = 3;

/// The `auto` decision, measured at the first call (see the module's comment) and logged at
/// INFO; the same for the whole process.
pub fn single_copy_pays(bounce_bytes: usize) -> bool {
    static PAYS: OnceLock<bool> = OnceLock::new();
    *PAYS.get_or_init(|| match measure(bounce_bytes) {
        Some(r) => {
            let pays = r.single_copy_pays();
            crate::info!(
                "single copy (HCOMM_CMA=auto): a kernel read moves {:.1} GB/s, two copies through the slots {:.1} GB/s: {}",
                r.kernel_gbs,
                r.two_copies_gbs,
                if pays {
                    "single copies for the rings' large copies"
                } else {
                    "every message through the slots (HCOMM_CMA=copies forces single copies)"
                }
            );
            pays
        }
        None => false,
    })
}

/// One measurement: GB/s of the kernel read and of the two user copies through a bounce buffer.
#[derive(Clone, Copy, Debug)]
pub struct Rates {
    pub kernel_gbs: f64,
    pub two_copies_gbs: f64,
}

impl Rates {
    /// Whether the single copy is the faster way to move a byte.
    pub fn single_copy_pays(&self) -> bool {
        self.kernel_gbs > self.two_copies_gbs
    }
}

/// Measures both ways with `bounce_bytes` (the slot payload) as the intermediate buffer.
/// `None` when the kernel read fails (it cannot, for this process's own memory, unless a
/// seccomp filter forbids the call — then the probe of the peers failed too).
pub fn measure(bounce_bytes: usize) -> Option<Rates> {
    let bounce_bytes = bounce_bytes.clamp(4096, PIECE);
    let src: Vec<u8> = (0..SPAN).map(|i| i as u8).collect();
    let mut dst = vec![0u8; SPAN];
    let mut bounce = vec![0u8; bounce_bytes];
    let pid = std::process::id() as libc::pid_t;
    let (mut kernel, mut two) = (Duration::MAX, Duration::MAX);
    for _ in 0..TRIES {
        let t = Instant::now();
        for off in (0..SPAN).step_by(PIECE) {
            // SAFETY: `dst[off..off + PIECE]` is ours to write; the remote range is
            // `src[off..off + PIECE]` of this same process, alive for the call.
            let read = unsafe {
                super::shm::cma_read(
                    pid,
                    src.as_ptr().add(off) as u64,
                    dst.as_mut_ptr().add(off),
                    PIECE,
                )
            };
            read.ok()?;
        }
        kernel = kernel.min(t.elapsed());
        let t = Instant::now();
        for (from, to) in src.chunks(bounce_bytes).zip(dst.chunks_mut(bounce_bytes)) {
            let n = from.len();
            bounce[..n].copy_from_slice(from);
            to.copy_from_slice(&bounce[..n]);
        }
        two = two.min(t.elapsed());
        std::hint::black_box(&mut dst);
    }
    let gbs = |d: Duration| SPAN as f64 / d.as_secs_f64().max(1e-9) / 1e9;
    Some(Rates {
        kernel_gbs: gbs(kernel),
        two_copies_gbs: gbs(two),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_positive_rates() {
        let r = measure(128 << 10).expect("a process can read itself");
        assert!(r.kernel_gbs > 0.0 && r.two_copies_gbs > 0.0, "{r:?}");
    }
}
