//! The small-message fast path of the one-shot fold: no [`Schedule`](crate::engine::Schedule),
//! no heap allocation.
//!
//! Latency-bound calls (an 8-byte `MPI_Allreduce`) spend most of their time on bookkeeping, not
//! on moving bytes: building a schedule of n tasks, its dependency lists, its per-peer vectors
//! and freeing all of it again cost more than the message itself (about a dozen allocations per
//! call). When a message fits one fragment, the one-shot fold is simple enough to run as a
//! fixed little state machine instead: send our input to every rank that folds (one frame
//! each), then fold the n inputs in rank order 0, 1, …, n−1, each straight out of the
//! transport (the peer's shared-memory slot) into the output.
//!
//! The frames are exactly those the schedule of [`super::allreduce::oneshot_fold`] sends (one
//! frame per peer, tag 0, offset 0, the message length in the header) and the fold order is
//! the same, so the fast path and the general path are interchangeable on the wire and give
//! the same bits: ranks need not agree on which of the two they take. Everything else the
//! engine does for a wait is kept: the spin-then-sleep loop and the failure checks of
//! [`drive`], signature checks of every frame of the call, draining peers before a sleep, and
//! failure notices to the other members when the call fails.

use std::mem::MaybeUninit;

use std::sync::Arc;

use super::{rotate, tag, Reduction};
use crate::comm::Comm;
use crate::endpoint::MatchKey;
use crate::engine::{drive, Step, Wait};
use crate::error::{Class, Error, Result};
use crate::frame::{Expected, FrameHeader, Signature};
use crate::health;
use crate::request::{Completion, Op};

/// The largest message the fast path takes (bytes); larger ones also need a fragment each.
pub(super) const MAX_BYTES: usize = 16 << 10;

/// The most ranks the fast path takes (the pending sends are a 64-bit mask).
pub(super) const MAX_RANKS: usize = 64;

/// A stack copy of an in-place input, 64-byte aligned like a slot's payload.
#[repr(C, align(64))]
struct Saved([MaybeUninit<u8>; MAX_BYTES]);

/// Whether a one-shot fold of `nbytes` on `comm` can take the fast path: more than one rank
/// (at most [`MAX_RANKS`]), one fragment per message on every link, and no single copy the
/// schedule would send instead (`HCOMM_CMA=1` with a small `HCOMM_CMA_BYTES`).
pub(super) fn fits(comm: &Comm, nbytes: usize) -> bool {
    comm.direct_limit
        .get_or_init(|| limit(comm))
        .is_some_and(|most| nbytes <= most)
}

/// The largest `nbytes` [`fits`] takes on `comm`; `None` where it takes nothing.
fn limit(comm: &Comm) -> Option<usize> {
    if !(2..=MAX_RANKS).contains(&comm.size()) {
        return None;
    }
    let most = MAX_BYTES.min(super::allreduce::fragment(comm).ok()?);
    // Below the size from which the schedule would send single copies unasked.
    Some(match crate::engine::unasked_single_copy_from() {
        Some(from) => most.min(from - 1),
        None => most,
    })
}

/// Runs the one-shot fold of call `seq` (already taken): every rank sends `send` to every
/// folding rank (all, or only `root`), and a folding rank folds the n inputs into `recv` in
/// rank order. `send == recv` means in place. The caller has checked [`fits`].
#[allow(clippy::too_many_arguments)]
pub(super) fn oneshot(
    comm: &Comm,
    seq: u64,
    send: *const u8,
    recv: *mut u8,
    count: usize,
    extent: usize,
    red: Reduction,
    root: Option<usize>,
    sig: Signature,
) -> Result<()> {
    let mut saved = MaybeUninit::<Saved>::uninit();
    let mut w = OneShot::new(
        comm,
        seq,
        send,
        recv,
        count,
        extent,
        red,
        root,
        sig,
        saved.as_mut_ptr().cast(),
    );
    run(comm, seq, &mut w)
}

