//! Every `HCOMM_*` tunable, declared once, typed, with its default and its help text.
//!
//! Values are read from the environment on first use and cached. [`ALL`] lists them for
//! `hcomm info` and the README; a value that is set is logged at INFO when first read.
//! The variables of the launcher contract (`HCOMM_RANK`, ...) live in
//! [`crate::bootstrap::contract`]; they are set by a launcher, not by users.

use std::sync::OnceLock;

/// One documented variable.
pub struct Param {
    pub name: &'static str,
    pub default: &'static str,
    pub help: &'static str,
}

/// Every tunable, in the order the README lists them.
pub const ALL: &[Param] = &[
    Param {
        name: "HCOMM_DEBUG",
        default: "WARN",
        help: "Log level: WARN, INFO (transport per peer, algorithm per collective) or TRACE.",
    },
    Param {
        name: "HCOMM_ALGO",
        default: "auto",
        help: "Force algorithms: `ring`, `oneshot`, `tree`, `pipeline` (applies to every collective that has it), `hier` (two levels across hosts) or `flat` (one level across hosts), or `coll:algo,...` (colls: allreduce, reduce, bcast, allgather, allgatherv, reduce_scatter, alltoall).",
    },
    Param {
        name: "HCOMM_CHUNK_SIZE",
        default: "auto",
        help: "Pipeline chunk in bytes (K/M suffixes allowed); auto sizes it from the message and rank count.",
    },
    Param {
        name: "HCOMM_SMALL_BYTES",
        default: "16K",
        help: "Messages up to this many bytes take the latency path (one-shot / tree) when no algorithm is forced.",
    },
    Param {
        name: "HCOMM_SHM_SLOTS",
        default: "8",
        help: "Slots per shared-memory channel (one channel per ordered pair of local ranks).",
    },
    Param {
        name: "HCOMM_SHM_SLOT_BYTES",
        default: "128K",
        help: "Payload bytes per shared-memory slot: the largest fragment the shm transport moves at once.",
    },
    Param {
        name: "HCOMM_SHM_STAGE",
        default: "auto",
        help: "Pieces (of HCOMM_SHM_SLOT_BYTES each) of a rank's fan-out stage, where a message going to several local peers is copied once for all of them; auto is twice HCOMM_SHM_SLOTS (at most 16 MiB of pieces), 0 turns the fan-out off.",
    },
    Param {
        name: "HCOMM_CMA",
        default: "auto",
        help: "Single copy between ranks of one host (process_vm_readv: the receiver reads a message straight out of the sender's memory instead of both copying it through the shared-memory slots). auto: as copies where a kernel read measured faster than two copies through a slot at setup (once per process, about 1 ms; INFO prints both rates), else none; copies: the allgather and allgatherv rings' blocks of 128 KiB and more (one read per block, at most 1 MiB) and a 2-rank bcast of 128-512 KiB (docs/PERFORMANCE.md); 1: every message of at least HCOMM_CMA_BYTES; 0: never (no probe). Where the kernel refuses it (ptrace scope, seccomp, another user), ranks copy through the slots and INFO says why.",
    },
    Param {
        name: "HCOMM_CMA_BYTES",
        default: "64K",
        help: "With HCOMM_CMA=1: messages (pipeline chunks) of at least this many bytes take the single copy.",
    },
    Param {
        name: "HCOMM_SCRATCH_CACHE",
        default: "256M",
        help: "Bytes of collective scratch buffers (256 KiB and up) kept for reuse between calls; 0 frees each after its call.",
    },
    Param {
        name: "HCOMM_SPIN",
        default: "auto",
        help: "Microseconds a waiting rank polls before it sleeps on a futex; auto: 20, and 0 when ranks outnumber cores.",
    },
    Param {
        name: "HCOMM_YIELD",
        default: "auto",
        help: "Microseconds a waiting rank keeps polling after HCOMM_SPIN, giving its core away (sched_yield) between polls, before it sleeps on a futex; auto: 100, and 2000 when ranks outnumber cores.",
    },
    Param {
        name: "HCOMM_BIND",
        default: "auto",
        help: "Binding of each rank's main thread to a CPU at MPI_Init: auto (to its own CPU when every rank on the host can have one and nothing bound the process before), core (whenever every rank can have one), none. Under the preload, auto does not bind (the host MPI's launcher places ranks).",
    },
    Param {
        name: "HCOMM_PROGRESS",
        default: "thread",
        help: "Who advances nonblocking operations: thread (a per-process progress thread, started by the first nonblocking call, asleep on the doorbell when nothing can move) or caller (only inside MPI calls: MPI_Wait/MPI_Test and the like).",
    },
    Param {
        name: "HCOMM_TRANSPORT",
        default: "auto",
        help: "Transport between ranks: auto (shared memory on one host, TCP between hosts), tcp (TCP for every peer), shm (shared memory only; a peer on another host is an error).",
    },
    Param {
        name: "HCOMM_SOCKET_IFNAME",
        default: "auto",
        help: "Network interface for TCP (NCCL grammar): `eth0` (prefix), `=eth0` (exact), `^docker,lo` (exclude); auto: the first interface that is up and not loopback, else loopback.",
    },
    Param {
        name: "HCOMM_SOCKETS_PER_PEER",
        default: "1",
        help: "TCP connections per pair of ranks (1..8); frames are spread over them round-robin and put back in order by the receiver.",
    },
    Param {
        name: "HCOMM_DISABLE",
        default: "0",
        help: "Preload library: 1 forwards every intercepted call to the host MPI untouched.",
    },
    Param {
        name: "HCOMM_STATS",
        default: "0",
        help: "1: each rank prints an `hcomm-stats` line at MPI_Finalize (collectives handled by hcomm / forwarded to the host MPI, bytes per transport). Both libraries.",
    },
    Param {
        name: "HCOMM_PROFILE",
        default: "unset",
        help: "1: each rank prints a per-collective summary at MPI_Finalize (calls, bytes, time, busbw, algorithms); a path (e.g. prof.json): each rank writes it as JSON to prof.<rank>.json (or replaces %r in the path), merged by `hcomm profile prof.json`.",
    },
    Param {
        name: "HCOMM_BOOTSTRAP_TIMEOUT",
        default: "60",
        help: "Seconds ranks wait for each other at the rendezvous before failing with the list of missing ranks.",
    },
    Param {
        name: "HCOMM_PMIX_LIB",
        default: "libpmix.so.2",
        help: "The PMIx client library opened when a PMIx server (Open MPI's mpirun, `srun --mpi=pmix`) started the process; default: libpmix.so.2, then libpmix.so.",
    },
    Param {
        name: "HCOMM_WARN_AFTER",
        default: "60",
        help: "Seconds a wait may make no progress before a WARN names the call and the rank waited for (repeated at that interval); 0 turns the warnings off.",
    },
    Param {
        name: "HCOMM_TIMEOUT",
        default: "0",
        help: "Seconds a wait may make no progress before the call fails with MPI_ERR_OTHER naming the rank waited for; 0 (default) waits forever (dead peers are detected regardless).",
    },
    Param {
        name: "HCOMM_SECRET_FILE",
        default: "unset",
        help: "Ranks started without `hcomm run`: a file (mode 0600 or stricter) holding the job secret (16 to 4096 bytes of text) that authenticates every TCP connection; every rank needs the same. `hcomm run` makes one per job itself.",
    },
    Param {
        name: "HCOMM_SECRET",
        default: "unset",
        help: "The job secret itself (used when HCOMM_SECRET_FILE is not set; visible in the process environment, so prefer the file). Without either, connections are not authenticated and rank 0 warns.",
    },
    Param {
        name: "HCOMM_CUDA",
        default: "auto",
        help: "Device (CUDA) buffers: auto (looked at only once the process has libcuda loaded: a CPU-only program never initialises CUDA), 1 (initialise CUDA at the first collective; gives every communicator the direct IPC path even if CUDA is set up later), 0 (never touch CUDA: every buffer is host memory).",
    },
    Param {
        name: "HCOMM_CUDA_POLL",
        default: "auto",
        help: "Microseconds a rank polls a finished-or-not CUDA event (cuEventQuery) before it sleeps in the driver (blocking-sync event); auto: 200, and 0 when ranks outnumber cores.",
    },
    Param {
        name: "HCOMM_CUDA_PHASES",
        default: "0",
        help: "Diagnostic: 1 makes each rank print, every 50 device-buffer allreduces of one size on the CUDA IPC path, the mean time of each phase (exchange, kernel, waits, barriers) on stderr.",
    },
    Param {
        name: "HCOMM_LISTEN_ANY",
        default: "0",
        help: "1: listening sockets bind to every interface (0.0.0.0 / ::) instead of the chosen interface's address only (peers are still told that address).",
    },
];

