//! Point-to-point messaging: `MPI_Send`, `MPI_Recv`, `MPI_Sendrecv`, `MPI_Probe`, the
//! synchronous mode ([`Mode`]), matched probe ([`Matched`]) and `MPI_Isendrecv` ([`SendrecvOp`]).
//!
//! A message travels as one or more [`Kind::P2p`](crate::frame::Kind) frames over the same
//! links as collective frames (the header fields are described in [`crate::frame`]). The first
//! fragment (`offset == 0`) carries the envelope — communicator, tag, the sender's rank, the
//! total length — and every fragment carries the message's number (`seq`, counted per
//! sender–destination pair), so fragments of concurrent messages (two threads sending to the
//! same rank) can interleave on a link and still be told apart.
//!
//! Matching ([`matching`]): the first fragments that have arrived from a source — in its
//! unexpected queue, then on the link, queueing whatever else is read on the way — are walked
//! oldest first, each going to the earliest receive (in posting order) that its communicator
//! and tag accept. Links and queues keep arrival order, and a sender posts its messages' first
//! fragments in call order, so messages from one source are matched in the order they were
//! sent against receives in the order they were posted (MPI's non-overtaking rule). Once a
//! message is claimed, its other fragments are collected by `seq` from that source alone.
//! `MPI_ANY_SOURCE` looks first at the member with the earliest-queued message it accepts
//! (queued frames carry an arrival stamp), then at every member's link starting at a rotating
//! one, so no source starves. A probe finds a message the same way but leaves it queued, so the
//! receive that follows gets the same one.
//!
//! Sending posts fragments as the link has room: a small message completes at once (eager), a
//! large one as the receiver drains the link. A sender that has to wait for room drains *all*
//! its links into the unexpected queues before it sleeps, so two ranks that send to each other
//! first — or a ring of them — cannot deadlock on full links: the data waits in the
//! receivers' queues instead (MPI promises this only for small messages; here it holds for any
//! size, at the cost of a copy). `MPI_Sendrecv` advances its send and its receive in one loop,
//! so the classic ring exchange streams straight from link to buffer with no extra copy.
//! A message to oneself goes straight into one's own queue.
//!
//! Truncation: when the message is longer than the receive buffer, the receive stores what
//! fits, discards the rest of the message (every fragment is consumed, so the link stays in
//! order) and reports [`Received::truncated`]; the ABI layer turns that into
//! `MPI_ERR_TRUNCATE`.
//!
//! Nonblocking (`MPI_Isend`, `MPI_Irecv`): an `Isend` posts its first fragment before it
//! returns (waiting for room if it must, draining its links meanwhile like a blocking send), so
//! messages leave in call order; the rest goes out as the request is stepped. An `Irecv` that
//! finds no message at once is *posted* ([`POSTED`]). Every matching pass — of an `Irecv`'s
//! start, of any thread stepping a posted receive (the caller's `MPI_Wait`/`MPI_Test`, the
//! progress thread; once per round of its steps), of a blocking receive while receives are
//! posted, of a sender whose link is full — runs under that list's lock over all the posted
//! receives in posting order, a blocking receive last; so an `Irecv` is never overtaken by a
//! later receive, whoever does the matching. An `Irecv` behind others starts without a pass
//! when it can ([`claim_queued`]): from the queued messages only, and only one no earlier
//! receive accepts. A posted receive that has
//! claimed nothing can be cancelled.
//!
//! Synchronous mode (`MPI_Ssend`, `MPI_Issend`): the first fragment carries
//! [`FLAG_SYNC`]; whichever receive or matched probe claims the message owes the sender an
//! acknowledgement ([`FrameHeader::p2p_ack`]). The claim happens under the source's lock, where
//! nothing may be sent (the message may be the rank's own, or the link full), so the
//! acknowledgement is queued on the endpoint and sent right after the matching pass, or by
//! the next wait of any kind (every [`drive`] and progress loop flushes what is owed). The send
//! completes when every fragment is out and the acknowledgement is in.
//!
//! Waiting uses the engine's spin-then-sleep loop ([`crate::engine::drive`]) on the rank's
//! doorbell. Nothing here holds a lock across a wait, so threads may send and receive
//! concurrently (on different communicators or tags, as MPI requires for determinism).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::comm::Comm;
use crate::datatype::Datatype;
use crate::endpoint::{Endpoint, P2pKey};
use crate::engine::{drive, FnWait, Step, Wait};
use crate::error::{Error, Result};
use crate::frame::{FrameHeader, FLAG_SYNC};
use crate::request::{Completion, Op};

mod matched;
mod matching;
mod pair;
pub use matched::{imrecv, mprobe, mrecv, Matched, MrecvOp};
use matching::{match_in_order, Matcher};
pub use pair::SendrecvOp;

/// Largest fragment a rank queues for itself (the header's `len` is 32 bits).
const LOCAL_FRAG: usize = 16 << 20;

/// Where a receive or probe takes messages from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `MPI_ANY_SOURCE`.
    Any,
    /// A rank of the communicator.
    Rank(usize),
}

/// A message to send: a contiguous buffer.
#[derive(Clone, Copy, Debug)]
pub struct Outgoing {
    pub buf: *const u8,
    /// Bytes in the buffer (count × extent).
    pub len: usize,
    /// Size in MPI's sense (count × type size): what the receiver's status reports.
    pub mpi_bytes: u64,
    /// The datatype handle (carried for diagnostics).
    pub dtype: u32,
}

/// A receive buffer.
#[derive(Clone, Copy, Debug)]
pub struct Incoming {
    pub buf: *mut u8,
    /// Room in bytes (count × extent).
    pub cap: usize,
    pub dt: Datatype,
}

/// What a status reports about a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Envelope {
    /// The sender's rank in the communicator.
    pub source: i32,
    pub tag: i32,
    /// Size in MPI's sense (the status count, in bytes).
    pub mpi_bytes: u64,
    /// Bytes on the wire.
    pub wire_bytes: u64,
}

/// A completed receive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Received {
    pub env: Envelope,
    /// The status count in bytes: the message's size, or what was stored when truncated.
    pub bytes: u64,
    /// Bytes stored in the receive buffer.
    pub stored: usize,
    pub truncated: bool,
}

