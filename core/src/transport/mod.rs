//! Transports: how one frame gets from this rank to a peer.
//!
//! Algorithms never see a transport. The engine ([`crate::engine`]) moves frames through a
//! [`Link`] per peer, chosen when the world is set up ("first transport that can reach the
//! peer", as in NCCL): shared memory for peers on this host; TCP for other hosts; CUDA
//! IPC for device buffers (later). A link is non-blocking: it either moves a frame now or says
//! it cannot; waiting happens in one place, the engine, on the rank's doorbell
//! ([`crate::wait`]), which every transport rings when it makes progress possible.

pub mod copy_rate;
pub mod shm;
pub mod tcp;

use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::Result;
use crate::frame::{Expected, FrameHeader};

/// Payload bytes this process sent over shared memory / TCP (`HCOMM_STATS`): one relaxed
/// atomic add per frame, in [`crate::endpoint::Endpoint::try_send`].
pub static BYTES_SHM: AtomicU64 = AtomicU64::new(0);
pub static BYTES_TCP: AtomicU64 = AtomicU64::new(0);
/// Bytes copied into this process's fan-out stage (once for all their readers), and the
/// fragments of fan-out sends that found the stage full and went through the slots instead.
pub static BYTES_STAGED: AtomicU64 = AtomicU64::new(0);
pub static STAGE_FULL: AtomicU64 = AtomicU64::new(0);

/// Counts `n` payload bytes sent over `link` (in its [`Link::sent_counter`]).
#[inline]
pub fn count_sent(link: &dyn Link, n: usize) {
    link.sent_counter().fetch_add(n as u64, Ordering::Relaxed);
}

/// A connection to one peer, both directions.
///
/// Each direction is used by one thread at a time (the engine serializes per peer and
/// direction); implementations need not lock internally but must be `Send + Sync`.
pub trait Link: Send + Sync {
    /// Largest payload one frame can carry.
    fn max_payload(&self) -> usize;

    /// Posts one frame to the peer if there is room now. `Ok(false)`: full, try later.
    fn try_send(&self, hdr: &FrameHeader, payload: &[u8]) -> Result<bool>;

    /// Hands the oldest unread frame from the peer to `visit`, then releases it (a link that
    /// keeps whole collective messages apart — shared memory's boxes — may hand those after
    /// its stream: they are matched by key, never by order). `Ok(false)`: nothing to read now. The payload slice is only valid inside `visit`
    /// (for shared memory it points into the peer-shared slot: zero copies).
    fn try_recv(&self, visit: &mut dyn FnMut(&FrameHeader, &[u8]) -> Result<()>) -> Result<bool>;

    /// As [`Link::try_recv`], but only a frame whose payload is at most `max` bytes: a larger
    /// one stays unread (`Ok(false)`), as does every frame of a link that cannot look before
    /// it reads (the default).
    fn try_recv_small(
        &self,
        _max: usize,
        _visit: &mut dyn FnMut(&FrameHeader, &[u8]) -> Result<()>,
    ) -> Result<bool> {
        Ok(false)
    }

    /// Short name for logs ("shm", "tcp").
    fn name(&self) -> &'static str;

    /// The process-wide count of payload bytes sent over links of this kind ([`BYTES_SHM`],
    /// [`BYTES_TCP`]). A counter, not the name, so that counting a frame compares no strings.
    fn sent_counter(&self) -> &'static AtomicU64;

    /// Posts a small frame beside the ordered stream, if the link has such a place and it is
    /// free now (`false`: send it with [`Link::try_send`]). Only for frames that are found by
    /// their key, never by their order: the one fragment of a collective's message. The peer
    /// gets it from [`Link::try_recv`] like any frame, or from [`Link::try_take_box`].
    fn try_send_box(&self, _hdr: &FrameHeader, _payload: &[u8]) -> bool {
        false
    }

    /// Takes the frame posted with [`Link::try_send_box`] if there is one and `want` accepts
    /// it (`take` gets it; a rejected frame stays). Whether a frame was taken.
    fn try_take_box(
        &self,
        _want: &mut dyn FnMut(&FrameHeader) -> Result<bool>,
        _take: &mut dyn FnMut(&FrameHeader, &[u8]) -> Result<bool>,
    ) -> Result<bool> {
        Ok(false)
    }

