//! Failure detection: peer liveness, progress watching and failure notices.
//!
//! Two questions are kept apart. **Liveness** — is the peer process still there? — has a
//! cheap exact answer: a peer on this host (same host identity and pid namespace) is watched
//! through a pidfd (`pidfd_open`, readable once the process has ended; `kill(pid, 0)` where
//! the kernel has no pidfds), a peer on another host through its TCP link (end of file or an
//! error, recorded by the receiver thread). **Progress** — is the peer taking part? — has
//! none: a correct program may keep its peers waiting for minutes, so a long wait only logs a
//! WARN (every `HCOMM_WARN_AFTER` seconds) naming the rank waited for and the call, and
//! becomes an error only with `HCOMM_TIMEOUT`.
//!
//! Nothing here runs on the hot path. The engine's wait loop ([`crate::engine::drive`])
//! sleeps on the rank's doorbell with a 100 ms timeout; only a wait that has made no progress
//! for [`CHECK_EVERY`] runs the [`Watchdog`], which polls the pidfds and TCP links of *every*
//! peer of the world (not only the one waited for: a rank waiting on a live neighbour that
//! itself waits on a dead rank must leave too). A peer found dead is looked at once more
//! before failing, because what it sent before it died is still in the channels — so a peer
//! that finished `MPI_Finalize` and exited is not mistaken for a failure by a rank that only
//! still has to read its last message. While this rank is in `MPI_Finalize` only the peers
//! its wait depends on are watched: the others may already have left, cleanly.
//!
//! **Failure notices** carry the other kind of failure — a mismatched collective, a timeout —
//! to the ranks that cannot see it themselves. A rank whose collective fails sends a
//! [`Kind::Notice`](crate::frame::Kind) frame (communicator, call number, its error text)
//! to every other member of the communicator; the receiving endpoint records it wherever
//! it reads it from a link, and every wait on that communicator at or after that call fails
//! with the sender's message. (Ring and tree algorithms do not make every rank talk to every
//! other, so without notices a rank waiting on a neighbour that already failed would hang.)

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::error::Error;
use crate::frame::{Kind, Signature};

/// How often a stalled wait runs the watchdog (liveness, notices, progress).
pub const CHECK_EVERY: Duration = Duration::from_millis(100);
/// How long a failing rank keeps trying to post its notices into full channels.
pub const NOTICE_PATIENCE: Duration = Duration::from_secs(1);
/// Longest notice text sent.
pub const NOTICE_MAX: usize = 2048;
/// Notices kept per process (a job that fails keeps failing: no need for more).
const NOTICES_KEPT: usize = 64;

/// This process's entry of the address exchange: `pid@pid-namespace`.
pub fn pid_field() -> String {
    format!("{}@{}", std::process::id(), pid_namespace())
}

fn pid_namespace() -> String {
    std::fs::read_link("/proc/self/ns/pid")
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// How a peer's process is watched.
enum Watch {
    /// Readable once the process has ended (zombie or reaped).
    Pidfd(OwnedFd),
    /// No pidfds (kernel < 5.3): `kill(pid, 0)` and the zombie state in /proc.
    Pid(i32),
    /// On another host or in another pid namespace: its TCP link tells.
    Remote,
}

/// What this rank knows about one peer, for liveness and for messages.
pub struct PeerMeta {
    /// Host name (the host identity without its boot id).
    pub host: String,
    pub pid: u32,
    watch: Watch,
}

impl PeerMeta {
    /// `host_identity`: the peer's `hostname/boot-id`; `pid_field`: its [`pid_field`];
    /// `same_host`: its host identity is this rank's.
    pub fn new(host_identity: &str, pid_field: &str, same_host: bool) -> PeerMeta {
        let host = host_identity
            .split('/')
            .next()
            .unwrap_or_default()
            .to_string();
        let (pid, ns) = pid_field.split_once('@').unwrap_or((pid_field, ""));
        let pid: u32 = pid.trim().parse().unwrap_or(0);
        let watch = if same_host && pid > 0 && !ns.is_empty() && ns == pid_namespace() {
            open_pidfd(pid)
        } else {
            Watch::Remote
        };
        PeerMeta { host, pid, watch }
    }

    /// This process itself, or a peer nothing is known about.
    pub fn unknown() -> PeerMeta {
        PeerMeta {
            host: String::new(),
            pid: 0,
            watch: Watch::Remote,
        }
    }

    /// The peer's process has ended (known only for peers on this host).
    pub fn is_gone(&self) -> bool {
        match &self.watch {
            Watch::Pidfd(fd) => {
                let mut p = libc::pollfd {
                    fd: fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one valid pollfd; timeout 0 never blocks.
                unsafe { libc::poll(&mut p, 1, 0) > 0 && p.revents & libc::POLLIN != 0 }
            }
            Watch::Pid(pid) => {
                // SAFETY: signal 0 only checks that the process exists.
                let gone = unsafe { libc::kill(*pid, 0) } != 0
                    && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
                gone || is_zombie(*pid)
            }
            Watch::Remote => false,
        }
    }

    /// `rank R (host H, pid P)` for messages.
    pub fn label(&self, rank: usize) -> String {
        if self.host.is_empty() {
            format!("rank {rank}")
        } else {
            format!("rank {rank} (host {}, pid {})", self.host, self.pid)
        }
    }
}

fn open_pidfd(pid: u32) -> Watch {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd >= 0 {
        // SAFETY: the kernel just gave us this descriptor; we own it from here on.
        return Watch::Pidfd(unsafe { OwnedFd::from_raw_fd(fd as i32) });
    }
    Watch::Pid(pid as i32)
}

fn is_zombie(pid: i32) -> bool {
    // /proc/<pid>/stat: "pid (comm) S ..."; comm may hold spaces and parentheses.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rfind(')')
                .and_then(|i| s[i + 1..].trim_start().chars().next())
        })
        .is_some_and(|state| state == 'Z' || state == 'X')
}

