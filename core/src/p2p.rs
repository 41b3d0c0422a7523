//! Point-to-point messaging: `MPI_Send`, `MPI_Recv`, `MPI_Sendrecv`, `MPI_Probe`.
//!
//! A message travels as one or more [`Kind::P2p`](crate::frame::Kind) frames over the same
//! links as collective frames (the header fields are described in [`crate::frame`]). The first
//! fragment (`offset == 0`) carries the envelope — communicator, tag, the sender's rank, the
//! total length — and every fragment carries the message's number (`seq`, counted per
//! sender–destination pair), so fragments of concurrent messages (two threads sending to the
//! same rank) can interleave on a link and still be told apart.
//!
//! Matching (in [`Endpoint`]): a receive looks for the oldest first fragment from its source
//! that its communicator and tag accept — first in the source's unexpected queue, then on the
//! link, queueing whatever else it reads on the way. Links and queues keep arrival order, and a
//! sender posts its messages' first fragments in call order, so two messages between a pair on
//! one communicator are received in the order they were sent (MPI's non-overtaking rule). Once
//! a message is claimed, its other fragments are collected by `seq` from that source alone.
//! `MPI_ANY_SOURCE` takes the earliest-queued matching message of any member of the
//! communicator (queued frames carry an arrival stamp), else the first one found on the links,
//! starting at a rotating member so no source starves. A probe finds a message the same way
//! but leaves it queued, so the receive that follows gets the same one.
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
//! Waiting uses the engine's spin-then-sleep loop ([`crate::engine::drive`]) on the rank's
//! doorbell. Nothing here holds a lock across a wait, so threads may send and receive
//! concurrently (on different communicators or tags, as MPI requires for determinism).

use crate::comm::Comm;
use crate::datatype::Datatype;
use crate::endpoint::{Endpoint, P2pKey};
use crate::engine::{drive, FnWait, Step};
use crate::error::{Error, Result};
use crate::frame::FrameHeader;

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

/// `MPI_Send` to comm rank `dest`: returns once every fragment is posted.
pub fn send(comm: &Comm, dest: usize, tag: u32, msg: &Outgoing) -> Result<()> {
    let mut op = SendOp::new(comm, dest, tag, msg)?;
    drive(
        &comm.ep,
        &mut wait_for(comm, "MPI_Send", Some(dest), None, |idle| {
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
        Some((dest, tag, msg)) => Some(SendOp::new(comm, dest, tag, msg)?),
        None => None,
    };
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
}

impl<'a> SendOp<'a> {
    fn new(comm: &'a Comm, dest: usize, tag: u32, msg: &Outgoing) -> Result<SendOp<'a>> {
        let ep = &*comm.ep;
        let peer = comm.world[dest];
        let frag = if peer == ep.rank {
            LOCAL_FRAG
        } else {
            ep.max_payload(peer)?
        };
        let hdr = FrameHeader::p2p(
            comm.id,
            ep.p2p_next_seq(peer)?,
            tag,
            ep.rank as u32,
            comm.rank as i32,
            msg.dtype,
            msg.len as u64,
            msg.mpi_bytes,
        );
        Ok(SendOp {
            ep,
            peer,
            hdr,
            buf: msg.buf,
            len: msg.len,
            done: 0,
            started: false,
            frag: frag.max(1),
        })
    }

    fn finished(&self) -> bool {
        self.started && self.done == self.len
    }

    /// Posts as many fragments as there is room for. When none fits and this is the last poll
    /// before a sleep (`idle`), drains every link so a peer blocked sending to us can go on.
    fn advance(&mut self, idle: bool) -> Result<bool> {
        let mut moved = false;
        while !self.finished() {
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
            } else if !self.ep.try_send(self.peer, &self.hdr, payload)? {
                break;
            }
            self.started = true;
            self.done += n;
            moved = true;
        }
        if idle && !moved && !self.finished() {
            for p in (0..self.ep.size).filter(|&p| p != self.ep.rank) {
                self.ep.drain(p)?;
            }
        }
        Ok(moved)
    }
}

/// A message being received: where it comes from and how much of it is in.
#[derive(Clone, Copy, Debug)]
struct Claim {
    /// World rank of the sender.
    peer: usize,
    seq: u64,
    env: Envelope,
    total: usize,
    got: usize,
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
        }
    }

    /// Takes what has arrived; `true` if anything did.
    fn advance(&mut self) -> Result<bool> {
        if self.result.is_some() {
            return Ok(false);
        }
        let mut moved = false;
        if self.claim.is_none() {
            self.claim = self.take_first()?;
            if self.claim.is_none() {
                return Ok(false);
            }
            moved = true;
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

    /// Claims the next matching message: stores its first fragment.
    fn take_first(&mut self) -> Result<Option<Claim>> {
        let ep = &*self.comm.ep;
        let into = self.into;
        let key = self.key;
        let mut got = 0;
        let mut take_from = |w: usize| -> Result<Option<Claim>> {
            let h = ep.p2p_take_first(w, &key, &mut |_, payload| {
                store(&into, 0, payload);
                got = payload.len();
                Ok(())
            })?;
            Ok(h.map(|h| Claim {
                peer: w,
                seq: h.seq,
                env: Envelope::of(&h),
                total: h.count as usize,
                got,
            }))
        };
        match self.source {
            Source::Rank(r) => take_from(self.comm.world[r]),
            Source::Any => {
                if let Some(w) = oldest_queued(ep, &self.comm.world, &key) {
                    if let Some(c) = take_from(w)? {
                        return Ok(Some(c));
                    }
                }
                for w in rotation(&self.comm.world, &mut self.rotate) {
                    if let Some(c) = take_from(w)? {
                        return Ok(Some(c));
                    }
                }
                Ok(None)
            }
        }
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
            send(&comm, 0, tag, &msg).unwrap();
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
