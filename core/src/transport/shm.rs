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
//!
//! Single copy (CMA): a large message need not pass through the slots at all. The sender posts
//! one control frame ([`crate::frame::FLAG_CMA`]: the message's address in the sender and a
//! ticket), the receiver reads the bytes straight out of the sender's memory with
//! `process_vm_readv` and then acknowledges the ticket in the channel header, which is when
//! the sender may reuse its buffer. Whether a receiver can read a sender is probed once, at
//! setup ([`Segment::probe_cma`]), and published by the receiver in the channel from that
//! sender (`cma_ok`): a sender uses the control frame only when its receiver said it can read
//! it, so the two sides of a link can never disagree about a message. The receiver takes
//! both kinds of frame at any time.
//!
//! Fan-out (the stage): a message that goes to several local peers (a bcast's root, every rank
//! of a one-host allgather) need not be copied into each peer's slots. The sender copies each
//! fragment once into a *piece* of the stage at the end of its own segment, sets the piece's
//! count of readers, and posts every peer a small control frame ([`FLAG_STAGED`]: piece and
//! length) through its ring, in the stream's order. The receiving link hands the piece's bytes
//! to its reader as if they were the frame's own payload — nothing above the link sees the
//! difference — and then counts itself off the piece; the piece is free again at zero. A
//! sender that finds no free piece sends the fragment through the slots instead, so a slow
//! reader never makes a sender wait for the stage (docs/ARCHITECTURE.md, "Fan-out").

use std::cell::UnsafeCell;
use std::ffi::CString;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{CmaSend, Link, CMA_PAYLOAD};
use crate::error::{Error, Result};
use crate::frame::{Expected, FrameHeader, FLAG_STAGED};
use crate::wait::Doorbell;

/// "hcomshm3": the layout of this build (frames of up to [`BOX_SPAN`] box lines, stage); a
/// segment of another layout is refused.
const SEG_MAGIC: u64 = 0x6863_6f6d_7368_6d33;
const HDR_BYTES: usize = 4096;
const CACHELINE: usize = 128;
const FRAME_HDR: usize = std::mem::size_of::<FrameHeader>();
/// Single-copy messages a sender may have in flight per channel (one acknowledgement word each).
pub const CMA_TICKETS: usize = 16;
/// A box line: 64 bytes. A frame of up to [`BOX_PAYLOAD`] bytes is one line (one cache-line
/// transfer to the reader, where a frame in the ring takes four: its counter, the two lines
/// of its header and the payload's); a longer one, up to [`BOX_MAX_PAYLOAD`], continues in
/// the lines after it ([`ContLine`]).
const BOX_BYTES: usize = 64;
/// Box lines per channel, used in turn. The sender learns that line `n` is free from the
/// receiver's count of lines taken, which it reads again only when its last reading says the
/// lines are all full — not from the line itself: reading a line the receiver wrote, then
/// writing it, made every small send wait for two cache-line transfers before its frame left.
/// 256 (16 KiB a channel, its pages touched only as they are used): a rank that runs ahead —
/// a bcast's root, a reduce's leaf, in a loop — stays in the boxes, and with more ranks than
/// cores its peers take a long run of frames each time they get a core (8 boxes: 8-byte
/// bcast at 3 ranks 0.80 µs a call, 64: 0.57, 128: 0.54, 256: 0.36; docs/PERFORMANCE.md,
/// "Small collectives without schedules").
const BOXES: usize = 256;

/// A frame's first line: its stamp (`n + 1` once line `n` of the channel's boxes is written,
/// mod 2³²), what a collective's small frame needs of its header (the rest is implied: no
/// flags, offset 0, the message is the payload, the sender is the channel's), then the
/// payload's first [`BOX_PAYLOAD`] bytes.
#[repr(C, align(64))]
struct BoxLine {
    stamp: AtomicU32,
    head: BoxHead,
    payload: [u8; BOX_PAYLOAD],
}

/// What a frame's first line carries after its stamp: the payload's length (or [`SKIP`])
/// and what a collective's small frame needs of its header. Packed to 4 bytes so that it
/// fills bytes 4..44 of the line, as the fields did one by one; written and read whole, by
/// value, never through a reference into the line.
#[repr(C, packed(4))]
#[derive(Clone, Copy, PartialEq, Eq)]
struct BoxHead {
    kind: u8,
    _pad: u8,
    len: u16,
    comm_id: u64,
    seq: u64,
    count: u32,
    tag: u32,
    root: i32,
    dtype: u32,
    op: u32,
}

impl BoxHead {
    /// The head of a frame of header `h` (one [`FrameBoxes::fits`] accepted) and a payload
    /// of `len` bytes.
    fn of_header(h: &FrameHeader, len: usize) -> BoxHead {
        BoxHead {
            kind: h.kind,
            _pad: 0,
            len: len as u16,
            comm_id: h.comm_id,
            seq: h.seq,
            count: h.count as u32,
            tag: h.tag,
            root: h.root,
            dtype: h.dtype,
            op: h.op,
        }
    }

    /// The head of the frame `exp` describes when it can travel in the boxes: a payload of
    /// at most [`BOX_MAX_PAYLOAD`] bytes and a count that fits the line's 32 bits.
    fn of_expected(e: &Expected) -> Option<BoxHead> {
        if e.len > BOX_MAX_PAYLOAD {
            return None;
        }
        Some(BoxHead {
            kind: e.sig.kind as u8,
            _pad: 0,
            len: e.len as u16,
            comm_id: e.comm_id,
            seq: e.seq,
            count: u32::try_from(e.sig.count).ok()?,
            tag: e.tag,
            root: e.sig.root,
            dtype: e.sig.dtype,
            op: e.sig.op,
        })
    }
}

/// Payload bytes a frame's first line holds (an 8-byte allreduce's, a barrier's or a small
/// bcast's).
pub const BOX_PAYLOAD: usize = 20;

/// A line after a frame's first: a stamp like every line's, then payload. Every line gets its
/// stamp each time the sender passes it (first line, continuation or skipped), so that a
/// stamp word never holds payload bytes nor a value older than one lap — the receiver, which
/// checks only the stamp of the line it expects a frame to start at, can never take stale
/// bytes for a frame.
#[repr(C, align(64))]
struct ContLine {
    stamp: AtomicU32,
    payload: [u8; CONT_PAYLOAD],
}

const CONT_PAYLOAD: usize = BOX_BYTES - 4;
/// Lines one frame may span at most: 16, a sixteenth of the area, so that a sender still runs
/// 16 such frames ahead of its receiver where the ring's slots allow 8.
const BOX_SPAN: usize = 16;
/// Payload bytes a frame in the boxes may have: 920, 115 doubles (a longer message's frame
/// takes the ring, four or more cache-line transfers and the ring's locks).
pub const BOX_MAX_PAYLOAD: usize = BOX_PAYLOAD + (BOX_SPAN - 1) * CONT_PAYLOAD;
/// A first line's `len` that marks the lines to the end of the lap as skipped: a frame never
/// wraps around the end of the box area, so its payload stays in consecutive lines.
const SKIP: u16 = u16::MAX;

const _: () = assert!(std::mem::size_of::<BoxLine>() == BOX_BYTES);
const _: () = assert!(std::mem::offset_of!(BoxLine, payload) == 44);
const _: () = assert!(std::mem::size_of::<ContLine>() == BOX_BYTES);
const _: () = assert!(BOX_MAX_PAYLOAD < SKIP as usize);

/// Lines a frame of `len` payload bytes spans.
#[inline]
fn span(len: usize) -> usize {
    1 + len.saturating_sub(BOX_PAYLOAD).div_ceil(CONT_PAYLOAD)
}

/// After a channel's boxes: how many lines the receiver has taken from them (written by the
/// receiver, read by the sender when it runs out of lines it knows to be free).
#[repr(C, align(64))]
struct BoxTaken {
    taken: AtomicU64,
}

/// A stage piece's count of readers yet to read it (0: free), one per cache line: readers of
/// different pieces never share a line.
#[repr(C, align(64))]
struct StageCount {
    readers: AtomicU32,
}

/// Payload of a staged control frame: the piece (u32) and the fragment's length (u32).
const STAGED_PAYLOAD: usize = 8;

/// Start of a segment.
#[repr(C)]
struct SegmentHeader {
    magic: AtomicU64,
    nranks: AtomicU32,
    slots: AtomicU32,
    slot_bytes: AtomicU32,
    owner_pid: AtomicU32,
    /// A random word, and its address in the owner's address space: a peer that reads the
    /// same word there with `process_vm_readv` can read the owner's memory (CMA).
    probe_word: AtomicU64,
    probe_addr: AtomicU64,
    stage_pieces: AtomicU32,
    _pad: [u8; 20],
    bell: Doorbell,
}

/// Start of a channel: producer and consumer counters on separate cache lines.
#[repr(C)]
struct ChannelHeader {
    head: AtomicU64,
    _pad0: [u8; CACHELINE - 8],
    tail: AtomicU64,
    _pad1: [u8; CACHELINE - 8],
    /// Set by the receiver (this segment's owner) at setup when it can read the sender's
    /// memory: only then does the sender post single-copy frames on this channel.
    cma_ok: AtomicU32,
    _pad2: [u8; CACHELINE - 4],
    /// `acks[t % CMA_TICKETS] = t + 1` once the receiver has read single-copy message `t`
    /// (written by the receiver, read by the sender).
    acks: [AtomicU64; CMA_TICKETS],
}

