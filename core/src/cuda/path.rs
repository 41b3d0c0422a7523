//! Every rank of a communicator takes the same path through a collective, whatever memory
//! its own buffers are in.
//!
//! * Per communicator, at its first collective that can carry device buffers: one small host
//!   exchange of "CUDA is active here"; any rank → the communicator is *CUDA-aware* (for
//!   good). While the answer is no, it is asked again at the communicator's calls 2, 4, 8,
//!   ... 65536 ([`reagree_at`]): a program that never uses CUDA pays 17 tiny exchanges per
//!   communicator at most.
//! * On a CUDA-aware communicator, every such collective first exchanges one word per rank
//!   ([`vote_word`]): "I can take the IPC path" (CUDA works, my buffers are device memory in
//!   one context, every member is on this host and reached over shared memory, a kernel
//!   exists for the datatype and op) and "I have no device buffer". All can → IPC; nobody
//!   has device memory → the host path; else → the staged path, which every rank runs in
//!   the same segments (ranks with host buffers pass them straight through).
//! * On a communicator that is not CUDA-aware (CUDA became active after its last
//!   agreement), a rank with device buffers stages the whole buffer through host memory and
//!   runs the plain host collective: the same frames as the host path, so always correct.

use std::sync::atomic::Ordering;

use crate::comm::Comm;
use crate::error::{Class, Error, Result};

use super::classify::Mem;

/// The path one call takes on this rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Path {
    /// The existing host collective, user buffers as they are.
    Host,
    /// Device buffers staged through pinned host memory around host collectives;
    /// `segmented`: cut into [`super::staging::SEG_BYTES`] pieces (agreed by every rank).
    Staged { segmented: bool },
    /// CUDA IPC between the ranks' device buffers, CUDA kernels on hcomm's stream.
    Ipc,
}

const CAN_IPC: u32 = 1;
const NO_DEVICE: u32 = 2;
/// "I refuse this call" (a device buffer with a user op, say); the error class in bits 8..16.
const REFUSED: u32 = 4;

/// This rank's word in the per-call vote (combined with bitwise AND over the ranks).
pub(crate) fn vote_word(can_ipc: bool, has_device: bool) -> u32 {
    (if can_ipc { CAN_IPC } else { 0 }) | (if has_device { 0 } else { NO_DEVICE })
}

/// The path from the AND of every rank's [`vote_word`].
pub(crate) fn path_of(all: u32) -> Path {
    if all & CAN_IPC != 0 {
        Path::Ipc
    } else if all & NO_DEVICE != 0 {
        Path::Host
    } else {
        Path::Staged { segmented: true }
    }
}

/// The path on a communicator that is not CUDA-aware.
pub(crate) fn local_path(has_device: bool) -> Path {
    if has_device {
        Path::Staged { segmented: false }
    } else {
        Path::Host
    }
}

/// `Comm::cuda` values (0: not agreed yet).
pub(crate) const NOT_AWARE: u8 = 1;
pub(crate) const AWARE: u8 = 2;

/// The last call number of a communicator at which "not CUDA-aware" is agreed again.
const REAGREE_MAX: u32 = 1 << 16;

/// Whether the "any rank CUDA-active?" agreement runs again at a not-CUDA-aware
/// communicator's call `call` (1 = its first, where it always runs): at calls 2, 4, 8, ...
/// up to [`REAGREE_MAX`]. Every member numbers the calls alike, so all of them agree again at
/// the same call (a program that sets up CUDA after a first `MPI_Allgather` of host names
/// gets the agreed device paths from its next power-of-two call on).
pub(crate) fn reagree_at(call: u32) -> bool {
    (2..=REAGREE_MAX).contains(&call) && call.is_power_of_two()
}

/// Whether the communicator is CUDA-aware, agreeing on it at its first call and again on the
/// schedule of [`reagree_at`] while the answer is no (once yes, it stays yes).
pub(super) fn aware(c: &Comm) -> Result<bool> {
    match c.cuda.load(Ordering::Acquire) {
        AWARE => return Ok(true),
        NOT_AWARE => {
            // Calls on one communicator are ordered by MPI: the count is the same everywhere.
            // The same ordering makes one thread at a time count (two threads in collectives
            // on one communicator at once is erroneous, and a correct program orders them), so
            // a plain load and store count, not a locked add; past the last agreement the
            // count stops, and never wraps round to agree again.
            let done = c.cuda_calls.load(Ordering::Relaxed);
            let call = done.saturating_add(2);
            if call > REAGREE_MAX {
                return Ok(false);
            }
            c.cuda_calls.store(done + 1, Ordering::Relaxed);
            if !reagree_at(call) {
                return Ok(false);
            }
        }
        _ => {}
    }
    let mine = u32::from(super::active().is_some());
    let any = exchange(c, mine)?.iter().fold(0, |a, w| a | w) != 0;
    c.cuda
        .store(if any { AWARE } else { NOT_AWARE }, Ordering::Release);
    if any {
        crate::info!(
            "comm {:x} (size {}): CUDA-aware (device-buffer collectives agree on their path per call)",
            c.id,
            c.size()
        );
    }
    Ok(any)
}

