//! The engine: runs one collective's schedule of sends, receives and local steps to completion.
//!
//! An algorithm (in [`crate::coll`]) does not move bytes itself. It builds a [`Schedule`]: a list
//! of tasks, each with up to two dependencies on earlier tasks ("send chunk c of step s once
//! chunk c of step s-1 has been received and reduced"). The engine makes every runnable task
//! advance as far as the transports allow without blocking — sends and receives to all peers at
//! once, so a ring never deadlocks on full channels — and sleeps on the rank's doorbell when
//! nothing can move (spin briefly first; see [`crate::wait`]).
//!
//! Ordering rule: among the tasks that are ready, sends to one peer advance in schedule order,
//! one at a time per pass, and so do receives from one peer; algorithms post both sides of a
//! pair in the same order, so frames normally arrive in the order they are wanted and are
//! consumed straight out of the transport (zero extra copies). A send that becomes ready later
//! can still interleave its fragments with an earlier one's: frames are matched by tag, so that
//! is correct too (through the unexpected queue). Every frame carries its message's length, and
//! a receive that expects another length fails at once (mismatched counts) instead of waiting.
//!
//! A blocking collective's own thread drives its schedule ([`Schedule::run`]): it has nothing
//! else to do. A nonblocking one ([`crate::request`]) is stepped instead — [`Wait::poll`] is
//! non-blocking and resumable — by the progress thread and by `MPI_Wait`/`MPI_Test`, one at a
//! time under the request's lock. Buffers are raw pointers validated by the ABI layer; a
//! schedule owns the scratch buffers its algorithm made ([`Schedule::keep`]), so it can outlive
//! the call that built it.
//!
//! Failures: a wait that has made no progress for a while runs the checks of
//! [`crate::health`] (dead peers, failure notices, progress warnings, `HCOMM_TIMEOUT`), never
//! the hot path. A schedule that fails tells the other members of its communicator with a
//! failure notice, so that ranks waiting on a neighbour that gave up leave their call too.

use std::time::{Duration, Instant};

use crate::coll::Reduction;
use crate::endpoint::{Endpoint, MatchKey};
use crate::error::{Class, Error, Result};
use crate::frame::{FrameHeader, Signature, FLAG_CMA};
use crate::health::{self, Verdict, Watchdog};
use crate::transport::{CmaSend, CMA_PAYLOAD};

const NONE: u32 = u32::MAX;

/// What a receive does with incoming bytes.
#[derive(Clone, Copy, Debug)]
pub enum Fold {
    /// `dst = incoming`.
    Copy,
    /// `dst = incoming op with` (incoming is the earlier operand). `with` may equal `dst`.
    Before { red: Reduction, with: *const u8 },
    /// `dst = with op incoming` (incoming is the later operand). `with` may equal `dst`.
    After { red: Reduction, with: *const u8 },
}

#[derive(Debug)]
enum Task {
    Send {
        peer: usize,
        tag: u32,
        buf: *const u8,
        len: usize,
        done: usize,
        started: bool,
        /// Sent as a single copy: the ticket the peer acknowledges once it has read `buf`.
        ticket: Option<u64>,
        /// Where the bytes are also copied as they leave (null: nowhere), see
        /// [`Schedule::send_mirrored`].
        mirror: *mut u8,
        /// The fan-out group this send is a member of ([`Schedule::fanout`]), or `NONE`.
        group: u32,
    },
    Recv {
        peer: usize,
        tag: u32,
        dst: *mut u8,
        len: usize,
        done: usize,
        started: bool,
        fold: Fold,
        /// Received bytes of a partial element, when an element is larger than a fragment
        /// (a user op on a large derived type): reduced once the element is whole.
        carry: Vec<u8>,
    },
    /// `dst = src` (non-overlapping, or identical).
    Copy {
        dst: *mut u8,
        src: *const u8,
        len: usize,
    },
    /// `dst = a op b` over `count` elements (`dst` may equal `a` or `b`).
    Reduce {
        red: Reduction,
        dst: *mut u8,
        a: *const u8,
        b: *const u8,
        count: usize,
    },
}

/// Sends of one buffer to several peers through this process's fan-out stage
/// ([`Schedule::fanout`]): each fragment is copied into a stage piece once, by the first member
/// to send it, and the other members post the same piece.
#[derive(Debug)]
struct Fanout {
    /// Members (sends to peers whose link stages).
    members: u32,
    /// A member's peer (world rank): the stage is taken and released through its link.
    via: usize,
    /// Per fragment: the stage piece that holds it (`NONE`: none yet) and how many members
    /// have sent it (staged or not). A piece is taken for the members yet to send it.
    frags: Vec<(u32, u32)>,
}

/// Fragments smaller than this go through the slots even in a fan-out group: the stage's
/// bookkeeping would cost more than the copies it saves.
const STAGE_MIN_BYTES: usize = 4096;

struct Entry {
    task: Task,
    deps: [u32; 2],
    done: bool,
}