/// Runs the one-shot reduce-scatter of call `seq` (already taken) of equal blocks of `count`
/// elements that fit one fragment: send block p of the input `send` (n blocks; in place it
/// is `recv`) to rank p, fold the n ranks' copies of our block in rank order into a stack
/// buffer, and copy the result to `recv` once every send has left (in place, `recv` is input
/// the sends read until then). The frames and the fold order are those of the schedule
/// `build_reduce_scatter` makes for its one-shot, so the two paths are interchangeable on the
/// wire and give the same bits. The caller has checked [`fits`] for one block.
#[allow(clippy::too_many_arguments)]
pub(super) fn oneshot_scatter(
    comm: &Comm,
    seq: u64,
    send: *const u8,
    recv: *mut u8,
    count: usize,
    extent: usize,
    red: Reduction,
    sig: Signature,
) -> Result<()> {
    let r = comm.rank;
    let blk = count * extent;
    let mut acc = MaybeUninit::<Saved>::uninit();
    let out = acc.as_mut_ptr().cast::<u8>();
    // `saved` stays unused: the input is never the output here.
    let mut w = OneShot::new(
        comm,
        seq,
        send,
        out,
        count,
        extent,
        red,
        None,
        sig,
        std::ptr::null_mut(),
    );
    w.stride = blk;
    w.own = send.wrapping_add(r * blk);
    run(comm, seq, &mut w)?;
    if blk > 0 {
        // SAFETY: `out` holds the folded block (`blk` <= MAX_BYTES bytes of the stack
        // buffer); `recv` is valid for `blk` bytes (the ABI layer checked it) and no send
        // reads the input any more.
        unsafe { std::ptr::copy_nonoverlapping(out, recv, blk) };
    }
    Ok(())
}

/// A state machine of this module as the operation of a request (nonblocking, persistent, or
/// a blocking call made through a plan): the same states, frames and order as the blocking
/// fast path, without the schedule's allocations. `keep` holds what the state borrows besides
/// the communicator (an in-place input's copy, the allgatherv's spans), on the heap so that it
/// does not move.
struct StateOp<W, K> {
    // Field order matters: `w` borrows from `_keep` and `_comm` and drops first.
    w: W,
    _keep: K,
    finish: Option<Box<dyn FnOnce() + Send>>,
    _comm: Arc<Comm>,
}

// SAFETY: as for `request::Sched`: the raw pointers of the states point into the caller's
// buffers (which MPI forbids the caller to touch until the request completes) and into
// `_keep`; the `Comm` and `_keep` the state borrows are kept alive, unmoved on the heap, by the
// fields that drop after it; the request's lock makes one thread step it at once.
unsafe impl<W, K> Send for StateOp<W, K> {}

/// What [`StateOp`] needs of a state besides [`Wait`]: the call it runs.
trait CallState: Wait {
    fn call(&self) -> (&Comm, u64);
}

impl<W: CallState, K> Wait for StateOp<W, K> {
    fn poll(&mut self, last: bool) -> Result<Step> {
        self.w.poll(last)
    }
    fn describe(&self) -> String {
        self.w.describe()
    }
    fn blocked_on(&self, out: &mut Vec<usize>) {
        self.w.blocked_on(out)
    }
    fn noticed(&self) -> Option<Error> {
        self.w.noticed()
    }
}

impl<W: CallState, K> Op for StateOp<W, K> {
    fn complete(&mut self) -> Result<Completion> {
        if let Some(f) = self.finish.take() {
            f();
        }
        Ok(Completion::empty())
    }
    fn failed(&mut self, e: Error) -> Error {
        let (comm, seq) = self.w.call();
        call_failed(comm, seq, e)
    }
}

/// The `Comm` of `comm` for a state stored next to `comm` (see [`StateOp`]), or the failure
/// already noticed for call `seq`.
fn pinned(comm: &Arc<Comm>, seq: u64) -> Result<&'static Comm> {
    if let Some(e) = comm.ep.notices().find(comm.id, seq) {
        return Err(e);
    }
    // SAFETY: the `Comm` lives in the `Arc`'s heap block, which does not move; the caller
    // stores the `Arc` in the `StateOp` next to the state, which drops first.
    Ok(unsafe { &*Arc::as_ptr(comm) })
}

