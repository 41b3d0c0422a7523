//! Shared-memory transport between ranks on one host.
//!
//! Each rank creates one segment `/dev/shm/hcomm-<job>-<rank>` holding its doorbell and its
//! *inbound* channels, one per possible sender. Every local peer maps it; once all have mapped
//! it (a bootstrap barrier), the owner unlinks the name, so nothing outlives the job even if a
//! rank is SIGKILLed later (the launcher also removes `hcomm-<job>-*` leftovers of a rank killed
//! in the short window before the unlink).
//!
//! A channel is a single-producer single-consumer ring of `slots` fixed-size slots, each a
//! [`FrameHeader`] followed by up to `slot_bytes` of payload. The sender copies the payload into
//! the slot and publishes it by advancing `head` (Release); the receiver reads the slot in place
//! (a reduction reads it straight out of shared memory) and frees it by advancing `tail`. Both
//! ring the other side's doorbell: new data for the receiver, a free slot for the sender.

use std::ffi::CString;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::Link;
use crate::error::{Error, Result};
use crate::frame::FrameHeader;
use crate::wait::Doorbell;

const SEG_MAGIC: u64 = 0x6863_6f6d_6d73_686d; // "hcommshm"
const HDR_BYTES: usize = 4096;
const CACHELINE: usize = 128;
const FRAME_HDR: usize = std::mem::size_of::<FrameHeader>();

/// Start of a segment.
#[repr(C)]
struct SegmentHeader {
    magic: AtomicU64,
    nranks: AtomicU32,
    slots: AtomicU32,
    slot_bytes: AtomicU32,
    owner_pid: AtomicU32,
    _pad: [u8; 40],
    bell: Doorbell,
}

/// Start of a channel: producer and consumer counters on separate cache lines.
#[repr(C)]
struct ChannelHeader {
    head: AtomicU64,
    _pad0: [u8; CACHELINE - 8],
    tail: AtomicU64,
    _pad1: [u8; CACHELINE - 8],
}

/// Geometry shared by every segment of a job (all ranks compute it from the same settings).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub nranks: usize,
    pub slots: usize,
    pub slot_bytes: usize,
}

impl Geometry {
    /// From `HCOMM_SHM_SLOTS` / `HCOMM_SHM_SLOT_BYTES`, clamped to sane values. Slot payloads
    /// are multiples of 64 bytes so every payload stays 64-byte aligned.
    pub fn from_params(nranks: usize) -> Geometry {
        let slots = crate::param::shm_slots().unwrap_or(8).clamp(2, 1024);
        let slot_bytes = crate::param::shm_slot_bytes()
            .unwrap_or(128 << 10)
            .clamp(4096, 64 << 20)
            .next_multiple_of(64);
        Geometry {
            nranks,
            slots,
            slot_bytes,
        }
    }

    fn slot_stride(&self) -> usize {
        FRAME_HDR + self.slot_bytes
    }

    fn channel_stride(&self) -> usize {
        (std::mem::size_of::<ChannelHeader>() + self.slots * self.slot_stride())
            .next_multiple_of(4096)
    }

    fn channel_offset(&self, src: usize) -> usize {
        HDR_BYTES + src * self.channel_stride()
    }

    pub fn segment_bytes(&self) -> usize {
        self.channel_offset(self.nranks)
    }
}

/// One mapped segment (ours or a peer's). Unmapped on drop.
pub struct Segment {
    base: *mut u8,
    len: usize,
    geo: Geometry,
}

// SAFETY: the mapping is shared memory accessed only through atomics (headers, counters) or
// through slots whose ownership the SPSC protocol hands to exactly one side at a time.
unsafe impl Send for Segment {}
// SAFETY: as above; &Segment only exposes atomics and protocol-guarded slots.
unsafe impl Sync for Segment {}