/// Comm-level context a schedule runs in.
pub struct Ctx<'a> {
    pub ep: &'a Endpoint,
    /// Comm rank → world rank.
    pub world: &'a [usize],
    /// This process's rank in the communicator (in its local group on an intercommunicator's
    /// bridge, whose `world` is the remote group): names this side of a mismatch.
    pub rank: usize,
    pub comm_id: u64,
    pub seq: u64,
    pub sig: Signature,
    /// Element extent: fragments carry whole elements.
    pub extent: usize,
}

pub struct Schedule<'a> {
    ctx: Ctx<'a>,
    /// The growable state, kept per thread between schedules ([`Vectors`]).
    v: Vectors,
    /// Tasks not yet complete.
    remaining: usize,
    built: bool,
    pass: u32,
    /// This rank's rank in the communicator (names the sides of a mismatch).
    me: usize,
    /// Sends from this task on may go as a single copy under `HCOMM_CMA=auto`
    /// ([`Schedule::single_copy`]).
    single_copy_from: Option<usize>,
}

/// A schedule's vectors. A finished schedule leaves them (emptied) in a per-thread pool for
/// the next one: a small collective builds and runs in a few hundred nanoseconds, and ten
/// allocations and frees were a large part of that.
#[derive(Default)]
struct Vectors {
    tasks: Vec<Entry>,
    /// Unmet dependency count per task.
    unmet: Vec<u8>,
    /// Dependents of task i: `dependents[dep_start[i]..dep_start[i + 1]]` (built on first pass).
    dep_start: Vec<u32>,
    dependents: Vec<u32>,
    /// Tasks whose dependencies are met and that are not complete, in schedule order. Only
    /// these are visited, so a pass costs what can move, not the whole schedule.
    active: Vec<u32>,
    newly_ready: Vec<u32>,
    /// Per comm peer: a send / receive to it has been visited in this pass.
    send_busy: Vec<u32>,
    recv_busy: Vec<u32>,
    /// Scratch buffers the tasks point into: moving a `Vec` keeps its heap block in place.
    keep: Vec<crate::scratch::Scratch>,
    /// Copies made once every task is complete (`dst`, `src`, bytes).
    at_end: Vec<(*mut u8, *const u8, usize)>,
    fanouts: Vec<Fanout>,
}

impl Vectors {
    /// Empties every vector, keeping its capacity. `keep` first: the scratch buffers go now
    /// (the tasks that pointed into them are done or dropped); then each receive's carry.
    fn clear(&mut self) {
        self.keep.clear();
        self.tasks.clear();
        self.unmet.clear();
        self.dep_start.clear();
        self.dependents.clear();
        self.active.clear();
        self.newly_ready.clear();
        self.send_busy.clear();
        self.recv_busy.clear();
        self.at_end.clear();
        self.fanouts.clear();
    }
}

/// Handle to a task, for dependencies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskId(u32);

/// Schedules alive at once on a thread (nonblocking collectives) beyond this many build their
/// vectors afresh; a schedule of more tasks than [`SPARE_MAX_TASKS`] returns them to the
/// allocator, so the pool stays small.
const SPARE_SETS: usize = 4;
const SPARE_MAX_TASKS: usize = 4096;