/// A rank's local refusal of a device-buffer call (a user op or a non-contiguous datatype on
/// device memory, a buffer that cannot be classified), made collective so that no peer
/// waits for this rank forever: on a CUDA-aware communicator the refusal is this rank's vote
/// ([`choose`] on every other rank fails the call with the same error class, and the
/// communicator stays usable); on one that is not CUDA-aware there is no vote, so this rank
/// takes the call's number and sends the failure notice every failed collective sends (the
/// peers' call fails, and so does every later call on that communicator). Returns `e`.
///
/// A refusal always concerns a device buffer of this rank with bytes to move, so the call is
/// not one where nothing moves (the peers run the path choice, not the empty shortcut).
pub(crate) fn refuse(c: &Comm, e: Error) -> Error {
    match aware(c) {
        Err(x) => x,
        Ok(true) => match exchange(c, REFUSED | (e.class as u32 & 0xff) << 8) {
            Err(x) => x,
            Ok(_) => e,
        },
        Ok(false) => {
            let seq = c.next_seq();
            c.ep.send_notice(&c.world, c.id, seq, &e.msg);
            e
        }
    }
}

/// The refusal among the vote words, as this rank's error: the lowest refusing rank's class.
fn refusal(words: &[u32]) -> Option<Error> {
    let (r, w) = words.iter().enumerate().find(|(_, w)| *w & REFUSED != 0)?;
    let class = Class::from_code(((w >> 8) & 0xff) as i32).unwrap_or(Class::Other);
    Some(Error::new(
        class,
        format!("rank {r} refused this call on its device buffers (its own error says why)"),
    ))
}

/// Whether every rank says `ok` (collective over `c`).
pub(crate) fn all_agree(c: &Comm, ok: bool) -> Result<bool> {
    Ok(exchange(c, u32::from(ok))?.iter().all(|&w| w == 1))
}

/// Communicators on which the IPC agreement failed (no peer access between the devices, IPC
/// forbidden by the container, a peer that could not share, ...): this rank stops voting for
/// IPC there for a while — 64 of its votes, doubling with each further failure up to 4096 —
/// and then tries again. Only this rank's vote word depends on it, and the AND of the words
/// decides, so ranks that count differently still agree on every call's path.
static IPC_BROKEN: parking_lot::Mutex<Vec<Backoff>> = parking_lot::Mutex::new(Vec::new());

struct Backoff {
    comm: u64,
    /// Votes left without IPC.
    left: u32,
    /// The pause after the next failure.
    next: u32,
}

const BACKOFF_FIRST: u32 = 64;
const BACKOFF_MAX: u32 = 4096;

pub(crate) fn mark_ipc_broken(c: &Comm) {
    mark_broken(c.id);
}

fn mark_broken(comm: u64) {
    let mut b = IPC_BROKEN.lock();
    match b.iter_mut().find(|e| e.comm == comm) {
        Some(e) => {
            e.left = e.next;
            e.next = (e.next * 2).min(BACKOFF_MAX);
        }
        None => b.push(Backoff {
            comm,
            left: BACKOFF_FIRST,
            next: (BACKOFF_FIRST * 2).min(BACKOFF_MAX),
        }),
    }
}

/// Whether this rank sits out IPC on `comm` for this vote (counts the vote).
fn broken(comm: u64) -> bool {
    let mut b = IPC_BROKEN.lock();
    match b.iter_mut().find(|e| e.comm == comm) {
        Some(e) if e.left > 0 => {
            e.left -= 1;
            true
        }
        _ => false,
    }
}

fn ipc_broken(c: &Comm) -> bool {
    broken(c.id)
}