/// A failure notice received from a peer.
struct Notice {
    comm_id: u64,
    seq: u64,
    /// World rank of the sender.
    from: usize,
    text: String,
}

/// The notices this process has received. Checking costs one relaxed load while there are
/// none.
#[derive(Default)]
pub struct Notices {
    any: AtomicBool,
    list: Mutex<Vec<Notice>>,
}

impl Notices {
    /// Records a notice (its payload is the sender's message, cut to [`NOTICE_MAX`]).
    pub fn record(&self, comm_id: u64, seq: u64, from: usize, payload: &[u8]) {
        let text = String::from_utf8_lossy(&payload[..payload.len().min(NOTICE_MAX)]);
        let mut l = self.list.lock();
        if l.len() < NOTICES_KEPT {
            l.push(Notice {
                comm_id,
                seq,
                from,
                text: text.into_owned(),
            });
        }
        self.any.store(true, Ordering::Release);
    }

    /// The error that ends collective call `seq` of communicator `comm_id`: a notice for that
    /// call or an earlier one (the communicator is unusable from the failed call on).
    #[inline]
    pub fn find(&self, comm_id: u64, seq: u64) -> Option<Error> {
        if !self.any.load(Ordering::Acquire) {
            return None;
        }
        self.find_slow(comm_id, seq)
    }

    #[cold]
    fn find_slow(&self, comm_id: u64, seq: u64) -> Option<Error> {
        let l = self.list.lock();
        let n = l
            .iter()
            .filter(|n| n.comm_id == comm_id && n.seq <= seq)
            .min_by_key(|n| n.seq)?;
        Some(Error::other(format!(
            "{} (reported by rank {})",
            n.text, n.from
        )))
    }
}

/// `MPI_COMM_WORLD`, or the communicator's id, for messages.
pub fn comm_label(comm_id: u64) -> String {
    match comm_id {
        0 => "MPI_COMM_WORLD".into(),
        crate::comm::SELF_ID => "MPI_COMM_SELF".into(),
        id => format!("communicator {id:016x}"),
    }
}

/// How messages name call `seq` of a communicator: "call 7", or "nonblocking call 7" in the
/// sequence of nonblocking and persistent collectives ([`crate::comm::Comm::nonblocking`]).
pub fn call_label(seq: u64) -> String {
    match seq.checked_sub(crate::comm::NONBLOCKING_SEQ) {
        Some(n) => format!("nonblocking call {n}"),
        None => format!("call {seq}"),
    }
}

/// A signature as the user wrote the call: `MPI_Allreduce(count=10, MPI_FLOAT, MPI_SUM)`,
/// `MPI_Bcast(count=20, MPI_INT, root=0)`.
pub fn call_text(sig: &Signature) -> String {
    use crate::abi::handles;
    let mut args = Vec::new();
    if sig.kind != Kind::Barrier {
        args.push(format!("count={}", sig.count));
        if sig.dtype != 0 {
            args.push(
                handles::datatype_name(sig.dtype as i32)
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("datatype 0x{:x}", sig.dtype)),
            );
        }
    }
    if sig.op != 0 {
        args.push(
            handles::op(sig.op as i32)
                .map(|o| o.1.to_string())
                .unwrap_or_else(|| format!("op 0x{:x}", sig.op)),
        );
    }
    if sig.root >= 0 {
        args.push(format!("root={}", sig.root));
    }
    format!("{}({})", sig.kind.mpi_name(), args.join(", "))
}

/// The error of a mismatched collective: both sides, lower rank first (comm ranks).
pub fn mismatch(comm_id: u64, seq: u64, a: (usize, &Signature), b: (usize, &Signature)) -> Error {
    let (a, b) = if a.0 <= b.0 { (a, b) } else { (b, a) };
    Error::other(format!(
        "collective call mismatch on {} ({}): rank {} in {}, rank {} in {}",
        comm_label(comm_id),
        call_label(seq),
        a.0,
        call_text(a.1),
        b.0,
        call_text(b.1)
    ))
}

