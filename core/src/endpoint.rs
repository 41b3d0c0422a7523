//! This rank's end of the world: one [`Link`] per peer, receive matching, and the doorbell.
//!
//! Matching: a receive names `(source, comm_id, seq, tag)`. Frames are read from the source's
//! link in arrival order; one that belongs to someone else (another communicator, used by
//! another thread; or a later operation) is copied into that source's unexpected queue, and
//! our own doorbell is rung so a thread waiting for it looks again. Per source, the queue and
//! the link's receive side sit under one short-held lock, never held across a wait.

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::frame::{FrameHeader, Signature};
use crate::transport::shm::Segment;
use crate::transport::Link;
use crate::wait::Doorbell;

/// Identifies the frames a receive wants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatchKey {
    pub comm_id: u64,
    pub seq: u64,
    pub tag: u32,
}

struct Unexpected {
    hdr: FrameHeader,
    data: Vec<u8>,
}

#[derive(Default)]
struct RxState {
    queue: VecDeque<Unexpected>,
}

enum BellHome {
    Shm(Arc<Segment>),
    Local(Box<Doorbell>),
}

pub struct Endpoint {
    pub rank: usize,
    pub size: usize,
    links: Vec<Option<Box<dyn Link>>>,
    rx: Vec<Mutex<RxState>>,
    bell: BellHome,
    /// How long to poll before sleeping.
    pub spin: std::time::Duration,
}

impl Endpoint {
    /// A world of one (no peers, a private doorbell).
    pub fn singleton() -> Endpoint {
        Endpoint {
            rank: 0,
            size: 1,
            links: vec![None],
            rx: vec![Mutex::new(RxState::default())],
            bell: BellHome::Local(Box::new(Doorbell {
                bell: 0.into(),
                sleepers: 0.into(),
            })),
            spin: std::time::Duration::ZERO,
        }
    }

    /// `links[r]` is `None` exactly for `r == rank`. `own` is this rank's segment (its doorbell).
    pub fn new(
        rank: usize,
        links: Vec<Option<Box<dyn Link>>>,
        own: Arc<Segment>,
        spin: std::time::Duration,
    ) -> Endpoint {
        let size = links.len();
        Endpoint {
            rank,
            size,
            links,
            rx: (0..size).map(|_| Mutex::new(RxState::default())).collect(),
            bell: BellHome::Shm(own),
            spin,
        }
    }

    pub fn bell(&self) -> &Doorbell {
        match &self.bell {
            BellHome::Shm(s) => s.bell(),
            BellHome::Local(b) => b,
        }
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
        self.link(peer)?.try_send(hdr, payload)
    }

    /// Feeds frames from `peer` that match `key` to `consume` until it returns `false`
    /// (satisfied) or nothing more is available. Returns whether any frame was consumed.
    /// A frame of the same `(comm_id, seq)` with another signature is a mismatched call.
    pub fn poll_recv(
        &self,
        peer: usize,
        key: MatchKey,
        sig: &Signature,
        consume: &mut dyn FnMut(&FrameHeader, &[u8]) -> Result<bool>,
    ) -> Result<bool> {
        let link = self.link(peer)?;
        let mut rx = self.rx[peer].lock();
        let mut progressed = false;
        while let Some(pos) = rx.queue.iter().position(|u| {
            u.hdr.comm_id == key.comm_id && u.hdr.seq == key.seq && u.hdr.tag == key.tag
        }) {
            let u = rx.queue.remove(pos).expect("position is in range");
            progressed = true;
            if !consume(&u.hdr, &u.data)? {
                return Ok(true);
            }
        }
        let mut want_more = true;
        let mut queued = false;
        while want_more {
            let got = link.try_recv(&mut |hdr: &FrameHeader, payload: &[u8]| {
                if hdr.comm_id == key.comm_id && hdr.seq == key.seq {
                    check_signature(hdr, sig, peer)?;
                    if hdr.tag == key.tag {
                        want_more = consume(hdr, payload)?;
                        return Ok(());
                    }
                }
                rx.queue.push_back(Unexpected {
                    hdr: *hdr,
                    data: payload.to_vec(),
                });
                queued = true;
                Ok(())
            })?;
            if !got {
                break;
            }
            progressed = true;
        }
        drop(rx);
        if queued {
            // Another thread of this process may be waiting for what we just queued.
            self.bell().ring();
        }
        Ok(progressed)
    }
}

fn check_signature(hdr: &FrameHeader, mine: &Signature, peer: usize) -> Result<()> {
    match hdr.signature() {
        Some(theirs) if theirs == *mine => Ok(()),
        Some(theirs) => Err(Error::other(format!(
            "mismatched collective calls: rank {peer} (world) called {theirs} where this rank called {mine} (same communicator, same call number {})",
            hdr.seq
        ))),
        None => Err(Error::other(format!(
            "corrupt frame from rank {peer}: bad magic/version"
        ))),
    }
}