/// The one-shot fold of call `seq` (already taken) as the operation of a request (a
/// nonblocking or persistent allreduce whose message fits, [`fits`]); an in-place input's copy
/// lives on the heap instead of the stack. `finish` runs on completion.
#[allow(clippy::too_many_arguments)]
pub(super) fn oneshot_op(
    comm: Arc<Comm>,
    seq: u64,
    send: *const u8,
    recv: *mut u8,
    count: usize,
    extent: usize,
    red: Reduction,
    sig: Signature,
    finish: Option<Box<dyn FnOnce() + Send>>,
) -> Result<Box<dyn Op>> {
    let c = pinned(&comm, seq)?;
    let mut saved = std::ptr::eq(send, recv).then(|| Box::new(MaybeUninit::<Saved>::uninit()));
    let at = saved
        .as_mut()
        .map_or(std::ptr::null_mut(), |b| b.as_mut_ptr().cast::<u8>());
    let w = OneShot::new(c, seq, send, recv, count, extent, red, None, sig, at);
    Ok(Box::new(StateOp {
        w,
        _keep: saved,
        finish,
        _comm: comm,
    }))
}

/// The state of one fast one-shot fold.
struct OneShot<'a> {
    comm: &'a Comm,
    seq: u64,
    sig: Signature,
    /// Every frame we send.
    frame: Expected,
    /// What we send: to peer p, the `nbytes` at `mine + p × stride`.
    mine: *const u8,
    stride: usize,
    /// Our own operand, folded at our turn.
    own: *const u8,
    out: *mut u8,
    nbytes: usize,
    count: usize,
    red: Reduction,
    /// Comm ranks we still have to send to (bit p).
    pending: u64,
    /// The next rank whose input to fold; `n`: folding done (or nothing to fold).
    next: usize,
}

impl<'a> OneShot<'a> {
    /// The state of call `seq`; `saved` has room for an in-place input's copy
    /// ([`MAX_BYTES`], 64-byte aligned), used only in place.
    #[allow(clippy::too_many_arguments)]
    fn new(
        comm: &'a Comm,
        seq: u64,
        send: *const u8,
        recv: *mut u8,
        count: usize,
        extent: usize,
        red: Reduction,
        root: Option<usize>,
        sig: Signature,
        saved: *mut u8,
    ) -> OneShot<'a> {
        let (n, r) = (comm.size(), comm.rank);
        let nbytes = count * extent;
        debug_assert!(fits(comm, nbytes));
        let folds = root.is_none_or(|root| root == r);
        // In place, the output is the input: fold from (and send) a copy.
        let mine = if folds && std::ptr::eq(send, recv) && nbytes > 0 {
            // SAFETY: `send` is valid for `nbytes` (the ABI layer checked it) and `saved` has
            // room for MAX_BYTES >= nbytes; our own buffer cannot overlap the caller's.
            unsafe { std::ptr::copy_nonoverlapping(send, saved, nbytes) };
            saved as *const u8
        } else {
            send
        };
        let mut pending = 0u64;
        for p in (0..n).filter(|&p| p != r && root.is_none_or(|root| root == p)) {
            pending |= 1 << p;
        }
        OneShot {
            comm,
            seq,
            sig,
            frame: whole(comm, seq, &sig, nbytes),
            mine,
            stride: 0,
            own: mine,
            out: recv,
            nbytes,
            count,
            red,
            pending,
            next: if folds { 0 } else { n },
        }
    }
}

impl OneShot<'_> {
    /// Sends to every pending peer whose channel has room; whether any frame went.
    fn send(&mut self) -> Result<bool> {
        let mut moved = false;
        for p in bits(self.pending) {
            // SAFETY: `mine + p × stride` is valid for `nbytes` (the caller's buffer or our
            // stack copy; the caller's contract).
            let payload = unsafe { slice(self.mine.wrapping_add(p * self.stride), self.nbytes) };
            if self
                .comm
                .ep
                .try_send_expected(self.comm.world[p], &self.frame, payload)?
            {
                self.pending &= !(1 << p);
                moved = true;
            }
        }
        Ok(moved)
    }

    /// Folds as many inputs as have arrived, in rank order; whether any was folded.
    fn fold(&mut self) -> Result<bool> {
        let (n, r) = (self.comm.size(), self.comm.rank);
        let mut moved = false;
        while self.next < n {
            let j = self.next;
            if j == r {
                if self.nbytes > 0 {
                    // SAFETY: `out` and `own` are valid for `nbytes` and do not overlap (in
                    // place, `own` is the stack copy; scattered, `out` is); reduce: `dst == a`.
                    unsafe {
                        if j == 0 {
                            std::ptr::copy_nonoverlapping(self.own, self.out, self.nbytes);
                        } else {
                            self.red.apply(self.out, self.out, self.own, self.count);
                        }
                    }
                }
                self.next += 1;
                moved = true;
                continue;
            }
            if !self.take(j)? {
                break;
            }
            self.next += 1;
            moved = true;
        }
        Ok(moved)
    }

    /// Folds rank `j`'s frame if it has arrived.
    fn take(&mut self, j: usize) -> Result<bool> {
        let (len, out, count, red) = (self.nbytes, self.out, self.count, self.red);
        take_whole(self.comm, self.seq, &self.sig, j, len, |payload| {
            if len > 0 {
                // SAFETY: `out` is valid for `len` bytes and disjoint from the payload (the
                // transport's memory or a queued copy); After: `dst == a`.
                unsafe {
                    if j == 0 {
                        std::ptr::copy_nonoverlapping(payload.as_ptr(), out, len);
                    } else {
                        red.apply(out, out, payload.as_ptr(), count);
                    }
                }
            }
        })
    }
}