/// Geometry shared by every segment of a job (all ranks compute it from the same settings).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub nranks: usize,
    pub slots: usize,
    pub slot_bytes: usize,
    /// Pieces of the fan-out stage, each `slot_bytes` (0: no stage).
    pub stage_pieces: usize,
}

impl Geometry {
    /// From `HCOMM_SHM_SLOTS` / `HCOMM_SHM_SLOT_BYTES` / `HCOMM_SHM_STAGE`, clamped to sane
    /// values. Slot payloads are multiples of 64 bytes so every payload stays 64-byte aligned.
    pub fn from_params(nranks: usize) -> Geometry {
        let slots = slots_param();
        let slot_bytes = slot_bytes_param();
        Geometry {
            nranks,
            slots,
            slot_bytes,
            stage_pieces: stage_pieces(),
        }
    }

    fn slot_stride(&self) -> usize {
        FRAME_HDR + self.slot_bytes
    }

    fn channel_stride(&self) -> usize {
        (Self::slots_offset() + self.slots * self.slot_stride()).next_multiple_of(4096)
    }

    /// Where a channel's boxes start: after its header.
    fn boxes_offset() -> usize {
        std::mem::size_of::<ChannelHeader>()
    }

    /// Where a channel's slots start: after its header, its boxes and their taken count.
    fn slots_offset() -> usize {
        Self::boxes_offset() + BOXES * BOX_BYTES + std::mem::size_of::<BoxTaken>()
    }

    fn channel_offset(&self, src: usize) -> usize {
        HDR_BYTES + src * self.channel_stride()
    }

    /// The stage's reader counts: after the channels.
    fn stage_counts_offset(&self) -> usize {
        self.channel_offset(self.nranks)
    }

    /// The stage's pieces: after their counts, page-aligned.
    fn stage_pieces_offset(&self) -> usize {
        self.stage_counts_offset()
            + (self.stage_pieces * std::mem::size_of::<StageCount>()).next_multiple_of(4096)
    }

    pub fn segment_bytes(&self) -> usize {
        self.stage_pieces_offset() + self.stage_pieces * self.slot_bytes
    }
}

fn slots_param() -> usize {
    crate::param::shm_slots().unwrap_or(8).clamp(2, 1024)
}

fn slot_bytes_param() -> usize {
    crate::param::shm_slot_bytes()
        .unwrap_or(128 << 10)
        .clamp(4096, 64 << 20)
        .next_multiple_of(64)
}

/// Stage pieces by `HCOMM_SHM_STAGE` (0 turns the fan-out off): by default twice a channel's
/// slots, so a sender can fill a peer's ring with staged frames while as many pieces again
/// wait for the slowest reader, but no more than [`STAGE_AUTO_BYTES`] of pieces (at least 2):
/// the stage is populated when the segment is made. Every rank computes it alike (from the
/// same settings), so algorithms may choose by it.
pub fn stage_pieces() -> usize {
    crate::param::shm_stage()
        .unwrap_or_else(|| (2 * slots_param()).min((STAGE_AUTO_BYTES / slot_bytes_param()).max(2)))
        .min(1024)
}

/// The most bytes of stage the default gives a rank (16 pieces of the default 128 KiB slot
/// are 2 MiB).
pub const STAGE_AUTO_BYTES: usize = 16 << 20;

/// Whether fan-outs go through the stage: it has pieces, and local peers talk through shared
/// memory (`HCOMM_TRANSPORT=tcp` takes it away; the other settings leave it to every local
/// pair). Settings only, so every rank answers alike.
pub fn stage_in_use() -> bool {
    static V: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *V.get_or_init(|| {
        stage_pieces() > 0 && super::tcp::Mode::from_env().is_ok_and(|m| m != super::tcp::Mode::Tcp)
    })
}

/// One mapped segment (ours or a peer's). Unmapped on drop.
pub struct Segment {
    base: *mut u8,
    len: usize,
    geo: Geometry,
    /// Our own segment: where the next stage piece is looked for (process-local; every
    /// thread of ours that stages takes its pieces here).
    stage_next: Mutex<usize>,
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
        h.stage_pieces
            .store(geo.stage_pieces as u32, Ordering::Relaxed);
        h.owner_pid.store(std::process::id(), Ordering::Relaxed);
        h.probe_word
            .store(probe_nonce(seg.base as u64), Ordering::Relaxed);
        h.probe_addr
            .store(&h.probe_word as *const AtomicU64 as u64, Ordering::Relaxed);
        h.magic.store(SEG_MAGIC, Ordering::Release);
        seg.populate_stage(libc::MADV_POPULATE_WRITE);
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
            || h.stage_pieces.load(Ordering::Relaxed) as usize != geo.stage_pieces
        {
            return Err(Error::other(format!(
                "/dev/shm/{name} has a different layout: are HCOMM_SHM_SLOTS, HCOMM_SHM_SLOT_BYTES and HCOMM_SHM_STAGE the same on every rank, and is every rank running the same hcomm build?"
            )));
        }
        seg.populate_stage(libc::MADV_POPULATE_READ);
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
            stage_next: Mutex::new(0),
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

    fn channel_header(&self, src: usize) -> &ChannelHeader {
        // SAFETY: a channel starts with a ChannelHeader of atomics inside the mapped segment,
        // valid for any bit pattern.
        unsafe { &*(self.channel(src) as *const ChannelHeader) }
    }

    /// Maps the stage's pages now (`advice`: the owner writes them, a peer reads them), so the
    /// first fan-out calls do not pay a page fault per 4 KiB of each piece — about as long as
    /// the copy itself. Best effort: a kernel without the advice (before Linux 5.14) faults
    /// them in as they are first used.
    fn populate_stage(&self, advice: libc::c_int) {
        let len = self.geo.stage_pieces * self.geo.slot_bytes;
        if len > 0 {
            // SAFETY: the range is the stage's pieces, page-aligned and inside our mapping;
            // populating changes no contents.
            unsafe {
                libc::madvise(
                    self.base.add(self.geo.stage_pieces_offset()).cast(),
                    len,
                    advice,
                )
            };
        }
    }

    fn stage_count(&self, piece: usize) -> &AtomicU32 {
        assert!(piece < self.geo.stage_pieces);
        // SAFETY: piece < stage_pieces, so the count lies inside the stage's counts (mapped,
        // zero-filled by ftruncate; an atomic is valid for any bit pattern).
        unsafe {
            &(*self
                .base
                .add(self.geo.stage_counts_offset())
                .cast::<StageCount>()
                .add(piece))
            .readers
        }
    }

    fn stage_piece(&self, piece: usize) -> *mut u8 {
        assert!(piece < self.geo.stage_pieces);
        // SAFETY: piece < stage_pieces: the piece's slot_bytes lie inside the mapping.
        unsafe {
            self.base
                .add(self.geo.stage_pieces_offset() + piece * self.geo.slot_bytes)
        }
    }

    /// Takes a free piece of our stage for a fragment that `readers` (> 0) peers will read:
    /// its number and where to write (`slot_bytes`), or `None` when every piece is still being
    /// read. The caller writes the fragment, then posts it once per reader
    /// ([`Link::try_send_staged`]; the ring's Release publishes the bytes with the frame).
    pub fn stage_take(&self, readers: u32) -> Option<(u32, *mut u8)> {
        let n = self.geo.stage_pieces;
        if n == 0 || readers == 0 {
            return None;
        }
        let mut next = self.stage_next.lock();
        for i in 0..n {
            let p = (*next + i) % n;
            // Acquire: the last reader's reads of the piece (its Release in `stage_release`)
            // happen before our writes to it.
            if self.stage_count(p).load(Ordering::Acquire) == 0 {
                self.stage_count(p).store(readers, Ordering::Relaxed);
                *next = p + 1;
                return Some((p as u32, self.stage_piece(p)));
            }
        }
        None
    }

    /// `k` readers are done with `piece`: they have read it, or will never be sent it.
    pub fn stage_release(&self, piece: u32, k: u32) {
        if (piece as usize) < self.geo.stage_pieces && k > 0 {
            self.stage_count(piece as usize)
                .fetch_sub(k, Ordering::Release);
        }
    }

    /// Whether this process can read the memory of this (peer's) segment's owner with
    /// `process_vm_readv`: reads the owner's probe word at its own address and compares it
    /// with the copy we see in shared memory. `Ok(pid)` to read from, or why not. Catches
    /// every reason at once — Yama's ptrace scope, seccomp, another user, a pid namespace
    /// (the pid would name another process, or none) — by trying it.
    pub fn probe_cma(&self) -> std::result::Result<libc::pid_t, String> {
        let h = self.header();
        let pid = h.owner_pid.load(Ordering::Relaxed) as libc::pid_t;
        let want = h.probe_word.load(Ordering::Relaxed);
        let addr = h.probe_addr.load(Ordering::Relaxed);
        let mut got = 0u64;
        // SAFETY: `got` is 8 writable bytes.
        match unsafe { cma_read(pid, addr, (&mut got as *mut u64).cast(), 8) } {
            Ok(()) if got == want => Ok(pid),
            Ok(()) => Err(format!(
                "pid {pid} is not the segment's owner as this process sees it (another pid namespace?)"
            )),
            Err((e, _)) => Err(e),
        }
    }

    /// Tells the sender `src` that we can read its memory: from now on it may post
    /// single-copy frames to us. Never cleared, so a sender that reads it late only misses
    /// the single copy for its first messages.
    pub fn allow_cma_from(&self, src: usize) {
        self.channel_header(src).cma_ok.store(1, Ordering::Release);
    }
}

