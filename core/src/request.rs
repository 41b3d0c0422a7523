//! Nonblocking operations: what a request is, and the table of handles the C API hands out.
//!
//! A request owns an [`Op`]: a schedule of a nonblocking collective ([`Sched`]) or a
//! point-to-point operation (see [`crate::p2p`]). An op is a [`Wait`] — its `poll` is
//! non-blocking and resumable — so whoever holds the request's lock may step it: the progress
//! thread, or the `MPI_Wait`/`MPI_Test` of any thread (see [`crate::progress`]). Stepping takes
//! the lock with `try_lock`: a thread that finds it taken moves on, the holder is making the
//! progress. The op that completes is dropped at once (its scratch buffers and its hold on the
//! communicator with it), the outcome stays until the handle is completed by the user.
//!
//! Failures: a step's error goes through [`Op::failed`] (a schedule tells the other members
//! with a failure notice, as a blocking call does); a request whose op makes no progress for a
//! while runs the engine's liveness checks ([`engine::check`]: dead peers, failure notices,
//! `HCOMM_TIMEOUT`) on the stepping thread, so a dead peer fails the request even while the
//! caller computes. The error is kept and surfaces from the `Wait`/`Test` that completes the
//! request, prefixed with the request's call (`MPI_Iallreduce: lost rank 2 ...`).
//!
//! Persistent requests (`MPI_Send_init`, `MPI_Bcast_init`, ...) keep a [`Starter`] that builds
//! a fresh op at every `MPI_Start`. Between a completion and the next start such a request is
//! *inactive*: it counts as done with an empty outcome, so a wait on it returns at once, and the
//! multi-request calls skip it as they skip `MPI_REQUEST_NULL`. Completing it makes it inactive
//! again instead of releasing its handle.
//!
//! Handles are `int`s (MPICH ABI): `0x6c000000 | slot`, never `MPI_REQUEST_NULL`
//! (`0x2c000000`). Freed slots are reused.

use std::cell::Cell;
use std::ffi::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::comm::Comm;
use crate::endpoint::Endpoint;
use crate::engine::{self, Schedule, Step, Wait};
use crate::error::{Class, Error, Result};
use crate::health::Watchdog;

/// `MPI_REQUEST_NULL` in the MPICH ABI.
pub const REQUEST_NULL: c_int = 0x2c00_0000;
const HANDLE_BASE: c_int = 0x6c00_0000;
const MAX_SLOTS: usize = 1 << 24;

/// What a completed request reports in its status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Completion {
    pub source: i32,
    pub tag: i32,
    /// The status count in bytes.
    pub bytes: u64,
    pub cancelled: bool,
    /// The receive stored less than the message (`MPI_ERR_TRUNCATE` on completion).
    pub truncated: bool,
}

impl Completion {
    /// MPI's empty status: `MPI_ANY_SOURCE`, `MPI_ANY_TAG`, count 0 (collectives, sends).
    pub const fn empty() -> Completion {
        Completion {
            source: -2,
            tag: -1,
            bytes: 0,
            cancelled: false,
            truncated: false,
        }
    }
}

/// An operation a request runs.
pub trait Op: Wait + Send {
    /// The last `poll` returned [`Step::Done`]: finish (e.g. unpack staged buffers) and report.
    fn complete(&mut self) -> Result<Completion>;
    /// A step failed with `e`: the error to report.
    fn failed(&mut self, e: Error) -> Error {
        e
    }
    /// `MPI_Cancel`: `Some` when the operation will not happen and completes as cancelled;
    /// an error is `MPI_Cancel`'s (a generalized request's `cancel_fn` failed).
    fn cancel(&mut self) -> Result<Option<Completion>> {
        Ok(None)
    }
}