impl CallState for OneShot<'_> {
    fn call(&self) -> (&Comm, u64) {
        (self.comm, self.seq)
    }
}

/// Drives call `seq`'s state machine `w` to completion (a failure already noticed for the
/// call ends it at once); a failure is told to the other members ([`call_failed`]).
fn run(comm: &Comm, seq: u64, w: &mut impl Wait) -> Result<()> {
    if let Some(e) = comm.ep.notices().find(comm.id, seq) {
        return Err(e);
    }
    drive(&comm.ep, w).map_err(|e| call_failed(comm, seq, e))
}

/// The set bits of `mask`, lowest first.
fn bits(mask: u64) -> impl Iterator<Item = usize> {
    let mut left = mask;
    std::iter::from_fn(move || {
        (left != 0).then(|| {
            let b = left.trailing_zeros() as usize;
            left &= left - 1;
            b
        })
    })
}

/// The set bits of `mask`, highest first.
fn bits_high_first(mask: u64) -> impl Iterator<Item = usize> {
    let mut left = mask;
    std::iter::from_fn(move || {
        (left != 0).then(|| {
            let b = 63 - left.leading_zeros() as usize;
            left &= !(1 << b);
            b
        })
    })
}

/// The one frame of call `seq` (tag 0) whose payload is a whole message of `len` bytes: what
/// the fast paths send and expect.
fn whole(comm: &Comm, seq: u64, sig: &Signature, len: usize) -> Expected {
    Expected {
        comm_id: comm.id,
        seq,
        tag: tag(0, 0),
        sig: *sig,
        len,
    }
}

/// Takes rank `j`'s whole message of call `seq` (tag 0, `len` bytes in one frame) if it has
/// arrived, checked against `sig` and `len`, and hands its payload to `apply`; whether it was
/// taken.
fn take_whole(
    comm: &Comm,
    seq: u64,
    sig: &Signature,
    j: usize,
    len: usize,
    mut apply: impl FnMut(&[u8]),
) -> Result<bool> {
    let exp = whole(comm, seq, sig, len);
    // The frame a small call waits for is, nearly always, the next one in the peer's boxes.
    if comm.ep.take_expected(comm.world[j], &exp, &mut apply) {
        return Ok(true);
    }
    let key = MatchKey {
        comm_id: comm.id,
        seq,
        tag: tag(0, 0),
    };
    let (me, id) = (comm.rank, comm.id);
    let mut done = false;
    let mut consume = |hdr: &FrameHeader, payload: &[u8]| -> Result<bool> {
        if hdr.msg_len() != len as u64 {
            return Err(Error::new(
                    Class::Truncate,
                    format!(
                        "message size mismatch in {} on {} ({}): rank {j} sends {} bytes where rank {me} expects {len}: were the counts and datatypes consistent on every rank?",
                        health::call_text(sig),
                        health::comm_label(id),
                        health::call_label(seq),
                        hdr.msg_len()
                    ),
                ));
        }
        if hdr.offset != 0 || payload.len() != len {
            return Err(Error::other(format!(
                    "unexpected fragment from rank {j}: {} bytes at offset {} of a {len}-byte message: were the counts equal on every rank?",
                    payload.len(),
                    hdr.offset
                )));
        }
        apply(payload);
        done = true;
        Ok(false)
    };
    comm.ep
        .poll_recv(comm.world[j], key, sig, (me, j), &mut consume)?;
    Ok(done)
}

