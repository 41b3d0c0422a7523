//! The progress engine: who steps outstanding requests, and how `MPI_Wait` waits.
//!
//! Every started request that did not complete at once joins the process's *active list*, in
//! start order. Two kinds of threads step it:
//!
//! - **The progress thread** (`HCOMM_PROGRESS=thread`, the default), spawned by the first
//!   nonblocking call. It steps every active request, spins for the endpoint's budget
//!   (`HCOMM_SPIN`; zero when ranks outnumber cores), then sleeps on the rank's doorbell — the
//!   futex every frame arrival, freed slot and completed request rings — with the 100 ms
//!   timeout of [`crate::engine::drive`], between which stalled requests run their liveness
//!   checks. When its list empties it naps (50 µs at a time; 1 ms where waiters do not spin,
//!   as when ranks outnumber cores) for a 2 ms grace period, taking
//!   up only requests that outlived a nap — those its caller completes at once in `MPI_Wait`
//!   never pay for a wake-up or a second thread stepping them — and then sleeps on a condition
//!   variable, which a start signals: an idle process costs no CPU. So communication advances
//!   while the caller computes without calling MPI. While a caller waits in `MPI_Wait*`
//!   (stepping the list itself) the thread stands back, napping: two threads spinning over
//!   the same requests only took cores from the ranks.
//! - **Callers** in `MPI_Wait*`/`MPI_Test*` step the whole active list too (not only the
//!   requests they wait for: MPI's progress rule); `MPI_Wait*` spins, yields, then sleeps on
//!   the same doorbell, as a blocking call waits ([`crate::wait::keep_polling`]). With
//!   `HCOMM_PROGRESS=caller` they are the only ones, and every blocking wait of the engine
//!   steps the active list before it sleeps ([`step_others`]), so a blocking call never
//!   waits on a peer that waits for one of this process's requests.
//!
//! A request is stepped by one thread at a time (its lock, taken with `try_lock`); completing
//! it rings the doorbell, so a waiter asleep there wakes, whichever thread completed it. The
//! protocol of [`crate::wait`] (announce the sleep, poll once more, sleep on the value read)
//! makes that wake-up impossible to lose.
//!
//! Ordering: requests are stepped in start order, and each collective took its call number
//! when it started, so several outstanding collectives on one communicator — and blocking ones
//! between them — match across ranks by call number whatever order they progress in.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::endpoint::Endpoint;
use crate::error::Result;
use crate::request::Request;

/// The active requests, each with the number of its start (a persistent request restarted,
/// or a new request in a freed one's memory, is a new start).
static ACTIVE: Mutex<Vec<(Arc<Request>, u64)>> = Mutex::new(Vec::new());
/// Starts so far; written under `ACTIVE`'s lock.
static STARTS: AtomicU64 = AtomicU64::new(0);
static NOT_EMPTY: Condvar = Condvar::new();
static THREAD: AtomicBool = AtomicBool::new(false);
/// `ACTIVE.len()` as of the last look, read without the lock by [`step_others`].
static N_ACTIVE: AtomicUsize = AtomicUsize::new(0);
/// The progress thread sleeps on [`NOT_EMPTY`] with no timeout (its deep sleep): a start must
/// wake it. Written and read under `ACTIVE`'s lock, so no start can miss the moment it falls
/// asleep.
static DEEP: AtomicBool = AtomicBool::new(false);
/// After its last request completes, the progress thread naps this long at a time for
/// [`GRACE`] before its deep sleep, looking for requests on each wake-up.
const NAP: Duration = Duration::from_micros(50);
const GRACE: Duration = Duration::from_millis(2);
/// Threads inside [`wait_until`], stepping the active list themselves. The progress thread
/// stands back meanwhile: a second thread spinning over the same requests (and sleeping on
/// the doorbell, which makes every peer's frame a futex wake) only took cores from the ranks
/// — a window of 64 messages each way between 2 ranks on 2 cores cost 12 times MPICH's time.
static WAITERS: AtomicUsize = AtomicUsize::new(0);
/// How long the progress thread stands back at a time while [`WAITERS`] is not zero.
const STAND_BACK: Duration = Duration::from_millis(1);
/// The nap where waiters do not spin (`HCOMM_SPIN=0`, the default when ranks outnumber
/// cores): each wake-up of the napping thread takes a time slice from a rank there.
const NAP_SHARED: Duration = Duration::from_millis(1);

