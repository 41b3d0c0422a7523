//! Cross-process waiting: a doorbell (a futex word in shared memory) per rank.
//!
//! Whoever makes progress possible for rank R (posts a frame to R, frees a slot R waits for)
//! rings R's doorbell. A waiting rank polls for a while, then sleeps on its doorbell with a
//! timeout. The futex is process-shared (no `FUTEX_PRIVATE_FLAG`): std and parking_lot locks use
//! private futexes and would never see a wake from another process.
//!
//! Lost wake-ups are impossible with this order (SeqCst fences on both sides: a store-buffering
//! pair, so at least one side sees the other's write):
//! waiter: `sleepers += 1; fence; v = bell; <poll once more>; futex_wait(bell, v)`;
//! ringer: `<publish>; fence; if sleepers > 0 { bell += 1; futex_wake }`.
//! If the ringer saw no sleeper, the waiter's last poll sees the publication and it does not
//! sleep. If it saw one, its increment comes after the waiter read `v` (or the waiter read the
//! incremented value, and then also the publication), so `futex_wait` returns at once or the
//! wake finds it asleep.
//!
//! Ringing costs one fence and one load of a line that stays shared while nobody sleeps: the
//! hot path (a message to a polling peer) writes nothing to the peer's doorbell and makes no
//! system call, however many peers ring the same rank.