fn raw(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Parses a byte size: `4096`, `64K`, `1M`, `2G` (binary multiples).
pub fn parse_bytes(s: &str) -> Option<usize> {
    let s = s.trim();
    let (num, mult) = match s.char_indices().last()? {
        (i, 'k' | 'K') => (&s[..i], 1usize << 10),
        (i, 'm' | 'M') => (&s[..i], 1 << 20),
        (i, 'g' | 'G') => (&s[..i], 1 << 30),
        _ => (s, 1),
    };
    num.trim().parse::<usize>().ok()?.checked_mul(mult)
}

fn logged(name: &str, value: Option<String>) -> Option<String> {
    if let Some(v) = &value {
        crate::info!("{name}={v}");
    }
    value
}

macro_rules! string_param {
    ($fn:ident, $name:literal) => {
        #[doc = concat!("`", $name, "` (see [`ALL`]).")]
        pub fn $fn() -> Option<String> {
            static V: OnceLock<Option<String>> = OnceLock::new();
            V.get_or_init(|| raw($name)).clone()
        }
    };
}

macro_rules! bytes_param {
    ($fn:ident, $name:literal, $default:expr) => {
        #[doc = concat!("`", $name, "` (see [`ALL`]). `None` means auto where the default is auto.")]
        pub fn $fn() -> Option<usize> {
            static V: OnceLock<Option<usize>> = OnceLock::new();
            *V.get_or_init(|| match logged($name, raw($name)) {
                // Spelling out a default of "auto" is the default.
                Some(s) if s.trim().eq_ignore_ascii_case("auto") => $default,
                Some(s) => match parse_bytes(&s) {
                    Some(v) => Some(v),
                    None => {
                        crate::warn!("ignoring {}={:?}: not a byte size", $name, s);
                        $default
                    }
                },
                None => $default,
            })
        }
    };
}

string_param!(debug, "HCOMM_DEBUG");
string_param!(profile, "HCOMM_PROFILE");

/// `HCOMM_CUDA` (see [`ALL`]), logged when set; parsed by `crate::cuda::mode`.
pub fn cuda() -> Option<String> {
    logged("HCOMM_CUDA", raw("HCOMM_CUDA"))
}
bytes_param!(chunk_size, "HCOMM_CHUNK_SIZE", None);
bytes_param!(small_bytes, "HCOMM_SMALL_BYTES", Some(16 << 10));
bytes_param!(shm_slots, "HCOMM_SHM_SLOTS", Some(8));
bytes_param!(shm_slot_bytes, "HCOMM_SHM_SLOT_BYTES", Some(128 << 10));
bytes_param!(shm_stage, "HCOMM_SHM_STAGE", None);
bytes_param!(cma_bytes, "HCOMM_CMA_BYTES", None);
bytes_param!(scratch_cache, "HCOMM_SCRATCH_CACHE", Some(256 << 20));
bytes_param!(spin, "HCOMM_SPIN", None);
bytes_param!(yield_us, "HCOMM_YIELD", None);
bytes_param!(cuda_poll_us, "HCOMM_CUDA_POLL", None);
string_param!(bind, "HCOMM_BIND");

/// `HCOMM_PMIX_LIB`, logged when set.
pub fn pmix_lib() -> Option<String> {
    static V: OnceLock<Option<String>> = OnceLock::new();
    V.get_or_init(|| logged("HCOMM_PMIX_LIB", raw("HCOMM_PMIX_LIB")))
        .clone()
}
bytes_param!(bootstrap_timeout_secs, "HCOMM_BOOTSTRAP_TIMEOUT", Some(60));

/// Parses seconds (fractions allowed); `None` when not a finite non-negative number.
pub fn parse_secs(s: &str) -> Option<std::time::Duration> {
    let v: f64 = s.trim().parse().ok()?;
    (v.is_finite() && v >= 0.0).then(|| std::time::Duration::from_secs_f64(v.min(1e9)))
}

macro_rules! secs_param {
    ($fn:ident, $name:literal, $default:expr) => {
        #[doc = concat!("`", $name, "` (see [`ALL`]); `None` when 0 (off).")]
        pub fn $fn() -> Option<std::time::Duration> {
            static V: OnceLock<Option<std::time::Duration>> = OnceLock::new();
            *V.get_or_init(|| {
                let d = match logged($name, raw($name)) {
                    Some(s) => parse_secs(&s).unwrap_or_else(|| {
                        crate::warn!("ignoring {}={:?}: not a number of seconds", $name, s);
                        $default
                    }),
                    None => $default,
                };
                (!d.is_zero()).then_some(d)
            })
        }
    };
}

secs_param!(
    warn_after_secs,
    "HCOMM_WARN_AFTER",
    std::time::Duration::from_secs(60)
);
secs_param!(timeout_secs, "HCOMM_TIMEOUT", std::time::Duration::ZERO);
bytes_param!(sockets_per_peer, "HCOMM_SOCKETS_PER_PEER", Some(1));

/// `HCOMM_TRANSPORT`, logged when set.
pub fn transport() -> Option<String> {
    static V: OnceLock<Option<String>> = OnceLock::new();
    V.get_or_init(|| logged("HCOMM_TRANSPORT", raw("HCOMM_TRANSPORT")))
        .clone()
}

/// `HCOMM_SOCKET_IFNAME`, logged when set.
pub fn socket_ifname() -> Option<String> {
    static V: OnceLock<Option<String>> = OnceLock::new();
    V.get_or_init(|| logged("HCOMM_SOCKET_IFNAME", raw("HCOMM_SOCKET_IFNAME")))
        .clone()
}

/// Parses a boolean value: `1`, `true`, `yes`, `on` (any case) are true.
pub fn truthy(v: &str) -> bool {
    matches!(
        v.trim().to_ascii_lowercase().as_str(),
        "1" | "true" | "yes" | "on"
    )
}

macro_rules! flag_param {
    ($fn:ident, $name:literal) => {
        #[doc = concat!("`", $name, "` (see [`ALL`]).")]
        pub fn $fn() -> bool {
            static V: OnceLock<bool> = OnceLock::new();
            *V.get_or_init(|| logged($name, raw($name)).is_some_and(|v| truthy(&v)))
        }
    };
}

flag_param!(disable, "HCOMM_DISABLE");
flag_param!(stats, "HCOMM_STATS");
flag_param!(listen_any, "HCOMM_LISTEN_ANY");

/// `HCOMM_CMA`: which messages within a host may go as a single copy (`process_vm_readv`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmaMode {
    /// `0`: none; the link is not even probed.
    Off,
    /// `auto` (the default): as [`CmaMode::Copies`] where a measurement at setup finds one
    /// kernel copy faster than two user copies on this machine
    /// ([`crate::transport::copy_rate`]), else none.
    Auto,
    /// `copies`: the large chunks of copy-only rings (allgather, allgatherv) and a 2-rank
    /// bcast of 128–512 KiB, where one kernel copy replaces two user copies on a core that is
    /// busy either way, without measuring first.
    Copies,
    /// `1`: every message of at least `HCOMM_CMA_BYTES`.
    All,
}