/// Starts a request: one step right away (posts what can go out), then onto the active list
/// unless that already completed it; the progress thread is spawned on first use.
pub fn start(r: &Arc<Request>) -> Result<()> {
    r.advance(false);
    if r.is_done() {
        return Ok(());
    }
    if crate::param::progress_thread() && !THREAD.swap(true, Ordering::SeqCst) {
        let spawned = std::thread::Builder::new()
            .name("hcomm-progress".into())
            .spawn(progress_loop);
        if let Err(e) = spawned {
            THREAD.store(false, Ordering::SeqCst);
            crate::warn!(
                "cannot start the progress thread ({e}): progress happens in MPI calls only"
            );
        }
    }
    let deep = {
        let mut g = ACTIVE.lock();
        let n = STARTS.load(Ordering::Relaxed) + 1;
        STARTS.store(n, Ordering::Relaxed);
        g.push((r.clone(), n));
        N_ACTIVE.store(g.len(), Ordering::SeqCst);
        DEEP.load(Ordering::Relaxed)
    };
    // Only a thread in its deep sleep needs the (costly) wake-up; in its grace period it looks
    // by itself (see `progress_loop`).
    if deep {
        NOT_EMPTY.notify_one();
    }
    // The progress thread may sleep on the doorbell with other requests: make it look.
    r.endpoint().bell().ring();
    Ok(())
}

/// The active requests (those completed are dropped from the list on the way).
fn snapshot() -> Vec<Arc<Request>> {
    let mut g = ACTIVE.lock();
    g.retain(|(r, _)| !r.is_done());
    N_ACTIVE.store(g.len(), Ordering::SeqCst);
    g.iter().map(|(r, _)| r.clone()).collect()
}

/// Without a progress thread (`HCOMM_PROGRESS=caller`): steps the active requests from a
/// blocking wait about to sleep; whether anything moved. A no-op otherwise (one atomic load).
pub fn step_others() -> bool {
    if N_ACTIVE.load(Ordering::SeqCst) == 0 || THREAD.load(Ordering::SeqCst) {
        return false;
    }
    advance_all(&snapshot(), true)
}

/// Steps every request of `list` once; whether anything moved.
fn advance_all(list: &[Arc<Request>], last: bool) -> bool {
    let _round = crate::request::round();
    let mut moved = false;
    for r in list {
        moved |= r.advance(last);
    }
    moved
}

fn progress_loop() {
    // Run beside the caller's computation, not on the CPU its thread was bound to.
    crate::wait::unbind_this_thread();
    let mut idle_since: Option<Instant> = None;
    // The grace period: since when (`None`: not in it), and the requests seen at the last nap.
    let mut grace_since: Option<Instant> = None;
    let mut seen: Vec<u64> = Vec::new();
    let mut nap = NAP;
    loop {
        let list = {
            let mut g = ACTIVE.lock();
            loop {
                g.retain(|(r, _)| !r.is_done());
                // Generalized requests complete in the program's own calls only.
                let mine = || g.iter().filter(|(r, _)| !r.is_caller_only());
                // In the grace period the thread takes a request up only once it has outlived
                // a nap: one that its caller completes at once in `MPI_Wait` (a small
                // `MPI_Iallreduce`) never costs a wake-up and a second thread stepping it —
                // that made an 8-byte `MPI_Iallreduce` + `MPI_Wait` 3.3 µs instead of 1.4 µs on
                // two ranks. A request left to run while the caller computes is taken up
                // within two naps.
                if mine().any(|(_, n)| grace_since.is_none() || seen.contains(n)) {
                    grace_since = None;
                    seen.clear();
                    break mine().map(|(r, _)| r.clone()).collect::<Vec<_>>();
                }
                let Some(since) = grace_since else {
                    grace_since = Some(Instant::now());
                    continue;
                };
                seen.clear();
                seen.extend(mine().map(|(_, n)| *n));
                idle_since = None;
                if !seen.is_empty() {
                    // Requests keep coming: the grace period runs from the last one seen.
                    grace_since = Some(Instant::now());
                    NOT_EMPTY.wait_for(&mut g, nap);
                } else if since.elapsed() < GRACE {
                    NOT_EMPTY.wait_for(&mut g, nap);
                } else {
                    DEEP.store(true, Ordering::Relaxed);
                    NOT_EMPTY.wait(&mut g);
                    DEEP.store(false, Ordering::Relaxed);
                    // Woken by a start: its request is taken up at once.
                    grace_since = None;
                }
            }
        };
        if WAITERS.load(Ordering::SeqCst) > 0 {
            idle_since = None;
            drop(list);
            NOT_EMPTY.wait_for(&mut ACTIVE.lock(), STAND_BACK);
            continue;
        }
        let ep = list[0].endpoint().clone();
        if ep.spin.is_zero() {
            nap = NAP_SHARED;
        }
        // As in `engine::drive`: owed acknowledgements of synchronous messages go out.
        ep.p2p_flush_acks();
        if advance_all(&list, false) {
            idle_since = None;
            continue;
        }
        let since = *idle_since.get_or_insert_with(Instant::now);
        if since.elapsed() < ep.spin {
            std::hint::spin_loop();
            continue;
        }
        sleep_unless(&ep, || {
            advance_all(&list, true) || list.iter().any(|r| r.is_done())
        });
    }
}