impl Envelope {
    fn of(h: &FrameHeader) -> Envelope {
        Envelope {
            source: h.root,
            tag: h.tag as i32,
            mpi_bytes: h.p2p_mpi_bytes(),
            wire_bytes: h.count,
        }
    }
}

/// A point-to-point wait, for [`drive`]: `poll`, plus what it is for (in messages about
/// stalled waits and lost peers) — a send to `dest` and/or a receive from `source`.
fn wait_for<'c, P: FnMut(bool) -> Result<Step>>(
    comm: &'c Comm,
    what: &'static str,
    dest: Option<usize>,
    source: Option<Source>,
    poll: P,
) -> FnWait<P, impl Fn() -> String + 'c, impl Fn(&mut Vec<usize>) + 'c> {
    FnWait {
        poll,
        describe: move || {
            let mut s = format!("{what} on {}", crate::health::comm_label(comm.id));
            if let Some(d) = dest {
                s += &format!(", sending to rank {d}");
            }
            match source {
                Some(Source::Rank(r)) => s += &format!(", receiving from rank {r}"),
                Some(Source::Any) => s += ", receiving from any rank",
                None => {}
            }
            s
        },
        blocked_on: move |out: &mut Vec<usize>| {
            out.extend(dest.map(|d| comm.world[d]));
            match source {
                Some(Source::Rank(r)) => out.push(comm.world[r]),
                Some(Source::Any) => out.extend(comm.world.iter().copied()),
                None => {}
            }
        },
    }
}

/// How a send completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Once every fragment is posted (`MPI_Send`, `MPI_Rsend`, and the buffered sends, which
    /// send from the attached buffer).
    Standard,
    /// Once, besides, the receiver has matched the message (`MPI_Ssend`): it acknowledges.
    Synchronous,
}

/// `MPI_Send` (`MPI_Ssend` for [`Mode::Synchronous`]) to comm rank `dest`: returns once every
/// fragment is posted (and, synchronous, the match acknowledged).
pub fn send(comm: &Comm, dest: usize, tag: u32, msg: &Outgoing, mode: Mode) -> Result<()> {
    let mut op = SendOp::new(comm, dest, tag, msg, mode)?;
    let what = match mode {
        Mode::Standard => "MPI_Send",
        Mode::Synchronous => "MPI_Ssend",
    };
    drive(
        &comm.ep,
        &mut wait_for(comm, what, Some(dest), None, |idle| {
            let moved = op.advance(idle)?;
            Ok(step_of(op.finished(), moved))
        }),
    )
}

/// `MPI_Recv`.
pub fn recv(comm: &Comm, source: Source, tag: Option<u32>, into: &Incoming) -> Result<Received> {
    let mut op = RecvOp::new(comm, source, tag, into);
    drive(
        &comm.ep,
        &mut wait_for(comm, "MPI_Recv", None, Some(source), |_| {
            let moved = op.advance()?;
            Ok(step_of(op.result.is_some(), moved))
        }),
    )?;
    Ok(op.result.expect("finished"))
}

/// `MPI_Sendrecv`: the send (to `dest`, `None` for `MPI_PROC_NULL`) and the receive (from
/// `source`, `None` for `MPI_PROC_NULL`) progress together in one loop. Returns the receive's
/// result (`None` when there was no receive).
pub fn sendrecv(
    comm: &Comm,
    send: Option<(usize, u32, &Outgoing)>,
    recv: Option<(Source, Option<u32>, &Incoming)>,
) -> Result<Option<Received>> {
    let mut s = match send {
        Some((dest, tag, msg)) => Some(SendOp::new(comm, dest, tag, msg, Mode::Standard)?),
        None => None,
    };
    if let Some(s) = s.as_mut() {
        s.drain_peer = false;
    }
    let mut r = recv.map(|(src, tag, into)| RecvOp::new(comm, src, tag, into));
    let (dest, source) = (send.map(|s| s.0), recv.map(|r| r.0));
    drive(
        &comm.ep,
        &mut wait_for(comm, "MPI_Sendrecv", dest, source, |idle| {
            let mut moved = false;
            let mut done = true;
            // Send first: a drain it does before sleeping may queue what the receive wants.
            if let Some(s) = s.as_mut() {
                moved |= s.advance(idle)?;
                done &= s.finished();
            }
            if let Some(r) = r.as_mut() {
                moved |= r.advance()?;
                done &= r.result.is_some();
            }
            Ok(step_of(done, moved))
        }),
    )?;
    Ok(r.map(|r| r.result.expect("finished")))
}

/// Many sends and receives on `comm` that progress together in one loop (the point-to-point
/// part of collectives whose peers are not this rank's own group, such as those of
/// intercommunicators): returns once every send is posted and every receive has its message,
/// the receives' results in order. `what` names the call in messages about a stalled wait.
pub fn exchange(
    comm: &Comm,
    what: &'static str,
    sends: &[(usize, u32, Outgoing)],
    recvs: &[(usize, u32, Incoming)],
) -> Result<Vec<Received>> {
    let mut s: Vec<SendOp> = sends
        .iter()
        .map(|(dest, tag, msg)| {
            let mut op = SendOp::new(comm, *dest, *tag, msg, Mode::Standard)?;
            op.drain_peer = false;
            Ok(op)
        })
        .collect::<Result<_>>()?;
    let mut r: Vec<RecvOp> = recvs
        .iter()
        .map(|(src, tag, into)| RecvOp::new(comm, Source::Rank(*src), Some(*tag), into))
        .collect();
    let mut w = FnWait {
        poll: |idle: bool| {
            let (mut moved, mut done) = (false, true);
            // Sends first, as in `sendrecv`: a drain a send does may queue what a receive wants.
            for op in s.iter_mut().filter(|op| !op.finished()) {
                moved |= op.advance(idle)?;
                done &= op.finished();
            }
            for op in r.iter_mut().filter(|op| op.result.is_none()) {
                moved |= op.advance()?;
                done &= op.result.is_some();
            }
            Ok(step_of(done, moved))
        },
        describe: || {
            format!(
                "{what} on {}, sending to {} and receiving from {} ranks",
                crate::health::comm_label(comm.id),
                sends.len(),
                recvs.len()
            )
        },
        blocked_on: |out: &mut Vec<usize>| {
            out.extend(sends.iter().map(|(d, _, _)| comm.world[*d]));
            out.extend(recvs.iter().map(|(s, _, _)| comm.world[*s]));
        },
    };
    drive(&comm.ep, &mut w)?;
    Ok(r.into_iter()
        .map(|op| op.result.expect("finished"))
        .collect())
}

