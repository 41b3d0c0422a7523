//! Cross-process waiting: a doorbell (a futex word in shared memory) per rank.
//!
//! Whoever makes progress possible for rank R (posts a frame to R, frees a slot R waits for)
//! rings R's doorbell. A waiting rank polls for a while, then sleeps on its doorbell with a
//! timeout. The futex is process-shared (no `FUTEX_PRIVATE_FLAG`): std and parking_lot locks use
//! private futexes and would never see a wake from another process.
//!
//! Lost wake-ups are impossible with this order (all SeqCst):
//! waiter: `sleepers += 1; v = bell; <poll once more>; futex_wait(bell, v)`;
//! ringer: `<publish>; bell += 1; if sleepers > 0 { futex_wake }`.
//! If the waiter's last poll missed the publication, the ringer's increment comes after the
//! waiter read `v`, so `futex_wait` returns at once or the wake finds it asleep.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// A doorbell lives in shared memory; this is its layout there.
#[repr(C)]
pub struct Doorbell {
    pub bell: AtomicU32,
    pub sleepers: AtomicU32,
}

impl Doorbell {
    /// Wakes the owner if it sleeps.
    #[inline]
    pub fn ring(&self) {
        self.bell.fetch_add(1, Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            futex_wake(&self.bell);
        }
    }

    /// Announces an upcoming sleep; returns the value to sleep on. Must be paired with
    /// [`Doorbell::end_sleep`].
    #[inline]
    pub fn begin_sleep(&self) -> u32 {
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        self.bell.load(Ordering::SeqCst)
    }

    /// Sleeps until rung (bell differs from `seen`) or `timeout` passes.
    pub fn sleep(&self, seen: u32, timeout: Duration) {
        futex_wait(&self.bell, seen, timeout);
    }

    #[inline]
    pub fn end_sleep(&self) {
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
    }
}

fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `word` is a valid, aligned u32 for the duration of the call; FUTEX_WAIT only
    // reads it. A spurious return (EINTR, EAGAIN, timeout) is fine: callers re-check.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
        );
    }
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE on a valid address has no memory effects; it wakes every waiter.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, i32::MAX);
    }
}

/// How long to poll before sleeping. Spinning only pays when every rank has a core: with more
/// ranks than cores the peer we wait for may need *our* core, so we give it up at once.
/// A time budget rather than a count, so it means the same on fast and slow machines.
pub fn spin_limit(local_ranks: usize) -> Duration {
    if let Some(us) = crate::param::spin() {
        return Duration::from_micros(us as u64);
    }
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    if local_ranks > cores {
        Duration::ZERO
    } else {
        Duration::from_micros(20)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn ring_wakes_sleeper() {
        let bell = Arc::new(Doorbell {
            bell: AtomicU32::new(0),
            sleepers: AtomicU32::new(0),
        });
        let b2 = bell.clone();
        let t = std::thread::spawn(move || {
            let seen = b2.begin_sleep();
            let start = std::time::Instant::now();
            while b2.bell.load(Ordering::SeqCst) == seen {
                b2.sleep(seen, Duration::from_secs(10));
            }
            b2.end_sleep();
            start.elapsed()
        });
        std::thread::sleep(Duration::from_millis(50));
        bell.ring();
        let waited = t.join().unwrap();
        assert!(waited < Duration::from_secs(5));
    }
}