/// See [`CmaMode`]; an unknown value keeps the default, with a warning.
pub fn cma() -> CmaMode {
    static V: OnceLock<CmaMode> = OnceLock::new();
    *V.get_or_init(|| match logged("HCOMM_CMA", raw("HCOMM_CMA")) {
        None => CmaMode::Auto,
        Some(v) => match v.trim().to_ascii_lowercase().as_str() {
            "auto" => CmaMode::Auto,
            "copies" => CmaMode::Copies,
            "all" => CmaMode::All,
            "0" | "false" | "no" | "off" => CmaMode::Off,
            x if truthy(x) => CmaMode::All,
            x => {
                crate::warn!("ignoring HCOMM_CMA={x:?}: use auto, copies, 1 (all) or 0");
                CmaMode::Auto
            }
        },
    })
}

/// `HCOMM_PROGRESS`: `true` for a progress thread (the default), `false` for `caller`.
/// An unknown value keeps the default, with a warning.
pub fn progress_thread() -> bool {
    static V: OnceLock<bool> = OnceLock::new();
    *V.get_or_init(|| match logged("HCOMM_PROGRESS", raw("HCOMM_PROGRESS")) {
        None => true,
        Some(v) => match v.trim().to_ascii_lowercase().as_str() {
            "thread" => true,
            "caller" => false,
            other => {
                crate::warn!("HCOMM_PROGRESS={other} is not thread or caller; using thread");
                true
            }
        },
    })
}

/// `HCOMM_ALGO`, logged when set.
pub fn algo() -> Option<String> {
    static V: OnceLock<Option<String>> = OnceLock::new();
    V.get_or_init(|| logged("HCOMM_ALGO", raw("HCOMM_ALGO")))
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes() {
        assert_eq!(parse_bytes("4096"), Some(4096));
        assert_eq!(parse_bytes("64K"), Some(65536));
        assert_eq!(parse_bytes("1m"), Some(1 << 20));
        assert_eq!(parse_bytes(" 2G "), Some(2 << 30));
        assert_eq!(parse_bytes("x"), None);
        assert_eq!(parse_bytes(""), None);
        assert_eq!(parse_bytes("K"), None);
    }

    #[test]
    fn every_param_is_documented_once() {
        let mut names: Vec<_> = ALL.iter().map(|p| p.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
        assert!(ALL
            .iter()
            .all(|p| p.name.starts_with("HCOMM_") && !p.help.is_empty()));
    }
}