/// After call `seq` failed with `e` (as [`crate::engine::Schedule::failed`]): a peer's own
/// report of this call's failure when there is one, else `e`, told to the other members.
fn call_failed(comm: &Comm, seq: u64, e: Error) -> Error {
    let ep = &comm.ep;
    for &peer in &comm.world {
        if peer != ep.rank {
            let _ = ep.drain(peer);
        }
    }
    if let Some(first) = ep.notices().find(comm.id, seq) {
        return first;
    }
    ep.send_notice(&comm.world, comm.id, seq, &e.msg);
    e
}

/// About to sleep in call `seq`: take in what peers sent (see `Schedule::step`), checking
/// the signatures of this call's frames on the way. Whether anything was taken.
fn drain_before_sleep(comm: &Comm, seq: u64, sig: &Signature) -> Result<bool> {
    let ep = &comm.ep;
    let key = MatchKey {
        comm_id: comm.id,
        seq,
        tag: 0,
    };
    let mut moved = false;
    for (j, &peer) in comm.world.iter().enumerate() {
        if peer != ep.rank {
            moved |= ep.drain_call(peer, key, sig, (comm.rank, j))?;
        }
    }
    Ok(moved)
}

fn describe_call(comm: &Comm, seq: u64, sig: &Signature) -> String {
    format!(
        "{} on {} ({})",
        health::call_text(sig),
        health::comm_label(comm.id),
        health::call_label(seq)
    )
}

impl Wait for OneShot<'_> {
    fn poll(&mut self, last: bool) -> Result<Step> {
        let mut moved = false;
        if self.pending != 0 {
            moved |= self.send()?;
        }
        moved |= self.fold()?;
        if self.pending == 0 && self.next == self.comm.size() {
            return Ok(Step::Done);
        }
        if last && !moved {
            moved |= drain_before_sleep(self.comm, self.seq, &self.sig)?;
        }
        Ok(if moved { Step::Moved } else { Step::Idle })
    }

    fn describe(&self) -> String {
        describe_call(self.comm, self.seq, &self.sig)
    }

    fn blocked_on(&self, out: &mut Vec<usize>) {
        out.extend(bits(self.pending).map(|p| self.comm.world[p]));
        if self.next < self.comm.size() && self.next != self.comm.rank {
            let w = self.comm.world[self.next];
            if !out.contains(&w) {
                out.push(w);
            }
        }
    }

    fn noticed(&self) -> Option<Error> {
        self.comm.ep.notices().find(self.comm.id, self.seq)
    }
}

/// Runs the binomial-tree broadcast of call `seq` (already taken) from `root` of a message
/// that fits one fragment: receive it from the parent into `buf` (the root has it), then
/// pass it to every child. The frames are exactly those of the schedule `build_bcast` makes
/// for a one-chunk tree (tag 0 to each child, children in the same order), so the two paths
/// are interchangeable on the wire. The caller has checked [`fits`].
pub(super) fn relay(
    comm: &Comm,
    seq: u64,
    buf: *mut u8,
    nbytes: usize,
    root: usize,
    sig: Signature,
) -> Result<()> {
    let (n, r) = (comm.size(), comm.rank);
    debug_assert!(fits(comm, nbytes));
    let vr = rotate(r, n - root, n);
    let real = |v: usize| rotate(v, root, n);
    // The parent differs from us in our lowest set bit; the children are vr + 2^k for every
    // 2^k below that bit (all of them for the root), as in `build_bcast`. Bit k of `children`
    // stands for the child vr + 2^k: sent to from the highest k down, the largest subtree
    // first, as the schedule orders them.
    let low = if vr == 0 {
        n.next_power_of_two()
    } else {
        1 << vr.trailing_zeros()
    };
    let mut children = 0u64;
    let mut k = 0;
    while 1 << k < low {
        if vr + (1 << k) < n {
            children |= 1 << k;
        }
        k += 1;
    }
    let mut w = Relay {
        comm,
        seq,
        sig,
        buf,
        nbytes,
        parent: (vr != 0).then(|| real(vr - (vr & vr.wrapping_neg()))),
        children,
        vr,
        root,
    };
    run(comm, seq, &mut w)
}