/// `MPI_Probe` (`blocking`) / `MPI_Iprobe`: the envelope of the message a receive with the same
/// arguments would take next, left in place. `None`: nothing yet (only when not blocking).
pub fn probe(
    comm: &Comm,
    source: Source,
    tag: Option<u32>,
    blocking: bool,
) -> Result<Option<Envelope>> {
    let key = P2pKey {
        comm_id: comm.id,
        tag,
    };
    let ep = &*comm.ep;
    let mut rotate = 0;
    let mut found = None;
    let mut look = || -> Result<Option<Envelope>> {
        let h = match source {
            Source::Rank(r) => ep.p2p_peek(comm.world[r], &key)?,
            Source::Any => match oldest_queued(ep, &comm.world, &key) {
                Some(w) => ep.p2p_peek(w, &key)?,
                None => {
                    let mut h = None;
                    for w in rotation(&comm.world, &mut rotate) {
                        h = ep.p2p_peek(w, &key)?;
                        if h.is_some() {
                            break;
                        }
                    }
                    h
                }
            },
        };
        Ok(h.as_ref().map(Envelope::of))
    };
    if !blocking {
        return look();
    }
    drive(
        ep,
        &mut wait_for(comm, "MPI_Probe", None, Some(source), |_| {
            found = look()?;
            Ok(step_of(found.is_some(), false))
        }),
    )?;
    Ok(found)
}

fn step_of(done: bool, moved: bool) -> Step {
    if done {
        Step::Done
    } else if moved {
        Step::Moved
    } else {
        Step::Idle
    }
}

/// World rank of the member whose queue holds the oldest message `key` accepts.
fn oldest_queued(ep: &Endpoint, members: &[usize], key: &P2pKey) -> Option<usize> {
    members
        .iter()
        .filter_map(|&w| ep.p2p_oldest_queued(w, key).map(|stamp| (stamp, w)))
        .min()
        .map(|(_, w)| w)
}

/// The members in order starting at `*next`, which moves on by one per call (fairness).
fn rotation<'m>(members: &'m [usize], next: &mut usize) -> impl Iterator<Item = usize> + 'm {
    let n = members.len();
    let start = *next % n.max(1);
    *next = (start + 1) % n.max(1);
    (0..n).map(move |i| members[(start + i) % n])
}

/// The send half of a point-to-point operation.
struct SendOp<'a> {
    ep: &'a Endpoint,
    /// World rank of the destination.
    peer: usize,
    hdr: FrameHeader,
    buf: *const u8,
    len: usize,
    done: usize,
    started: bool,
    frag: usize,
    mode: Mode,
    /// The receiver acknowledged the match (synchronous mode).
    acked: bool,
    /// When the link is full, queue the small frames the peer sent at once (not for a send
    /// that runs beside its own receive, `MPI_Sendrecv`: that receive takes them).
    drain_peer: bool,
    /// Since when the link has been full with nothing moving (see `advance`).
    full_since: Option<std::time::Instant>,
}

/// Largest frame a sender on a full link queues from its peer at once (see `SendOp::advance`).
const DRAIN_SMALL_MAX: usize = 4096;
/// How long a sender waits on a full link before it queues everything its peer sent.
const FULL_DRAIN_AFTER: std::time::Duration = std::time::Duration::from_micros(20);

impl<'a> SendOp<'a> {
    fn new(
        comm: &'a Comm,
        dest: usize,
        tag: u32,
        msg: &Outgoing,
        mode: Mode,
    ) -> Result<SendOp<'a>> {
        let ep = &*comm.ep;
        let peer = comm.world[dest];
        let frag = if peer == ep.rank {
            LOCAL_FRAG
        } else {
            ep.max_payload(peer)?
        };
        let mut hdr = FrameHeader::p2p(
            comm.id,
            ep.p2p_next_seq(peer)?,
            tag,
            ep.rank as u32,
            comm.rank as i32,
            msg.dtype,
            msg.len as u64,
            msg.mpi_bytes,
        );
        if mode == Mode::Synchronous {
            hdr.flags |= FLAG_SYNC;
        }
        Ok(SendOp {
            ep,
            peer,
            hdr,
            buf: msg.buf,
            len: msg.len,
            done: 0,
            started: false,
            frag: frag.max(1),
            mode,
            acked: false,
            drain_peer: true,
            full_since: None,
        })
    }

    /// Whether this message takes a body turn ([`Endpoint::p2p_body_turn`]): several
    /// fragments, to another rank.
    fn takes_body_turn(&self) -> bool {
        self.len > self.frag && self.peer != self.ep.rank
    }

    /// Every fragment is out.
    fn posted(&self) -> bool {
        self.started && self.done == self.len
    }

    fn finished(&self) -> bool {
        self.posted() && (self.mode == Mode::Standard || self.acked)
    }

    /// Posts as many fragments as there is room for. When none fits and this is the last poll
    /// before a sleep (`idle`), drains every link so a peer blocked sending to us can go on.
    fn advance(&mut self, idle: bool) -> Result<bool> {
        let mut moved = false;
        let mut passed = false;
        while !self.posted() {
            let n = (self.len - self.done).min(self.frag);
            self.hdr.offset = self.done as u64;
            let payload: &[u8] = if n == 0 {
                &[]
            } else {
                // SAFETY: buf..buf+len is the caller's send buffer, validated by the ABI layer
                // and alive (unmodified, per MPI) for the duration of the call.
                unsafe { std::slice::from_raw_parts(self.buf.add(self.done), n) }
            };
            if self.peer == self.ep.rank {
                self.ep.p2p_post_local(&self.hdr, payload.to_vec())?;
            } else if self.done > 0 && !self.ep.p2p_body_turn(self.peer, self.hdr.seq) {
                break;
            } else if !self.ep.try_send(self.peer, &self.hdr, payload)? {
                // The link is full. The peer may be stuck the same way, sending to us (a
                // window of `MPI_Isend`s each way): match what it sent against the receives
                // posted here — straight into their buffers — so its link drains and it can
                // take ours. Without this both sides waited for the sleep-time drain: a
                // window of 64 small messages each way took 16 times MPICH's time.
                if !passed && N_POSTED.load(Ordering::SeqCst) > 0 {
                    passed = true;
                    // Failures stay in the failing receives' states.
                    let _ = claim_posted(&mut POSTED.lock(), None);
                    continue;
                }
                // What is left of its small messages (no receive posted for them yet) is
                // queued now, rather than after this wait's spin and yield budget (120 us):
                // a window of 64 small messages each way with the receives posted after the
                // sends stalled that long every 8 messages.
                if self.drain_peer {
                    self.ep.drain_small(self.peer, DRAIN_SMALL_MAX);
                    // Still full after a while: the peer is stuck too (large messages sent
                    // both ways before either side posted its receives). Queue the rest of
                    // what it sent rather than wait for this wait's spin and yield budget.
                    let since = *self.full_since.get_or_insert_with(std::time::Instant::now);
                    if since.elapsed() >= FULL_DRAIN_AFTER {
                        self.ep.drain(self.peer)?;
                        self.full_since = None;
                    }
                }
                break;
            }
            self.started = true;
            self.done += n;
            self.full_since = None;
            moved = true;
        }
        if self.posted() && self.takes_body_turn() {
            self.ep.p2p_body_done(self.peer, self.hdr.seq);
        }
        if self.posted() && !self.finished() {
            self.acked = self
                .ep
                .p2p_take_ack(self.peer, self.hdr.comm_id, self.hdr.seq)?;
            moved |= self.acked;
        }
        if idle && !moved && !self.finished() {
            for p in (0..self.ep.size).filter(|&p| p != self.ep.rank) {
                self.ep.drain(p)?;
            }
        }
        Ok(moved)
    }
}

