//! This rank's end of the world: one [`Link`] per peer, receive matching, and the doorbell.
//!
//! Matching: a receive names `(source, comm_id, seq, tag)`. Frames are read from the source's
//! link in arrival order; one that belongs to someone else (another communicator, used by
//! another thread; or a later operation) is copied into that source's unexpected queue, and
//! our own doorbell is rung so a thread waiting for it looks again. Per source, the queue and
//! the link's receive side sit under one short-held lock, never held across a wait.
//!
//! Collective and point-to-point frames share the links and queues; each matching rule accepts
//! only its own kind (see [`crate::frame`]). Point-to-point matching is offered the *first*
//! fragments of messages, oldest first per source, and the receive that takes one collects the
//! rest of that message by its number (`seq`); see [`crate::p2p`]. Queued frames carry a process-wide
//! arrival stamp, so an `MPI_ANY_SOURCE` receive can take the earliest queued message of any
//! source. Messages a rank sends to itself go straight into its own queue (it has no link).
//!
//! Failure notices ([`crate::health`]) are taken out of the stream wherever a frame is read
//! from a link, whoever reads it, and recorded here for every wait to see.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::frame::{Expected, FrameHeader, Signature, FLAG_SYNC_ACK};
use crate::health::{Notices, PeerMeta};
use crate::transport::shm::Segment;
use crate::transport::{CmaSend, Link};
use crate::wait::Doorbell;

/// Identifies the frames a receive wants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatchKey {
    pub comm_id: u64,
    pub seq: u64,
    pub tag: u32,
}

/// Which point-to-point messages a receive or probe accepts from one source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct P2pKey {
    pub comm_id: u64,
    /// `None`: `MPI_ANY_TAG`.
    pub tag: Option<u32>,
}

impl P2pKey {
    /// `h` is the first fragment of a message this key accepts.
    pub fn starts(&self, h: &FrameHeader) -> bool {
        h.is_p2p_first() && h.comm_id == self.comm_id && self.tag.is_none_or(|t| t == h.tag)
    }
}

/// Order of arrival of queued frames across all sources; only comparisons matter.
static ARRIVAL: AtomicU64 = AtomicU64::new(0);

struct Unexpected {
    hdr: FrameHeader,
    data: Vec<u8>,
    /// From [`ARRIVAL`], taken under the queue's lock: increasing along each queue.
    stamp: u64,
}

/// Per-peer state under one lock.
#[derive(Default)]
struct RxState {
    queue: VecDeque<Unexpected>,
    /// Number of the next point-to-point message *to* this peer (send side; dense per pair).
    p2p_next_seq: u64,
}

impl RxState {
    fn push(&mut self, hdr: &FrameHeader, data: Vec<u8>) {
        self.queue.push_back(Unexpected {
            hdr: *hdr,
            data,
            stamp: ARRIVAL.fetch_add(1, Ordering::Relaxed),
        });
    }
}

/// Where this rank's doorbell lives. Peers on this host ring it in our shared-memory segment;
/// a rank with no shared-memory peer (TCP only, or alone) keeps it in process memory, rung by
/// the TCP receiver thread and by this process's own threads. The futex calls work on either
/// (they do not use `FUTEX_PRIVATE_FLAG`). Cloning shares the same doorbell.
#[derive(Clone)]
pub enum BellHome {
    Shm(Arc<Segment>),
    Local(Arc<Doorbell>),
}

impl BellHome {
    /// A fresh doorbell in process memory.
    pub fn local() -> BellHome {
        BellHome::Local(Arc::new(Doorbell {
            bell: 0.into(),
            sleepers: 0.into(),
        }))
    }

    pub fn doorbell(&self) -> &Doorbell {
        match self {
            BellHome::Shm(s) => s.bell(),
            BellHome::Local(b) => b,
        }
    }
}

