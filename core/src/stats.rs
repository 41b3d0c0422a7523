//! `HCOMM_STATS=1`: per-collective counts of calls hcomm handled and calls the preload
//! interposer forwarded to the host MPI, and payload bytes hcomm sent per transport (counted in
//! the endpoint), printed as one `hcomm-stats` line per rank at `MPI_Finalize` by both
//! libraries. The entry points in [`crate::abi::api`] of the eight collectives the interposer
//! intercepts (the seven of the design brief and `MPI_Allgatherv`) count "handled" (a call
//! hcomm carried out, whether it succeeded or raised an error); only the interposer counts
//! "forwarded". Relaxed atomics: the counts are read once, after the program's last
//! collective.
//!
//! The nonblocking forms of the eight (`MPI_Iallreduce`, ...) are counted apart, under their
//! own names (`iallreduce_handled`, ...; one count per starting call), and so are they in the
//! profile: their time runs from the starting call to the `MPI_Wait`/`MPI_Test` that completes
//! them — computation overlapped with them included — which is not comparable with a blocking
//! call's time, so mixing the two would blur both rows. They have no `_forwarded` count: the
//! interposer does not intercept nonblocking calls (under preload the host MPI does them and
//! hcomm never sees them, so their `_handled` stays 0 there).

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
    /// `MPI_Allgatherv`: last, so the keys of the first seven keep their places in the line.
    Allgatherv,
}

impl Coll {
    pub const ALL: [Coll; 8] = [
        Coll::Allreduce,
        Coll::Bcast,
        Coll::Allgather,
        Coll::ReduceScatter,
        Coll::ReduceScatterBlock,
        Coll::Reduce,
        Coll::Barrier,
        Coll::Allgatherv,
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
            Coll::Allgatherv => "allgatherv",
        }
    }

    /// The name of the nonblocking form (`MPI_Iallreduce`: `iallreduce`) in the keys.
    pub fn nb_name(self) -> &'static str {
        match self {
            Coll::Allreduce => "iallreduce",
            Coll::Bcast => "ibcast",
            Coll::Allgather => "iallgather",
            Coll::ReduceScatter => "ireduce_scatter",
            Coll::ReduceScatterBlock => "ireduce_scatter_block",
            Coll::Reduce => "ireduce",
            Coll::Barrier => "ibarrier",
            Coll::Allgatherv => "iallgatherv",
        }
    }
}

/// One of the eight collectives' entry points: counts the call as handled and, with
/// `HCOMM_PROFILE`, times it and records the algorithm and size the collective noted.
#[inline]
pub fn call(c: Coll, f: impl FnOnce() -> std::ffi::c_int) -> std::ffi::c_int {
    handled(c);
    if !profile::enabled() {
        return f();
    }
    profile::timed(c, f)
}

/// Called by every collective once it has chosen its algorithm (`Comm::note_algo`).
#[inline]
pub fn note(algo: crate::coll::Algo, bytes: usize, size: usize) {
    if profile::enabled() {
        profile::note(algo, bytes, size);
    }
}

/// Calls hcomm carried out itself.
static HANDLED: [AtomicU64; Coll::ALL.len()] = [const { AtomicU64::new(0) }; Coll::ALL.len()];
static FORWARDED: [AtomicU64; Coll::ALL.len()] = [const { AtomicU64::new(0) }; Coll::ALL.len()];
/// Nonblocking calls hcomm carried out itself (`MPI_Iallreduce` under `Coll::Allreduce`).
static HANDLED_NB: [AtomicU64; Coll::ALL.len()] = [const { AtomicU64::new(0) }; Coll::ALL.len()];

/// Counts a call hcomm carried out itself.
#[inline]
pub fn handled(c: Coll) {
    HANDLED[c as usize].fetch_add(1, Ordering::Relaxed);
}

/// Counts a nonblocking call (`MPI_Iallreduce` for `Coll::Allreduce`) hcomm carried out.
#[inline]
pub fn handled_nb(c: Coll) {
    HANDLED_NB[c as usize].fetch_add(1, Ordering::Relaxed);
}