/// A nonblocking collective: its schedule (or its stages, run one after another), the
/// communicator it borrows from, and what to do with the staged user buffers when it completes.
///
/// Stages serve the collectives that run over more than one communicator (an
/// intercommunicator's: its local group's intracommunicator, then the bridge between the
/// groups, ...). Every stage is built — its call number taken — when the request starts, so
/// the call numbers follow the program's order of calls whatever order requests complete in;
/// a stage's tasks run only once the stage before it is done. Stages live, and drop, together:
/// a later stage may read scratch an earlier one keeps.
pub struct Sched {
    // Field order matters: the schedules borrow from `_comm` and drop first.
    first: Schedule<'static>,
    rest: Vec<Schedule<'static>>,
    /// Stages done: `first` is running while 0, `rest[at - 1]` after.
    at: usize,
    finish: Option<Box<dyn FnOnce() + Send>>,
    _comm: Arc<Comm>,
}

// SAFETY: the schedules' raw pointers point into the caller's buffers (which MPI forbids the
// caller to touch until the request completes) and into scratch the schedules own; the
// endpoints and member lists they borrow belong to `_comm` (or to communicators it owns), an
// `Arc` that lives as long. The request's lock makes sure one thread at a time steps it.
unsafe impl Send for Sched {}

impl Sched {
    /// Builds a collective's schedule for a request: `build` takes the call number at once.
    /// `finish` runs on completion (unstaging derived datatypes; nothing for contiguous ones).
    pub fn new(
        comm: Arc<Comm>,
        build: impl for<'c> FnOnce(&'c Comm) -> Result<Schedule<'c>>,
        finish: Option<Box<dyn FnOnce() + Send>>,
    ) -> Result<Sched> {
        // SAFETY: the `Comm` lives in the `Arc`'s heap block, which does not move, and the
        // `Arc` is stored in the returned value next to the schedule, which drops first.
        let c: &'static Comm = unsafe { &*Arc::as_ptr(&comm) };
        let first = build(c)?;
        first.start()?;
        Ok(Sched {
            first,
            rest: Vec::new(),
            at: 0,
            finish,
            _comm: comm,
        })
    }

    /// As [`Sched::new`], for a collective of several stages (see the type's comment): `build`
    /// returns them in the order they run, at least one.
    pub fn stages(
        comm: Arc<Comm>,
        build: impl for<'c> FnOnce(&'c Comm) -> Result<Vec<Schedule<'c>>>,
        finish: Option<Box<dyn FnOnce() + Send>>,
    ) -> Result<Sched> {
        // SAFETY: the `Comm` lives in the `Arc`'s heap block, which does not move, and the
        // `Arc` is stored in the returned value next to the schedules, which drop first.
        let c: &'static Comm = unsafe { &*Arc::as_ptr(&comm) };
        let mut rest = build(c)?;
        for s in &rest {
            s.start()?;
        }
        if rest.is_empty() {
            return Err(Error::other("a collective of no stages"));
        }
        let first = rest.remove(0);
        Ok(Sched {
            first,
            rest,
            at: 0,
            finish,
            _comm: comm,
        })
    }

    fn current(&self) -> &Schedule<'static> {
        match self.at {
            0 => &self.first,
            i => &self.rest[i - 1],
        }
    }

    fn current_mut(&mut self) -> &mut Schedule<'static> {
        match self.at {
            0 => &mut self.first,
            i => &mut self.rest[i - 1],
        }
    }
}

impl Wait for Sched {
    fn poll(&mut self, last: bool) -> Result<Step> {
        loop {
            match self.current_mut().poll(last)? {
                Step::Done if self.at < self.rest.len() => self.at += 1,
                step => return Ok(step),
            }
        }
    }
    fn describe(&self) -> String {
        self.current().describe()
    }
    fn blocked_on(&self, out: &mut Vec<usize>) {
        self.current().blocked_on(out)
    }
    fn noticed(&self) -> Option<Error> {
        self.current().noticed()
    }
}

impl Op for Sched {
    fn complete(&mut self) -> Result<Completion> {
        if let Some(f) = self.finish.take() {
            f();
        }
        Ok(Completion::empty())
    }
    fn failed(&mut self, e: Error) -> Error {
        self.current_mut().failed(e)
    }
}