/// The sleep of the wait protocol: announce it, look once more (`look` returns whether there
/// is a reason not to sleep), then sleep on the doorbell for at most 100 ms.
fn sleep_unless(ep: &Endpoint, look: impl FnOnce() -> bool) {
    let bell = ep.bell();
    let seen = bell.begin_sleep();
    if !look() {
        bell.sleep(seen, Duration::from_millis(100));
    }
    bell.end_sleep();
}

/// Steps the active list once (`MPI_Test*`): the poll before a sleep, so stalled requests
/// drain their links and run their liveness checks when due. When nothing moved, the core is
/// given away (`sched_yield`): a program that polls `MPI_Test` in a loop would otherwise keep
/// the CPU from the peer ranks (or the progress thread) it waits for whenever ranks share
/// cores — with 3 ranks on 2 cores, an 8 MiB `Iallreduce` polled by `MPI_Test` took 10× as long
/// as one completed by `MPI_Waitall`. Where nothing else is runnable the yield returns at once.
pub fn poke() {
    let list = snapshot();
    if let Some(r) = list.first() {
        // As in `wait_until`: the acknowledgements this rank owes for synchronous messages it
        // matched go out here too, so `MPI_Test` on an `MPI_Issend` to self (or to a peer
        // polling with `MPI_Test`) completes without waiting for the progress thread.
        r.endpoint().p2p_flush_acks();
    }
    let _round = crate::request::round();
    let mut moved = false;
    for r in &list {
        moved |= r.advance_waiting(true);
    }
    if !list.is_empty() && !moved {
        // SAFETY: sched_yield has no preconditions.
        unsafe { libc::sched_yield() };
    }
}

/// Blocks until `enough()` (`MPI_Wait*`), stepping the active list meanwhile.
pub fn wait_until(ep: &Endpoint, enough: impl Fn() -> bool) {
    struct Waiting;
    impl Drop for Waiting {
        fn drop(&mut self) {
            WAITERS.fetch_sub(1, Ordering::SeqCst);
        }
    }
    WAITERS.fetch_add(1, Ordering::SeqCst);
    let _waiting = Waiting;
    let mut idle_since: Option<Instant> = None;
    loop {
        if enough() {
            return;
        }
        ep.p2p_flush_acks();
        let list = snapshot();
        if advance_all(&list, false) {
            idle_since = None;
            continue;
        }
        if enough() {
            return;
        }
        let since = *idle_since.get_or_insert_with(Instant::now);
        // Spin, then give the core away between polls, then sleep: as a blocking call waits
        // (`engine::drive`). Without the yielding phase a waiter on a machine with more ranks
        // than cores went to sleep at once and paid a futex wake-up per message.
        if crate::wait::keep_polling(since.elapsed(), ep.spin) {
            continue;
        }
        sleep_unless(ep, || advance_all(&list, true) || enough());
    }
}