/// Counts a call that went to the host's `PMPI_X`.
#[inline]
pub fn forwarded(c: Coll) {
    FORWARDED[c as usize].fetch_add(1, Ordering::Relaxed);
}

/// The counters as (collective, handled, forwarded).
fn snapshot() -> [(Coll, u64, u64); Coll::ALL.len()] {
    Coll::ALL.map(|c| {
        (
            c,
            HANDLED[c as usize].load(Ordering::Relaxed),
            FORWARDED[c as usize].load(Ordering::Relaxed),
        )
    })
}

/// The nonblocking counters as (collective, handled).
fn snapshot_nb() -> [(Coll, u64); Coll::ALL.len()] {
    Coll::ALL.map(|c| (c, HANDLED_NB[c as usize].load(Ordering::Relaxed)))
}

/// Formats the stats line (no trailing newline). `rank` is -1 when unknown. The nonblocking
/// counts (`nb`) come last, so parsers of the older line keep working.
pub fn format_line(
    rank: i32,
    counts: &[(Coll, u64, u64)],
    nb: &[(Coll, u64)],
    shm: u64,
    tcp: u64,
    stage: (u64, u64),
) -> String {
    let mut s = format!("hcomm-stats rank={rank}");
    for (c, h, f) in counts {
        let _ = write!(s, " {0}_handled={h} {0}_forwarded={f}", c.name());
    }
    let _ = write!(s, " bytes_shm={shm} bytes_tcp={tcp}");
    for (c, h) in nb {
        let _ = write!(s, " {}_handled={h}", c.nb_name());
    }
    let _ = write!(s, " bytes_staged={} stage_full={}", stage.0, stage.1);
    s
}

