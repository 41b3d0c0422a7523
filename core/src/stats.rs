//! `HCOMM_STATS=1`: per-collective counts of calls hcomm handled and calls the preload
//! interposer forwarded to the host MPI, and payload bytes hcomm sent per transport (counted in
//! the endpoint), printed as one `hcomm-stats` line per rank at `MPI_Finalize` by both
//! libraries. The seven collectives' entry points in [`crate::abi::api`] count "handled" (a
//! call hcomm carried out, whether it succeeded or raised an error); only the interposer
//! counts "forwarded". Relaxed atomics: the counts are read once, after the program's last
//! collective.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

/// The collectives the interposer intercepts; a `_c` call counts under its base name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coll {
    Allreduce,
    Bcast,
    Allgather,
    ReduceScatter,
    ReduceScatterBlock,
    Reduce,
    Barrier,
}

impl Coll {
    pub const ALL: [Coll; 7] = [
        Coll::Allreduce,
        Coll::Bcast,
        Coll::Allgather,
        Coll::ReduceScatter,
        Coll::ReduceScatterBlock,
        Coll::Reduce,
        Coll::Barrier,
    ];

    /// The name used in the `hcomm-stats` keys.
    pub fn name(self) -> &'static str {
        match self {
            Coll::Allreduce => "allreduce",
            Coll::Bcast => "bcast",
            Coll::Allgather => "allgather",
            Coll::ReduceScatter => "reduce_scatter",
            Coll::ReduceScatterBlock => "reduce_scatter_block",
            Coll::Reduce => "reduce",
            Coll::Barrier => "barrier",
        }
    }
}

/// Calls hcomm carried out itself.
static HANDLED: [AtomicU64; 7] = [const { AtomicU64::new(0) }; 7];
static FORWARDED: [AtomicU64; 7] = [const { AtomicU64::new(0) }; 7];

/// Counts a call hcomm carried out itself.
#[inline]
pub fn handled(c: Coll) {
    HANDLED[c as usize].fetch_add(1, Ordering::Relaxed);
}

/// Counts a call that went to the host's `PMPI_X`.
#[inline]
pub fn forwarded(c: Coll) {
    FORWARDED[c as usize].fetch_add(1, Ordering::Relaxed);
}

/// The counters as (collective, handled, forwarded).
fn snapshot() -> [(Coll, u64, u64); 7] {
    Coll::ALL.map(|c| {
        (
            c,
            HANDLED[c as usize].load(Ordering::Relaxed),
            FORWARDED[c as usize].load(Ordering::Relaxed),
        )
    })
}

/// Formats the stats line (no trailing newline). `rank` is -1 when unknown.
pub fn format_line(rank: i32, counts: &[(Coll, u64, u64)], shm: u64, tcp: u64) -> String {
    let mut s = format!("hcomm-stats rank={rank}");
    for (c, h, f) in counts {
        let _ = write!(s, " {0}_handled={h} {0}_forwarded={f}", c.name());
    }
    let _ = write!(s, " bytes_shm={shm} bytes_tcp={tcp}");
    s
}

/// This process's stats line, from the live counters.
pub fn line(rank: i32) -> String {
    format_line(
        rank,
        &snapshot(),
        crate::transport::BYTES_SHM.load(Ordering::Relaxed),
        crate::transport::BYTES_TCP.load(Ordering::Relaxed),
    )
}

/// With `HCOMM_STATS=1`: writes this process's line to stderr (one write, so the lines of
/// several ranks do not interleave). `rank` is -1 when unknown.
pub fn print_if_enabled(rank: i32) {
    if !crate::param::stats() {
        return;
    }
    use std::io::Write;
    let line = line(rank) + "\n";
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_has_every_key_once() {
        let counts = Coll::ALL.map(|c| (c, 0, c as u64 + 1));
        let l = format_line(2, &counts, 5, 0);
        assert!(l.starts_with("hcomm-stats rank=2 allreduce_handled=0 allreduce_forwarded=1 "));
        assert!(l.contains(" reduce_scatter_forwarded=4 reduce_scatter_block_handled=0 "));
        assert!(l.ends_with(" barrier_forwarded=7 bytes_shm=5 bytes_tcp=0"));
        let keys: Vec<&str> = l
            .split_whitespace()
            .skip(1)
            .map(|kv| kv.split('=').next().unwrap())
            .collect();
        assert_eq!(keys.len(), 1 + 2 * 7 + 2);
        let mut dedup = keys.clone();
        dedup.sort();
        dedup.dedup();
        assert_eq!(dedup.len(), keys.len());
    }

    #[test]
    fn counters_count() {
        let before = FORWARDED[Coll::Barrier as usize].load(Ordering::Relaxed);
        forwarded(Coll::Barrier);
        assert_eq!(
            FORWARDED[Coll::Barrier as usize].load(Ordering::Relaxed),
            before + 1
        );
    }
}