pub struct Endpoint {
    pub rank: usize,
    pub size: usize,
    links: Vec<Option<Box<dyn Link>>>,
    rx: Vec<Mutex<RxState>>,
    bell: BellHome,
    /// How long to poll before sleeping.
    pub spin: std::time::Duration,
    /// Per world rank: host, pid and how its liveness is watched (empty: nothing known).
    peers: Vec<PeerMeta>,
    /// World rank → index of its host (ranks with equal indices share a host identity),
    /// numbered in order of each host's lowest world rank; empty on a singleton.
    hosts: Vec<usize>,
    notices: Notices,
    /// In `MPI_Finalize`: peers may leave cleanly, only those waited for are watched.
    finalizing: AtomicBool,
    /// Acknowledgements of synchronous messages owed: (world rank, header).
    acks: Mutex<Vec<(usize, FrameHeader)>>,
    /// Held while [`Endpoint::p2p_flush_acks`] sends (not while acknowledgements are queued).
    flushing_acks: Mutex<()>,
    /// `acks.len()`, read without the lock.
    n_acks: AtomicUsize,
    /// Per peer: 1 + the number of the point-to-point message to it whose later fragments are
    /// being posted (0: none). See [`Endpoint::p2p_body_turn`].
    body_owner: Vec<AtomicU64>,
}

impl Endpoint {
    /// A world of one (no peers, a private doorbell).
    pub fn singleton() -> Endpoint {
        Endpoint {
            rank: 0,
            size: 1,
            links: vec![None],
            rx: vec![Mutex::new(RxState::default())],
            bell: BellHome::local(),
            spin: std::time::Duration::ZERO,
            peers: Vec::new(),
            hosts: Vec::new(),
            notices: Notices::default(),
            finalizing: AtomicBool::new(false),
            acks: Mutex::new(Vec::new()),
            flushing_acks: Mutex::new(()),
            n_acks: AtomicUsize::new(0),
            body_owner: vec![AtomicU64::new(0)],
        }
    }