/// This process's stats line, from the live counters.
pub fn line(rank: i32) -> String {
    format_line(
        rank,
        &snapshot(),
        &snapshot_nb(),
        crate::transport::BYTES_SHM.load(Ordering::Relaxed),
        crate::transport::BYTES_TCP.load(Ordering::Relaxed),
        (
            crate::transport::BYTES_STAGED.load(Ordering::Relaxed),
            crate::transport::STAGE_FULL.load(Ordering::Relaxed),
        ),
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

/// `HCOMM_PROFILE`: per collective, calls, bytes, time, bus bytes and the algorithms taken.
///
/// Bytes are the message size as nccl-tests counts it (allreduce/bcast/reduce: the buffer;
/// allgather and reduce_scatter: the whole gathered / reduced buffer), as the collective notes
/// it when it picks its algorithm. Bus bytes use nccl-tests' factors (allreduce 2(n-1)/n,
/// allgather and reduce_scatter (n-1)/n, others 1), so busbw = bus bytes / time. Timing wraps
/// the whole entry point (argument checks included); with the variable unset nothing is timed.
///
/// Nonblocking collectives have rows of their own (`iallreduce`, ...; see the module above):
/// a call counts when the `MPI_Wait`/`MPI_Test` (any of the family) that completes its request
/// returns, its time runs from the starting call to then (the request carries a [`Pending`]),
/// so their busbw is what the application got, overlap included — a lower bound of the
/// transfer's own speed. A request never completed by a wait or test (freed, or left at
/// `MPI_Finalize`) is not in the profile.
pub mod profile {
    use std::cell::Cell;
    use std::fmt::Write;
    use std::sync::OnceLock;
    use std::time::Instant;

    use parking_lot::Mutex;

    use super::Coll;
    use crate::coll::Algo;

    /// Where the summary goes.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub enum Sink {
        Stderr,
        /// A path; `%r` is replaced by the rank, else `.<rank>` goes before the extension.
        Json(String),
    }

    pub fn sink() -> Option<&'static Sink> {
        static S: OnceLock<Option<Sink>> = OnceLock::new();
        S.get_or_init(|| {
            crate::param::profile().and_then(|v| match v.trim() {
                "0" | "" => None,
                "1" | "stderr" => Some(Sink::Stderr),
                p => Some(Sink::Json(p.to_string())),
            })
        })
        .as_ref()
    }

    #[inline]
    pub fn enabled() -> bool {
        sink().is_some()
    }

    /// The per-rank file for a `Json` sink.
    pub fn rank_path(path: &str, rank: i32) -> String {
        if path.contains("%r") {
            return path.replace("%r", &rank.to_string());
        }
        match path.rsplit_once('.') {
            Some((stem, ext)) if !ext.contains('/') && !stem.is_empty() => {
                format!("{stem}.{rank}.{ext}")
            }
            _ => format!("{path}.{rank}"),
        }
    }

    #[derive(Clone, Default)]
    pub struct Entry {
        pub calls: u64,
        pub bytes: u64,
        pub seconds: f64,
        pub bus_bytes: f64,
        /// (algorithm, calls), in order of first use.
        pub algos: Vec<(String, u64)>,
    }

    /// A row of the profile: a collective, blocking or in its nonblocking form.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Row {
        pub coll: Coll,
        pub nonblocking: bool,
    }

    impl Row {
        /// Every row, blocking ones first.
        pub fn all() -> impl Iterator<Item = Row> {
            [false, true].into_iter().flat_map(|nonblocking| {
                Coll::ALL
                    .into_iter()
                    .map(move |coll| Row { coll, nonblocking })
            })
        }

        pub fn name(self) -> &'static str {
            if self.nonblocking {
                self.coll.nb_name()
            } else {
                self.coll.name()
            }
        }

        fn index(self) -> usize {
            self.coll as usize + if self.nonblocking { Coll::ALL.len() } else { 0 }
        }
    }

    static TABLE: Mutex<Option<Vec<Entry>>> = Mutex::new(None);

    thread_local! {
        /// What the running collective noted: (algorithm, bytes, communicator size).
        static LAST: Cell<Option<(Algo, usize, usize)>> = const { Cell::new(None) };
    }

    pub fn note(algo: Algo, bytes: usize, size: usize) {
        LAST.with(|l| l.set(Some((algo, bytes, size))));
    }

    fn bus_factor(c: Coll, n: usize) -> f64 {
        let n = n.max(1) as f64;
        match c {
            Coll::Allreduce => 2.0 * (n - 1.0) / n,
            // The allgatherv's blocks may differ: (n - 1) / n is exact for even ones.
            Coll::Allgather | Coll::Allgatherv | Coll::ReduceScatter | Coll::ReduceScatterBlock => {
                (n - 1.0) / n
            }
            _ => 1.0,
        }
    }

    pub fn timed(c: Coll, f: impl FnOnce() -> std::ffi::c_int) -> std::ffi::c_int {
        LAST.with(|l| l.set(None));
        let t = Instant::now();
        let rc = f();
        let secs = t.elapsed().as_secs_f64();
        let last = LAST.with(|l| l.take());
        let row = Row {
            coll: c,
            nonblocking: false,
        };
        record(row, secs, last);
        rc
    }

    /// A nonblocking collective being profiled, kept by its request from the starting call
    /// to the wait or test that completes it.
    #[derive(Debug)]
    pub struct Pending {
        coll: Coll,
        start: Instant,
        /// What its schedule's builder noted: (algorithm, bytes, communicator size).
        noted: Option<(Algo, usize, usize)>,
    }

    /// A nonblocking collective starts (before its schedule is built): `None` unless
    /// profiling.
    pub fn begin(c: Coll) -> Option<Pending> {
        if !enabled() {
            return None;
        }
        LAST.with(|l| l.set(None));
        Some(Pending {
            coll: c,
            start: Instant::now(),
            noted: None,
        })
    }

    impl Pending {
        /// Its schedule is built (on this thread): takes what the builder noted.
        pub fn built(mut self) -> Pending {
            self.noted = LAST.with(|l| l.take());
            self
        }
    }

    /// A wait or test completed the request of `p`.
    pub fn completed(p: Pending) {
        let row = Row {
            coll: p.coll,
            nonblocking: true,
        };
        record(row, p.start.elapsed().as_secs_f64(), p.noted);
    }

    fn record(row: Row, secs: f64, noted: Option<(Algo, usize, usize)>) {
        let mut g = TABLE.lock();
        let n = 2 * Coll::ALL.len();
        let e = &mut g.get_or_insert_with(|| vec![Entry::default(); n])[row.index()];
        e.calls += 1;
        e.seconds += secs;
        if let Some((algo, bytes, size)) = noted {
            e.bytes += bytes as u64;
            e.bus_bytes += bytes as f64 * bus_factor(row.coll, size);
            let name = format!("{algo:?}").to_lowercase();
            match e.algos.iter_mut().find(|a| a.0 == name) {
                Some(a) => a.1 += 1,
                None => e.algos.push((name, 1)),
            }
        }
    }

    /// A copy of the table (all zero when nothing was recorded).
    pub fn snapshot() -> Vec<(Row, Entry)> {
        let g = TABLE.lock();
        Row::all()
            .map(|r| {
                let e = g.as_ref().map(|t| t[r.index()].clone());
                (r, e.unwrap_or_default())
            })
            .collect()
    }

    fn gbps(bytes: f64, secs: f64) -> f64 {
        if secs > 0.0 {
            bytes / secs / 1e9
        } else {
            0.0
        }
    }

    fn algos_text(e: &Entry) -> String {
        let v: Vec<String> = e.algos.iter().map(|(a, n)| format!("{a}:{n}")).collect();
        if v.is_empty() {
            "-".into()
        } else {
            v.join(",")
        }
    }

    /// The human-readable summary of one rank (lines start with `hcomm-profile`).
    pub fn text(rank: i32, rows: &[(Row, Entry)]) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "hcomm-profile rank={rank}: {:<21} {:>9} {:>14} {:>10} {:>10} {:>9}  algorithms",
            "collective", "calls", "bytes", "time(s)", "mean(us)", "busbw"
        );
        for (c, e) in rows.iter().filter(|(_, e)| e.calls > 0) {
            let _ = writeln!(
                s,
                "hcomm-profile rank={rank}: {:<21} {:>9} {:>14} {:>10.4} {:>10.2} {:>9.2}  {}",
                c.name(),
                e.calls,
                e.bytes,
                e.seconds,
                e.seconds * 1e6 / e.calls as f64,
                gbps(e.bus_bytes, e.seconds),
                algos_text(e)
            );
        }
        s
    }

    /// The JSON document of one rank.
    pub fn json(rank: i32, rows: &[(Row, Entry)]) -> String {
        let mut s = format!("{{\"hcomm_profile\": 1, \"rank\": {rank}, \"collectives\": [");
        let mut first = true;
        for (c, e) in rows.iter().filter(|(_, e)| e.calls > 0) {
            let algos: Vec<String> = e
                .algos
                .iter()
                .map(|(a, n)| format!("{{\"name\": \"{a}\", \"calls\": {n}}}"))
                .collect();
            let _ = write!(
                s,
                "{}\n  {{\"name\": \"{}\", \"calls\": {}, \"bytes\": {}, \"seconds\": {:e}, \"bus_bytes\": {:e}, \"algorithms\": [{}]}}",
                if first { "" } else { "," },
                c.name(),
                e.calls,
                e.bytes,
                e.seconds,
                e.bus_bytes,
                algos.join(", ")
            );
            first = false;
        }
        s.push_str("\n]}\n");
        s
    }

    /// At `MPI_Finalize`: the summary to stderr, or this rank's JSON file.
    pub fn finish(rank: i32) {
        let Some(sink) = sink() else { return };
        let rows = snapshot();
        match sink {
            Sink::Stderr => {
                use std::io::Write;
                let _ = std::io::stderr()
                    .lock()
                    .write_all(text(rank, &rows).as_bytes());
            }
            Sink::Json(path) => {
                let file = rank_path(path, rank);
                if let Err(e) = std::fs::write(&file, json(rank, &rows)) {
                    crate::warn!("HCOMM_PROFILE: cannot write {file}: {e}");
                }
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn rank_paths() {
            assert_eq!(rank_path("prof.json", 3), "prof.3.json");
            assert_eq!(rank_path("/tmp/p-%r.json", 1), "/tmp/p-1.json");
            assert_eq!(rank_path("/tmp/a.b/prof", 0), "/tmp/a.b/prof.0");
            assert_eq!(rank_path("prof", 2), "prof.2");
        }

        #[test]
        fn busbw_factors_follow_nccl_tests() {
            assert_eq!(bus_factor(Coll::Allreduce, 4), 1.5);
            assert_eq!(bus_factor(Coll::Allgather, 4), 0.75);
            assert_eq!(bus_factor(Coll::Bcast, 4), 1.0);
        }

        #[test]
        fn json_lists_used_collectives() {
            let mut rows: Vec<(Row, Entry)> = Row::all().map(|r| (r, Entry::default())).collect();
            rows[0].1 = Entry {
                calls: 2,
                bytes: 64,
                seconds: 1e-3,
                bus_bytes: 64.0,
                algos: vec![("ring".into(), 2)],
            };
            rows[Coll::ALL.len() + Coll::Bcast as usize].1 = Entry {
                calls: 1,
                bytes: 8,
                seconds: 1e-3,
                bus_bytes: 8.0,
                algos: vec![("pipeline".into(), 1)],
            };
            let j = json(1, &rows);
            assert!(j.starts_with("{\"hcomm_profile\": 1, \"rank\": 1, "));
            assert!(j.contains("\"name\": \"allreduce\", \"calls\": 2, \"bytes\": 64"));
            assert!(j.contains("[{\"name\": \"ring\", \"calls\": 2}]"));
            assert!(j.contains("\"name\": \"ibcast\", \"calls\": 1, \"bytes\": 8"));
            assert!(!j.contains("\"bcast\""));
            assert!(!j.contains("iallreduce"));
        }

        #[test]
        fn rows_name_blocking_then_nonblocking_forms() {
            let names: Vec<&str> = Row::all().map(Row::name).collect();
            assert_eq!(names.len(), 16);
            assert_eq!(names[0], "allreduce");
            assert_eq!(names[7], "allgatherv");
            assert_eq!(names[8], "iallreduce");
            assert_eq!(names[14], "ibarrier");
            assert_eq!(names[15], "iallgatherv");
            let idx: Vec<usize> = Row::all().map(Row::index).collect();
            assert_eq!(idx, (0..16).collect::<Vec<_>>());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_has_every_key_once() {
        let counts = Coll::ALL.map(|c| (c, 0, c as u64 + 1));
        let nb = Coll::ALL.map(|c| (c, 10 + c as u64));
        let l = format_line(2, &counts, &nb, 5, 0, (7, 1));
        assert!(l.starts_with("hcomm-stats rank=2 allreduce_handled=0 allreduce_forwarded=1 "));
        assert!(l.contains(" reduce_scatter_forwarded=4 reduce_scatter_block_handled=0 "));
        assert!(l.contains(" barrier_forwarded=7 allgatherv_handled=0 allgatherv_forwarded=8 "));
        assert!(
            l.contains(" allgatherv_forwarded=8 bytes_shm=5 bytes_tcp=0 iallreduce_handled=10 ")
        );
        assert!(l.contains(" ireduce_scatter_handled=13 ireduce_scatter_block_handled=14 "));
        assert!(l.ends_with(
            " ireduce_handled=15 ibarrier_handled=16 iallgatherv_handled=17 bytes_staged=7 stage_full=1"
        ));
        let keys: Vec<&str> = l
            .split_whitespace()
            .skip(1)
            .map(|kv| kv.split('=').next().unwrap())
            .collect();
        assert_eq!(keys.len(), 1 + 2 * 8 + 2 + 8 + 2);
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