/// Builds the op of a persistent request anew (a collective takes its call number then).
pub type Starter = Box<dyn FnMut() -> Result<Box<dyn Op>> + Send>;

/// How long `MPI_Test*` waits for another thread's step of a request: longer than a
/// scheduler time slice, so a preempted progress thread gets to finish its step.
const STEP_WAIT: Duration = Duration::from_millis(20);

/// A request: one outstanding nonblocking operation.
pub struct Request {
    /// The MPI call that started it (`MPI_Iallreduce`), for messages.
    pub name: &'static str,
    /// The communicator handle: its error handler gets the request's errors.
    pub comm: c_int,
    /// Whether this is a collective (MPI_Cancel does not apply).
    pub collective: bool,
    ep: Arc<Endpoint>,
    done: AtomicBool,
    state: Mutex<State>,
    /// `HCOMM_PROFILE`: a nonblocking collective's record, until a wait or test completes it.
    profile: Mutex<Option<crate::stats::profile::Pending>>,
    /// A persistent request's way to start (`None`: a one-shot request).
    starter: Option<Mutex<Starter>>,
    /// A persistent request between a completion and the next start.
    inactive: AtomicBool,
    /// Stepped only by the program's own calls (`MPI_Wait*`, `MPI_Test*`), never by the
    /// progress thread: a generalized request, whose completion runs the program's
    /// functions, which must run in the call that completes it.
    caller_only: bool,
}

struct State {
    op: Option<Box<dyn Op>>,
    outcome: Option<Result<Completion>>,
    /// Since when nothing moved (for the liveness checks).
    idle_since: Option<Instant>,
    dog: Option<Watchdog>,
}

impl Request {
    pub fn new(
        name: &'static str,
        comm: c_int,
        collective: bool,
        ep: Arc<Endpoint>,
        op: Box<dyn Op>,
    ) -> Request {
        Request {
            name,
            comm,
            collective,
            ep,
            done: AtomicBool::new(false),
            state: Mutex::new(State {
                op: Some(op),
                outcome: None,
                idle_since: None,
                dog: None,
            }),
            profile: Mutex::new(None),
            starter: None,
            inactive: AtomicBool::new(false),
            caller_only: false,
        }
    }

    /// An inactive persistent request: each [`Request::start`] runs a new op from `starter`.
    pub fn persistent(
        name: &'static str,
        comm: c_int,
        collective: bool,
        ep: Arc<Endpoint>,
        starter: Starter,
    ) -> Request {
        let mut r = Request::completed(name, comm, ep, Completion::empty());
        r.collective = collective;
        r.starter = Some(Mutex::new(starter));
        r.inactive = AtomicBool::new(true);
        r
    }

    pub fn is_persistent(&self) -> bool {
        self.starter.is_some()
    }

    /// A persistent request that is not started (a wait returns at once with an empty status).
    pub fn is_inactive(&self) -> bool {
        self.inactive.load(Ordering::SeqCst)
    }

    /// `MPI_Start`: makes an inactive persistent request active with a new op (the caller then
    /// hands it to [`crate::progress::start`]). An active or one-shot request is
    /// `MPI_ERR_REQUEST`; a failure to build the op leaves the request inactive.
    pub fn start(&self) -> Result<()> {
        let Some(starter) = &self.starter else {
            return Err(Error::new(
                Class::Request,
                format!("the {} request is not persistent", self.name),
            ));
        };
        if !self.is_inactive() {
            return Err(Error::new(
                Class::Request,
                format!(
                    "the {} request is active (complete it before starting it again)",
                    self.name
                ),
            ));
        }
        let op = (starter.lock())()?;
        let mut g = self.state.lock();
        g.op = Some(op);
        g.outcome = None;
        g.idle_since = None;
        g.dog = None;
        self.inactive.store(false, Ordering::SeqCst);
        self.done.store(false, Ordering::SeqCst);
        Ok(())
    }