/// The state of one fast broadcast ([`relay`]).
struct Relay<'a> {
    comm: &'a Comm,
    seq: u64,
    sig: Signature,
    buf: *mut u8,
    nbytes: usize,
    /// The comm rank we still have to receive the message from.
    parent: Option<usize>,
    /// Children we still have to send it to, once it is here: bit k for relative rank
    /// vr + 2^k.
    children: u64,
    /// Our rank relative to the root, and the root.
    vr: usize,
    root: usize,
}

impl Relay<'_> {
    /// The comm rank of the child bit `k` stands for.
    fn child(&self, k: usize) -> usize {
        rotate(self.vr + (1 << k), self.root, self.comm.size())
    }
}

impl Wait for Relay<'_> {
    fn poll(&mut self, last: bool) -> Result<Step> {
        let mut moved = false;
        if let Some(p) = self.parent {
            let (buf, len) = (self.buf, self.nbytes);
            if take_whole(self.comm, self.seq, &self.sig, p, len, |payload| {
                if len > 0 {
                    // SAFETY: `buf` is the caller's buffer, valid for `len` bytes (the ABI
                    // layer checked it), disjoint from the transport's memory.
                    unsafe { std::ptr::copy_nonoverlapping(payload.as_ptr(), buf, len) };
                }
            })? {
                self.parent = None;
                moved = true;
            }
        }
        if self.parent.is_none() {
            if self.children != 0 {
                let out = whole(self.comm, self.seq, &self.sig, self.nbytes);
                for k in bits_high_first(self.children) {
                    // SAFETY: `buf` holds the message (ours, or received above), `nbytes`
                    // long.
                    let payload = unsafe { slice(self.buf, self.nbytes) };
                    let p = self.child(k);
                    if self
                        .comm
                        .ep
                        .try_send_expected(self.comm.world[p], &out, payload)?
                    {
                        self.children &= !(1 << k);
                        moved = true;
                    }
                }
            }
            if self.children == 0 {
                return Ok(Step::Done);
            }
        }
        if last && !moved {
            moved |= drain_before_sleep(self.comm, self.seq, &self.sig)?;
        }
        Ok(if moved { Step::Moved } else { Step::Idle })
    }

    fn describe(&self) -> String {
        describe_call(self.comm, self.seq, &self.sig)
    }

    fn blocked_on(&self, out: &mut Vec<usize>) {
        if let Some(p) = self.parent {
            out.push(self.comm.world[p]);
            return;
        }
        out.extend(bits(self.children).map(|k| self.comm.world[self.child(k)]));
    }

    fn noticed(&self) -> Option<Error> {
        self.comm.ep.notices().find(self.comm.id, self.seq)
    }
}

/// Runs the one-shot allgather of call `seq` (already taken) of blocks of `blk` bytes that
/// fit one fragment: send our block (already in place at `recv + rank × blk`) to every other
/// rank and place each rank's block as it arrives. The frames are exactly those of the
/// schedule `build_allgather` makes for its one-shot (tag 0, one per peer), so the two paths
/// are interchangeable on the wire. The caller has checked [`fits`].
pub(super) fn gather(
    comm: &Comm,
    seq: u64,
    recv: *mut u8,
    blk: usize,
    sig: Signature,
) -> Result<()> {
    debug_assert!(fits(comm, blk));
    let mut w = Gather::new(comm, seq, Blocks::Even { recv, blk }, sig);
    run(comm, seq, &mut w)
}

/// Where each rank's block of a [`gather`] lies.
#[derive(Clone, Copy)]
enum Blocks<'a> {
    /// `blk` bytes at `recv + p × blk` (allgather).
    Even { recv: *mut u8, blk: usize },
    /// Anywhere, any size (allgatherv).
    Spans(&'a [(*mut u8, usize)]),
}

impl Blocks<'_> {
    /// Rank `p`'s block: (pointer, bytes).
    fn of(&self, p: usize) -> (*mut u8, usize) {
        match *self {
            Blocks::Even { recv, blk } => (recv.wrapping_add(p * blk), blk),
            Blocks::Spans(s) => s[p],
        }
    }
}