    /// Posts the frame `exp` describes (`payload` is its whole message, `exp.len` bytes) in a
    /// box, like [`Link::try_send_box`] with the header [`FrameHeader::new`] makes of `exp`
    /// and its message length — without making it. `false`: no box (too long, none free):
    /// send that header with [`Link::try_send`].
    fn try_send_expected(&self, _exp: &Expected, _payload: &[u8]) -> bool {
        false
    }

    /// Takes the next frame of the boxes ([`Link::try_send_box`]) when it is exactly `exp` —
    /// its key, its signature, one whole message of `exp.len` bytes — and hands its payload to
    /// `take`. Anything else (no frame yet, another call's frame, a mismatched one, the
    /// cursor busy) returns `false` and leaves every frame where it was, for
    /// [`Link::try_take_box`] and [`Link::try_recv`]: a shortcut for the frame a small
    /// collective waits for, which decides nothing the general matching would decide
    /// otherwise. (It compares the box's fields to the expected ones where the general path
    /// builds a header, asks a matching closure and checks the signature: about a third of
    /// an 8-byte bcast leaf's instructions.)
    fn try_take_expected(&self, _exp: &Expected, _take: &mut dyn FnMut(&[u8])) -> bool {
        false
    }

    /// Single copy, sending side: posts a control frame (header `hdr`, `flags |=`
    /// [`crate::frame::FLAG_CMA`]) that lets the peer read the message at `addr` (its length
    /// is `hdr`'s message length) straight out of this process. `addr..addr+len` must stay
    /// unchanged until [`Link::cma_done`] says the peer has read it.
    fn try_send_cma(&self, _hdr: &FrameHeader, _addr: *const u8) -> Result<CmaSend> {
        Ok(CmaSend::No)
    }

    /// Whether the peer has read single-copy message `ticket`.
    fn cma_done(&self, _ticket: u64) -> bool {
        true
    }

    /// Single copy, receiving side: reads `len` bytes at the peer's address `addr` into `dst`.
    /// `Ok(false)`: the peer's process no longer exists (the liveness checks name it).
    ///
    /// # Safety
    /// `dst` is valid for `len` bytes of writing.
    unsafe fn cma_read(&self, _addr: u64, _dst: *mut u8, _len: usize) -> Result<bool> {
        Err(crate::error::Error::intern(format!(
            "single-copy frame on a {} link",
            self.name()
        )))
    }

    /// Tells the peer that single-copy message `ticket` has been read.
    fn cma_ack(&self, _ticket: u64) {}

    /// Whether this link can send fragments through this process's fan-out stage (see
    /// `shm`'s module docs): every link that can shares one stage.
    fn stages(&self) -> bool {
        false
    }

    /// Takes a free piece of this process's stage for a fragment `readers` peers will read
    /// (`None`: none free now; send through the link instead).
    fn stage_take(&self, _readers: u32) -> Option<(u32, *mut u8)> {
        None
    }

    /// `k` readers of `piece` will never be sent it (a send given up).
    fn stage_release(&self, _piece: u32, _k: u32) {}

    /// Posts the fragment (header `hdr`, `len` bytes) written to stage `piece` to the peer,
    /// in the stream's order; the peer's link hands it on as an ordinary fragment.
    /// `Ok(false)`: the ring is full, try later.
    fn try_send_staged(&self, _hdr: &FrameHeader, _piece: u32, _len: usize) -> Result<bool> {
        Err(crate::error::Error::intern(format!(
            "staged fragment on a {} link",
            self.name()
        )))
    }
}

/// What [`Link::try_send_cma`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmaSend {
    /// Posted, with this ticket.
    Posted(u64),
    /// No room in the channel now: try again later.
    Full,
    /// Not for this message: send it through the slots.
    No,
}

/// Payload of a single-copy control frame: the sender's address and the ticket.
pub const CMA_PAYLOAD: usize = 16;