/// Every rank's `word` (an internal allgather: it takes a call number like any collective,
/// at the same place on every rank).
fn exchange(c: &Comm, word: u32) -> Result<Vec<u32>> {
    let mut all = vec![0u8; 4 * c.size()];
    crate::coll::allgather_internal(c, &word.to_le_bytes(), &mut all)?;
    Ok(all
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

/// Whether every other member is on this host and reached over shared memory (CUDA IPC
/// needs the same host; `HCOMM_TRANSPORT=tcp` makes peers count as remote, which is how
/// the staged path is tested on one machine).
pub(crate) fn all_local(c: &Comm) -> bool {
    let me = c.my_world_rank();
    c.world
        .iter()
        .all(|&w| w == me || c.ep.transport_name(w) == "shm")
}

/// The facts of one call on this rank.
pub(crate) struct Call<'a> {
    /// The buffers this rank's part of the call reads or writes.
    pub bufs: &'a [Mem],
    /// Nothing moves on any rank (every rank knows this alike).
    pub empty: bool,
    /// Whether a kernel for the call's datatype and op runs in the context of the given
    /// buffer (`true` for data movement); asked only when this rank could otherwise vote for
    /// IPC, so a rank whose driver or GPU cannot load the kernels votes for staging.
    pub kernel: &'a dyn Fn(&super::classify::Dev) -> bool,
}

/// Chooses the path of one call; collective over `c` (see the module docs).
pub(crate) fn choose(c: &Comm, call: &Call<'_>) -> Result<Path> {
    if call.empty {
        return Ok(Path::Host);
    }
    let has_device = call.bufs.iter().any(Mem::is_device);
    if !aware(c)? {
        return Ok(local_path(has_device));
    }
    let first = call.bufs.iter().find_map(Mem::dev);
    let one_ctx = first.is_some_and(|f| {
        call.bufs
            .iter()
            .filter_map(Mem::dev)
            .all(|d| d.ctx == f.ctx && d.ordinal == f.ordinal)
    });
    let no_host = !call.bufs.contains(&Mem::Host);
    let can_ipc = has_device
        && one_ctx
        && no_host
        && super::active().is_some()
        && all_local(c)
        && first.is_some_and(|f| (call.kernel)(f))
        && !ipc_broken(c);
    let words = exchange(c, vote_word(can_ipc, has_device))?;
    if let Some(e) = refusal(&words) {
        return Err(e);
    }
    let all = words.iter().fold(u32::MAX, |a, w| a & w);
    let p = path_of(all);
    crate::trace!(
        "comm {:x}: device path {p:?} (this rank: can_ipc {can_ipc}, device {has_device})",
        c.id
    );
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agree(words: &[u32]) -> Path {
        path_of(words.iter().fold(u32::MAX, |a, w| a & w))
    }

    #[test]
    fn votes_combine_to_one_path() {
        let ipc = vote_word(true, true);
        let dev_staged = vote_word(false, true);
        let host = vote_word(false, false);
        assert_eq!(agree(&[ipc, ipc, ipc]), Path::Ipc);
        assert_eq!(
            agree(&[ipc, dev_staged, ipc]),
            Path::Staged { segmented: true }
        );
        // A rank with host buffers cannot take IPC: everyone stages, in the same segments.
        assert_eq!(agree(&[ipc, host]), Path::Staged { segmented: true });
        assert_eq!(agree(&[host, host]), Path::Host);
        assert_eq!(agree(&[ipc]), Path::Ipc);
    }

    #[test]
    fn without_agreement_device_buffers_stage_the_whole_message() {
        assert_eq!(local_path(true), Path::Staged { segmented: false });
        assert_eq!(local_path(false), Path::Host);
    }

    #[test]
    fn a_failed_ipc_agreement_pauses_ipc_and_backs_off() {
        let id = u64::MAX - 7; // no real communicator has this id
        assert!(!broken(id));
        mark_broken(id);
        let pause = (0..10_000).take_while(|_| broken(id)).count();
        assert_eq!(pause, BACKOFF_FIRST as usize);
        assert!(!broken(id), "IPC is voted for again after the pause");
        mark_broken(id);
        let pause = (0..10_000).take_while(|_| broken(id)).count();
        assert_eq!(pause, 2 * BACKOFF_FIRST as usize);
        for _ in 0..20 {
            mark_broken(id);
        }
        let pause = (0..10_000).take_while(|_| broken(id)).count();
        assert_eq!(pause, BACKOFF_MAX as usize);
    }

    #[test]
    fn not_aware_communicators_agree_again_at_powers_of_two() {
        let at: Vec<u32> = (1..=40).filter(|&n| reagree_at(n)).collect();
        assert_eq!(at, vec![2, 4, 8, 16, 32]);
        assert!(reagree_at(REAGREE_MAX));
        assert!(!reagree_at(REAGREE_MAX * 2));
        assert_eq!(
            (2..=REAGREE_MAX).filter(|&n| reagree_at(n)).count(),
            16,
            "at most 16 extra agreements per communicator"
        );
    }

    #[test]
    fn a_refusal_in_the_vote_fails_every_rank_with_its_class() {
        let ok = vote_word(true, true);
        assert!(refusal(&[ok, ok]).is_none());
        let no = REFUSED | (Class::Buffer as u32) << 8;
        let e = refusal(&[ok, no, REFUSED | (Class::Op as u32) << 8]).unwrap();
        assert_eq!(e.class, Class::Buffer);
        assert!(e.msg.contains("rank 1"), "{}", e.msg);
    }

    #[test]
    fn words_are_distinct() {
        let w: Vec<u32> = [(true, true), (false, true), (false, false)]
            .iter()
            .map(|&(a, b)| vote_word(a, b))
            .collect();
        assert_eq!(w, vec![1, 0, 2]);
    }
}