/// The one-shot allgatherv of call `seq` (already taken) as the operation of a request
/// (blocking, nonblocking or persistent, through `abi::api::plan`): rank p's block is
/// `spans[p]` (pointer, bytes), ours already in place; the frames are those of
/// `build_allgatherv`'s one-shot. The caller has checked [`fits`] for the largest block.
/// `finish` runs on completion.
pub(super) fn gather_op(
    comm: Arc<Comm>,
    seq: u64,
    spans: Vec<(*mut u8, usize)>,
    sig: Signature,
    finish: Option<Box<dyn FnOnce() + Send>>,
) -> Result<Box<dyn Op>> {
    debug_assert_eq!(spans.len(), comm.size());
    debug_assert!(spans.iter().all(|s| fits(&comm, s.1)));
    let c = pinned(&comm, seq)?;
    let spans = spans.into_boxed_slice();
    // SAFETY: the spans live in their boxed slice's heap block, which does not move; it is
    // stored in the `StateOp` next to the state, which drops first.
    let s: &'static [(*mut u8, usize)] = unsafe { &*(&*spans as *const [(*mut u8, usize)]) };
    Ok(Box::new(StateOp {
        w: Gather::new(c, seq, Blocks::Spans(s), sig),
        _keep: spans,
        finish,
        _comm: comm,
    }))
}

/// The state of one fast allgather ([`gather`]).
struct Gather<'a> {
    comm: &'a Comm,
    seq: u64,
    sig: Signature,
    /// Every frame we send.
    frame: Expected,
    blocks: Blocks<'a>,
    /// Comm ranks we still have to send our block to (bit p).
    to_send: u64,
    /// Comm ranks whose block has not arrived yet (bit p).
    to_take: u64,
}

impl<'a> Gather<'a> {
    fn new(comm: &'a Comm, seq: u64, blocks: Blocks<'a>, sig: Signature) -> Gather<'a> {
        let (n, r) = (comm.size(), comm.rank);
        let others = (0..n).filter(|&p| p != r).fold(0u64, |m, p| m | 1 << p);
        Gather {
            comm,
            seq,
            sig,
            frame: whole(comm, seq, &sig, blocks.of(r).1),
            blocks,
            to_send: others,
            to_take: others,
        }
    }
}

impl Wait for Gather<'_> {
    fn poll(&mut self, last: bool) -> Result<Step> {
        let mut moved = false;
        let (own, own_len) = self.blocks.of(self.comm.rank);
        for p in bits(self.to_send) {
            // SAFETY: our block lies at `own`, `own_len` bytes (the caller put it there; the
            // ABI layer checked the buffer); no arriving block is written over it.
            let payload = unsafe { slice(own, own_len) };
            if self
                .comm
                .ep
                .try_send_expected(self.comm.world[p], &self.frame, payload)?
            {
                self.to_send &= !(1 << p);
                moved = true;
            }
        }
        for j in bits(self.to_take) {
            let (at, len) = self.blocks.of(j);
            if take_whole(self.comm, self.seq, &self.sig, j, len, |payload| {
                if len > 0 {
                    // SAFETY: block j is valid for `len` bytes (the ABI layer checked the
                    // buffer and laid the blocks out), disjoint from our own block and from
                    // the transport's memory.
                    unsafe { std::ptr::copy_nonoverlapping(payload.as_ptr(), at, len) };
                }
            })? {
                self.to_take &= !(1 << j);
                moved = true;
            }
        }
        if self.to_send == 0 && self.to_take == 0 {
            return Ok(Step::Done);
        }
        if last && !moved {
            moved |= drain_before_sleep(self.comm, self.seq, &self.sig)?;
        }
        Ok(if moved { Step::Moved } else { Step::Idle })
    }

    fn describe(&self) -> String {
        describe_call(self.comm, self.seq, &self.sig)
    }

    fn blocked_on(&self, out: &mut Vec<usize>) {
        out.extend(bits(self.to_send | self.to_take).map(|p| self.comm.world[p]));
    }

    fn noticed(&self) -> Option<Error> {
        self.comm.ep.notices().find(self.comm.id, self.seq)
    }
}

impl CallState for Gather<'_> {
    fn call(&self) -> (&Comm, u64) {
        (self.comm, self.seq)
    }
}

/// # Safety
/// `p` is valid for reading `len` bytes (or `len == 0`).
unsafe fn slice<'b>(p: *const u8, len: usize) -> &'b [u8] {
    if len == 0 {
        &[]
    } else {
        // SAFETY: forwarded contract.
        unsafe { std::slice::from_raw_parts(p, len) }
    }
}