thread_local! {
    static SPARES: std::cell::RefCell<Vec<Vectors>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl<'a> Schedule<'a> {
    pub fn new(ctx: Ctx<'a>) -> Schedule<'a> {
        let (n, me) = (ctx.world.len(), ctx.rank);
        // `try_with`: during thread teardown the pool may be gone; build afresh then.
        let mut v = SPARES
            .try_with(|p| p.borrow_mut().pop())
            .ok()
            .flatten()
            .unwrap_or_default();
        v.send_busy.resize(n, 0);
        v.recv_busy.resize(n, 0);
        Schedule {
            ctx,
            v,
            remaining: 0,
            built: false,
            pass: 0,
            me,
            single_copy_from: None,
        }
    }

    /// Lets the large sends added from now on go as a single copy under `HCOMM_CMA=auto`
    /// (with `HCOMM_CMA=1` every send may): for the stages that only copy, where the
    /// receiver's one kernel copy replaces the sender's and the receiver's user copies.
    pub fn single_copy(&mut self) {
        self.single_copy_from.get_or_insert(self.v.tasks.len());
    }

    /// Takes ownership of a scratch buffer the tasks use, for as long as the schedule lives.
    pub fn keep(&mut self, v: crate::scratch::Scratch) {
        self.v.keep.push(v);
    }

    /// A copy made after every task has completed (e.g. a result that overwrites input other
    /// tasks still read). `dst` and `src` do not overlap, or are equal.
    pub fn copy_at_end(&mut self, dst: *mut u8, src: *const u8, len: usize) {
        self.v.at_end.push((dst, src, len));
    }

    fn push(&mut self, task: Task, deps: &[Option<TaskId>]) -> TaskId {
        let mut d = [NONE; 2];
        for (k, id) in deps.iter().flatten().enumerate() {
            assert!(k < 2, "at most two dependencies");
            d[k] = id.0;
        }
        self.v.tasks.push(Entry {
            task,
            deps: d,
            done: false,
        });
        TaskId(self.v.tasks.len() as u32 - 1)
    }

    /// Sends `len` bytes at `buf` to comm rank `peer`.
    pub fn send(
        &mut self,
        peer: usize,
        tag: u32,
        buf: *const u8,
        len: usize,
        deps: &[Option<TaskId>],
    ) -> TaskId {
        self.send_mirrored(peer, tag, buf, len, std::ptr::null_mut(), deps)
    }

    /// [`Schedule::send`] that also copies the bytes to `mirror` (`len` bytes, disjoint from
    /// `buf`), each fragment right after it left, while it is still in this core's cache: an
    /// out-of-place allgather's own block then crosses memory once for the peer and the
    /// output, where a separate copy read the whole block from memory a second time
    /// (docs/PERFORMANCE.md, "The own block").
    pub fn send_mirrored(
        &mut self,
        peer: usize,
        tag: u32,
        buf: *const u8,
        len: usize,
        mirror: *mut u8,
        deps: &[Option<TaskId>],
    ) -> TaskId {
        self.push_send(peer, tag, buf, len, mirror, NONE, deps)
    }

    #[allow(clippy::too_many_arguments)]
    fn push_send(
        &mut self,
        peer: usize,
        tag: u32,
        buf: *const u8,
        len: usize,
        mirror: *mut u8,
        group: u32,
        deps: &[Option<TaskId>],
    ) -> TaskId {
        self.push(
            Task::Send {
                peer,
                tag,
                buf,
                len,
                done: 0,
                started: false,
                ticket: None,
                mirror,
                group,
            },
            deps,
        )
    }

    /// A new fan-out group: the sends added to it with [`Schedule::send_fanout`] carry the
    /// same bytes to several peers, and go through this process's stage to the peers whose
    /// links have one — copied once for all of them, not once per peer.
    pub fn fanout(&mut self) -> u32 {
        self.v.fanouts.push(Fanout {
            members: 0,
            via: usize::MAX,
            frags: Vec::new(),
        });
        self.v.fanouts.len() as u32 - 1
    }

    /// [`Schedule::send_mirrored`] as a member of fan-out `group`: every member sends the same
    /// `len` bytes at `buf` (to a peer of its own; give one of them the mirror, if any).
    #[allow(clippy::too_many_arguments)]
    pub fn send_fanout(
        &mut self,
        group: u32,
        peer: usize,
        tag: u32,
        buf: *const u8,
        len: usize,
        mirror: *mut u8,
        deps: &[Option<TaskId>],
    ) -> TaskId {
        let world_peer = self.ctx.world[peer];
        // A peer whose link has no stage gets an ordinary send, outside the group.
        let member = self.ctx.ep.stages(world_peer);
        if member {
            let fan = &mut self.v.fanouts[group as usize];
            fan.members += 1;
            fan.via = world_peer;
        }
        let group = if member { group } else { NONE };
        self.push_send(peer, tag, buf, len, mirror, group, deps)
    }

    /// Receives `len` bytes from comm rank `peer` into `dst`, folding as `fold` says.
    pub fn recv(
        &mut self,
        peer: usize,
        tag: u32,
        dst: *mut u8,
        len: usize,
        fold: Fold,
        deps: &[Option<TaskId>],
    ) -> TaskId {
        self.push(
            Task::Recv {
                peer,
                tag,
                dst,
                len,
                done: 0,
                started: false,
                fold,
                carry: Vec::new(),
            },
            deps,
        )
    }

    /// Local copy, ordered by dependencies like the rest.
    pub fn copy(
        &mut self,
        dst: *mut u8,
        src: *const u8,
        len: usize,
        deps: &[Option<TaskId>],
    ) -> TaskId {
        self.push(Task::Copy { dst, src, len }, deps)
    }

    /// Local reduction `dst = a op b`, ordered by dependencies like the rest.
    #[allow(clippy::too_many_arguments)]
    pub fn reduce(
        &mut self,
        red: Reduction,
        dst: *mut u8,
        a: *const u8,
        b: *const u8,
        count: usize,
        deps: &[Option<TaskId>],
    ) -> TaskId {
        self.push(
            Task::Reduce {
                red,
                dst,
                a,
                b,
                count,
            },
            deps,
        )
    }

    pub fn is_empty(&self) -> bool {
        self.v.tasks.is_empty()
    }

    /// Runs every task to completion. On failure, the other members of the communicator get
    /// a failure notice with the error (unless one already reported this call's failure).
    pub fn run(mut self) -> Result<()> {
        let ep = self.ctx.ep;
        self.start()?;
        let Err(e) = drive(ep, &mut self) else {
            return Ok(());
        };
        Err(self.failed(e))
    }

    /// Before the first step: a peer already reported this communicator broken at or before
    /// this call, so fail before sending anything.
    pub fn start(&self) -> Result<()> {
        match self.ctx.ep.notices().find(self.ctx.comm_id, self.ctx.seq) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// After a step failed with `e`: the error to report (a peer's own report of this call's
    /// failure when there is one), the other members told with a failure notice otherwise.
    pub fn failed(&mut self, e: Error) -> Error {
        let ep = self.ctx.ep;
        let (id, seq) = (self.ctx.comm_id, self.ctx.seq);
        // A peer that failed first may have said why before its link broke (a closed TCP
        // connection is often a peer that gave up): take in what is there, prefer its word.
        for &peer in self.ctx.world {
            if peer != ep.rank {
                let _ = ep.drain(peer);
            }
        }
        if let Some(first) = ep.notices().find(id, seq) {
            return first;
        }
        ep.send_notice(self.ctx.world, id, seq, &e.msg);
        e
    }

    /// One polling step (see [`drive`]).
    fn step(&mut self, last: bool) -> Result<Step> {
        let ep = self.ctx.ep;
        let mut progressed = self.pass()?;
        if last && !progressed {
            // About to sleep: take in whatever peers have sent us (queued, copied). A peer
            // blocked sending to us — e.g. behind earlier point-to-point messages we have
            // not received yet — can then go on and make what we wait for.
            // Frames of this call are signature-checked on the way: a peer that made
            // another call may send us frames no receive of ours would ever look at.
            let key = MatchKey {
                comm_id: self.ctx.comm_id,
                seq: self.ctx.seq,
                tag: 0,
            };
            for (r, &peer) in self.ctx.world.iter().enumerate() {
                if peer != ep.rank {
                    progressed |= ep.drain_call(peer, key, &self.ctx.sig, (self.me, r))?;
                }
            }
        }
        if self.remaining == 0 && !self.v.at_end.is_empty() {
            for (dst, src, len) in std::mem::take(&mut self.v.at_end) {
                if len > 0 && !std::ptr::eq(dst, src) {
                    // SAFETY: the algorithm registered validated, non-overlapping ranges of
                    // the caller's buffers or of scratch this schedule keeps.
                    unsafe { std::ptr::copy_nonoverlapping(src, dst, len) };
                }
            }
        }
        Ok(if self.remaining == 0 {
            Step::Done
        } else if progressed {
            Step::Moved
        } else {
            Step::Idle
        })
    }

    /// Builds the dependents lists (compressed rows) and the first active set, in the
    /// schedule's own vectors (reused from an earlier schedule: no allocation when they fit).
    fn build(&mut self) {
        let n = self.v.tasks.len();
        let live = |e: &Entry| e.deps.into_iter().filter(|&d| d != NONE);
        self.v.unmet.clear();
        self.v
            .unmet
            .extend(self.v.tasks.iter().map(|e| live(e).count() as u8));
        let start = &mut self.v.dep_start;
        start.clear();
        start.resize(n + 1, 0);
        for e in &self.v.tasks {
            for d in live(e) {
                start[d as usize + 1] += 1;
            }
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        // Place each dependent at its task's cursor (start[d], advanced as it fills), then
        // shift the cursors back: start[d] ends at the old start[d + 1].
        self.v.dependents.clear();
        self.v.dependents.resize(start[n] as usize, 0);
        for (i, e) in self.v.tasks.iter().enumerate() {
            for d in live(e) {
                self.v.dependents[start[d as usize] as usize] = i as u32;
                start[d as usize] += 1;
            }
        }
        for i in (1..=n).rev() {
            start[i] = start[i - 1];
        }
        start[0] = 0;
        self.v.active.clear();
        self.v
            .active
            .extend((0..n as u32).filter(|&i| self.v.unmet[i as usize] == 0));
        self.remaining = n;
        self.built = true;
    }

    /// One pass over the active tasks; `true` if anything moved.
    fn pass(&mut self) -> Result<bool> {
        if !self.built {
            self.build();
        }
        self.pass = self.pass.wrapping_add(1);
        if self.pass == 0 {
            self.v.send_busy.fill(0);
            self.v.recv_busy.fill(0);
            self.pass = 1;
        }
        let mut progressed = false;
        let mut completed = false;
        for k in 0..self.v.active.len() {
            let i = self.v.active[k] as usize;
            if self.advance(i)? {
                progressed = true;
            }
            if self.v.tasks[i].done {
                completed = true;
                self.remaining -= 1;
                let (a, b) = (
                    self.v.dep_start[i] as usize,
                    self.v.dep_start[i + 1] as usize,
                );
                for &d in &self.v.dependents[a..b] {
                    self.v.unmet[d as usize] -= 1;
                    if self.v.unmet[d as usize] == 0 {
                        self.v.newly_ready.push(d);
                    }
                }
            }
        }
        if completed {
            let tasks = &self.v.tasks;
            self.v.active.retain(|&i| !tasks[i as usize].done);
            if !self.v.newly_ready.is_empty() {
                self.v.active.append(&mut self.v.newly_ready);
                // Schedule order decides which send (receive) to a peer goes first.
                self.v.active.sort_unstable();
            }
        }
        Ok(progressed || completed)
    }

    fn advance(&mut self, i: usize) -> Result<bool> {
        let (pass, me) = (self.pass, self.me);
        let ctx = &self.ctx;
        let entry = &mut self.v.tasks[i];
        match &mut entry.task {
            Task::Copy { dst, src, len } => {
                if *len > 0 && !std::ptr::eq(*dst, *src) {
                    // SAFETY: the algorithm built this copy from validated, non-overlapping
                    // ranges of the caller's buffers or its own scratch, alive for the call.
                    unsafe { std::ptr::copy_nonoverlapping(*src, *dst, *len) };
                }
                entry.done = true;
                Ok(true)
            }
            Task::Reduce {
                red,
                dst,
                a,
                b,
                count,
            } => {
                if *count > 0 {
                    // SAFETY: the algorithm built this step from validated ranges of `count`
                    // elements each; `dst` equals `a` or `b` or is disjoint from both.
                    unsafe { red.apply(*dst, *a, *b, *count) };
                }
                entry.done = true;
                Ok(true)
            }
            Task::Send {
                peer,
                tag,
                buf,
                len,
                done,
                started,
                ticket,
                mirror,
                group,
            } => {
                let world_peer = ctx.world[*peer];
                if let Some(t) = *ticket {
                    // Posted as a single copy: the buffer is ours again once the peer read it.
                    // Later sends to the peer need not wait for that.
                    if ctx.ep.cma_done(world_peer, t)? {
                        entry.done = true;
                        return Ok(true);
                    }
                    return Ok(false);
                }
                if self.v.send_busy[*peer] == pass {
                    return Ok(false);
                }
                self.v.send_busy[*peer] = pass;
                let mut hdr =
                    FrameHeader::new(&ctx.sig, ctx.comm_id, ctx.seq, *tag, ctx.ep.rank as u32);
                hdr.set_msg_len(*len as u64);
                let asked = self.single_copy_from.is_some_and(|from| i >= from);
                // A fan-out member never goes as a single copy: the stage pieces its group
                // takes count it as a reader until it posts them.
                if !*started && *group == NONE && *len >= cma_threshold() && may_single_copy(asked)
                {
                    match ctx.ep.try_send_cma(world_peer, &hdr, *buf, *len)? {
                        CmaSend::Posted(t) => {
                            // SAFETY: `mirror`, when set, is valid for `len` bytes and disjoint
                            // from `buf` (send_mirrored's contract); the peer only reads `buf`.
                            if !mirror.is_null() {
                                unsafe { std::ptr::copy_nonoverlapping(*buf, *mirror, *len) };
                            }
                            *ticket = Some(t);
                            *started = true;
                            *done = *len;
                            self.v.send_busy[*peer] = 0;
                            return Ok(true);
                        }
                        CmaSend::Full => return Ok(false),
                        CmaSend::No => {}
                    }
                }
                let max = frag_limit(ctx.ep.max_payload(world_peer)?, ctx.extent);
                let mut moved = false;
                while *done < *len || !*started {
                    let n = (*len - *done).min(max);
                    hdr.offset = *done as u64;
                    let payload: &[u8] = if n == 0 {
                        &[]
                    } else {
                        // SAFETY: buf..buf+len is a live range of the caller's buffer or scratch.
                        unsafe { std::slice::from_raw_parts(buf.add(*done), n) }
                    };
                    let sent = if *group != NONE && n >= STAGE_MIN_BYTES {
                        let fan = &mut self.v.fanouts[*group as usize];
                        let f = *done / max;
                        if fan.frags.len() <= f {
                            fan.frags.resize(len.div_ceil(max), (NONE, 0));
                        }
                        let (piece, sent_by) = &mut fan.frags[f];
                        if *piece == NONE {
                            if let Some((p, at)) =
                                ctx.ep.stage_take(world_peer, fan.members - *sent_by)?
                            {
                                // SAFETY: the piece holds slot_bytes >= max >= n bytes and is
                                // ours until its readers have read it; `payload` is the
                                // caller's buffer, not shared memory.
                                unsafe { std::ptr::copy_nonoverlapping(payload.as_ptr(), at, n) };
                                *piece = p;
                                crate::transport::BYTES_STAGED
                                    .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
                            }
                        }
                        let sent = if *piece != NONE {
                            ctx.ep.try_send_staged(world_peer, &hdr, *piece, n)?
                        } else {
                            // No free piece: this member's copy goes through the slots.
                            let sent = ctx.ep.try_send(world_peer, &hdr, payload)?;
                            if sent {
                                crate::transport::STAGE_FULL
                                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            }
                            sent
                        };
                        if sent {
                            *sent_by += 1;
                        }
                        sent
                    } else {
                        ctx.ep.try_send(world_peer, &hdr, payload)?
                    };
                    if !sent {
                        break;
                    }
                    if !mirror.is_null() && n > 0 {
                        // SAFETY: `mirror` is valid for `len` bytes and disjoint from `buf`
                        // (send_mirrored's contract); `done + n <= len`.
                        unsafe {
                            std::ptr::copy_nonoverlapping(payload.as_ptr(), mirror.add(*done), n)
                        };
                    }
                    *started = true;
                    *done += n;
                    moved = true;
                }
                if *done == *len && *started {
                    entry.done = true;
                    // The next send to this peer may start in this same pass.
                    self.v.send_busy[*peer] = 0;
                }
                Ok(moved)
            }
            Task::Recv {
                peer,
                tag,
                dst,
                len,
                done,
                started,
                fold,
                carry,
            } => {
                if self.v.recv_busy[*peer] == pass {
                    return Ok(false);
                }
                self.v.recv_busy[*peer] = pass;
                let world_peer = ctx.world[*peer];
                let key = MatchKey {
                    comm_id: ctx.comm_id,
                    seq: ctx.seq,
                    tag: *tag,
                };
                let extent = ctx.extent;
                let (dst, len, fold) = (*dst, *len, *fold);
                let ranks = (me, *peer);
                let mut consume = |hdr: &FrameHeader, payload: &[u8]| -> Result<bool> {
                    let n = payload.len();
                    let cma_ticket = (hdr.flags & FLAG_CMA != 0 && n == CMA_PAYLOAD)
                        .then(|| u64::from_le_bytes(payload[8..].try_into().expect("8 bytes")));
                    let refuse = |e: Error| -> Result<bool> {
                        // A single copy we refuse still releases the sender, as a copy
                        // through the slots would have: only this side's call fails.
                        if let Some(t) = cma_ticket {
                            ctx.ep.cma_ack(world_peer, t)?;
                        }
                        Err(e)
                    };
                    if hdr.msg_len() != len as u64 {
                        return refuse(Error::new(
                            Class::Truncate,
                            format!(
                                "message size mismatch in {} on {} ({}): rank {} sends {} bytes where rank {me} expects {len}: were the counts and datatypes consistent on every rank?",
                                health::call_text(&ctx.sig),
                                health::comm_label(ctx.comm_id),
                                health::call_label(ctx.seq),
                                ranks.1,
                                hdr.msg_len()
                            ),
                        ));
                    }
                    if hdr.flags & FLAG_CMA != 0 {
                        if *started || hdr.offset != 0 || n != CMA_PAYLOAD {
                            return refuse(Error::other(format!(
                                "unexpected single-copy frame from rank {world_peer} ({n} bytes at offset {}, {} bytes received before)",
                                hdr.offset, *done
                            )));
                        }
                        let addr = u64::from_le_bytes(payload[..8].try_into().expect("8 bytes"));
                        let t = cma_ticket.expect("checked: a single-copy payload");
                        // SAFETY: dst..dst+len is the receive range; `with` ranges are
                        // parallel to it (the algorithm's contract, as for fragments).
                        if !unsafe { cma_fold(ctx.ep, world_peer, addr, dst, len, fold, extent)? } {
                            // The sender died after posting: this receive never completes,
                            // and the liveness checks of the wait name the lost rank, as when
                            // a sender dies before its fragments arrive.
                            return Ok(false);
                        }
                        ctx.ep.cma_ack(world_peer, t)?;
                        *done = len;
                        *started = true;
                        return Ok(false);
                    }
                    if hdr.offset as usize != *done || *done + n > len {
                        return Err(Error::other(format!(
                            "unexpected fragment from rank {world_peer}: {n} bytes at offset {} of a {len}-byte message (have {}): were the counts equal on every rank?",
                            hdr.offset, *done
                        )));
                    }
                    if matches!(fold, Fold::Copy) || (carry.is_empty() && n % extent == 0) {
                        // SAFETY: dst+done..dst+done+n lies inside the receive range (checked
                        // above); `with` ranges are parallel to dst ranges of the same length.
                        unsafe { apply(fold, dst.add(*done), payload, *done, extent) };
                    } else {
                        // Elements straddle fragments: reduce whole elements only.
                        carry.extend_from_slice(payload);
                        let whole = carry.len() / extent * extent;
                        if whole > 0 {
                            let at = *done + n - carry.len();
                            // SAFETY: `at..at+whole` lies inside the receive range: the carried
                            // bytes are the last `carry.len()` bytes received, ending at done+n.
                            unsafe { apply(fold, dst.add(at), &carry[..whole], at, extent) };
                            carry.drain(..whole);
                        }
                    }
                    *done += n;
                    *started = true;
                    Ok(*done < len)
                };
                let moved = ctx
                    .ep
                    .poll_recv(world_peer, key, &ctx.sig, ranks, &mut consume)?;
                if *done == len && *started {
                    entry.done = true;
                    self.v.recv_busy[*peer] = 0;
                }
                Ok(moved)
            }
        }
    }
}

/// What one polling step of a wait achieved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Finished: stop waiting.
    Done,
    /// Something moved: poll again at once.
    Moved,
    /// Nothing could move now.
    Idle,
}

/// A wait the engine can drive: a schedule, or a point-to-point operation.
pub trait Wait {
    /// One polling step: `last` is the last poll before a sleep (a stalled sender drains its
    /// links there).
    fn poll(&mut self, last: bool) -> Result<Step>;
    /// The call, for messages: `MPI_Allreduce(count=10, MPI_FLOAT, MPI_SUM) on
    /// MPI_COMM_WORLD (call 17)`.
    fn describe(&self) -> String;
    /// The world ranks this wait needs something from now (data to receive, room to send).
    fn blocked_on(&self, out: &mut Vec<usize>);
    /// A failure a peer reported that ends this wait.
    fn noticed(&self) -> Option<Error> {
        None
    }
}

impl Wait for Schedule<'_> {
    fn poll(&mut self, last: bool) -> Result<Step> {
        self.step(last)
    }

    fn describe(&self) -> String {
        format!(
            "{} on {} ({})",
            health::call_text(&self.ctx.sig),
            health::comm_label(self.ctx.comm_id),
            health::call_label(self.ctx.seq)
        )
    }

    fn blocked_on(&self, out: &mut Vec<usize>) {
        for &i in &self.v.active {
            let e = &self.v.tasks[i as usize];
            if e.done {
                continue;
            }
            if let Task::Send { peer, .. } | Task::Recv { peer, .. } = e.task {
                let w = self.ctx.world[peer];
                if !out.contains(&w) {
                    out.push(w);
                }
            }
        }
    }

    fn noticed(&self) -> Option<Error> {
        self.ctx.ep.notices().find(self.ctx.comm_id, self.ctx.seq)
    }
}

/// A [`Wait`] made of closures (point-to-point operations).
pub struct FnWait<P, D, B> {
    pub poll: P,
    pub describe: D,
    pub blocked_on: B,
}

impl<P, D, B> Wait for FnWait<P, D, B>
where
    P: FnMut(bool) -> Result<Step>,
    D: Fn() -> String,
    B: Fn(&mut Vec<usize>),
{
    fn poll(&mut self, last: bool) -> Result<Step> {
        (self.poll)(last)
    }
    fn describe(&self) -> String {
        (self.describe)()
    }
    fn blocked_on(&self, out: &mut Vec<usize>) {
        (self.blocked_on)(out)
    }
}

/// The one waiting loop (schedules, point-to-point): polls `w` until it returns
/// [`Step::Done`]; while nothing moves it polls (spinning, then yielding: see
/// [`crate::wait::keep_polling`]), then sleeps on the rank's doorbell (100 ms timeout) with
/// the protocol of [`crate::wait`]. A wait that has made no progress for
/// [`health::CHECK_EVERY`] runs [`check`] between sleeps.
pub fn drive<W: Wait + ?Sized>(ep: &Endpoint, w: &mut W) -> Result<()> {
    let bell = ep.bell();
    let spin = ep.spin;
    let mut idle_since: Option<Instant> = None;
    let mut watchdog: Option<Watchdog> = None;
    loop {
        // Acknowledgements of synchronous messages this rank matched wait for room on their
        // link; whatever this rank waits for, its peer may be waiting for one of them.
        ep.p2p_flush_acks();
        match w.poll(false)? {
            Step::Done => return Ok(()),
            Step::Moved => {
                idle_since = None;
                continue;
            }
            Step::Idle => {}
        }
        let since = *idle_since.get_or_insert_with(Instant::now);
        if crate::wait::keep_polling(since.elapsed(), spin) {
            continue;
        }
        let seen = bell.begin_sleep();
        let res = w.poll(true);
        // Without a progress thread, outstanding requests move here too (MPI's progress rule).
        if let Ok(Step::Idle) = res {
            if !crate::progress::step_others() {
                bell.sleep(seen, Duration::from_millis(100));
            }
        }
        bell.end_sleep();
        let step = match res? {
            Step::Idle => {
                let dog = watchdog.get_or_insert_with(Watchdog::new);
                if dog.due() {
                    check(ep, w, dog, since)?
                } else {
                    Step::Idle
                }
            }
            s => s,
        };
        match step {
            Step::Done => return Ok(()),
            Step::Moved => idle_since = None,
            Step::Idle => {}
        }
    }
}

/// The slow path of a stalled wait: failure notices, dead peers, progress warnings and
/// `HCOMM_TIMEOUT` (see [`crate::health`]).
#[cold]
pub(crate) fn check<W: Wait + ?Sized>(
    ep: &Endpoint,
    w: &mut W,
    dog: &mut Watchdog,
    since: Instant,
) -> Result<Step> {
    if let Some(e) = w.noticed() {
        return Err(e);
    }
    let mut blocked = Vec::new();
    w.blocked_on(&mut blocked);
    let lost = ep.lost_peers(Some(&blocked));
    if !lost.is_empty() {
        // What they sent before they ended is still in the channels: look once more.
        match w.poll(true)? {
            Step::Idle => {}
            s => return Ok(s),
        }
        if let Some(e) = w.noticed() {
            return Err(e);
        }
        let what: Vec<String> = lost
            .iter()
            .map(|(rank, how)| format!("{}: {how}", ep.peer_label(*rank)))
            .collect();
        return Err(Error::other(format!(
            "lost {}; during {}",
            what.join("; "),
            w.describe()
        )));
    }
    let waiting_for = || {
        if blocked.is_empty() {
            "nothing (a thread of this process?)".to_string()
        } else {
            blocked
                .iter()
                .map(|&r| ep.peer_label(r))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    match dog.progress(since) {
        Verdict::Fine => Ok(Step::Idle),
        Verdict::Warn(t) => {
            crate::warn!(
                "no progress for {:.1} s in {}: waiting for {}, alive but not taking part (stopped, busy, or in another call?); HCOMM_TIMEOUT makes this an error",
                t.as_secs_f64(),
                w.describe(),
                waiting_for()
            );
            Ok(Step::Idle)
        }
        Verdict::TimedOut(t) => Err(Error::other(format!(
            "timed out after {:.1} s without progress (HCOMM_TIMEOUT) in {}: waiting for {}",
            t.as_secs_f64(),
            w.describe(),
            waiting_for()
        ))),
    }
}

/// Largest fragment: whole elements when an element fits, else the transport's limit (the
/// receiver then reassembles elements before reducing them).
fn frag_limit(max_payload: usize, extent: usize) -> usize {
    if extent > max_payload {
        max_payload
    } else {
        max_payload / extent * extent
    }
}

/// Whether a send that was (`asked`) or was not added after [`Schedule::single_copy`] may go as
/// one, by `HCOMM_CMA`.
fn may_single_copy(asked: bool) -> bool {
    match crate::param::cma() {
        crate::param::CmaMode::All => true,
        crate::param::CmaMode::Copies | crate::param::CmaMode::Auto => asked,
        crate::param::CmaMode::Off => false,
    }
}

/// The smallest send a schedule may make as a single copy without being asked to
/// (`HCOMM_CMA=1`: `HCOMM_CMA_BYTES`); `None` when none goes so unasked. The allocation-free
/// small paths, which never send single copies, stay below it, so they still send the
/// schedules' frames.
pub(crate) fn unasked_single_copy_from() -> Option<usize> {
    may_single_copy(false).then(cma_threshold)
}

/// Messages of at least this many bytes go as a single copy where the link allows it
/// (`HCOMM_CMA_BYTES`; `HCOMM_CMA=0` turns the single copy off at setup instead).
fn cma_threshold() -> usize {
    crate::param::cma_bytes()
        .unwrap_or(DEFAULT_CMA_BYTES)
        .max(1)
}

/// See [`cma_threshold`]; measured in docs/PERFORMANCE.md ("Single copy").
pub const DEFAULT_CMA_BYTES: usize = 64 << 10;

/// Reductions read a single-copy message in pieces of about this size into a buffer that stays
/// in cache, and fold each piece from there: the message's bytes cross memory once.
const CMA_PIECE: usize = 64 << 10;

thread_local! {
    static BOUNCE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Receives a single-copy message: the `len` bytes at `addr` in world rank `peer`, folded into
/// `dst` as `fold` says — read straight into `dst` for a copy, through a cache-sized buffer
/// for a reduction. `Ok(false)`: the sender's process is gone.
///
/// # Safety
/// As [`apply`] for the whole message: `dst` valid for `len` bytes, `with` ranges parallel.
unsafe fn cma_fold(
    ep: &Endpoint,
    peer: usize,
    addr: u64,
    dst: *mut u8,
    len: usize,
    fold: Fold,
    extent: usize,
) -> Result<bool> {
    if len == 0 {
        return Ok(true);
    }
    if let Fold::Copy = fold {
        // SAFETY: dst is valid for len bytes (the caller's contract).
        return unsafe { ep.cma_read(peer, addr, dst, len) };
    }
    // Whole elements per piece, so each piece reduces on its own.
    let piece = (CMA_PIECE / extent).max(1) * extent;
    BOUNCE.with(|b| {
        let mut b = b.borrow_mut();
        if b.len() < piece {
            b.resize(piece, 0);
        }
        let mut off = 0;
        while off < len {
            let k = piece.min(len - off);
            // SAFETY: the bounce buffer holds at least `piece` >= k bytes.
            if !unsafe { ep.cma_read(peer, addr + off as u64, b.as_mut_ptr(), k)? } {
                return Ok(false);
            }
            // SAFETY: dst+off..dst+off+k lies in the receive range; k is whole elements
            // (len is, and so is every piece but possibly the last, which ends at len).
            unsafe { apply(fold, dst.add(off), &b[..k], off, extent) };
            off += k;
        }
        Ok(true)
    })
}

/// Applies one fragment.
///
/// # Safety
/// `dst` is valid for `payload.len()` bytes of writing; for the reducing folds, `with + offset`
/// is valid for as many bytes of reading and is either `dst`'s range or disjoint from it.
unsafe fn apply(fold: Fold, dst: *mut u8, payload: &[u8], offset: usize, extent: usize) {
    let n = payload.len();
    if n == 0 {
        return;
    }
    match fold {
        Fold::Copy => std::ptr::copy_nonoverlapping(payload.as_ptr(), dst, n),
        Fold::Before { red, with } => {
            red.apply(dst, payload.as_ptr(), with.add(offset), n / extent)
        }
        Fold::After { red, with } => red.apply(dst, with.add(offset), payload.as_ptr(), n / extent),
    }
}

impl Drop for Schedule<'_> {
    /// Gives back the stage pieces members of a fan-out will never send (a schedule that
    /// failed, or was dropped unfinished), then returns the (emptied) vectors to this thread's
    /// pool.
    fn drop(&mut self) {
        for fan in &self.v.fanouts {
            for &(piece, sent_by) in &fan.frags {
                if piece != NONE && sent_by < fan.members {
                    self.ctx
                        .ep
                        .stage_release(fan.via, piece, fan.members - sent_by);
                }
            }
        }
        if self.v.tasks.capacity() > SPARE_MAX_TASKS {
            return;
        }
        let mut v = std::mem::take(&mut self.v);
        v.clear();
        let _ = SPARES.try_with(|p| {
            let mut p = p.borrow_mut();
            if p.len() < SPARE_SETS {
                p.push(v);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_hold_whole_elements() {
        assert_eq!(frag_limit(131072, 16), 131072);
        assert_eq!(frag_limit(100, 16), 96);
        assert_eq!(frag_limit(8, 16), 8);
        assert_eq!(frag_limit(4096, 1), 4096);
    }
}