/// `HCOMM_WARN_AFTER` / `HCOMM_TIMEOUT`, read once.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub warn_after: Option<Duration>,
    pub timeout: Option<Duration>,
}

impl Limits {
    pub fn get() -> Limits {
        static L: std::sync::OnceLock<Limits> = std::sync::OnceLock::new();
        *L.get_or_init(|| Limits {
            warn_after: crate::param::warn_after_secs(),
            timeout: crate::param::timeout_secs(),
        })
    }
}

/// The state a stalled wait keeps between checks: when the next one is due, how many
/// progress warnings this stall has produced.
pub struct Watchdog {
    next_check: Instant,
    stall: Option<Instant>,
    warned: u32,
    limits: Limits,
}

/// What [`Watchdog::progress`] decided.
pub enum Verdict {
    Fine,
    /// Log this warning.
    Warn(Duration),
    /// `HCOMM_TIMEOUT` has passed.
    TimedOut(Duration),
}

impl Watchdog {
    /// Created at a wait's first sleep: the first check is due [`CHECK_EVERY`] later.
    pub fn new() -> Watchdog {
        Watchdog {
            next_check: Instant::now() + CHECK_EVERY,
            stall: None,
            warned: 0,
            limits: Limits::get(),
        }
    }

    /// A check is due (and the next one is scheduled).
    pub fn due(&mut self) -> bool {
        let now = Instant::now();
        if now < self.next_check {
            return false;
        }
        self.next_check = now + CHECK_EVERY;
        true
    }

    /// Progress verdict for a wait stalled since `since` (the last time anything moved).
    pub fn progress(&mut self, since: Instant) -> Verdict {
        if self.stall != Some(since) {
            self.stall = Some(since);
            self.warned = 0;
        }
        let waited = since.elapsed();
        if let Some(t) = self.limits.timeout {
            if waited >= t {
                return Verdict::TimedOut(waited);
            }
        }
        if let Some(w) = self.limits.warn_after {
            if waited >= w * (self.warned + 1) {
                self.warned += 1;
                return Verdict::Warn(waited);
            }
        }
        Verdict::Fine
    }
}

impl Default for Watchdog {
    fn default() -> Self {
        Self::new()
    }
}

/// Runs `f` until it returns `true` or `patience` has passed, sleeping briefly in between.
pub fn retry_for(patience: Duration, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + patience;
    while !f() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_is_alive_and_a_dead_child_is_gone() {
        let me = PeerMeta::new("h/boot", &pid_field(), true);
        assert!(!me.is_gone());
        assert_eq!(
            me.label(2),
            format!("rank 2 (host h, pid {})", std::process::id())
        );
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let peer = PeerMeta::new(
            "h/boot",
            &format!("{}@{}", child.id(), pid_namespace()),
            true,
        );
        child.wait().unwrap();
        assert!(peer.is_gone());
        // Another host: only its link tells.
        assert!(!PeerMeta::new("other/boot", "1@x", false).is_gone());
    }

    #[test]
    fn notices_apply_from_their_call_on() {
        let n = Notices::default();
        assert!(n.find(0, 5).is_none());
        n.record(7, 3, 2, b"collective call mismatch: x");
        assert!(n.find(0, 5).is_none());
        assert!(n.find(7, 2).is_none());
        let e = n.find(7, 4).unwrap();
        assert!(
            e.msg.contains("mismatch") && e.msg.contains("reported by rank 2"),
            "{e}"
        );
    }

    #[test]
    fn mismatch_shows_both_calls() {
        let a = Signature {
            kind: Kind::Allreduce,
            count: 10,
            dtype: 0x4c00040a,
            op: 0x58000003,
            root: -1,
        };
        let b = Signature {
            kind: Kind::Bcast,
            count: 20,
            dtype: 0x4c000405,
            op: 0,
            root: 0,
        };
        let e = mismatch(0, 3, (2, &b), (0, &a));
        assert_eq!(
            e.msg,
            "collective call mismatch on MPI_COMM_WORLD (call 3): rank 0 in MPI_Allreduce(count=10, MPI_FLOAT, MPI_SUM), rank 2 in MPI_Bcast(count=20, MPI_INT, root=0)"
        );
    }

    #[test]
    fn progress_warns_at_intervals_then_times_out() {
        let mut w = Watchdog::new();
        w.limits = Limits {
            warn_after: Some(Duration::from_millis(10)),
            timeout: Some(Duration::from_millis(50)),
        };
        let since = Instant::now();
        assert!(matches!(w.progress(since), Verdict::Fine));
        std::thread::sleep(Duration::from_millis(12));
        assert!(matches!(w.progress(since), Verdict::Warn(_)));
        assert!(matches!(w.progress(since), Verdict::Fine));
        std::thread::sleep(Duration::from_millis(45));
        assert!(matches!(w.progress(since), Verdict::TimedOut(_)));
    }
}