    /// `links[r]` is `None` exactly for `r == rank`. `bell`: this rank's doorbell (in its
    /// shared-memory segment, or in process memory when it has no shared-memory peer).
    pub fn new(
        rank: usize,
        links: Vec<Option<Box<dyn Link>>>,
        bell: BellHome,
        spin: std::time::Duration,
    ) -> Endpoint {
        let size = links.len();
        Endpoint {
            rank,
            size,
            links,
            rx: (0..size).map(|_| Mutex::new(RxState::default())).collect(),
            bell,
            spin,
            peers: Vec::new(),
            hosts: Vec::new(),
            notices: Notices::default(),
            finalizing: AtomicBool::new(false),
            acks: Mutex::new(Vec::new()),
            flushing_acks: Mutex::new(()),
            n_acks: AtomicUsize::new(0),
            body_owner: (0..size).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// What is known about each world rank (host, pid, liveness watch), in rank order.
    pub fn set_peers(&mut self, peers: Vec<PeerMeta>) {
        self.peers = peers;
    }

    /// Records each world rank's host index (see `hosts`).
    pub fn set_hosts(&mut self, hosts: Vec<usize>) {
        self.hosts = hosts;
    }

    /// The host index of world rank `rank` (0 when unknown: one host).
    pub fn host_index(&self, rank: usize) -> usize {
        self.hosts.get(rank).copied().unwrap_or(0)
    }

    /// `rank R (host H, pid P)` for messages.
    pub fn peer_label(&self, rank: usize) -> String {
        match self.peers.get(rank) {
            Some(p) => p.label(rank),
            None => format!("rank {rank}"),
        }
    }

    /// The transport to `peer` (`shm`, `tcp`), `self` for this rank; for reports such as
    /// `hcomm selftest`'s.
    pub fn transport_name(&self, peer: usize) -> &'static str {
        match self.links.get(peer).and_then(|l| l.as_deref()) {
            Some(l) => l.name(),
            None if peer == self.rank => "self",
            None => "none",
        }
    }

    /// The host name of world rank `rank`, when known.
    pub fn peer_host(&self, rank: usize) -> Option<&str> {
        self.peers.get(rank).map(|p| p.host.as_str())
    }

    pub fn notices(&self) -> &Notices {
        &self.notices
    }

    /// `MPI_Finalize` has begun: from now on peers may exit cleanly.
    pub fn set_finalizing(&self) {
        self.finalizing.store(true, Ordering::Relaxed);
    }

    pub fn bell(&self) -> &Doorbell {
        self.bell.doorbell()
    }

    fn link(&self, peer: usize) -> Result<&dyn Link> {
        self.links
            .get(peer)
            .and_then(|l| l.as_deref())
            .ok_or_else(|| Error::intern(format!("no link from rank {} to rank {peer}", self.rank)))
    }

    pub fn max_payload(&self, peer: usize) -> Result<usize> {
        Ok(self.link(peer)?.max_payload())
    }

    pub fn try_send(&self, peer: usize, hdr: &FrameHeader, payload: &[u8]) -> Result<bool> {
        let link = self.link(peer)?;
        // The whole message of a collective, small: the link's box if it has a free one
        // (found by its key on the other side, so it need not keep the stream's order).
        let boxed = !hdr.is_p2p() && !hdr.is_notice() && link.try_send_box(hdr, payload);
        let sent = boxed || link.try_send(hdr, payload)?;
        if sent {
            crate::transport::count_sent(link, payload.len());
        }
        Ok(sent)
    }

    /// Sends the whole small message of a collective that `exp` describes (`payload`,
    /// `exp.len` bytes, from this rank): in a box when one is free, without making its header
    /// ([`Link::try_send_expected`]); else the frame [`FrameHeader::new`] makes of `exp`, in
    /// the link's stream.
    pub fn try_send_expected(&self, peer: usize, exp: &Expected, payload: &[u8]) -> Result<bool> {
        let link = self.link(peer)?;
        // The box just refused it: straight to the stream, not through the box again.
        let sent = link.try_send_expected(exp, payload) || {
            let mut hdr =
                FrameHeader::new(&exp.sig, exp.comm_id, exp.seq, exp.tag, self.rank as u32);
            hdr.set_msg_len(exp.len as u64);
            link.try_send(&hdr, payload)?
        };
        if sent {
            crate::transport::count_sent(link, payload.len());
        }
        Ok(sent)
    }

    /// Single copy: posts a control frame for the `len` bytes at `buf` (see
    /// [`Link::try_send_cma`]); counted as `len` bytes sent, like the copy it replaces.
    pub fn try_send_cma(
        &self,
        peer: usize,
        hdr: &FrameHeader,
        buf: *const u8,
        len: usize,
    ) -> Result<CmaSend> {
        let link = self.link(peer)?;
        let res = link.try_send_cma(hdr, buf)?;
        if let CmaSend::Posted(_) = res {
            crate::transport::count_sent(link, len);
        }
        Ok(res)
    }

    /// Whether sends to `peer` can go through this process's fan-out stage.
    pub fn stages(&self, peer: usize) -> bool {
        self.link(peer).is_ok_and(|l| l.stages())
    }

    /// A free stage piece for a fragment `readers` peers will read, taken through `peer`'s
    /// link (every staging link shares the one stage); `None`: none free now.
    pub fn stage_take(&self, peer: usize, readers: u32) -> Result<Option<(u32, *mut u8)>> {
        Ok(self.link(peer)?.stage_take(readers))
    }

    /// `k` readers of stage `piece` will never be sent it.
    pub fn stage_release(&self, peer: usize, piece: u32, k: u32) {
        if let Ok(l) = self.link(peer) {
            l.stage_release(piece, k);
        }
    }

    /// Posts the staged fragment (`len` bytes in `piece`) to `peer`; counted as `len` bytes
    /// sent, like the copy it stands for. `Ok(false)`: the link is full.
    pub fn try_send_staged(
        &self,
        peer: usize,
        hdr: &FrameHeader,
        piece: u32,
        len: usize,
    ) -> Result<bool> {
        let link = self.link(peer)?;
        let sent = link.try_send_staged(hdr, piece, len)?;
        if sent {
            crate::transport::count_sent(link, len);
        }
        Ok(sent)
    }

    /// Whether `peer` has read single-copy message `ticket` (the sender may reuse the buffer).
    pub fn cma_done(&self, peer: usize, ticket: u64) -> Result<bool> {
        Ok(self.link(peer)?.cma_done(ticket))
    }

    /// Reads `len` bytes at `peer`'s address `addr` into `dst`; `Ok(false)` when the peer's
    /// process is gone.
    ///
    /// # Safety
    /// `dst` is valid for `len` bytes of writing.
    pub unsafe fn cma_read(
        &self,
        peer: usize,
        addr: u64,
        dst: *mut u8,
        len: usize,
    ) -> Result<bool> {
        // SAFETY: the caller's contract.
        unsafe { self.link(peer)?.cma_read(addr, dst, len) }
    }

    /// Tells `peer` that its single-copy message `ticket` has been read.
    pub fn cma_ack(&self, peer: usize, ticket: u64) -> Result<()> {
        self.link(peer)?.cma_ack(ticket);
        Ok(())
    }

    /// Takes `peer`'s next boxed frame if it is exactly `exp`, its payload to `take`
    /// ([`Link::try_take_expected`]); `false` leaves everything to [`Endpoint::poll_recv`].
    #[inline]
    pub fn take_expected(&self, peer: usize, exp: &Expected, take: &mut dyn FnMut(&[u8])) -> bool {
        self.links
            .get(peer)
            .and_then(|l| l.as_deref())
            .is_some_and(|l| l.try_take_expected(exp, take))
    }

    /// Feeds frames from `peer` that match `key` to `consume` until it returns `false`
    /// (satisfied) or nothing more is available. Returns whether any frame was read.
    /// A frame of the same `(comm_id, seq)` with another signature is a mismatched call;
    /// `ranks` (this rank's and the peer's rank in the communicator) name both sides.
    /// Point-to-point frames never match.
    pub fn poll_recv(
        &self,
        peer: usize,
        key: MatchKey,
        sig: &Signature,
        ranks: (usize, usize),
        consume: &mut dyn FnMut(&FrameHeader, &[u8]) -> Result<bool>,
    ) -> Result<bool> {
        let mut want = |h: &FrameHeader| -> Result<bool> {
            if h.is_p2p() || h.comm_id != key.comm_id || h.seq != key.seq {
                return Ok(false);
            }
            check_signature(h, sig, key, ranks)?;
            Ok(h.tag == key.tag)
        };
        // A box holds a whole message: taken, it satisfies this receive for its tag.
        if let Some(link) = self.links.get(peer).and_then(|l| l.as_deref()) {
            if link.try_take_box(&mut want, consume)? {
                return Ok(true);
            }
        }
        let (took, queued) = self.poll_with(peer, &mut want, consume)?;
        Ok(took || queued)
    }

    /// The matching loop of every receive. Under `peer`'s lock: hands the queued frames that
    /// `want` accepts (oldest first), then frames read from the link, to `take` until it
    /// returns `false`; frames read from the link that `want` rejects are queued (copied).
    /// Returns (whether `take` got a frame, whether a frame was queued). A rank's own queue
    /// (loopback) has no link.
    fn poll_with(
        &self,
        peer: usize,
        want: &mut dyn FnMut(&FrameHeader) -> Result<bool>,
        take: &mut dyn FnMut(&FrameHeader, &[u8]) -> Result<bool>,
    ) -> Result<(bool, bool)> {
        let link = self.links.get(peer).and_then(|l| l.as_deref());
        self.poll_from(peer, link, usize::MAX, want, take)
    }

    /// [`Endpoint::poll_with`] reading `peer`'s queue and then `link` (`None`: the queue only),
    /// there only frames of at most `max_frame` payload bytes ([`Link::try_recv_small`]; a
    /// larger one stops the reading, unread).
    fn poll_from(
        &self,
        peer: usize,
        link: Option<&dyn Link>,
        max_frame: usize,
        want: &mut dyn FnMut(&FrameHeader) -> Result<bool>,
        take: &mut dyn FnMut(&FrameHeader, &[u8]) -> Result<bool>,
    ) -> Result<(bool, bool)> {
        let mut rx = self.rx_of(peer)?.lock();
        let mut took = false;
        let mut i = 0;
        while i < rx.queue.len() {
            if !want(&rx.queue[i].hdr)? {
                i += 1;
                continue;
            }
            let u = rx.queue.remove(i).expect("index is in range");
            took = true;
            if !take(&u.hdr, &u.data)? {
                return Ok((true, false));
            }
        }
        let Some(link) = link else {
            return Ok((took, false));
        };
        let mut want_more = true;
        let mut queued = false;
        while want_more {
            let mut visit = |hdr: &FrameHeader, payload: &[u8]| {
                if hdr.is_notice() {
                    self.notices.record(hdr.comm_id, hdr.seq, peer, payload);
                    queued = true; // wakes the other threads: the notice may be theirs
                } else if want(hdr)? {
                    took = true;
                    want_more = take(hdr, payload)?;
                } else {
                    rx.push(hdr, payload.to_vec());
                    queued = true;
                }
                Ok(())
            };
            let got = if max_frame == usize::MAX {
                link.try_recv(&mut visit)?
            } else {
                link.try_recv_small(max_frame, &mut visit)?
            };
            if !got {
                break;
            }
        }
        drop(rx);
        if queued {
            // Another thread of this process may be waiting for what we just queued.
            self.bell().ring();
        }
        Ok((took, queued))
    }

    fn rx_of(&self, peer: usize) -> Result<&Mutex<RxState>> {
        self.rx
            .get(peer)
            .ok_or_else(|| Error::intern(format!("rank {peer} is not in a world of {}", self.size)))
    }

    // -----------------------------------------------------------------------------------------
    // Point-to-point matching (used by `crate::p2p`)

    /// Point-to-point matching at `peer` (the rule is in `crate::p2p::matching`): the first
    /// fragments of the messages from `peer`, oldest first — queued ones, then those read from
    /// the link now — are offered to `want`; each it accepts goes to `take`, until `take`
    /// returns `false`. Frames read on the way that are not taken are queued.
    ///
    /// `read_link: false` looks at the messages already queued from `peer` only.
    pub fn p2p_match(
        &self,
        peer: usize,
        read_link: bool,
        want: &mut dyn FnMut(&FrameHeader) -> bool,
        take: &mut dyn FnMut(&FrameHeader, &[u8]) -> Result<bool>,
    ) -> Result<()> {
        let link = match read_link {
            true => self.links.get(peer).and_then(|l| l.as_deref()),
            false => None,
        };
        let mut first = |h: &FrameHeader| Ok(h.is_p2p_first() && want(h));
        self.poll_from(peer, link, usize::MAX, &mut first, take)?;
        Ok(())
    }

    /// Whether message `seq` to `peer` may post its fragments after the first now: one message
    /// at a time per peer does (the first to ask, until [`Endpoint::p2p_body_done`]). First
    /// fragments go out in call order regardless (matching needs them); the bodies of several
    /// large messages outstanding to one peer (a window of `MPI_Isend`s) would otherwise
    /// interleave on the link, and the receiver, reading one message, would queue — copy — the
    /// others' fragments on the way.
    pub fn p2p_body_turn(&self, peer: usize, seq: u64) -> bool {
        let Some(owner) = self.body_owner.get(peer) else {
            return true;
        };
        match owner.compare_exchange(0, seq + 1, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => true,
            Err(cur) => cur == seq + 1,
        }
    }

    /// Message `seq` to `peer` has posted all its fragments (or is abandoned): the next may go.
    pub fn p2p_body_done(&self, peer: usize, seq: u64) {
        if let Some(owner) = self.body_owner.get(peer) {
            if owner
                .compare_exchange(seq + 1, 0, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                // A send of this process may be asleep waiting for its turn.
                self.bell().ring();
            }
        }
    }

    /// Feeds the later fragments of message `seq` from `peer` to `take`, in order, until it
    /// returns `false` or none is available. Returns whether any was taken.
    pub fn p2p_take_rest(
        &self,
        peer: usize,
        comm_id: u64,
        seq: u64,
        take: &mut dyn FnMut(&FrameHeader, &[u8]) -> Result<bool>,
    ) -> Result<bool> {
        let mut want = |h: &FrameHeader| {
            Ok(h.is_p2p() && h.comm_id == comm_id && h.seq == seq && h.offset > 0)
        };
        Ok(self.poll_with(peer, &mut want, take)?.0)
    }

    /// Takes the acknowledgement of synchronous message `seq` of `comm_id` sent to `peer`, if
    /// it has come; frames read on the way are queued.
    pub fn p2p_take_ack(&self, peer: usize, comm_id: u64, seq: u64) -> Result<bool> {
        let mut want = |h: &FrameHeader| {
            Ok(h.is_p2p() && h.flags & FLAG_SYNC_ACK != 0 && h.comm_id == comm_id && h.seq == seq)
        };
        Ok(self.poll_with(peer, &mut want, &mut |_, _| Ok(false))?.0)
    }

    /// Owes `peer` the acknowledgement `hdr` of a synchronous message just matched. Matching
    /// runs under a source's lock, where nothing can be sent (the link may be full, or the
    /// message came from this rank itself): it goes out at the next [`Endpoint::p2p_flush_acks`].
    pub fn p2p_queue_ack(&self, peer: usize, hdr: FrameHeader) {
        let mut acks = self.acks.lock();
        acks.push((peer, hdr));
        self.n_acks.store(acks.len(), Ordering::SeqCst);
    }

    /// Sends the acknowledgements owed (those whose link has no room stay owed). Cheap when
    /// none is: every wait calls it. Best effort: an acknowledgement to a peer whose link has
    /// failed is dropped (nobody waits for it any more), as `drain` leaves failures to the
    /// operation that needs the peer.
    #[inline]
    pub fn p2p_flush_acks(&self) {
        if self.n_acks.load(Ordering::SeqCst) != 0 {
            self.p2p_flush_owed_acks();
        }
    }

    /// The part of [`Endpoint::p2p_flush_acks`] that runs when acknowledgements are owed (out
    /// of line: every wait's loop checks, and almost none owes one).
    #[cold]
    fn p2p_flush_owed_acks(&self) {
        // Sent with the list's lock released: posting to this rank itself takes a source's
        // lock, and matching (which holds one) queues acknowledgements here — holding both
        // in the opposite order deadlocked a rank whose progress thread flushed while its
        // main thread matched a synchronous message. One flush at a time, so that they go
        // out in the order the messages matched (senders' requests complete in that order).
        // Nothing holds a source's or a link's lock while it waits here.
        let _one_at_a_time = self.flushing_acks.lock();
        let owed = std::mem::take(&mut *self.acks.lock());
        let unsent: Vec<_> = owed
            .into_iter()
            .filter(|(peer, hdr)| {
                let sent = if *peer == self.rank {
                    self.p2p_post_local(hdr, Vec::new()).map(|_| true)
                } else {
                    self.try_send(*peer, hdr, &[])
                };
                matches!(sent, Ok(false))
            })
            .collect();
        let mut acks = self.acks.lock();
        if !unsent.is_empty() {
            // Still owed, ahead of any queued meanwhile.
            acks.splice(0..0, unsent);
        }
        self.n_acks.store(acks.len(), Ordering::SeqCst);
    }

    /// The first-fragment header of the oldest message from `peer` that `key` accepts, left
    /// in place (a probe): frames read from the link to find it are queued, so the receive
    /// that follows finds the same message.
    pub fn p2p_peek(&self, peer: usize, key: &P2pKey) -> Result<Option<FrameHeader>> {
        let link = self.links.get(peer).and_then(|l| l.as_deref());
        let mut rx = self.rx_of(peer)?.lock();
        if let Some(u) = rx.queue.iter().find(|u| key.starts(&u.hdr)) {
            return Ok(Some(u.hdr));
        }
        let Some(link) = link else {
            return Ok(None);
        };
        let mut found = None;
        let mut queued = false;
        while found.is_none() {
            let got = link.try_recv(&mut |hdr: &FrameHeader, payload: &[u8]| {
                queued = true;
                if hdr.is_notice() {
                    self.notices.record(hdr.comm_id, hdr.seq, peer, payload);
                    return Ok(());
                }
                rx.push(hdr, payload.to_vec());
                if key.starts(hdr) {
                    found = Some(*hdr);
                }
                Ok(())
            })?;
            if !got {
                break;
            }
        }
        drop(rx);
        if queued {
            self.bell().ring();
        }
        Ok(found)
    }

    /// Arrival stamp of the oldest *queued* message from `peer` that `key` accepts.
    pub fn p2p_oldest_queued(&self, peer: usize, key: &P2pKey) -> Option<u64> {
        let rx = self.rx.get(peer)?.lock();
        let stamp = rx
            .queue
            .iter()
            .find(|u| key.starts(&u.hdr))
            .map(|u| u.stamp);
        stamp
    }

    /// Moves every frame waiting in `peer`'s link into the queue (copying). A sender that waits
    /// for room drains its links so that a peer blocked sending to it can go on.
    /// Returns whether anything moved.
    ///
    /// Best effort: a link that has failed (say, a peer that finished and closed its TCP
    /// connection while we wait for someone else) is not an error here; the operation that
    /// needs that peer reports it.
    pub fn drain(&self, peer: usize) -> Result<bool> {
        Ok(self
            .poll_with(peer, &mut |_| Ok(false), &mut |_, _| Ok(true))
            .map(|r| r.1)
            .unwrap_or(false))
    }

    /// As [`Endpoint::drain`], for the frames of at most `max` payload bytes at the head of
    /// `peer`'s link (a larger frame stops it, unread; links that cannot look before they read
    /// move nothing). A sender whose link is full drains the small frames its peer sent at
    /// once — the peer may be stuck sending to it — without taking the large fragments a
    /// receive of this rank would read straight into its buffer. Best effort, as `drain`.
    pub fn drain_small(&self, peer: usize, max: usize) -> bool {
        let link = self.links.get(peer).and_then(|l| l.as_deref());
        self.poll_from(peer, link, max, &mut |_| Ok(false), &mut |_, _| Ok(true))
            .map(|r| r.1)
            .unwrap_or(false)
    }

    /// The peers (world ranks) whose process has ended or whose link has failed, with what is
    /// known. While finalizing, only the ranks in `only` (the ones waited for) are looked at,
    /// else every peer. TCP links are drained on the way (their frames queued), so a failure
    /// is reported only after everything the peer sent before it.
    pub fn lost_peers(&self, only: Option<&[usize]>) -> Vec<(usize, String)> {
        let finalizing = self.finalizing.load(Ordering::Relaxed);
        let all: Vec<usize>;
        let ranks = match only {
            Some(r) if finalizing => r,
            _ => {
                all = (0..self.size).collect();
                &all
            }
        };
        let mut lost = Vec::new();
        for &p in ranks.iter().filter(|&&p| p != self.rank) {
            if self.peers.get(p).is_some_and(|m| m.is_gone()) {
                lost.push((p, "its process has ended".into()));
                continue;
            }
            let Some(link) = self.links.get(p).and_then(|l| l.as_deref()) else {
                continue;
            };
            if link.name() != "shm" {
                if let Err(e) = self.poll_with(p, &mut |_| Ok(false), &mut |_, _| Ok(true)) {
                    lost.push((p, e.msg));
                }
            }
        }
        lost
    }

    /// Tells the world ranks `to` that this rank left collective call `seq` of `comm_id` with
    /// `text` (a [`Kind::Notice`](crate::frame::Kind) frame each). Best effort: a full
    /// channel is retried for [`NOTICE_PATIENCE`](crate::health::NOTICE_PATIENCE) while this
    /// rank drains its own links (the peer may be blocked sending to us), a failed link is
    /// skipped.
    pub fn send_notice(&self, to: &[usize], comm_id: u64, seq: u64, text: &str) {
        let hdr = FrameHeader::notice(comm_id, seq, self.rank as u32);
        let mut pending: Vec<usize> = to.iter().copied().filter(|&p| p != self.rank).collect();
        crate::health::retry_for(crate::health::NOTICE_PATIENCE, || {
            pending.retain(|&p| {
                // A peer whose process has ended reads nothing more: its channel may be full
                // for good (a fan-out posts to every peer at once).
                if self.peers.get(p).is_some_and(|m| m.is_gone()) {
                    return false;
                }
                let Ok(max) = self.max_payload(p) else {
                    return false;
                };
                let body = &text.as_bytes()[..text.len().min(max).min(crate::health::NOTICE_MAX)];
                !matches!(self.try_send(p, &hdr, body), Ok(true) | Err(_))
            });
            if !pending.is_empty() {
                for p in 0..self.size {
                    let _ = self.drain(p);
                }
            }
            pending.is_empty()
        });
    }

    /// [`Endpoint::drain`] for a collective call waiting to sleep: frames of the same call
    /// (`key`'s communicator and call number) are signature-checked on the way, so a peer
    /// that called something else is noticed even when no receive of this rank would take
    /// its frames (a different root, say). Link failures are left to the receive that needs
    /// the peer, as in `drain`.
    pub fn drain_call(
        &self,
        peer: usize,
        key: MatchKey,
        sig: &Signature,
        ranks: (usize, usize),
    ) -> Result<bool> {
        let mut bad = None;
        let res = self.poll_with(
            peer,
            &mut |h| {
                if !h.is_p2p() && h.comm_id == key.comm_id && h.seq == key.seq && bad.is_none() {
                    bad = check_signature(h, sig, key, ranks).err();
                }
                Ok(false)
            },
            &mut |_, _| Ok(true),
        );
        match bad {
            Some(e) => Err(e),
            None => Ok(res.map(|r| r.1).unwrap_or(false)),
        }
    }

    /// A message (fragment) to this rank itself: straight into its own queue.
    pub fn p2p_post_local(&self, hdr: &FrameHeader, data: Vec<u8>) -> Result<()> {
        let mut h = *hdr;
        h.len = u32::try_from(data.len())
            .map_err(|_| Error::intern("local fragment larger than 4 GiB"))?;
        self.rx_of(self.rank)?.lock().push(&h, data);
        // A thread of this process may be waiting for it.
        self.bell().ring();
        Ok(())
    }

    /// The number of the next point-to-point message to `peer`.
    pub fn p2p_next_seq(&self, peer: usize) -> Result<u64> {
        let mut rx = self.rx_of(peer)?.lock();
        let seq = rx.p2p_next_seq;
        rx.p2p_next_seq += 1;
        Ok(seq)
    }
}

fn check_signature(
    hdr: &FrameHeader,
    mine: &Signature,
    key: MatchKey,
    (me, peer): (usize, usize),
) -> Result<()> {
    match hdr.signature() {
        Some(theirs) if theirs == *mine => Ok(()),
        Some(theirs) => Err(crate::health::mismatch(
            key.comm_id,
            key.seq,
            (me, mine),
            (peer, &theirs),
        )),
        None => Err(Error::other(format!(
            "corrupt frame from rank {peer}: bad magic/version"
        ))),
    }
}
