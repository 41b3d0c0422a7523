//! Transports: how one frame gets from this rank to a peer.
//!
//! Algorithms never see a transport. The engine ([`crate::engine`]) moves frames through a
//! [`Link`] per peer, chosen when the world is set up ("first transport that can reach the
//! peer", as in NCCL): shared memory for peers on this host; TCP for other hosts; CUDA
//! IPC for device buffers (later). A link is non-blocking: it either moves a frame now or says
//! it cannot; waiting happens in one place, the engine, on the rank's doorbell
//! ([`crate::wait`]), which every transport rings when it makes progress possible.

pub mod shm;
pub mod tcp;

use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::Result;
use crate::frame::FrameHeader;

/// Payload bytes this process sent over shared memory / TCP (`HCOMM_STATS`): one relaxed
/// atomic add per frame, in [`crate::endpoint::Endpoint::try_send`].
pub static BYTES_SHM: AtomicU64 = AtomicU64::new(0);
pub static BYTES_TCP: AtomicU64 = AtomicU64::new(0);

/// Counts `n` payload bytes sent over the link named `name` ([`Link::name`]).
#[inline]
pub fn count_sent(name: &str, n: usize) {
    let c = match name {
        "shm" => &BYTES_SHM,
        "tcp" => &BYTES_TCP,
        _ => return,
    };
    c.fetch_add(n as u64, Ordering::Relaxed);
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

    /// Hands the oldest unread frame from the peer to `visit`, then releases it.
    /// `Ok(false)`: nothing to read now. The payload slice is only valid inside `visit`
    /// (for shared memory it points into the peer-shared slot: zero copies).
    fn try_recv(&self, visit: &mut dyn FnMut(&FrameHeader, &[u8]) -> Result<()>) -> Result<bool>;

    /// Short name for logs ("shm", "tcp").
    fn name(&self) -> &'static str;
}