impl Segment {
    /// Creates and maps this rank's segment (fails if the name exists: two jobs with one id).
    pub fn create(name: &str, geo: Geometry) -> Result<Segment> {
        let cname = CString::new(format!("/{name}")).map_err(|_| Error::intern("shm name"))?;
        // SAFETY: cname is a valid NUL-terminated string.
        let fd = unsafe {
            libc::shm_open(
                cname.as_ptr(),
                libc::O_CREAT | libc::O_EXCL | libc::O_RDWR | libc::O_CLOEXEC,
                0o600,
            )
        };
        if fd < 0 {
            return Err(Error::os(format!(
                "cannot create shared memory /dev/shm/{name}"
            )));
        }
        let len = geo.segment_bytes();
        // SAFETY: fd is a valid descriptor we own.
        if unsafe { libc::ftruncate(fd, len as libc::off_t) } != 0 {
            let e = Error::os(format!("cannot size /dev/shm/{name} to {len} bytes"));
            // SAFETY: cleaning up what we created; fd is ours.
            unsafe {
                libc::close(fd);
                libc::shm_unlink(cname.as_ptr());
            }
            return Err(e);
        }
        let seg = Self::map(fd, len, geo, name);
        // SAFETY: fd is ours; the mapping keeps the memory alive.
        unsafe { libc::close(fd) };
        let seg = seg.inspect_err(|_| {
            // SAFETY: remove the name we created.
            unsafe { libc::shm_unlink(cname.as_ptr()) };
        })?;
        let h = seg.header();
        h.nranks.store(geo.nranks as u32, Ordering::Relaxed);
        h.slots.store(geo.slots as u32, Ordering::Relaxed);
        h.slot_bytes.store(geo.slot_bytes as u32, Ordering::Relaxed);
        h.owner_pid.store(std::process::id(), Ordering::Relaxed);
        h.magic.store(SEG_MAGIC, Ordering::Release);
        Ok(seg)
    }

    /// Maps a peer's segment and checks it was made with the same geometry.
    pub fn open(name: &str, geo: Geometry) -> Result<Segment> {
        let cname = CString::new(format!("/{name}")).map_err(|_| Error::intern("shm name"))?;
        // SAFETY: cname is a valid NUL-terminated string.
        let fd = unsafe { libc::shm_open(cname.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC, 0) };
        if fd < 0 {
            return Err(Error::os(format!(
                "cannot open shared memory /dev/shm/{name}"
            )));
        }
        // Only a segment a rank of this job made: ours (same user), private (0600), and of the
        // full size (mapping past its end would be a SIGBUS on first touch, not an error).
        if let Err(e) = Self::check_owner(fd, geo.segment_bytes(), name) {
            // SAFETY: fd is ours.
            unsafe { libc::close(fd) };
            return Err(e);
        }
        let seg = Self::map(fd, geo.segment_bytes(), geo, name);
        // SAFETY: fd is ours.
        unsafe { libc::close(fd) };
        let seg = seg?;
        let h = seg.header();
        if h.magic.load(Ordering::Acquire) != SEG_MAGIC
            || h.nranks.load(Ordering::Relaxed) as usize != geo.nranks
            || h.slots.load(Ordering::Relaxed) as usize != geo.slots
            || h.slot_bytes.load(Ordering::Relaxed) as usize != geo.slot_bytes
        {
            return Err(Error::other(format!(
                "/dev/shm/{name} has a different layout: are HCOMM_SHM_SLOTS and HCOMM_SHM_SLOT_BYTES the same on every rank?"
            )));
        }
        Ok(seg)
    }

    /// Refuses a segment owned by another user, accessible to group or others, or shorter
    /// than `len`.
    fn check_owner(fd: i32, len: usize, name: &str) -> Result<()> {
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: fstat fills the stat buffer for an open descriptor.
        if unsafe { libc::fstat(fd, st.as_mut_ptr()) } != 0 {
            return Err(Error::os(format!("cannot stat /dev/shm/{name}")));
        }
        // SAFETY: fstat succeeded, so the buffer is initialized.
        let st = unsafe { st.assume_init() };
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        if st.st_uid != me || st.st_mode & 0o077 != 0 || (st.st_size as u64) < len as u64 {
            return Err(Error::other(format!(
                "/dev/shm/{name} is not a segment of this job (owner uid {}, mode {:04o}, {} bytes; expected uid {me}, mode 0600, {len} bytes): refusing to map it",
                st.st_uid,
                st.st_mode & 0o7777,
                st.st_size
            )));
        }
        Ok(())
    }