    /// After the completion of a persistent request was reported: inactive again, with an
    /// empty outcome. Returns false (and does nothing) for a one-shot request.
    pub fn deactivate(&self) -> bool {
        if self.starter.is_none() {
            return false;
        }
        self.state.lock().outcome = Some(Ok(Completion::empty()));
        self.inactive.store(true, Ordering::SeqCst);
        true
    }

    /// With the profile record of a nonblocking collective (see [`crate::stats::profile`]).
    /// Marks the request as stepped by the program's calls only (see the field).
    pub fn caller_only(mut self) -> Request {
        self.caller_only = true;
        self
    }

    pub fn is_caller_only(&self) -> bool {
        self.caller_only
    }

    pub fn profiled(self, p: Option<crate::stats::profile::Pending>) -> Request {
        *self.profile.lock() = p;
        self
    }

    /// The profile record, taken by the wait or test that completes the request.
    pub fn take_profile(&self) -> Option<crate::stats::profile::Pending> {
        self.profile.lock().take()
    }

    /// An already completed request (e.g. a receive from `MPI_PROC_NULL`).
    pub fn completed(name: &'static str, comm: c_int, ep: Arc<Endpoint>, c: Completion) -> Request {
        Request {
            name,
            comm,
            collective: false,
            ep,
            done: AtomicBool::new(true),
            state: Mutex::new(State {
                op: None,
                outcome: Some(Ok(c)),
                idle_since: None,
                dog: None,
            }),
            profile: Mutex::new(None),
            starter: None,
            inactive: AtomicBool::new(false),
            caller_only: false,
        }
    }

    pub fn endpoint(&self) -> &Arc<Endpoint> {
        &self.ep
    }

    pub fn is_done(&self) -> bool {
        self.done.load(Ordering::SeqCst)
    }

    /// Steps the operation once unless another thread is stepping it; `last` is the poll
    /// before a sleep (drains links; runs the liveness checks when they are due). Returns
    /// whether anything moved (completion included).
    pub fn advance(&self, last: bool) -> bool {
        self.advance_as(last, false)
    }

    /// As [`Request::advance`], but waits (up to [`STEP_WAIT`]) for a thread stepping it to
    /// finish, then steps it:
    /// for `MPI_Test*`, whose caller may poll a bounded number of times and must not see a
    /// request stay incomplete only because the progress thread, preempted in the middle of a
    /// step (ranks outnumber cores), holds it. Nothing that steps a request waits for a lock
    /// a caller of `MPI_Test` holds.
    pub fn advance_waiting(&self, last: bool) -> bool {
        self.advance_as(last, true)
    }

    fn advance_as(&self, last: bool, wait: bool) -> bool {
        if self.is_done() {
            return false;
        }
        // The wait is bounded: a program function run inside a step (a generalized request's
        // query_fn) may itself call MPI_Test, which must not wait for its own caller.
        let Some(mut g) = (if wait {
            self.state.try_lock_for(STEP_WAIT)
        } else {
            self.state.try_lock()
        }) else {
            return false;
        };
        if self.is_done() {
            return false;
        }
        let st = &mut *g;
        let Some(op) = st.op.as_mut() else {
            return false;
        };
        let res = catch_unwind(AssertUnwindSafe(|| {
            let r = op.poll(last);
            match r {
                Ok(Step::Idle) if last => {
                    let since = *st.idle_since.get_or_insert_with(Instant::now);
                    let dog = st.dog.get_or_insert_with(Watchdog::new);
                    if dog.due() {
                        engine::check(&self.ep, &mut **op, dog, since)
                    } else {
                        Ok(Step::Idle)
                    }
                }
                r => r,
            }
        }))
        .unwrap_or_else(|p| Err(panic_error(p)));
        let outcome = match res {
            Ok(Step::Idle) => return false,
            Ok(Step::Moved) => {
                st.idle_since = None;
                return true;
            }
            Ok(Step::Done) => catch_unwind(AssertUnwindSafe(|| op.complete()))
                .unwrap_or_else(|p| Err(panic_error(p))),
            Err(e) => Err(op.failed(e)),
        };
        self.finish(st, outcome);
        true
    }