use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, Ordering};
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
        fence(Ordering::SeqCst);
        if self.sleepers.load(Ordering::Relaxed) > 0 {
            self.bell.fetch_add(1, Ordering::SeqCst);
            futex_wake(&self.bell);
        }
    }

    /// Announces an upcoming sleep; returns the value to sleep on. Must be paired with
    /// [`Doorbell::end_sleep`].
    #[inline]
    pub fn begin_sleep(&self) -> u32 {
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
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
/// Also sets the yield budget of [`keep_polling`] (`HCOMM_YIELD`, microseconds; default
/// [`YIELD_US`], [`YIELD_OVERSUBSCRIBED_US`] with more ranks than cores).
pub fn spin_limit(local_ranks: usize) -> Duration {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let default_yield = if local_ranks > cores {
        YIELD_OVERSUBSCRIBED_US
    } else {
        YIELD_US
    };
    let yield_us = crate::param::yield_us().map_or(default_yield, |us| us as u64);
    YIELD_FOR_US.store(yield_us, Ordering::Relaxed);
    OVERSUBSCRIBED.store(local_ranks > cores, Ordering::Relaxed);
    if let Some(us) = crate::param::spin() {
        return Duration::from_micros(us as u64);
    }
    if local_ranks > cores {
        Duration::ZERO
    } else {
        Duration::from_micros(SPIN_US)
    }
}

/// Default pure-spin budget (µs) when every local rank has a core: a peer that is running
/// answers a small message in about a microsecond, so this covers ordinary skew between ranks.
pub const SPIN_US: u64 = 20;

/// Default yield budget (µs) after the spin: polls separated by `sched_yield`.
pub const YIELD_US: u64 = 100;

/// Default yield budget (µs) with more ranks than cores. There a peer usually waits for a
/// core rather than runs late, and a yield hands it ours at once, where a futex sleep costs
/// both a wake-up; measured at 3 and 4 ranks on 2 cores (`scripts/wait-tune.sh`,
/// docs/PERFORMANCE.md "Waiting with more ranks than cores"): 2 ms took 0.91 of the time of
/// 100 µs over 18 cases (geometric mean; worst case 1.12, best 0.72); 0 µs took 2.4 times as
/// long.
pub const YIELD_OVERSUBSCRIBED_US: u64 = 2000;

static OVERSUBSCRIBED: AtomicBool = AtomicBool::new(false);

/// Whether the last communicator set up has more ranks (and their threads) on this host
/// than it has cores: waits then give their core away at once.
pub fn oversubscribed() -> bool {
    OVERSUBSCRIBED.load(Ordering::Relaxed)
}

static YIELD_FOR_US: AtomicU64 = AtomicU64::new(YIELD_US);

/// The policy of a wait whose last poll moved nothing, `idle` after its last progress (`spin`:
/// the endpoint's pure-spin budget): `true` to poll again, `false` to sleep on the doorbell.
///
/// Three phases. Pure spinning first (`spin`), for the common case of a peer running on its own
/// core. Then, for the yield budget, polls separated by `sched_yield()`: a peer that shares
/// our core — always the case when ranks outnumber cores, and also when the scheduler has put
/// two ranks on one core, which futex wake-ups encourage (the woken task is often placed on
/// the waker's CPU) — runs at once instead of waiting for our time slice to end, and no one
/// pays for a futex sleep and wake-up (two system calls and two context switches per
/// message). Only then sleep, so a rank that waits long (a slow peer, a stopped one) costs
/// no CPU.
#[inline]
pub fn keep_polling(idle: Duration, spin: Duration) -> bool {
    if idle < spin {
        std::hint::spin_loop();
        return true;
    }
    if idle < spin + Duration::from_micros(YIELD_FOR_US.load(Ordering::Relaxed)) {
        // SAFETY: sched_yield has no preconditions.
        unsafe { libc::sched_yield() };
        return true;
    }
    false
}

/// Binds the calling thread (the rank's main thread, in `MPI_Init`) to a CPU of its own: the
/// `index`-th of the CPUs it may run on, rank `index` of `local_ranks` on this host.
///
/// Why: spinning and yielding only pay when ranks run on different CPUs. Left alone, the
/// scheduler tends to put two ranks on one CPU (a futex wake-up places the woken task next to
/// its waker), and keeps them there once they alternate quickly (both look cache-hot); every
/// message then waits for a time slice or a context switch — tens of microseconds for an
/// 8-byte allreduce instead of half a microsecond. Open MPI's `mpirun` binds for the same
/// reason. `HCOMM_BIND`: `auto` (default) binds only when every rank (and, with TCP, its
/// receiver thread: `threads_per_rank`) can have a CPU and the process may run on every
/// online CPU (nobody — a launcher, `taskset`, the host MPI — placed it already); `core`
/// binds whenever every rank can have a CPU; `none` never. Threads the program creates later
/// inherit the binding (as under Open MPI); `HCOMM_BIND=none` leaves them free.
pub fn bind_rank(index: usize, local_ranks: usize, threads_per_rank: usize) {
    let mode = crate::param::bind().unwrap_or_else(|| "auto".into());
    let forced = match mode.trim().to_ascii_lowercase().as_str() {
        "auto" => false,
        "core" => true,
        "none" => return,
        other => {
            crate::warn!("HCOMM_BIND={other:?}: expected auto, core or none; not binding");
            return;
        }
    };
    if !forced && UNDER_HOST_MPI.load(Ordering::Relaxed) {
        // Preload: the host MPI's launcher owns placement, and the program's own threads
        // (OpenMP, BLAS, a framework's) must not find themselves squeezed onto one CPU.
        crate::info!("not binding: the host MPI's launcher places the ranks (HCOMM_BIND=core to bind anyway)");
        return;
    }
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it for this thread.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid cpu_set_t of the size passed.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0
    {
        return;
    }
    let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        // SAFETY: reading a bit of a valid cpu_set_t, in range.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect();
    // SAFETY: sysconf has no preconditions.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    let whole_machine = online > 0 && cpus.len() == online as usize;
    if local_ranks * threads_per_rank > cpus.len() || index >= cpus.len() {
        return;
    }
    if !forced && !whole_machine {
        crate::info!(
            "not binding: the process is already bound to {} CPU(s)",
            cpus.len()
        );
        return;
    }
    let cpu = cpus[index];
    *ORIGINAL_MASK.lock() = Some(set);
    // SAFETY: as above; a set with the one CPU this rank takes.
    let mut one: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: cpu < CPU_SETSIZE (it came from the set).
    unsafe { libc::CPU_SET(cpu, &mut one) };
    // SAFETY: `one` is a valid cpu_set_t of the size passed.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &one) };
    if rc == 0 {
        crate::info!("bound to CPU {cpu} (local rank {index} of {local_ranks}; HCOMM_BIND=none to leave ranks unbound)");
    } else {
        crate::info!(
            "could not bind to CPU {cpu}: {}",
            std::io::Error::last_os_error()
        );
    }
}

/// Set by the preload before its world is set up: binding is then left to the host's
/// launcher (see [`bind_rank`]).
pub static UNDER_HOST_MPI: AtomicBool = AtomicBool::new(false);

/// The CPUs the process could use before [`bind_rank`] bound the main thread, if it did.
static ORIGINAL_MASK: parking_lot::Mutex<Option<libc::cpu_set_t>> = parking_lot::Mutex::new(None);

/// Gives the calling thread back every CPU the process had before the main thread was bound:
/// hcomm's own helper threads (the progress thread) must run beside the caller's computation,
/// not on its CPU. Does nothing when no binding happened.
pub fn unbind_this_thread() {
    let Some(set) = *ORIGINAL_MASK.lock() else {
        return;
    };
    // SAFETY: `set` is a valid cpu_set_t of the size passed; 0 is the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        crate::info!(
            "could not widen a helper thread's CPUs: {}",
            std::io::Error::last_os_error()
        );
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