    fn map(fd: i32, len: usize, geo: Geometry, name: &str) -> Result<Segment> {
        // SAFETY: mapping a shared file descriptor; the kernel picks the address.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::os(format!("cannot map /dev/shm/{name}")));
        }
        Ok(Segment {
            base: p.cast(),
            len,
            geo,
        })
    }

    /// Removes the name; the memory stays mapped for everyone who has it mapped.
    pub fn unlink(name: &str) {
        if let Ok(c) = CString::new(format!("/{name}")) {
            // SAFETY: c is a valid NUL-terminated string.
            unsafe { libc::shm_unlink(c.as_ptr()) };
        }
    }

    fn header(&self) -> &SegmentHeader {
        // SAFETY: the segment starts with a SegmentHeader (HDR_BYTES >= its size, page-aligned),
        // made only of atomics, valid for any bit pattern (zero-filled by ftruncate).
        unsafe { &*(self.base as *const SegmentHeader) }
    }

    pub fn bell(&self) -> &Doorbell {
        &self.header().bell
    }

    fn channel(&self, src: usize) -> *mut u8 {
        assert!(src < self.geo.nranks);
        // SAFETY: channel_offset(src) + channel_stride <= len for src < nranks.
        unsafe { self.base.add(self.geo.channel_offset(src)) }
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what map() mapped; no references outlive the Segment
        // (links hold an Arc to it).
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// One direction of a channel as seen from one side.
struct ChannelEnd {
    seg: Arc<Segment>,
    chan: *mut u8,
    /// Our own copy of the counter we own (head for a sender, tail for a receiver).
    pos: u64,
    /// Last seen value of the other side's counter.
    other: u64,
}

// SAFETY: the raw pointer points into `seg`, which the Arc keeps mapped; access follows the
// SPSC protocol and each ChannelEnd is used under a Mutex.
unsafe impl Send for ChannelEnd {}

impl ChannelEnd {
    fn new(seg: Arc<Segment>, src: usize) -> ChannelEnd {
        let chan = seg.channel(src);
        ChannelEnd {
            seg,
            chan,
            pos: 0,
            other: 0,
        }
    }

    fn header(&self) -> &ChannelHeader {
        // SAFETY: a channel starts with a ChannelHeader of atomics inside the mapped segment.
        unsafe { &*(self.chan as *const ChannelHeader) }
    }

    fn slot(&self, index: u64) -> *mut u8 {
        let geo = &self.seg.geo;
        let i = (index % geo.slots as u64) as usize;
        // SAFETY: i < slots, so the slot lies within this channel's stride.
        unsafe {
            self.chan
                .add(std::mem::size_of::<ChannelHeader>() + i * geo.slot_stride())
        }
    }
}

/// Link to a peer on this host.
pub struct ShmLink {
    /// Our sending end, in the peer's segment.
    tx: Mutex<ChannelEnd>,
    /// Our receiving end, in our segment.
    rx: Mutex<ChannelEnd>,
    /// The peer's segment, whose doorbell we ring for new data and for freed slots.
    peer: Arc<Segment>,
    slots: u64,
    slot_bytes: usize,
}

impl ShmLink {
    /// `mine`: our segment; `theirs`: the peer's; `me`/`peer`: world ranks.
    pub fn new(mine: Arc<Segment>, theirs: Arc<Segment>, me: usize, peer: usize) -> ShmLink {
        let geo = mine.geo;
        ShmLink {
            tx: Mutex::new(ChannelEnd::new(theirs.clone(), me)),
            rx: Mutex::new(ChannelEnd::new(mine, peer)),
            peer: theirs,
            slots: geo.slots as u64,
            slot_bytes: geo.slot_bytes,
        }
    }
}

impl Link for ShmLink {
    fn max_payload(&self) -> usize {
        self.slot_bytes
    }

    fn try_send(&self, hdr: &FrameHeader, payload: &[u8]) -> Result<bool> {
        if payload.len() > self.slot_bytes {
            return Err(Error::intern(format!(
                "fragment of {} bytes does not fit a {}-byte shared-memory slot",
                payload.len(),
                self.slot_bytes
            )));
        }
        let mut tx = self.tx.lock();
        if tx.pos - tx.other >= self.slots {
            tx.other = tx.header().tail.load(Ordering::Acquire);
            if tx.pos - tx.other >= self.slots {
                return Ok(false);
            }
        }
        let slot = tx.slot(tx.pos);
        let mut h = *hdr;
        h.len = payload.len() as u32;
        // SAFETY: the slot at `pos` is free (pos - tail < slots) and owned by us, the only
        // producer, until we publish it; it has room for a header and slot_bytes of payload;
        // `payload` is a valid slice that cannot overlap shared memory we own.
        unsafe {
            std::ptr::write(slot as *mut FrameHeader, h);
            std::ptr::copy_nonoverlapping(payload.as_ptr(), slot.add(FRAME_HDR), payload.len());
        }
        tx.pos += 1;
        tx.header().head.store(tx.pos, Ordering::Release);
        tx.seg.bell().ring();
        Ok(true)
    }

    fn try_recv(&self, visit: &mut dyn FnMut(&FrameHeader, &[u8]) -> Result<()>) -> Result<bool> {
        let mut rx = self.rx.lock();
        if rx.other == rx.pos {
            rx.other = rx.header().head.load(Ordering::Acquire);
            if rx.other == rx.pos {
                return Ok(false);
            }
        }
        let slot = rx.slot(rx.pos);
        // SAFETY: head > pos means the producer published this slot (Release/Acquire pair on
        // head), and it will not touch it again until we advance tail. The header is aligned
        // (slots are 64-byte aligned); len is bounded by slot_bytes before slicing.
        let (hdr, payload) = unsafe {
            let hdr = &*(slot as *const FrameHeader);
            let len = hdr.len as usize;
            if len > self.slot_bytes {
                return Err(Error::other(format!(
                    "corrupt shared-memory frame: {len} byte payload in a {} byte slot",
                    self.slot_bytes
                )));
            }
            (hdr, std::slice::from_raw_parts(slot.add(FRAME_HDR), len))
        };
        let res = visit(hdr, payload);
        rx.pos += 1;
        rx.header().tail.store(rx.pos, Ordering::Release);
        drop(rx);
        // The sender waits on its own doorbell for free slots.
        self.peer.bell().ring();
        res.map(|_| true)
    }

    fn name(&self) -> &'static str {
        "shm"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn geo() -> Geometry {
        Geometry {
            nranks: 2,
            slots: 2,
            slot_bytes: 4096,
        }
    }

    #[test]
    fn segments_are_private_and_checked_on_open() {
        let name = format!("hcomm-test{}-0", std::process::id());
        let path = format!("/dev/shm/{name}");
        let seg = Segment::create(&name, geo()).unwrap();
        let md = std::fs::metadata(&path).unwrap();
        assert_eq!(md.mode() & 0o777, 0o600, "created with mode 0600");
        // SAFETY: geteuid has no preconditions.
        assert_eq!(md.uid(), unsafe { libc::geteuid() });
        // A second create of the same name fails (O_EXCL): nobody can pre-plant it.
        assert!(Segment::create(&name, geo()).is_err());
        assert!(Segment::open(&name, geo()).is_ok());
        // Widened permissions: the segment is refused.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = Segment::open(&name, geo()).err().unwrap();
        assert!(e.msg.contains("not a segment of this job"), "{}", e.msg);
        Segment::unlink(&name);
        drop(seg);
        // Too short: refused instead of a SIGBUS later.
        let short = format!("hcomm-test{}-1", std::process::id());
        let p = format!("/dev/shm/{short}");
        std::fs::write(&p, b"tiny").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        let e = Segment::open(&short, geo()).err().unwrap();
        assert!(e.msg.contains("not a segment of this job"), "{}", e.msg);
        std::fs::remove_file(&p).unwrap();
    }
}