    /// `MPI_Cancel`: an operation that can still be cancelled completes as cancelled.
    pub fn cancel(&self) -> Result<()> {
        let mut g = self.state.lock();
        let st = &mut *g;
        let Some(op) = st.op.as_mut() else {
            return Ok(());
        };
        if let Some(c) = op.cancel()? {
            self.finish(st, Ok(c));
        }
        Ok(())
    }

    fn finish(&self, st: &mut State, outcome: Result<Completion>) {
        let outcome = outcome.map_err(|e| {
            let mut e = e;
            e.msg = format!("{}: {}", self.name, e.msg);
            e
        });
        st.op = None;
        st.outcome = Some(outcome);
        self.done.store(true, Ordering::SeqCst);
        // Whoever waits for this request sleeps on the doorbell.
        self.ep.bell().ring();
    }

    /// The outcome of a completed request (`None` while it is active).
    pub fn outcome(&self) -> Option<Result<Completion>> {
        if !self.is_done() {
            return None;
        }
        self.state.lock().outcome.clone()
    }
}

fn panic_error(p: Box<dyn std::any::Any + Send>) -> Error {
    let what = p
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    Error::intern(format!(
        "internal error (panic) in a nonblocking operation: {what}"
    ))
}

// ---------------------------------------------------------------------------------------------
// The handle table

struct Table {
    slots: Vec<Option<Arc<Request>>>,
    free: Vec<usize>,
}

static TABLE: Mutex<Table> = Mutex::new(Table {
    slots: Vec::new(),
    free: Vec::new(),
});

/// Registers a request; returns its handle.
pub fn insert(r: Arc<Request>) -> Result<c_int> {
    let mut t = TABLE.lock();
    let slot = match t.free.pop() {
        Some(i) => i,
        None => {
            if t.slots.len() >= MAX_SLOTS {
                return Err(Error::new(
                    Class::Intern,
                    format!("too many outstanding requests ({MAX_SLOTS})"),
                ));
            }
            t.slots.push(None);
            t.slots.len() - 1
        }
    };
    t.slots[slot] = Some(r);
    Ok(HANDLE_BASE | slot as c_int)
}

fn slot_of(h: c_int) -> Option<usize> {
    if h & !0x00ff_ffff != HANDLE_BASE {
        return None;
    }
    Some((h & 0x00ff_ffff) as usize)
}

/// The request behind a handle (`None` for `MPI_REQUEST_NULL`); an unknown handle is
/// `MPI_ERR_REQUEST` naming `what`.
pub fn get(h: c_int, what: &str) -> Result<Option<Arc<Request>>> {
    get_named(h, || what.to_string())
}

/// As [`get`], naming the argument only for an error message (`array_of_requests[i]` is
/// formatted only when element `i` is bad, not for every element of every `MPI_Waitall`).
pub fn get_named(h: c_int, what: impl FnOnce() -> String) -> Result<Option<Arc<Request>>> {
    if h == REQUEST_NULL {
        return Ok(None);
    }
    lookup(&TABLE.lock(), h, what)
}

/// The request behind a handle other than `MPI_REQUEST_NULL`, in the locked table.
fn lookup(t: &Table, h: c_int, what: impl FnOnce() -> String) -> Result<Option<Arc<Request>>> {
    slot_of(h)
        .and_then(|i| t.slots.get(i).cloned().flatten())
        .map(Some)
        .ok_or_else(|| {
            Error::new(
                Class::Request,
                format!("{} 0x{h:x} is not an active request", what()),
            )
        })
}

/// The requests behind `handles`, under one lock (`MPI_Waitall` over many); an unknown
/// handle is `MPI_ERR_REQUEST` naming element `i` as `what(i)`.
pub fn get_all(
    handles: impl Iterator<Item = c_int>,
    what: impl Fn(usize) -> String,
) -> Result<Vec<Option<Arc<Request>>>> {
    let t = TABLE.lock();
    handles
        .enumerate()
        .map(|(i, h)| match h {
            REQUEST_NULL => Ok(None),
            _ => lookup(&t, h, || what(i)),
        })
        .collect()
}