/// A send abandoned half-way (its request failed) must not keep other messages to the peer
/// from posting their bodies.
impl Drop for SendOp<'_> {
    fn drop(&mut self) {
        if self.takes_body_turn() {
            self.ep.p2p_body_done(self.peer, self.hdr.seq);
        }
    }
}

/// A message being received: where it comes from and how much of it is in.
#[derive(Clone, Debug)]
struct Claim {
    /// World rank of the sender.
    peer: usize,
    seq: u64,
    env: Envelope,
    total: usize,
    got: usize,
    /// The first fragment's payload, kept when a matched probe claimed the message (it has no
    /// buffer yet); stored by the receive that follows.
    head: Option<Vec<u8>>,
}

/// The receive half of a point-to-point operation.
struct RecvOp<'a> {
    comm: &'a Comm,
    source: Source,
    key: P2pKey,
    into: Incoming,
    claim: Option<Claim>,
    rotate: usize,
    result: Option<Received>,
    /// A matched probe: claims a message (keeping its first fragment) and stops there.
    probe: bool,
}

impl<'a> RecvOp<'a> {
    fn new(comm: &'a Comm, source: Source, tag: Option<u32>, into: &Incoming) -> RecvOp<'a> {
        RecvOp {
            comm,
            source,
            key: P2pKey {
                comm_id: comm.id,
                tag,
            },
            into: *into,
            claim: None,
            rotate: 0,
            result: None,
            probe: false,
        }
    }

    /// Takes what has arrived; `true` if anything did.
    fn advance(&mut self) -> Result<bool> {
        if self.result.is_some() {
            return Ok(false);
        }
        let mut moved = false;
        if self.claim.is_none() {
            if N_POSTED.load(Ordering::SeqCst) > 0 {
                // Posted receives come first in MPI's matching order; this one after them.
                claim_posted(&mut POSTED.lock(), Some(self))?;
            } else if let Some((_, e)) = match_in_order(&mut [self.matcher(false)]).pop() {
                return Err(e);
            }
            self.comm.ep.p2p_flush_acks();
            if self.claim.is_none() {
                return Ok(false);
            }
            moved = true;
        }
        if self.probe {
            return Ok(moved);
        }
        let into = self.into;
        let comm_id = self.comm.id;
        let c = self.claim.as_mut().expect("claimed");
        if c.got < c.total {
            moved |= self
                .comm
                .ep
                .p2p_take_rest(c.peer, comm_id, c.seq, &mut |h, payload| {
                    if h.offset as usize != c.got || c.got + payload.len() > c.total {
                        return Err(Error::intern(format!(
                            "point-to-point fragment out of order from rank {}: {} bytes at offset {} of a {}-byte message (have {})",
                            c.peer, payload.len(), h.offset, c.total, c.got
                        )));
                    }
                    store(&into, c.got, payload);
                    c.got += payload.len();
                    Ok(c.got < c.total)
                })?;
        }
        if c.got == c.total {
            let truncated = c.total > into.cap;
            let bytes = if truncated {
                mpi_bytes_of(into.cap, &into.dt)
            } else {
                c.env.mpi_bytes
            };
            self.result = Some(Received {
                env: c.env,
                bytes,
                stored: c.total.min(into.cap),
                truncated,
            });
        }
        Ok(moved)
    }

    /// The view of this receive a matching pass works on; `out`: takes no part.
    fn matcher(&mut self, out: bool) -> Matcher<'_> {
        Matcher {
            comm: self.comm,
            source: self.source,
            key: self.key,
            into: self.into,
            rotate: &mut self.rotate,
            claim: &mut self.claim,
            out,
            keep_head: self.probe,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Nonblocking: MPI_Isend, MPI_Irecv

/// Receives started by `MPI_Irecv` that have not claimed a message yet, in start order.
static POSTED: Mutex<Vec<Arc<Posted>>> = Mutex::new(Vec::new());
/// `POSTED.len()`, read without the lock on the blocking receive's path.
static N_POSTED: AtomicUsize = AtomicUsize::new(0);

/// A receive of `MPI_Irecv`, shared between its request and [`POSTED`].
///
/// What a matching pass needs to know of it (`source`, `key`, `into`) is kept outside the
/// lock, so a pass over many posted receives takes no lock but those of the receives that
/// claim a message: with 64 receives posted, locking each on every pass made posting and
/// polling quadratic.
struct Posted {
    // Field order matters: the receive borrows from `comm` and drops first.
    state: Mutex<PostedState>,
    comm: Arc<Comm>,
    source: Source,
    key: P2pKey,
    into: Incoming,
    /// Where an `MPI_ANY_SOURCE` receive starts looking next (fairness across passes).
    rotate: AtomicUsize,
}

// SAFETY: `into` is the caller's receive buffer, a raw pointer MPI forbids the caller to touch
// until the request completes; it is written only by the pass that claims a message for this
// receive (under the `POSTED` lock) and by the request's own steps after that (under `state`).
unsafe impl Send for Posted {}
// SAFETY: as above: every write through `into` is serialized by one of those two locks.
unsafe impl Sync for Posted {}

struct PostedState {
    op: RecvOp<'static>,
    /// A claim that failed (reported by the request's next step).
    error: Option<Error>,
}

// SAFETY: `RecvOp` holds the caller's receive buffer (a raw pointer MPI forbids the caller to
// touch until the request completes) and borrows the communicator `Posted` keeps alive in its
// `Arc`; all access goes through the mutex.
unsafe impl Send for PostedState {}

impl PostedState {
    fn unclaimed(&self) -> bool {
        self.op.claim.is_none() && self.op.result.is_none() && self.error.is_none()
    }
}

/// One matching pass ([`matching`]) over the posted receives, in posting order, then `last`
/// (a blocking receive: posted after all of them); the posted ones that claimed a message or
/// failed leave the list. Called with the [`POSTED`] lock held. Returns `last`'s failure.
///
/// Every receive in the list is unclaimed (a claim or a failure takes it out, under the same
/// lock), so the pass works on its unlocked view; a claim is moved into the receive's state
/// afterwards. A step of the request that looks meanwhile still sees it unclaimed, and waits
/// for this lock to run a pass of its own.
fn claim_posted(posted: &mut Vec<Arc<Posted>>, last: Option<&mut RecvOp<'_>>) -> Result<()> {
    let n = posted.len();
    let mut claims: Vec<Option<Claim>> = vec![None; n];
    let mut rotates: Vec<usize> = posted
        .iter()
        .map(|p| p.rotate.load(Ordering::Relaxed))
        .collect();
    let mut rxs: Vec<Matcher<'_>> = posted
        .iter()
        .zip(claims.iter_mut())
        .zip(rotates.iter_mut())
        .map(|((p, claim), rotate)| Matcher {
            comm: &p.comm,
            source: p.source,
            key: p.key,
            into: p.into,
            rotate,
            claim,
            out: false,
            keep_head: false,
        })
        .collect();
    rxs.extend(last.map(|r| r.matcher(false)));
    let failed = match_in_order(&mut rxs);
    drop(rxs);
    let mut errors: Vec<Option<Error>> = Vec::new();
    let mut last_failed = Ok(());
    for (k, e) in failed {
        if k < n {
            errors.resize(n, None);
            errors[k] = Some(e);
        } else {
            last_failed = Err(e);
        }
    }
    if let Some(p) = posted.first() {
        p.comm.ep.p2p_flush_acks();
    }
    let mut k = 0;
    posted.retain(|p| {
        let j = k;
        k += 1;
        p.rotate.store(rotates[j], Ordering::Relaxed);
        let claim = claims[j].take();
        let error = errors.get_mut(j).and_then(Option::take);
        if claim.is_none() && error.is_none() {
            return true;
        }
        let mut st = p.state.lock();
        st.op.claim = claim;
        st.error = error;
        false
    });
    N_POSTED.store(posted.len(), Ordering::SeqCst);
    last_failed
}

/// The start of a receive `p` posted after `posted` (under the [`POSTED`] lock), in time
/// independent of how many receives are posted: takes the oldest *queued* message from its
/// source that it accepts, unless an earlier posted receive also accepts that one. The
/// earlier receives have seen everything their last pass found; what arrived since (on the
/// link, or queued by another reader) waits for the next pass, which matches in order. Returns
/// `false` when a full pass is needed instead: a receive from `MPI_ANY_SOURCE`, a failing
/// source, or a message an earlier receive accepts (it is that receive's).
fn claim_queued(posted: &[Arc<Posted>], p: &Posted) -> bool {
    let Source::Rank(r) = p.source else {
        return false;
    };
    let ep = &*p.comm.ep;
    let w = p.comm.world[r];
    let earlier_accepts = |h: &FrameHeader| {
        posted.iter().any(|e| {
            std::ptr::eq(&*e.comm.ep, ep)
                && e.key.starts(h)
                && match e.source {
                    Source::Rank(er) => e.comm.world[er] == w,
                    Source::Any => e.comm.world.contains(&w),
                }
        })
    };
    let mut vetoed = false;
    let mut st = p.state.lock();
    let res = ep.p2p_match(
        w,
        false,
        &mut |h| {
            if vetoed || !p.key.starts(h) {
                return false;
            }
            vetoed = earlier_accepts(h);
            !vetoed
        },
        &mut |h, payload| {
            st.op.claim = Some(matching::claim_first(ep, w, h, payload, &p.into, false));
            Ok(false)
        },
    );
    res.is_ok() && !vetoed
}

/// What an `MPI_Irecv` does once its message is in: unpack a staged buffer (derived datatypes).
pub type RecvFinish = Box<dyn FnOnce(&Received) + Send>;

/// The operation of an `MPI_Irecv` request.
pub struct IrecvOp {
    p: Arc<Posted>,
    source: Source,
    finish: Option<RecvFinish>,
    /// No pass since the one of `MPI_Irecv` itself (the start's first step needs none).
    fresh: bool,
}

thread_local! {
    /// The round ([`crate::request::current_round`]) of this thread's last matching pass of
    /// the posted receives.
    static PASS_ROUND: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// `MPI_Irecv`: claims a message now if one is there, else posts the receive.
pub fn irecv(
    comm: Arc<Comm>,
    source: Source,
    tag: Option<u32>,
    into: &Incoming,
    finish: Option<RecvFinish>,
) -> IrecvOp {
    // SAFETY: the `Comm` lives in the `Arc`'s heap block, which does not move; `Posted`
    // stores the `Arc` next to the receive, which drops first.
    let c: &'static Comm = unsafe { &*Arc::as_ptr(&comm) };
    let op = RecvOp::new(c, source, tag, into);
    let p = Arc::new(Posted {
        source,
        key: op.key,
        into: *into,
        rotate: AtomicUsize::new(0),
        state: Mutex::new(PostedState { op, error: None }),
        comm,
    });
    {
        let mut posted = POSTED.lock();
        if posted.is_empty() || !claim_queued(&posted, &p) {
            posted.push(p.clone());
            // Without `last` nothing comes back: failures stay in the receives' states.
            let _ = claim_posted(&mut posted, None);
        } else if p.state.lock().unclaimed() {
            posted.push(p.clone());
            N_POSTED.store(posted.len(), Ordering::SeqCst);
        }
    }
    p.comm.ep.p2p_flush_acks();
    IrecvOp {
        p,
        source,
        finish,
        fresh: true,
    }
}

/// A receive whose request is gone (it failed — a timeout, a dead peer — or completed) must not
/// stay matchable: a message arriving later would be written into a buffer its owner may
/// already have freed (seen with mpi4py, whose receive buffers die with a failed request).
impl Drop for IrecvOp {
    fn drop(&mut self) {
        let mut posted = POSTED.lock();
        if let Some(at) = posted.iter().position(|q| Arc::ptr_eq(q, &self.p)) {
            posted.remove(at);
            N_POSTED.store(posted.len(), Ordering::SeqCst);
        }
    }
}

impl Wait for IrecvOp {
    fn poll(&mut self, _last: bool) -> Result<Step> {
        // A pass serves every posted receive: one per round is enough (a `Waitall` over 64
        // receives ran 64, and a window of 64 messages cost 12 times MPICH's time). Outside a
        // round every step runs its own.
        let round = crate::request::current_round();
        let fresh = std::mem::take(&mut self.fresh);
        let passed = round.is_some() && PASS_ROUND.with(|p| Some(p.get()) == round);
        if !fresh && !passed && self.p.state.lock().unclaimed() {
            if let Some(r) = round {
                PASS_ROUND.with(|p| p.set(r));
            }
            // Failures stay in the failing receives' states (this one's is read below).
            let _ = claim_posted(&mut POSTED.lock(), None);
        }
        let mut st = self.p.state.lock();
        if let Some(e) = st.error.take() {
            return Err(e);
        }
        if st.op.claim.is_none() {
            return Ok(Step::Idle);
        }
        let moved = st.op.advance()?;
        Ok(step_of(st.op.result.is_some(), moved))
    }
    fn describe(&self) -> String {
        let s = match self.source {
            Source::Rank(r) => format!("receiving from rank {r}"),
            Source::Any => "receiving from any rank".into(),
        };
        format!(
            "MPI_Irecv on {}, {s}",
            crate::health::comm_label(self.p.comm.id)
        )
    }
    fn blocked_on(&self, out: &mut Vec<usize>) {
        match self.source {
            Source::Rank(r) => out.push(self.p.comm.world[r]),
            Source::Any => out.extend(self.p.comm.world.iter().copied()),
        }
    }
}

impl Op for IrecvOp {
    fn complete(&mut self) -> Result<Completion> {
        let r = self.p.state.lock().op.result.expect("finished");
        if let Some(f) = self.finish.take() {
            f(&r);
        }
        Ok(Completion {
            source: r.env.source,
            tag: r.env.tag,
            bytes: r.bytes,
            cancelled: false,
            truncated: r.truncated,
        })
    }

    fn cancel(&mut self) -> Result<Option<Completion>> {
        let mut posted = POSTED.lock();
        let Some(at) = posted.iter().position(|q| Arc::ptr_eq(q, &self.p)) else {
            return Ok(None);
        };
        if !self.p.state.lock().unclaimed() {
            return Ok(None);
        }
        posted.remove(at);
        N_POSTED.store(posted.len(), Ordering::SeqCst);
        Ok(Some(Completion {
            cancelled: true,
            ..Completion::empty()
        }))
    }
}

/// The operation of an `MPI_Isend` request.
pub struct IsendOp {
    // Field order matters: the send borrows from `comm` and drops first.
    op: SendOp<'static>,
    /// What the send reads from (a staged buffer), kept until completion.
    _keep: Option<Box<dyn Send>>,
    dest: usize,
    comm: Arc<Comm>,
}

// SAFETY: `SendOp` holds the caller's send buffer (MPI forbids the caller to modify it until
// the request completes) and borrows the communicator kept alive in `comm`; the request's lock
// makes sure one thread at a time steps it.
unsafe impl Send for IsendOp {}

/// `MPI_Isend` (`MPI_Issend` for [`Mode::Synchronous`]) to comm rank `dest`: returns once the
/// first fragment is posted (so messages leave in call order); the rest is posted as the
/// request is stepped (and, synchronous, completes when the acknowledgement comes).
pub fn isend(
    comm: Arc<Comm>,
    dest: usize,
    tag: u32,
    msg: &Outgoing,
    mode: Mode,
    keep: Option<Box<dyn Send>>,
) -> Result<IsendOp> {
    // SAFETY: as in `irecv`: the `Arc` is stored next to the operation, which drops first.
    let c: &'static Comm = unsafe { &*Arc::as_ptr(&comm) };
    let mut op = SendOp::new(c, dest, tag, msg, mode)?;
    drive(
        &c.ep,
        &mut wait_for(c, "MPI_Isend", Some(dest), None, |idle| {
            let moved = op.advance(idle)?;
            Ok(step_of(op.started, moved))
        }),
    )?;
    Ok(IsendOp {
        op,
        _keep: keep,
        dest,
        comm,
    })
}

impl IsendOp {
    /// Every fragment is out (and, synchronous, the match acknowledged): the send is complete.
    pub fn finished(&self) -> bool {
        self.op.finished()
    }
}

impl Wait for IsendOp {
    fn poll(&mut self, last: bool) -> Result<Step> {
        let moved = self.op.advance(last)?;
        Ok(step_of(self.op.finished(), moved))
    }
    fn describe(&self) -> String {
        format!(
            "MPI_Isend on {}, sending to rank {}",
            crate::health::comm_label(self.comm.id),
            self.dest
        )
    }
    fn blocked_on(&self, out: &mut Vec<usize>) {
        out.push(self.comm.world[self.dest]);
    }
}

impl Op for IsendOp {
    fn complete(&mut self) -> Result<Completion> {
        Ok(Completion::empty())
    }
}

/// Copies the part of a fragment at `offset` that fits into the receive buffer.
fn store(into: &Incoming, offset: usize, payload: &[u8]) {
    let n = payload.len().min(into.cap.saturating_sub(offset));
    if n > 0 {
        // SAFETY: offset + n <= cap, and buf..buf+cap is the caller's receive buffer,
        // validated by the ABI layer; a link's payload never aliases user memory.
        unsafe { std::ptr::copy_nonoverlapping(payload.as_ptr(), into.buf.add(offset), n) };
    }
}

/// A status count (bytes in MPI's sense) for `raw` bytes stored as datatype `dt`: whole
/// elements count their size (not their extent), a partial element its bytes up to the size.
pub fn mpi_bytes_of(raw: usize, dt: &Datatype) -> u64 {
    let ext = dt.extent.max(1);
    ((raw / ext) * dt.size + (raw % ext).min(dt.size)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::ElemType;

    #[test]
    fn status_bytes_count_type_size() {
        let int = Datatype::new(ElemType::I32, 4, 4);
        assert_eq!(mpi_bytes_of(0, &int), 0);
        assert_eq!(mpi_bytes_of(12, &int), 12);
        assert_eq!(mpi_bytes_of(13, &int), 13);
        let double_int = Datatype::new(ElemType::PairF64I32, 12, 16);
        assert_eq!(mpi_bytes_of(48, &double_int), 36);
        assert_eq!(mpi_bytes_of(50, &double_int), 38);
    }

    #[test]
    fn rotation_visits_every_member_once_and_moves_on() {
        let m = [4, 7, 9];
        let mut next = 0;
        assert_eq!(rotation(&m, &mut next).collect::<Vec<_>>(), vec![4, 7, 9]);
        assert_eq!(rotation(&m, &mut next).collect::<Vec<_>>(), vec![7, 9, 4]);
        assert_eq!(rotation(&m, &mut next).collect::<Vec<_>>(), vec![9, 4, 7]);
        assert_eq!(rotation(&m, &mut next).collect::<Vec<_>>(), vec![4, 7, 9]);
        let mut next = 0;
        assert_eq!(rotation(&[], &mut next).count(), 0);
    }

    /// One round of [`receives_match_in_send_and_post_order`]: message tags (1..=3), and one
    /// receive per message (its tag or `MPI_ANY_TAG`) in shuffled posting order, redrawn until
    /// MPI's rule gives every receive a message; `expect[j]`: the message receive j must get
    /// (the earliest one not taken by an earlier receive that it accepts).
    fn match_plan(seed: u64, k: usize) -> (Vec<u32>, Vec<Option<u32>>, Vec<usize>) {
        let mut x = seed | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x >> 11
        };
        loop {
            let tags: Vec<u32> = (0..k).map(|_| 1 + (next() % 3) as u32).collect();
            let mut want: Vec<Option<u32>> = tags
                .iter()
                .map(|&t| (next() % 5 >= 2).then_some(t))
                .collect();
            for j in (1..k).rev() {
                want.swap(j, (next() % (j as u64 + 1)) as usize);
            }
            let mut taken = vec![false; k];
            let expect: Option<Vec<usize>> = want
                .iter()
                .map(|w| {
                    let i = (0..k).find(|&i| !taken[i] && w.is_none_or(|t| t == tags[i]))?;
                    taken[i] = true;
                    Some(i)
                })
                .collect();
            if let Some(expect) = expect {
                return (tags, want, expect);
            }
        }
    }

    /// MPI's non-overtaking rule while messages keep arriving: a thread sends to this rank
    /// while it posts `MPI_Irecv`s (a mix of tags and `MPI_ANY_TAG`) and polls them; in every
    /// other round the last receive is a blocking one (its operation polled here, as `recv`
    /// would). Messages arriving between one receive's look and a later one's used to let an
    /// `MPI_ANY_TAG` receive take a later message than its own, and leave another receive
    /// without one (hence the deadline).
    #[test]
    fn receives_match_in_send_and_post_order() {
        const K: usize = 24;
        let ep = Arc::new(Endpoint::singleton());
        let comm = Arc::new(Comm::new(0x6d61_7463, 0, vec![0], ep, 0));
        let int = Datatype::new(ElemType::I32, 4, 4);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        for round in 0..300u64 {
            let (tags, want, expect) = match_plan(round * 0x9e37_79b9 + 1, K);
            let mut got = vec![[-1i32; 1]; K];
            let into: Vec<Incoming> = got
                .iter_mut()
                .map(|b| Incoming {
                    buf: b.as_mut_ptr().cast(),
                    cap: 4,
                    dt: int,
                })
                .collect();
            let sender = {
                let (comm, tags) = (comm.clone(), tags.clone());
                std::thread::spawn(move || {
                    for (i, &tag) in tags.iter().enumerate() {
                        let v = [i as i32];
                        let msg = Outgoing {
                            buf: v.as_ptr().cast(),
                            len: 4,
                            mpi_bytes: 4,
                            dtype: 0,
                        };
                        send(&comm, 0, tag, &msg, Mode::Standard).unwrap();
                    }
                })
            };
            let n_irecv = if round % 2 == 1 { K - 1 } else { K };
            let mut irecvs: Vec<Option<IrecvOp>> = (0..n_irecv)
                .map(|j| {
                    Some(irecv(
                        comm.clone(),
                        Source::Rank(0),
                        want[j],
                        &into[j],
                        None,
                    ))
                })
                .collect();
            let mut blocking =
                (n_irecv < K).then(|| RecvOp::new(&comm, Source::Any, want[K - 1], &into[K - 1]));
            let mut tag_of = [-1; K];
            loop {
                for (j, slot) in irecvs.iter_mut().enumerate() {
                    if let Some(op) = slot {
                        if op.poll(false).unwrap() == Step::Done {
                            tag_of[j] = op.complete().unwrap().tag;
                            *slot = None;
                        }
                    }
                }
                if let Some(op) = blocking.as_mut() {
                    op.advance().unwrap();
                    if let Some(r) = op.result {
                        tag_of[K - 1] = r.env.tag;
                        blocking = None;
                    }
                }
                if irecvs.iter().all(Option::is_none) && blocking.is_none() {
                    break;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "round {round}: receives {want:?} of messages {tags:?} stuck; got {got:?}"
                );
            }
            sender.join().unwrap();
            for j in 0..K {
                let i = expect[j];
                assert_eq!(
                    (got[j][0], tag_of[j]),
                    (i as i32, tags[i] as i32),
                    "round {round}: receive {j} (tag {:?}) of {want:?} for messages {tags:?}",
                    want[j]
                );
            }
        }
    }

    fn bytes_msg(data: &[u8]) -> Outgoing {
        Outgoing {
            buf: data.as_ptr(),
            len: data.len(),
            mpi_bytes: data.len() as u64,
            dtype: 0,
        }
    }

    /// `MPI_Issend` to oneself: not complete however often it is stepped until a receive
    /// matches it (the acknowledgement then comes through the rank's own queue).
    #[test]
    fn synchronous_send_completes_only_after_the_match() {
        let ep = Arc::new(Endpoint::singleton());
        let comm = Arc::new(Comm::new(0x5359, 0, vec![0], ep, 0));
        let data = [7u8; 3];
        let mut op = isend(
            comm.clone(),
            0,
            4,
            &bytes_msg(&data),
            Mode::Synchronous,
            None,
        )
        .unwrap();
        for _ in 0..100 {
            assert_eq!(op.poll(true).unwrap(), Step::Idle);
        }
        // A probe does not match.
        assert!(probe(&comm, Source::Any, None, false).unwrap().is_some());
        assert_eq!(op.poll(true).unwrap(), Step::Idle);
        let mut out = [0u8; 3];
        let into = Incoming {
            buf: out.as_mut_ptr(),
            cap: 3,
            dt: Datatype::new(ElemType::Byte, 1, 1),
        };
        recv(&comm, Source::Rank(0), Some(4), &into).unwrap();
        assert_eq!(out, data);
        assert_eq!(op.poll(false).unwrap(), Step::Done);
        // The acknowledgement is no message.
        assert!(probe(&comm, Source::Any, None, false).unwrap().is_none());
    }

    /// A matched probe takes its message out of matching: probes and receives see the next.
    #[test]
    fn matched_probe_removes_the_message_from_matching() {
        let ep = Arc::new(Endpoint::singleton());
        let comm = Arc::new(Comm::new(0x4d50, 0, vec![0], ep, 0));
        let (a, b) = ([1u8, 2, 3], [4u8, 5, 6, 7, 8]);
        send(&comm, 0, 7, &bytes_msg(&a), Mode::Standard).unwrap();
        send(&comm, 0, 7, &bytes_msg(&b), Mode::Standard).unwrap();
        let m = mprobe(&comm, Source::Any, None, true).unwrap().unwrap();
        assert_eq!(m.envelope().mpi_bytes, 3);
        let env = probe(&comm, Source::Any, None, false).unwrap().unwrap();
        assert_eq!(env.mpi_bytes, 5);
        let byte = Datatype::new(ElemType::Byte, 1, 1);
        let mut out = [0u8; 8];
        let into = Incoming {
            buf: out.as_mut_ptr(),
            cap: 8,
            dt: byte,
        };
        let r = recv(&comm, Source::Any, Some(7), &into).unwrap();
        assert_eq!((r.bytes, &out[..5]), (5, &b[..]));
        assert!(mprobe(&comm, Source::Any, None, false).unwrap().is_none());
        let r = mrecv(m, &into).unwrap();
        assert_eq!((r.bytes, r.truncated, &out[..3]), (3, false, &a[..]));
    }

    #[test]
    fn send_to_self_is_queued_and_received_in_order() {
        let ep = std::sync::Arc::new(Endpoint::singleton());
        let comm = Comm::new(5, 0, vec![0], ep, 0);
        let byte = Datatype::new(ElemType::Byte, 1, 1);
        let a = [1u8, 2, 3];
        let b = [9u8; 5];
        for (tag, data) in [(1u32, &a[..]), (2, &b[..]), (1, &b[..])] {
            let msg = Outgoing {
                buf: data.as_ptr(),
                len: data.len(),
                mpi_bytes: data.len() as u64,
                dtype: 0,
            };
            send(&comm, 0, tag, &msg, Mode::Standard).unwrap();
        }
        let env = probe(&comm, Source::Any, Some(2), false).unwrap().unwrap();
        assert_eq!((env.source, env.tag, env.mpi_bytes), (0, 2, 5));
        let mut out = [0u8; 4];
        let into = Incoming {
            buf: out.as_mut_ptr(),
            cap: out.len(),
            dt: byte,
        };
        // ANY_TAG takes the oldest: tag 1, 3 bytes.
        let r = recv(&comm, Source::Any, None, &into).unwrap();
        assert_eq!((r.env.tag, r.bytes, r.truncated), (1, 3, false));
        assert_eq!(&out[..3], &a);
        // Tag 1 again: the third message (5 bytes) overtakes nothing of its tag, truncated.
        let r = recv(&comm, Source::Rank(0), Some(1), &into).unwrap();
        assert_eq!((r.env.tag, r.bytes, r.truncated), (1, 4, true));
        let r = recv(&comm, Source::Rank(0), Some(2), &into).unwrap();
        assert!(r.truncated);
        assert!(probe(&comm, Source::Any, None, false).unwrap().is_none());
    }
}