/// A word no other process is likely to hold at the probed address.
fn probe_nonce(seed: u64) -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mut z = seed ^ t ^ (u64::from(std::process::id()) << 32) ^ 0x9e37_79b9_7f4a_7c15;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) | 1
}

/// Reads `len` bytes at `remote` in process `pid` into `dst` (`process_vm_readv`, looping over
/// short reads). The error says why, with the errno's text, and whether the process is gone
/// (`ESRCH`).
///
/// # Safety
/// `dst` is valid for `len` bytes of writing.
pub(super) unsafe fn cma_read(
    pid: libc::pid_t,
    remote: u64,
    dst: *mut u8,
    len: usize,
) -> std::result::Result<(), (String, bool)> {
    let mut done = 0;
    while done < len {
        let local = libc::iovec {
            // SAFETY: done < len, so this stays inside the caller's range.
            iov_base: unsafe { dst.add(done) }.cast(),
            iov_len: len - done,
        };
        let far = libc::iovec {
            iov_base: (remote as usize + done) as *mut libc::c_void,
            iov_len: len - done,
        };
        // SAFETY: the local iovec describes writable memory we own; the remote one is only
        // interpreted by the kernel in the other process, which checks it (EFAULT).
        let n = unsafe { libc::process_vm_readv(pid, &local, 1, &far, 1, 0) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            let gone = e.raw_os_error() == Some(libc::ESRCH);
            return Err((format!("process_vm_readv from pid {pid}: {e}"), gone));
        }
        if n == 0 {
            return Err((
                format!("process_vm_readv from pid {pid}: no progress at byte {done} of {len}"),
                false,
            ));
        }
        done += n as usize;
    }
    Ok(())
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
    /// Sending end: the next single-copy ticket.
    cma_next: u64,
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
            cma_next: 0,
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
                .add(Geometry::slots_offset() + i * geo.slot_stride())
        }
    }
}

/// A channel's boxes: small frames beside the ring, in a ring of their own of [`BOXES`]
/// lines, passed without the ring's locks ([`ShmLink::send_box`], [`ShmLink::take_box`]).
/// Each side keeps its place in a lock of its own process ([`BoxCursor`]).
#[derive(Clone, Copy)]
struct FrameBoxes(*mut u8);

// SAFETY: the pointer is into a shared mapping that the holder keeps mapped (a `ShmLink` holds
// both segments' `Arc`); what it reaches is shared memory, written only through atomics or
// under the sending or receiving cursor's lock (see `put` and `peek`), whichever thread that is.
unsafe impl Send for FrameBoxes {}
unsafe impl Sync for FrameBoxes {}

/// One side's place in a channel's boxes, in its own process's memory.
#[derive(Default)]
struct BoxCursor {
    /// Lines this side has put (sender) or taken (receiver).
    next: u64,
    /// Sender: lines the receiver had taken at the last reading of its count.
    taken: u64,
}

/// A side's [`BoxCursor`] behind a flag of its own: taking it is one atomic swap, releasing it
/// one plain store. (A `parking_lot` mutex releases with a locked compare-exchange: one more
/// locked instruction per frame put and per poll, measurable on an 8-byte collective whose
/// time follows its instructions.) Held only while one frame is put or visited, so waiting
/// for it spins a little and then yields.
struct CursorLock {
    busy: AtomicBool,
    cursor: UnsafeCell<BoxCursor>,
}

// SAFETY: the cursor is reached only through a `CursorGuard`, and a guard exists only in the
// thread whose swap found the flag clear, until its drop clears it (Release, paired with the
// next taker's Acquire swap): one thread at a time, its writes seen by the next.
unsafe impl Sync for CursorLock {}

impl CursorLock {
    fn new() -> CursorLock {
        CursorLock {
            busy: AtomicBool::new(false),
            cursor: UnsafeCell::new(BoxCursor::default()),
        }
    }

    fn try_lock(&self) -> Option<CursorGuard<'_>> {
        if self.busy.load(Ordering::Relaxed) || self.busy.swap(true, Ordering::Acquire) {
            return None;
        }
        Some(CursorGuard(self))
    }

    fn lock(&self) -> CursorGuard<'_> {
        let mut tries = 0u32;
        loop {
            if let Some(g) = self.try_lock() {
                return g;
            }
            tries += 1;
            if tries < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}

struct CursorGuard<'a>(&'a CursorLock);

impl std::ops::Deref for CursorGuard<'_> {
    type Target = BoxCursor;
    fn deref(&self) -> &BoxCursor {
        // SAFETY: this guard holds the flag (see `CursorLock`).
        unsafe { &*self.0.cursor.get() }
    }
}

impl std::ops::DerefMut for CursorGuard<'_> {
    fn deref_mut(&mut self) -> &mut BoxCursor {
        // SAFETY: this guard holds the flag (see `CursorLock`), and `&mut self` makes this
        // the only reference made through it.
        unsafe { &mut *self.0.cursor.get() }
    }
}

impl Drop for CursorGuard<'_> {
    fn drop(&mut self) {
        self.0.busy.store(false, Ordering::Release);
    }
}

impl FrameBoxes {
    /// The boxes of the channel at `chan`.
    fn of(chan: *mut u8) -> FrameBoxes {
        // SAFETY: the boxes and their taken count lie between the channel's header and its
        // slots (slots_offset), inside the mapping, 64-byte aligned (channels are
        // page-aligned, the header a multiple of 128 bytes).
        FrameBoxes(unsafe { chan.add(Geometry::boxes_offset()) })
    }

    fn line(&self, n: u64) -> *mut BoxLine {
        // Pointer arithmetic inside the box area (see `of`).
        self.0
            .wrapping_add((n % BOXES as u64) as usize * BOX_BYTES)
            .cast()
    }

    fn stamp(&self, n: u64) -> &AtomicU32 {
        // SAFETY: see `of`: an aligned u32 in shared memory, only ever accessed atomically
        // (the first word of every line, first or continuation, is its stamp).
        unsafe { &(*self.line(n)).stamp }
    }

    /// Line `n` as a continuation line.
    fn cont(&self, n: u64) -> *mut ContLine {
        self.line(n).cast()
    }

    fn taken(&self) -> &AtomicU64 {
        // SAFETY: see `of`: the aligned u64 after the boxes, only ever accessed atomically.
        unsafe { &(*self.0.add(BOXES * BOX_BYTES).cast::<BoxTaken>()).taken }
    }

    /// Whether a frame can travel in the boxes: a collective's whole message of at most
    /// [`BOX_MAX_PAYLOAD`] bytes whose header holds nothing the first line does not carry.
    fn fits(hdr: &FrameHeader, payload: &[u8]) -> bool {
        // The fields a box does not carry, compared one by one: copying the 128-byte header
        // to blank the carried ones and comparing it whole cost ~50 instructions a frame.
        // (`src` and `len` need no check: the receiver knows the sender from the channel,
        // and `len` is the payload's.)
        // Whole words, not bytes: a byte loop was 25 instructions a frame.
        let zero = |b: &[u8]| b.chunks_exact(8).all(|w| w == [0; 8]);
        let reserved_ok = zero(&hdr.reserved[..8]) && zero(&hdr.reserved[16..]);
        payload.len() <= BOX_MAX_PAYLOAD
            && hdr.msg_len() == payload.len() as u64
            && hdr.count <= u64::from(u32::MAX)
            && hdr.magic == crate::frame::MAGIC
            && hdr.version == crate::frame::VERSION
            && hdr.flags == 0
            && hdr.offset == 0
            && zero(&hdr.auth)
            && reserved_ok
    }

    /// Posts a frame of first-line head `head` and `payload` in the next lines if it fits
    /// the boxes (at most [`BOX_MAX_PAYLOAD`] bytes, the head's length) and they are free.
    /// `tx` is the sender's cursor (held: one sending thread at a time).
    fn put(&self, tx: &mut BoxCursor, head: &BoxHead, payload: &[u8]) -> bool {
        if payload.len() > BOX_MAX_PAYLOAD || usize::from(head.len) != payload.len() {
            return false;
        }
        let n = tx.next;
        let k = span(payload.len()) as u64;
        // A frame that would wrap starts the next lap; the lines left in this one are skipped.
        let room = BOXES as u64 - n % BOXES as u64;
        let skip = if k > room { room } else { 0 };
        let need = skip + k;
        // Wrapping: a taken count past `n` (a corrupt segment) reads as "all full".
        if n.wrapping_sub(tx.taken) > BOXES as u64 - need {
            tx.taken = self.taken().load(Ordering::Acquire);
            if n.wrapping_sub(tx.taken) > BOXES as u64 - need {
                return false;
            }
        }
        // SAFETY: lines n .. n + need are free — the receiver has taken the lines of the lap
        // before (its taken count, read with Acquire, says so), and it reads a frame only once
        // the stamp of its first line says the frame is there (Release below, after every
        // other write); the cursor's lock makes this thread the only writer. Fields are
        // written through raw pointers, never through a reference that would alias a stamp;
        // the payload fits the `k` lines (checked above), which do not wrap.
        unsafe {
            if skip > 0 {
                for i in 1..skip {
                    self.stamp(n + i)
                        .store((n + i + 1) as u32, Ordering::Relaxed);
                }
                (*self.line(n)).head.len = SKIP;
                self.stamp(n).store((n + 1) as u32, Ordering::Release);
            }
            let s = n + skip;
            let b = self.line(s);
            (*b).head = *head;
            let first = payload.len().min(BOX_PAYLOAD);
            std::ptr::copy_nonoverlapping(
                payload.as_ptr(),
                std::ptr::addr_of_mut!((*b).payload).cast::<u8>(),
                first,
            );
            for (i, chunk) in payload[first..].chunks(CONT_PAYLOAD).enumerate() {
                let line = s + 1 + i as u64;
                let c = self.cont(line);
                (*c).stamp.store((line + 1) as u32, Ordering::Relaxed);
                std::ptr::copy_nonoverlapping(
                    chunk.as_ptr(),
                    std::ptr::addr_of_mut!((*c).payload).cast::<u8>(),
                    chunk.len(),
                );
            }
            self.stamp(s).store((s + 1) as u32, Ordering::Release);
        }
        tx.next = n + need;
        true
    }