/// Releases a handle (after completion, or `MPI_Request_free`). An active request keeps
/// progressing until it completes.
pub fn remove(h: c_int) {
    if let Some(i) = slot_of(h) {
        let mut t = TABLE.lock();
        if let Some(s) = t.slots.get_mut(i) {
            if s.take().is_some() {
                t.free.push(i);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Rounds

thread_local! {
    /// The round this thread is stepping requests in (0: none), and the last number given out.
    static ROUND: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// One step of each request of a list, by one thread ([`round`]). Work that serves every
/// request of a kind at once — the matching pass over all posted receives — needs to run
/// only once per round: a request stepped later in the same round can leave it to the next
/// round, which every waiter runs before it sleeps (the doorbell catches what arrives after
/// that round's pass).
pub struct Round {
    prev: u64,
}

/// Starts a round on this thread; it ends when the guard drops.
pub fn round() -> Round {
    ROUND.with(|r| {
        let (prev, last) = r.get();
        r.set((last + 1, last + 1));
        Round { prev }
    })
}

/// This thread's current round, `None` outside one (every step must then do its own work).
pub fn current_round() -> Option<u64> {
    let cur = ROUND.with(|r| r.get().0);
    (cur != 0).then_some(cur)
}

impl Drop for Round {
    fn drop(&mut self) {
        ROUND.with(|r| r.set((self.prev, r.get().1)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_round_trip_and_are_reused() {
        let ep = Arc::new(Endpoint::singleton());
        let r = Arc::new(Request::completed("x", 0, ep, Completion::default()));
        let h = insert(r.clone()).unwrap();
        assert_ne!(h, REQUEST_NULL);
        assert!(Arc::ptr_eq(&get(h, "request").unwrap().unwrap(), &r));
        assert!(get(REQUEST_NULL, "request").unwrap().is_none());
        remove(h);
        assert!(get(h, "request").is_err());
        assert!(get(12345, "request").is_err());
        let h2 = insert(r).unwrap();
        remove(h2);
    }

    /// An op that completes at its first poll.
    struct Instant(Completion);
    impl Wait for Instant {
        fn poll(&mut self, _last: bool) -> Result<Step> {
            Ok(Step::Done)
        }
        fn describe(&self) -> String {
            "instant".into()
        }
        fn blocked_on(&self, _out: &mut Vec<usize>) {}
    }
    impl Op for Instant {
        fn complete(&mut self) -> Result<Completion> {
            Ok(self.0)
        }
    }

    #[test]
    fn persistent_requests_cycle_between_inactive_and_active() {
        let ep = Arc::new(Endpoint::singleton());
        let mut starts = 0;
        let done = Completion {
            source: 3,
            tag: 9,
            bytes: 12,
            ..Completion::empty()
        };
        let starter: Starter = Box::new(move || {
            starts += 1;
            Ok(Box::new(Instant(Completion {
                bytes: starts,
                ..done
            })) as Box<dyn Op>)
        });
        let r = Request::persistent("MPI_Send_init", 0, false, ep.clone(), starter);
        assert!(r.is_persistent() && r.is_inactive() && r.is_done());
        assert_eq!(r.outcome().unwrap().unwrap(), Completion::empty());
        for round in 1..=3u64 {
            r.start().unwrap();
            assert!(!r.is_inactive() && !r.is_done());
            assert_eq!(
                r.start().unwrap_err().class,
                Class::Request,
                "active: no second start"
            );
            assert!(r.advance(false));
            assert_eq!(r.outcome().unwrap().unwrap().bytes, round);
            assert!(r.deactivate());
            assert!(r.is_inactive());
            assert_eq!(r.outcome().unwrap().unwrap(), Completion::empty());
        }
        let one_shot = Request::completed("MPI_Isend", 0, ep, Completion::empty());
        assert_eq!(one_shot.start().unwrap_err().class, Class::Request);
        assert!(!one_shot.deactivate());
    }
}
