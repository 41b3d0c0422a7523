//! Which receive gets which message: MPI's matching order for point-to-point.
//!
//! MPI's non-overtaking rule: messages from one source on one communicator are matched in the
//! order they were sent against receives in the order they were posted. Here a *pass* matches
//! a list of receives given in posting order (the posted `MPI_Irecv`s, then possibly the
//! blocking receive of the calling thread, which was posted last): it visits the sources those
//! receives listen to, and at each it walks the messages that have arrived — queued ones, then
//! those still on the link, which is arrival order (= send order) — handing each message's
//! first fragment to the *earliest* receive of the list that accepts it. That is exactly the
//! rule, whichever thread runs the pass, and however messages and passes interleave: a
//! message is only ever compared against every receive ahead of it in the list, and a receive
//! only ever gets a message after every earlier message of that source it would accept has
//! gone to an earlier receive.
//!
//! (The rule cannot be met by letting each receive look for itself in posting order: a
//! message M0 that an earlier receive R1 accepts can arrive after R1 looked and, together
//! with a later M, before a later receive R2 looks; R2 then takes M, which R1 also accepts,
//! and R1 must get M0, not M.)
//!
//! A visit reads a link only while some receive of the list still listens to that source;
//! frames nobody takes are queued, as every reader of a link does. Receives on another
//! endpoint (tests build several in one process) never match each other's messages.

use std::cell::{Cell, RefCell};

use crate::comm::Comm;
use crate::endpoint::{Endpoint, P2pKey};
use crate::error::Error;
use crate::frame::{FrameHeader, FLAG_SYNC};

use super::{oldest_queued, rotation, store, Claim, Envelope, Incoming, Source};

/// A receive as a pass sees it: what it accepts, where its message goes, and its claim (set
/// by the pass).
pub(super) struct Matcher<'x> {
    pub comm: &'x Comm,
    pub source: Source,
    pub key: P2pKey,
    pub into: Incoming,
    /// Where an `MPI_ANY_SOURCE` receive starts looking (moves on by one per pass: fairness).
    pub rotate: &'x mut usize,
    pub claim: &'x mut Option<Claim>,
    /// Takes no part (already claimed, or failed).
    pub out: bool,
    /// A matched probe: keeps the first fragment's payload in the claim (it has no buffer).
    pub keep_head: bool,
}

impl Matcher<'_> {
    /// Still looking, for messages from world rank `w` of endpoint `ep`.
    fn listens(&self, ep: &Endpoint, w: usize) -> bool {
        !self.out
            && self.claim.is_none()
            && std::ptr::eq(&*self.comm.ep, ep)
            && match self.source {
                Source::Rank(r) => self.comm.world[r] == w,
                Source::Any => self.comm.world.contains(&w),
            }
    }

    /// Takes the message whose first fragment is `h` (from `w`) if it accepts it.
    fn accepts(&self, ep: &Endpoint, w: usize, h: &FrameHeader) -> bool {
        self.key.starts(h) && self.listens(ep, w)
    }

    /// The sources to visit for this receive, in order: for `MPI_ANY_SOURCE` the member with
    /// the oldest queued message it accepts first, then every member from a rotating start.
    fn peers(&mut self, out: &mut Vec<usize>) {
        match self.source {
            Source::Rank(r) => out.push(self.comm.world[r]),
            Source::Any => {
                out.extend(oldest_queued(&self.comm.ep, &self.comm.world, &self.key));
                out.extend(rotation(&self.comm.world, self.rotate));
            }
        }
    }
}

/// One pass over `rxs` (receives in posting order): each claims the message MPI's order
/// gives it among those that have arrived, if any. A source whose link fails fails every
/// receive still listening to it: returns (index in `rxs`, error) for those.
pub(super) fn match_in_order(rxs: &mut [Matcher<'_>]) -> Vec<(usize, Error)> {
    let mut failed = Vec::new();
    let mut visited: Vec<(*const Endpoint, usize)> = Vec::new();
    let mut peers = Vec::new();
    for j in 0..rxs.len() {
        let comm = rxs[j].comm;
        let ep: &Endpoint = &comm.ep;
        peers.clear();
        if !rxs[j].out && rxs[j].claim.is_none() {
            rxs[j].peers(&mut peers);
        }
        for &w in &peers {
            // Visits on behalf of the earliest receive still looking; the later ones' sources
            // come when their turn comes (a visit serves every receive listening there).
            if rxs[j].claim.is_some() || rxs[j].out {
                break;
            }
            if visited.contains(&(ep as *const Endpoint, w)) {
                continue;
            }
            visited.push((ep as *const Endpoint, w));
            let visited_ok = visit(ep, w, rxs);
            // A synchronous message claimed there owes its sender an acknowledgement, queued
            // while the link was locked: send it now, whatever call matched (a receive, a
            // matched probe, a request stepped by `MPI_Test`), so the sender's request can
            // complete without waiting for this rank's next blocking wait.
            ep.p2p_flush_acks();
            if let Err(e) = visited_ok {
                for (k, r) in rxs.iter_mut().enumerate() {
                    if r.listens(ep, w) {
                        r.out = true;
                        failed.push((k, e.clone()));
                    }
                }
            }
        }
    }
    failed
}

/// The messages that have arrived from `w`, oldest first, each to the earliest receive of
/// `rxs` that accepts it; stops when no receive listens to `w` any more.
fn visit(ep: &Endpoint, w: usize, rxs: &mut [Matcher<'_>]) -> crate::error::Result<()> {
    let rxs = RefCell::new(rxs);
    let chosen = Cell::new(None);
    ep.p2p_match(
        w,
        true,
        &mut |h| {
            let j = rxs.borrow().iter().position(|r| r.accepts(ep, w, h));
            chosen.set(j);
            j.is_some()
        },
        &mut |h, payload| {
            let mut rxs = rxs.borrow_mut();
            let j = chosen.get().expect("a receive accepted this message");
            let r = &mut rxs[j];
            *r.claim = Some(claim_first(ep, w, h, payload, &r.into, r.keep_head));
            Ok(rxs.iter().any(|r| r.listens(ep, w)))
        },
    )
}

/// A receive's claim of the message whose first fragment `h` (from world rank `w`) carries
/// `payload`: stores the payload (or keeps it, for a matched probe) and, for a synchronous
/// message, queues the acknowledgement its sender waits for (sent once the source's lock is
/// gone: [`Endpoint::p2p_flush_acks`]).
pub(super) fn claim_first(
    ep: &Endpoint,
    w: usize,
    h: &FrameHeader,
    payload: &[u8],
    into: &Incoming,
    keep_head: bool,
) -> Claim {
    let head = if keep_head {
        Some(payload.to_vec())
    } else {
        store(into, 0, payload);
        None
    };
    if h.flags & FLAG_SYNC != 0 {
        ep.p2p_queue_ack(w, FrameHeader::p2p_ack(h, ep.rank as u32));
    }
    Claim {
        peer: w,
        seq: h.seq,
        env: Envelope::of(h),
        total: h.count as usize,
        got: payload.len(),
        head,
    }
}