    /// Shows the next frame, if it has arrived, to `f`: its header (`src`: the channel's
    /// sender) and payload (in the box itself, or for a frame of several lines copied out of
    /// them). The frame stays until [`FrameBoxes::release`] frees it; `rx` is the receiver's
    /// cursor, held by the caller. Skipped lines are passed over. A corrupt frame is passed
    /// over too (so the link stays readable) and reported.
    fn peek<R>(
        &self,
        rx: &mut BoxCursor,
        src: usize,
        f: impl FnOnce(&FrameHeader, &[u8]) -> R,
    ) -> Result<Option<R>> {
        let mut n = rx.next;
        if self.stamp(n).load(Ordering::Acquire) != (n + 1) as u32 {
            return Ok(None);
        }
        // SAFETY (both blocks): a stamp that reads n + 1 (Acquire) says the sender wrote line
        // n, and for a frame's first line every line of the frame, before its Release store;
        // it writes none of them again before our taken count passes them; the caller holds
        // the receiving cursor, so no other thread of ours reads them. The length is checked
        // before any payload is read; a frame's lines never wrap (`put`).
        if unsafe { (*self.line(n)).head.len } == SKIP {
            let lap = BOXES as u64;
            rx.next = (n / lap + 1) * lap;
            self.taken().store(rx.next, Ordering::Release);
            n = rx.next;
            if self.stamp(n).load(Ordering::Acquire) != (n + 1) as u32 {
                return Ok(None);
            }
        }
        unsafe {
            let b = self.line(n);
            let head = (*b).head;
            let len = usize::from(head.len);
            if len > BOX_MAX_PAYLOAD || (n % BOXES as u64) as usize + span(len) > BOXES {
                self.release(rx, 0);
                return Err(Error::other(format!(
                    "corrupt shared-memory frame: {len} byte payload in line {} of {BOXES} \
                     box lines",
                    n % BOXES as u64
                )));
            }
            let mut h = FrameHeader::blank();
            h.kind = head.kind;
            h.comm_id = head.comm_id;
            h.seq = head.seq;
            h.count = u64::from(head.count);
            h.tag = head.tag;
            h.root = head.root;
            h.dtype = head.dtype;
            h.op = head.op;
            h.src = src as u32;
            h.len = len as u32;
            h.set_msg_len(len as u64);
            let first = std::ptr::addr_of!((*b).payload).cast::<u8>();
            if len <= BOX_PAYLOAD {
                return Ok(Some(f(&h, std::slice::from_raw_parts(first, len))));
            }
            // Not zeroed first (up to 920 bytes a frame): exactly `len` bytes are copied in
            // and only they are read.
            let mut whole = std::mem::MaybeUninit::<[u8; BOX_MAX_PAYLOAD]>::uninit();
            let out = whole.as_mut_ptr().cast::<u8>();
            self.gather(n, first, out, len);
            // The first `len` bytes of `whole` were written just above.
            Ok(Some(f(&h, std::slice::from_raw_parts(out, len))))
        }
    }

    /// [`Link::try_take_expected`] on these boxes: `rx` is the receiver's cursor, held.
    fn take_expected(
        &self,
        rx: &mut BoxCursor,
        exp: &Expected,
        take: &mut dyn FnMut(&[u8]),
    ) -> bool {
        let n = rx.next;
        if self.stamp(n).load(Ordering::Acquire) != (n + 1) as u32 {
            return false;
        }
        // A description no box can carry (too long, too wide a count) is never in one.
        let Some(want) = BoxHead::of_expected(exp) else {
            return false;
        };
        let len = exp.len;
        // SAFETY: as in `peek`: the stamp (Acquire) says the sender wrote the frame's lines,
        // which it leaves alone until our taken count passes them; we hold the receiving
        // cursor. The head is compared whole, its length with it (a skip mark, u16::MAX,
        // never equals one that fits), and the frame's lines checked to lie inside the lap
        // before any payload is read.
        unsafe {
            let b = self.line(n);
            let head = (*b).head;
            if head != want || (n % BOXES as u64) as usize + span(len) > BOXES {
                return false;
            }
            let first = std::ptr::addr_of!((*b).payload).cast::<u8>();
            if len <= BOX_PAYLOAD {
                take(std::slice::from_raw_parts(first, len));
            } else {
                let mut whole = std::mem::MaybeUninit::<[u8; BOX_MAX_PAYLOAD]>::uninit();
                let out = whole.as_mut_ptr().cast::<u8>();
                self.gather(n, first, out, len);
                // The first `len` bytes of `whole` were written just above.
                take(std::slice::from_raw_parts(out, len));
            }
        }
        self.release(rx, len);
        true
    }

    /// Copies the `len` payload bytes of the frame at line `n` (its first line's part at
    /// `first`) to `out`.
    ///
    /// # Safety
    /// The frame is there and whole (its stamp read), `len` <= [`BOX_MAX_PAYLOAD`], its
    /// lines inside the lap; `out` is valid for `len` bytes.
    unsafe fn gather(&self, n: u64, first: *const u8, out: *mut u8, len: usize) {
        // SAFETY: the caller's contract.
        unsafe {
            std::ptr::copy_nonoverlapping(first, out, BOX_PAYLOAD);
            let mut at = BOX_PAYLOAD;
            let mut line = n + 1;
            while at < len {
                let part = (len - at).min(CONT_PAYLOAD);
                let c = self.cont(line);
                std::ptr::copy_nonoverlapping(
                    std::ptr::addr_of!((*c).payload).cast::<u8>(),
                    out.add(at),
                    part,
                );
                at += part;
                line += 1;
            }
        }
    }

    /// Frees the frame of `len` payload bytes [`FrameBoxes::peek`] showed, for the sender.
    fn release(&self, rx: &mut BoxCursor, len: usize) {
        rx.next += span(len) as u64;
        self.taken().store(rx.next, Ordering::Release);
    }
}

/// Link to a peer on this host.
pub struct ShmLink {
    /// Our sending end, in the peer's segment.
    tx: Mutex<ChannelEnd>,
    /// Our receiving end, in our segment.
    rx: Mutex<ChannelEnd>,
    /// Our places in the boxes we send to and take from ([`FrameBoxes`]).
    box_tx: CursorLock,
    box_rx: CursorLock,
    /// The boxes we send to (in the peer's segment) and take from (in ours), found once.
    tx_boxes: FrameBoxes,
    rx_boxes: FrameBoxes,
    /// The peer's segment, whose doorbell we ring for new data and for freed slots.
    peer: Arc<Segment>,
    /// Our segment, where we acknowledge single-copy messages from the peer.
    mine: Arc<Segment>,
    me: usize,
    peer_rank: usize,
    /// Single copy: the peer's pid when we read its memory (the probe passed); whether we
    /// may post single-copy frames (`HCOMM_CMA`; the peer must also have said it reads us).
    read_pid: Option<libc::pid_t>,
    send_cma: bool,
    slots: u64,
    slot_bytes: usize,
}

impl ShmLink {
    /// The oldest unread frame of the ring, else the boxes' first, to `visit`, unless its
    /// payload is larger than `max` (then it stays). A box frame is never larger than
    /// [`BOX_PAYLOAD`].
    ///
    /// Why the ring first: box frames are whole collective messages, found by their key, so
    /// the order of the two does not matter to a reader, but it matters to its cost. A sender
    /// that runs ahead fills the boxes and goes on in the ring; the frame a receive wants next
    /// is then at the head of one of the two (both keep the send order), and the receive has
    /// just looked at the boxes' head (`take_box`). Reading the boxes first moved every later
    /// box frame into the unexpected queue (a copy each, and each later receive scanning the
    /// queue) before the ring was reached.
    fn recv_up_to(
        &self,
        max: usize,
        visit: &mut dyn FnMut(&FrameHeader, &[u8]) -> Result<()>,
    ) -> Result<bool> {
        if self.recv_ring_up_to(max, visit)? {
            return Ok(true);
        }
        let b = self.rx_boxes;
        // Waits for a thread of ours that is taking a box frame (`take_box`, which holds the
        // cursor only while it visits one frame): skipping the boxes then could leave the
        // frame behind that one unseen by a caller about to sleep, whose doorbell was rung
        // before it began to.
        let mut rx = self.box_rx.lock();
        let Some((res, len)) = b.peek(&mut rx, self.peer_rank, |hdr, payload| {
            (visit(hdr, payload), payload.len())
        })?
        else {
            return Ok(false);
        };
        b.release(&mut rx, len);
        res.map(|_| true)
    }

    /// [`ShmLink::recv_up_to`]'s ring half: the ring's oldest unread frame, if any and not
    /// larger than `max`.
    fn recv_ring_up_to(
        &self,
        max: usize,
        visit: &mut dyn FnMut(&FrameHeader, &[u8]) -> Result<()>,
    ) -> Result<bool> {
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
        let (hdr, payload, staged) = unsafe {
            let hdr = &*(slot as *const FrameHeader);
            let len = hdr.len as usize;
            if len > self.slot_bytes {
                return Err(Error::other(format!(
                    "corrupt shared-memory frame: {len} byte payload in a {} byte slot",
                    self.slot_bytes
                )));
            }
            let payload = std::slice::from_raw_parts(slot.add(FRAME_HDR), len);
            if hdr.flags & FLAG_STAGED != 0 {
                self.unstage(hdr, payload)?
            } else {
                (*hdr, payload, None)
            }
        };
        if payload.len() > max {
            // Left for a reader that takes it whatever its size.
            return Ok(false);
        }
        let res = visit(&hdr, payload);
        if let Some(piece) = staged {
            // Read (or copied to the unexpected queue): the sender may reuse the piece.
            self.peer.stage_release(piece, 1);
        }
        rx.pos += 1;
        rx.header().tail.store(rx.pos, Ordering::Release);
        drop(rx);
        // The sender waits on its own doorbell for free slots.
        self.peer.bell().ring();
        res.map(|_| true)
    }

    /// A staged control frame read from our ring: the fragment it stands for — its header as
    /// the sender made it, and its bytes in the piece of the sender's stage — and the piece,
    /// to release once read. Checked like a slot's frame: a corrupt one is an error, never a
    /// read outside the stage.
    fn unstage<'a>(
        &'a self,
        hdr: &FrameHeader,
        body: &[u8],
    ) -> Result<(FrameHeader, &'a [u8], Option<u32>)> {
        let word = |i: usize| u32::from_le_bytes(body[i..i + 4].try_into().expect("4 bytes"));
        let (piece, len) = if body.len() == STAGED_PAYLOAD {
            (word(0), word(4) as usize)
        } else {
            (u32::MAX, usize::MAX)
        };
        if piece as usize >= self.peer.geo.stage_pieces || len > self.slot_bytes {
            return Err(Error::other(format!(
                "corrupt staged frame from rank {}: piece {piece} of {}, {len} bytes",
                self.peer_rank, self.peer.geo.stage_pieces
            )));
        }
        let mut h = *hdr;
        h.flags &= !FLAG_STAGED;
        h.len = len as u32;
        // SAFETY: piece < stage_pieces and len <= slot_bytes: inside the peer's mapped stage.
        // The sender wrote the piece before publishing this frame (Release on head, our
        // Acquire) and leaves it alone until its readers count reaches zero, which needs our
        // release after the caller is done with the slice.
        let bytes =
            unsafe { std::slice::from_raw_parts(self.peer.stage_piece(piece as usize), len) };
        Ok((h, bytes, Some(piece)))
    }

    /// Posts `h` with `body` as its payload in the next slot of our ring, if there is one
    /// free (`false`: full). Under the sending lock `tx`.
    fn post(&self, tx: &mut ChannelEnd, mut h: FrameHeader, body: &[u8]) -> bool {
        if tx.pos - tx.other >= self.slots {
            tx.other = tx.header().tail.load(Ordering::Acquire);
            if tx.pos - tx.other >= self.slots {
                return false;
            }
        }
        let slot = tx.slot(tx.pos);
        h.len = body.len() as u32;
        // SAFETY: the slot at `pos` is free (pos - tail < slots) and owned by us, the only
        // producer, until we publish it; it has room for a header and slot_bytes >= body.len()
        // of payload (the callers' checks); `body` cannot overlap shared memory we own.
        unsafe {
            std::ptr::write(slot as *mut FrameHeader, h);
            std::ptr::copy_nonoverlapping(body.as_ptr(), slot.add(FRAME_HDR), body.len());
        }
        tx.pos += 1;
        tx.header().head.store(tx.pos, Ordering::Release);
        tx.seg.bell().ring();
        true
    }

    /// `mine`: our segment; `theirs`: the peer's; `me`/`peer`: world ranks.
    /// `read_pid`: the peer's pid when the CMA probe passed (see [`Segment::probe_cma`]);
    /// `send_cma`: whether this rank posts single-copy frames at all.
    pub fn new(
        mine: Arc<Segment>,
        theirs: Arc<Segment>,
        me: usize,
        peer: usize,
        read_pid: Option<libc::pid_t>,
        send_cma: bool,
    ) -> ShmLink {
        let geo = mine.geo;
        if read_pid.is_some() {
            mine.allow_cma_from(peer);
        }
        ShmLink {
            tx: Mutex::new(ChannelEnd::new(theirs.clone(), me)),
            rx: Mutex::new(ChannelEnd::new(mine.clone(), peer)),
            box_tx: CursorLock::new(),
            box_rx: CursorLock::new(),
            tx_boxes: FrameBoxes::of(theirs.channel(me)),
            rx_boxes: FrameBoxes::of(mine.channel(peer)),
            peer: theirs,
            mine,
            me,
            peer_rank: peer,
            read_pid,
            send_cma,
            slots: geo.slots as u64,
            slot_bytes: geo.slot_bytes,
        }
    }

    /// Our sending channel's header (in the peer's segment).
    fn tx_header(&self) -> &ChannelHeader {
        self.peer.channel_header(self.me)
    }

    /// Posts a small frame to the peer's boxes for our channel, beside the ring, if one is
    /// free: no shared lock, and the receiver takes it without the ring's locks either
    /// ([`ShmLink::take_box`]); [`Link::try_recv`] hands it out like a ring frame, so
    /// every reader sees it. Frames in the boxes and in the ring are not ordered with each
    /// other: only frames found by their (communicator, call, tag), the one fragment of a
    /// collective's message, may go here (see `Endpoint::try_send`). Another thread of ours
    /// sending in the boxes at the moment sends this frame to the ring.
    fn send_box(&self, hdr: &FrameHeader, payload: &[u8]) -> bool {
        FrameBoxes::fits(hdr, payload)
            && self.put_box(&BoxHead::of_header(hdr, payload.len()), payload)
    }

    /// Posts a frame that fits the boxes in them if a line is free, and rings the peer.
    fn put_box(&self, head: &BoxHead, payload: &[u8]) -> bool {
        let Some(mut tx) = self.box_tx.try_lock() else {
            return false;
        };
        if !self.tx_boxes.put(&mut tx, head, payload) {
            return false;
        }
        drop(tx);
        self.peer.bell().ring();
        true
    }

    /// Takes the next frame in our boxes from the peer if `want` accepts it (`take` gets
    /// it); a frame `want` rejects stays for [`Link::try_recv`] (and the frames behind it with
    /// it). Whether a frame was taken. Another thread of ours at the boxes: nothing taken.
    fn take_box(
        &self,
        want: &mut dyn FnMut(&FrameHeader) -> Result<bool>,
        take: &mut dyn FnMut(&FrameHeader, &[u8]) -> Result<bool>,
    ) -> Result<bool> {
        let b = self.rx_boxes;
        let Some(mut rx) = self.box_rx.try_lock() else {
            return Ok(false);
        };
        // What `want` said; when yes, what `take` returned and the payload's length.
        let seen = b.peek(&mut rx, self.peer_rank, |hdr, payload| match want(hdr) {
            Ok(true) => Ok(Some((take(hdr, payload), payload.len()))),
            Ok(false) => Ok(None),
            Err(e) => Err(e),
        })?;
        match seen {
            Some(Ok(Some((res, len)))) => {
                b.release(&mut rx, len);
                res.map(|_| true)
            }
            Some(Ok(None)) | None => Ok(false),
            Some(Err(e)) => Err(e),
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
        Ok(self.post(&mut tx, *hdr, payload))
    }

    fn try_recv(&self, visit: &mut dyn FnMut(&FrameHeader, &[u8]) -> Result<()>) -> Result<bool> {
        self.recv_up_to(usize::MAX, visit)
    }

    fn try_recv_small(
        &self,
        max: usize,
        visit: &mut dyn FnMut(&FrameHeader, &[u8]) -> Result<()>,
    ) -> Result<bool> {
        // Every frame in the boxes passes (they are all small).
        self.recv_up_to(max.max(BOX_MAX_PAYLOAD), visit)
    }

    fn name(&self) -> &'static str {
        "shm"
    }

    fn sent_counter(&self) -> &'static std::sync::atomic::AtomicU64 {
        &super::BYTES_SHM
    }

    fn try_send_box(&self, hdr: &FrameHeader, payload: &[u8]) -> bool {
        self.send_box(hdr, payload)
    }

    fn try_take_box(
        &self,
        want: &mut dyn FnMut(&FrameHeader) -> Result<bool>,
        take: &mut dyn FnMut(&FrameHeader, &[u8]) -> Result<bool>,
    ) -> Result<bool> {
        self.take_box(want, take)
    }

    fn try_send_expected(&self, exp: &Expected, payload: &[u8]) -> bool {
        // `put` refuses a payload that is not the head's length, `exp.len`.
        BoxHead::of_expected(exp).is_some_and(|h| self.put_box(&h, payload))
    }

    fn try_take_expected(&self, exp: &Expected, take: &mut dyn FnMut(&[u8])) -> bool {
        let Some(mut rx) = self.box_rx.try_lock() else {
            return false;
        };
        self.rx_boxes.take_expected(&mut rx, exp, take)
    }

    fn try_send_cma(&self, hdr: &FrameHeader, addr: *const u8) -> Result<CmaSend> {
        if !self.send_cma || self.tx_header().cma_ok.load(Ordering::Acquire) == 0 {
            return Ok(CmaSend::No);
        }
        let mut tx = self.tx.lock();
        let t = tx.cma_next;
        let i = (t % CMA_TICKETS as u64) as usize;
        // The ticket's word still holds the acknowledgement of the ticket before it.
        let free = if t < CMA_TICKETS as u64 {
            0
        } else {
            t + 1 - CMA_TICKETS as u64
        };
        if self.tx_header().acks[i].load(Ordering::Acquire) != free {
            // The receiver has not yet read a message that old: copying through the slots
            // never waits for it, whereas waiting for the ticket might.
            return Ok(CmaSend::No);
        }
        let mut h = *hdr;
        h.flags |= crate::frame::FLAG_CMA;
        h.offset = 0;
        let mut body = [0u8; CMA_PAYLOAD];
        body[..8].copy_from_slice(&(addr as u64).to_le_bytes());
        body[8..].copy_from_slice(&t.to_le_bytes());
        if !self.post(&mut tx, h, &body) {
            return Ok(CmaSend::Full);
        }
        tx.cma_next = t + 1;
        Ok(CmaSend::Posted(t))
    }

    fn stages(&self) -> bool {
        self.mine.geo.stage_pieces > 0
    }

    fn stage_take(&self, readers: u32) -> Option<(u32, *mut u8)> {
        self.mine.stage_take(readers)
    }

    fn stage_release(&self, piece: u32, k: u32) {
        self.mine.stage_release(piece, k)
    }

    fn try_send_staged(&self, hdr: &FrameHeader, piece: u32, len: usize) -> Result<bool> {
        if piece as usize >= self.mine.geo.stage_pieces || len > self.slot_bytes {
            return Err(Error::intern(format!(
                "staged fragment: piece {piece} of {}, {len} bytes",
                self.mine.geo.stage_pieces
            )));
        }
        let mut h = *hdr;
        h.flags |= FLAG_STAGED;
        let mut body = [0u8; STAGED_PAYLOAD];
        body[..4].copy_from_slice(&piece.to_le_bytes());
        body[4..].copy_from_slice(&(len as u32).to_le_bytes());
        let mut tx = self.tx.lock();
        Ok(self.post(&mut tx, h, &body))
    }

    fn cma_done(&self, ticket: u64) -> bool {
        // Words only grow: a later ticket of the same word implies this one was read.
        self.tx_header().acks[(ticket % CMA_TICKETS as u64) as usize].load(Ordering::Acquire)
            > ticket
    }

    unsafe fn cma_read(&self, addr: u64, dst: *mut u8, len: usize) -> Result<bool> {
        let Some(pid) = self.read_pid else {
            return Err(Error::other(format!(
                "rank {} sent a single-copy frame, but this rank cannot read its memory",
                self.peer_rank
            )));
        };
        // SAFETY: the caller's contract.
        match unsafe { cma_read(pid, addr, dst, len) } {
            Ok(()) => Ok(true),
            Err((_, true)) => Ok(false),
            Err((e, false)) => Err(Error::other(format!(
                "single copy from rank {}: {e}",
                self.peer_rank
            ))),
        }
    }

    fn cma_ack(&self, ticket: u64) {
        self.mine.channel_header(self.peer_rank).acks[(ticket % CMA_TICKETS as u64) as usize]
            .store(ticket + 1, Ordering::Release);
        // The sender waits for it on its own doorbell.
        self.peer.bell().ring();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::Signature;
    use std::os::unix::fs::MetadataExt;

    fn geo() -> Geometry {
        Geometry {
            nranks: 2,
            slots: 2,
            slot_bytes: 4096,
            stage_pieces: 2,
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

    /// The single-copy protocol between two links of one process (which can always read
    /// itself): the control frame, the read, the acknowledgement; a sender whose receiver
    /// cannot read it, and one out of tickets, copies through the slots instead.
    #[test]
    fn single_copy_tickets() {
        let g = Geometry {
            nranks: 2,
            slots: 32,
            slot_bytes: 4096,
            stage_pieces: 0,
        };
        let names = [0, 1].map(|r| format!("hcomm-test{}-cma{r}", std::process::id()));
        let segs = names
            .clone()
            .map(|n| Arc::new(Segment::create(&n, g).unwrap()));
        for n in &names {
            Segment::unlink(n);
        }
        let me = segs[1].probe_cma().expect("a process can read itself");
        assert_eq!(me as u32, std::process::id());
        // Rank 1 reads rank 0; rank 0 does not read rank 1.
        let l01 = ShmLink::new(segs[0].clone(), segs[1].clone(), 0, 1, None, true);
        let l10 = ShmLink::new(segs[1].clone(), segs[0].clone(), 1, 0, Some(me), true);
        let hdr = FrameHeader::default();
        let msg: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        assert_eq!(l10.try_send_cma(&hdr, msg.as_ptr()).unwrap(), CmaSend::No);
        for t in 0..CMA_TICKETS as u64 {
            assert_eq!(
                l01.try_send_cma(&hdr, msg.as_ptr()).unwrap(),
                CmaSend::Posted(t)
            );
            assert!(!l01.cma_done(t));
        }
        // Every ticket is in flight: the next message goes through the slots.
        assert_eq!(l01.try_send_cma(&hdr, msg.as_ptr()).unwrap(), CmaSend::No);
        let mut got = vec![0u8; msg.len()];
        for t in 0..CMA_TICKETS as u64 {
            assert!(l10
                .try_recv(&mut |h, p| {
                    assert_eq!(h.flags & crate::frame::FLAG_CMA, crate::frame::FLAG_CMA);
                    let addr = u64::from_le_bytes(p[..8].try_into().unwrap());
                    assert_eq!(u64::from_le_bytes(p[8..].try_into().unwrap()), t);
                    got.fill(0);
                    // SAFETY: `got` holds msg.len() bytes.
                    assert!(unsafe { l10.cma_read(addr, got.as_mut_ptr(), msg.len()) }?);
                    Ok(())
                })
                .unwrap());
            assert_eq!(got, msg);
            l10.cma_ack(t);
            assert!(l01.cma_done(t));
        }
        // The first ticket's word is free again.
        assert_eq!(
            l01.try_send_cma(&hdr, msg.as_ptr()).unwrap(),
            CmaSend::Posted(CMA_TICKETS as u64)
        );
    }

    /// Links 0 → 1 and 1 → 0 between two fresh, already unlinked segments of `slots` slots of
    /// 4 KiB (`tag` names them apart from other tests').
    fn link_pair(tag: &str, slots: usize) -> (ShmLink, ShmLink) {
        let g = Geometry {
            nranks: 2,
            slots,
            slot_bytes: 4096,
            stage_pieces: 0,
        };
        let names = [0, 1].map(|r| format!("hcomm-test{}-{tag}{r}", std::process::id()));
        let segs = names
            .clone()
            .map(|n| Arc::new(Segment::create(&n, g).unwrap()));
        for n in &names {
            Segment::unlink(n);
        }
        (
            ShmLink::new(segs[0].clone(), segs[1].clone(), 0, 1, None, false),
            ShmLink::new(segs[1].clone(), segs[0].clone(), 1, 0, None, false),
        )
    }

    /// Rank 0's links to ranks 1 and 2 and theirs back to rank 0, on segments with a stage of
    /// `pieces` pieces.
    fn fan_links(tag: &str, pieces: usize) -> ([ShmLink; 2], [ShmLink; 2]) {
        let g = Geometry {
            nranks: 3,
            slots: 4,
            slot_bytes: 4096,
            stage_pieces: pieces,
        };
        let names = [0, 1, 2].map(|r| format!("hcomm-test{}-{tag}{r}", std::process::id()));
        let segs = names
            .clone()
            .map(|n| Arc::new(Segment::create(&n, g).unwrap()));
        for n in &names {
            Segment::unlink(n);
        }
        let link =
            |a: usize, b: usize| ShmLink::new(segs[a].clone(), segs[b].clone(), a, b, None, false);
        ([link(0, 1), link(0, 2)], [link(1, 0), link(2, 0)])
    }

    /// Reads one frame from `link`: its header and payload.
    fn read_one(link: &ShmLink) -> (FrameHeader, Vec<u8>) {
        let mut got = None;
        assert!(link
            .try_recv(&mut |h, p| {
                got = Some((*h, p.to_vec()));
                Ok(())
            })
            .unwrap());
        got.unwrap()
    }

    #[test]
    fn staged_fragments_reach_every_reader_and_free_their_piece() {
        let ([to1, to2], [from1, from2]) = fan_links("fan", 2);
        assert!(to1.stages() && to2.stages());
        let bytes: Vec<u8> = (0..3000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut hdr = FrameHeader::new(&allreduce_sig(), 9, 4, 3, 0);
        hdr.set_msg_len(10_000);
        hdr.offset = 4096;
        let (p, at) = to1.stage_take(2).unwrap();
        // SAFETY: a piece holds slot_bytes (4096) >= 3000 bytes and is ours until read.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), at, bytes.len()) };
        assert!(to1.try_send_staged(&hdr, p, bytes.len()).unwrap());
        assert!(to2.try_send_staged(&hdr, p, bytes.len()).unwrap());
        // One piece left, then none: a full stage says so, it never waits.
        let (q, _) = to2.stage_take(1).unwrap();
        assert_ne!(p, q);
        assert!(to1.stage_take(1).is_none());
        // The readers see an ordinary fragment: the sender's header, the piece's bytes.
        let (h1, b1) = read_one(&from1);
        assert_eq!(h1.flags & FLAG_STAGED, 0);
        assert_eq!(
            (h1.offset, h1.len as usize, h1.msg_len()),
            (4096, 3000, 10_000)
        );
        assert_eq!((h1.comm_id, h1.seq, h1.tag), (9, 4, 3));
        assert_eq!(b1, bytes);
        // One reader left: the piece is still taken.
        assert!(to1.stage_take(1).is_none());
        let (_, b2) = read_one(&from2);
        assert_eq!(b2, bytes);
        assert_eq!(to1.stage_take(1).map(|t| t.0), Some(p));
        // Readers that will never be sent a piece give it back.
        to1.stage_release(q, 1);
        to1.stage_release(p, 1);
        assert!(to1.stage_take(2).is_some() && to1.stage_take(2).is_some());
    }

    #[test]
    fn a_corrupt_staged_frame_is_an_error() {
        let ([to1, _], [from1, _]) = fan_links("fanbad", 2);
        let mut hdr = FrameHeader::new(&allreduce_sig(), 9, 4, 3, 0);
        hdr.flags |= FLAG_STAGED;
        let mut body = [0u8; STAGED_PAYLOAD];
        body[..4].copy_from_slice(&7u32.to_le_bytes()); // piece 7 of 2
        body[4..].copy_from_slice(&16u32.to_le_bytes());
        assert!(to1.post(&mut to1.tx.lock(), hdr, &body));
        let e = from1.try_recv(&mut |_, _| Ok(())).unwrap_err();
        assert!(
            e.msg.contains("corrupt staged frame from rank 0"),
            "{}",
            e.msg
        );
    }

    #[test]
    fn no_stage_no_fan_out() {
        let (a, _) = link_pair("nostage", 2);
        assert!(!a.stages());
        assert!(a.stage_take(1).is_none());
    }

    fn allreduce_sig() -> crate::frame::Signature {
        crate::frame::Signature {
            kind: crate::frame::Kind::Allreduce,
            count: 2,
            root: -1,
            dtype: 7,
            op: 3,
        }
    }

    /// Two threads of the receiving process at the same link — one taking box frames, one
    /// draining the link — while the sender posts to the boxes and to the ring: every frame
    /// arrives exactly once, whole.
    #[test]
    fn two_receiving_threads_share_the_boxes() {
        use std::sync::atomic::AtomicBool;
        let (l01, l10) = link_pair("boxmt", 4);
        let l10 = Arc::new(l10);
        let sig = allreduce_sig();
        const FRAMES: u64 = 20_000;
        let got = Arc::new(parking_lot::Mutex::new(Vec::<u64>::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let readers: Vec<_> = (0..2)
            .map(|t| {
                let (l10, got, stop) = (l10.clone(), got.clone(), stop.clone());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        assert!(std::time::Instant::now() < deadline, "frames lost");
                        let mut mine = Vec::new();
                        if t == 0 {
                            l10.take_box(&mut |_| Ok(true), &mut |h, p| {
                                assert_eq!(p, &h.seq.to_le_bytes());
                                mine.push(h.seq);
                                Ok(false)
                            })
                            .unwrap();
                        } else {
                            l10.try_recv(&mut |h, p| {
                                assert_eq!(p, &h.seq.to_le_bytes());
                                mine.push(h.seq);
                                Ok(())
                            })
                            .unwrap();
                        }
                        if !mine.is_empty() {
                            got.lock().extend(mine);
                        }
                    }
                })
            })
            .collect();
        let mut boxed = Vec::new();
        for k in 0..FRAMES {
            let mut hdr = FrameHeader::new(&sig, 42, k, 5, 0);
            hdr.set_msg_len(8);
            let payload = k.to_le_bytes();
            loop {
                assert!(std::time::Instant::now() < deadline, "sender stuck");
                // Every third frame to the ring whether or not a box is free: with many boxes
                // a sender that runs ahead seldom fills them, and the race is between readers
                // of both.
                if k % 3 != 0 && l01.send_box(&hdr, &payload) {
                    boxed.push(k);
                    break;
                }
                if l01.try_send(&hdr, &payload).unwrap() {
                    break;
                }
                std::thread::yield_now();
            }
        }
        while got.lock().len() < FRAMES as usize {
            assert!(std::time::Instant::now() < deadline, "frames lost");
            std::thread::yield_now();
        }
        stop.store(true, Ordering::Relaxed);
        for r in readers {
            r.join().unwrap();
        }
        let got = got.lock();
        let mut seqs = got.clone();
        seqs.sort_unstable();
        assert_eq!(
            seqs,
            (0..FRAMES).collect::<Vec<_>>(),
            "each frame exactly once"
        );
        assert!(!boxed.is_empty(), "no frame went through the boxes");
    }

    /// A sender that ran ahead: an older frame in the ring, later ones in the boxes. The
    /// stream hands out the ring's first, so a receive that wants it moves nothing of the
    /// boxes to its unexpected queue; the boxes follow, in their order.
    #[test]
    fn the_ring_is_read_before_the_boxes() {
        let (l01, l10) = link_pair("ringfirst", 2);
        let sig = allreduce_sig();
        let mut hdr = FrameHeader::new(&sig, 42, 0, 5, 0);
        let payload = [7u8; 8];
        hdr.set_msg_len(payload.len() as u64);
        assert!(l01.try_send(&hdr, &payload).unwrap());
        for k in 1..=3u64 {
            let mut h = hdr;
            h.seq = k;
            assert!(l01.send_box(&h, &payload), "box {k}");
        }
        for k in 0..=3u64 {
            let mut seen = Vec::new();
            assert!(l10
                .try_recv(&mut |h, p| {
                    assert_eq!(p, payload);
                    seen.push(h.seq);
                    Ok(())
                })
                .unwrap());
            assert_eq!(seen, [k]);
        }
        assert!(!l10.try_recv(&mut |_, _| panic!("empty")).unwrap());
    }

    /// [`FrameBoxes::fits`] compares field by field; its meaning is "every byte of the header
    /// the box does not carry is as in a blank header". Flipping each byte of a fitting
    /// header in turn must agree with that whole-header definition.
    #[test]
    fn a_box_takes_exactly_the_headers_it_can_carry() {
        fn whole(hdr: &FrameHeader, payload: &[u8]) -> bool {
            let mut plain = *hdr;
            (plain.kind, plain.comm_id, plain.seq, plain.count) = (0, 0, 0, 0);
            (plain.tag, plain.root, plain.dtype, plain.op) = (0, 0, 0, 0);
            (plain.src, plain.len) = (0, 0);
            plain.set_msg_len(0);
            payload.len() <= BOX_MAX_PAYLOAD
                && hdr.msg_len() == payload.len() as u64
                && hdr.count <= u64::from(u32::MAX)
                && plain == FrameHeader::blank()
        }
        let payload = [7u8; 8];
        let mut hdr = FrameHeader::new(&allreduce_sig(), 42, 9, 5, 3);
        hdr.set_msg_len(payload.len() as u64);
        assert!(FrameBoxes::fits(&hdr, &payload));
        for i in 0..crate::frame::HEADER_BYTES {
            let mut h = hdr;
            // SAFETY: `h` is a plain-old-data header of HEADER_BYTES bytes (repr(C), integers
            // and byte arrays only): any byte pattern is a valid header.
            unsafe { *(std::ptr::addr_of_mut!(h) as *mut u8).add(i) ^= 0x5a };
            assert_eq!(
                FrameBoxes::fits(&h, &payload),
                whole(&h, &payload),
                "header byte {i}"
            );
        }
        assert!(!FrameBoxes::fits(&hdr, &payload[..4]));
        let mut long = hdr;
        long.set_msg_len(BOX_MAX_PAYLOAD as u64);
        assert!(FrameBoxes::fits(&long, &[0; BOX_MAX_PAYLOAD]));
        long.set_msg_len(BOX_MAX_PAYLOAD as u64 + 1);
        assert!(!FrameBoxes::fits(&long, &[0; BOX_MAX_PAYLOAD + 1]));
    }

    /// Frames of lengths up to [`BOX_MAX_PAYLOAD`] (one to sixteen lines) go through the
    /// boxes lap after lap: each arrives whole and in order, a frame that would wrap past the
    /// end of the box area starts the next lap (its lines skipped), and a full channel refuses
    /// a frame until the receiver has freed enough lines.
    #[test]
    fn frames_of_several_lines_travel_in_the_boxes_lap_after_lap() {
        let (l01, l10) = link_pair("lines", 2);
        let sig = allreduce_sig();
        // Lengths cycling so that frames straddle the end of the area in many ways.
        let lens = [
            8usize, 21, 200, 80, 920, 141, 1, 20, 61, 500, 199, 140, 919, 81,
        ];
        let payload_of = |k: u64, len: usize| -> Vec<u8> {
            (0..len)
                .map(|i| (k as u8).wrapping_mul(31).wrapping_add(i as u8))
                .collect()
        };
        let (mut sent, mut got) = (0u64, 0u64);
        let mut lines_in_flight = 0usize;
        let total = 3000u64;
        while got < total {
            // Send until the boxes refuse (or all are sent).
            while sent < total {
                let len = lens[(sent % lens.len() as u64) as usize];
                let mut hdr = FrameHeader::new(&sig, 42, sent, 5, 0);
                hdr.set_msg_len(len as u64);
                if !l01.send_box(&hdr, &payload_of(sent, len)) {
                    // Refused only when the lines it needs are not free: besides the frames'
                    // lines, up to BOX_SPAN - 1 skipped at a lap's end are in flight, and as
                    // many may be skipped for this frame.
                    assert!(
                        lines_in_flight + span(len) > BOXES - 2 * (BOX_SPAN - 1),
                        "refused early"
                    );
                    break;
                }
                lines_in_flight += span(len);
                sent += 1;
            }
            // Take about half of what is there, checking each.
            let upto = got + (sent - got).div_ceil(2);
            while got < upto {
                let len = lens[(got % lens.len() as u64) as usize];
                let mut seen = false;
                assert!(l10
                    .take_box(&mut |h| Ok(h.seq == got), &mut |h, p| {
                        assert_eq!(h.len as usize, len);
                        assert_eq!(h.msg_len(), len as u64);
                        assert_eq!(h.src, 0);
                        assert_eq!(p, &payload_of(got, len)[..], "frame {got}");
                        seen = true;
                        Ok(true)
                    })
                    .unwrap());
                assert!(seen);
                lines_in_flight = lines_in_flight.saturating_sub(span(len));
                got += 1;
            }
        }
        // Empty: nothing more to take, in the boxes or the stream.
        assert!(!l10.try_recv(&mut |_, _| panic!("empty")).unwrap());
        // Every length fits within the lines it is counted for.
        assert_eq!(span(BOX_PAYLOAD), 1);
        assert_eq!(span(BOX_PAYLOAD + 1), 2);
        assert_eq!(span(BOX_MAX_PAYLOAD), BOX_SPAN);
    }

    /// The shortcut takes the head frame only when every field it carries is the expected
    /// one; any difference leaves the frame for the general matching, which then sees it
    /// unchanged. Frames of one and of several lines.
    /// A frame sent from its description is the frame `FrameHeader::new` describes: the
    /// general reader sees that header (length and sender set); a message too long for the
    /// boxes, a count wider than a line's 32 bits or a payload that is not `len` bytes is
    /// refused (it takes the ring).
    #[test]
    fn a_frame_sent_from_its_description_reads_as_its_header() {
        let (l01, l10) = link_pair("sendexp", 2);
        let sig = allreduce_sig();
        for len in [0usize, 8, 300, BOX_MAX_PAYLOAD] {
            let payload: Vec<u8> = (0..len).map(|i| (i * 5 + 1) as u8).collect();
            let exp = Expected {
                comm_id: 42,
                seq: len as u64,
                tag: 5,
                sig,
                len,
            };
            assert!(l01.try_send_expected(&exp, &payload));
            let mut want = FrameHeader::new(&sig, 42, len as u64, 5, 0);
            want.set_msg_len(len as u64);
            want.len = len as u32;
            let mut seen = 0;
            assert!(l10
                .try_recv(&mut |h, p| {
                    assert_eq!(*h, want);
                    assert_eq!(p, &payload[..]);
                    seen += 1;
                    Ok(())
                })
                .unwrap());
            assert_eq!(seen, 1);
        }
        let long = Expected {
            comm_id: 42,
            seq: 1,
            tag: 5,
            sig,
            len: BOX_MAX_PAYLOAD + 1,
        };
        assert!(!l01.try_send_expected(&long, &[0; BOX_MAX_PAYLOAD + 1]));
        let wide = Expected {
            len: 8,
            sig: Signature {
                count: u64::from(u32::MAX) + 1,
                ..sig
            },
            ..long
        };
        assert!(!l01.try_send_expected(&wide, &[0; 8]));
        // A payload of another length than the description's is no such frame.
        let short = Expected { len: 8, ..long };
        assert!(!l01.try_send_expected(&short, &[0; 9]));
        assert!(!l01.try_send_expected(&short, &[0; BOX_MAX_PAYLOAD + 1]));
        assert!(!l10.try_recv(&mut |_, _| panic!("empty")).unwrap());
    }

    #[test]
    fn the_expected_frame_is_taken_and_no_other() {
        let (l01, l10) = link_pair("expect", 2);
        let sig = allreduce_sig();
        for len in [8usize, BOX_PAYLOAD, BOX_PAYLOAD + 1, 300, BOX_MAX_PAYLOAD] {
            let payload: Vec<u8> = (0..len).map(|i| (i * 13 + len) as u8).collect();
            let mut hdr = FrameHeader::new(&sig, 42, 9, 5, 0);
            hdr.set_msg_len(len as u64);
            assert!(l01.send_box(&hdr, &payload));
            let exp = Expected {
                comm_id: 42,
                seq: 9,
                tag: 5,
                sig,
                len,
            };
            let mut others = vec![
                Expected { comm_id: 43, ..exp },
                Expected { seq: 10, ..exp },
                Expected { tag: 6, ..exp },
                Expected {
                    len: len + 1,
                    ..exp
                },
            ];
            if len > 0 {
                others.push(Expected {
                    len: len - 1,
                    ..exp
                });
            }
            for sig in [
                Signature { count: 3, ..sig },
                Signature { root: 0, ..sig },
                Signature { dtype: 8, ..sig },
                Signature { op: 4, ..sig },
                Signature {
                    kind: crate::frame::Kind::Reduce,
                    ..sig
                },
            ] {
                others.push(Expected { sig, ..exp });
            }
            for o in &others {
                assert!(
                    !l10.try_take_expected(o, &mut |_| panic!("taken for {o:?}")),
                    "{o:?}"
                );
            }
            let mut got = Vec::new();
            assert!(l10.try_take_expected(&exp, &mut |p| got.extend_from_slice(p)));
            assert_eq!(got, payload, "{len} bytes");
            // Gone: neither the shortcut nor the stream sees it again.
            assert!(!l10.try_take_expected(&exp, &mut |_| panic!("twice")));
            assert!(!l10.try_recv(&mut |_, _| panic!("empty")).unwrap());
        }
        // A frame the shortcut passes over reaches the stream whole.
        let mut hdr = FrameHeader::new(&sig, 42, 11, 5, 0);
        hdr.set_msg_len(8);
        assert!(l01.send_box(&hdr, &[7; 8]));
        let exp = Expected {
            comm_id: 42,
            seq: 12,
            tag: 5,
            sig,
            len: 8,
        };
        assert!(!l10.try_take_expected(&exp, &mut |_| panic!("not this one")));
        let mut seen = 0;
        assert!(l10
            .try_recv(&mut |h, p| {
                assert_eq!((h.seq, p), (11, &[7u8; 8][..]));
                seen += 1;
                Ok(())
            })
            .unwrap());
        assert_eq!(seen, 1);
    }

    #[test]
    fn small_collective_frames_travel_in_the_box() {
        let (l01, l10) = link_pair("box", 2);
        let sig = allreduce_sig();
        let mut hdr = FrameHeader::new(&sig, 42, 9, 5, 0);
        let payload = [1u8, 2, 3, 4, 5, 6, 7, 8];
        hdr.set_msg_len(payload.len() as u64);
        // Too long, a fragment of a longer message, or a flag the line cannot carry: no box.
        let mut long = hdr;
        long.set_msg_len(BOX_MAX_PAYLOAD as u64 + 1);
        assert!(!l01.send_box(&long, &[0; BOX_MAX_PAYLOAD + 1]));
        assert!(!l01.send_box(&hdr, &payload[..4]));
        let mut flagged = hdr;
        flagged.flags = crate::frame::FLAG_SYNC;
        assert!(!l01.send_box(&flagged, &payload));
        // Every box in turn (frame k says k in its call number), then full: the next frame
        // must take the ring.
        for k in 0..BOXES as u64 {
            let mut h = hdr;
            h.seq = k;
            assert!(l01.send_box(&h, &payload), "box {k}");
        }
        assert!(!l01.send_box(&hdr, &payload));
        // A reader that does not want the first leaves it where it is.
        let mut took = |_: &FrameHeader, _: &[u8]| -> Result<bool> { panic!("not wanted") };
        assert!(!l10.take_box(&mut |_| Ok(false), &mut took).unwrap());
        // The stream hands them out in order with the header they were sent with (length and
        // sender set).
        let mut want = hdr;
        want.len = payload.len() as u32;
        for k in 0..BOXES as u64 {
            let mut seen = 0;
            assert!(l10
                .try_recv(&mut |h, p| {
                    assert_eq!(*h, FrameHeader { seq: k, ..want });
                    assert_eq!(p, payload);
                    seen += 1;
                    Ok(())
                })
                .unwrap());
            assert_eq!(seen, 1);
            // One box free again: the sender finds it (it reads the taken count anew).
            if k == 0 {
                let mut h = hdr;
                h.seq = 100;
                assert!(l01.send_box(&h, &payload));
                assert!(!l01.send_box(&hdr, &payload));
            }
        }
        let mut seen = 0;
        assert!(l10
            .try_recv(&mut |h, _| {
                assert_eq!(h.seq, 100);
                seen += 1;
                Ok(())
            })
            .unwrap());
        assert_eq!(seen, 1);
        assert!(!l10.try_recv(&mut |_, _| panic!("empty")).unwrap());
        // Emptied: a sender may post again, and a wanting reader takes it directly.
        assert!(l01.send_box(&hdr, &payload));
        let mut got = Vec::new();
        assert!(l10
            .take_box(&mut |h| Ok(h.seq == 9), &mut |h, p| {
                assert_eq!(*h, want);
                got.extend_from_slice(p);
                Ok(false)
            })
            .unwrap());
        assert_eq!(got, payload);
    }
}
