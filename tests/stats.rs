//! `HCOMM_STATS=1` in standalone mode: `examples/allreduce_demo.c`, built against
//! `include/mpi.h` and the `libhcomm.so` next to the hcomm binary under test, run on 2 ranks
//! with `hcomm run`; each rank prints exactly one `hcomm-stats` line at `MPI_Finalize`, with
//! `allreduce_handled` above zero, every `_forwarded` zero (nothing is forwarded without a host
//! MPI) and bytes moved over shared memory. Without the variable, no line.
//!
//! Nonblocking collectives: `tests/stats/nb_calls.c` starts a fixed number of each (and a few
//! blocking ones) and completes them through every wait/test call; the stats line and the
//! profile must show exactly those numbers, the nonblocking ones under their own names.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};

const SOURCE: &str = env!("CARGO_MANIFEST_DIR");

fn hcomm_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_hcomm"))
}

/// Builds the demo into a fresh directory; returns its path.
fn build_demo() -> PathBuf {
    build("examples/allreduce_demo.c", "allreduce_demo")
}

/// Builds `src` (relative to the repository) into a fresh directory as `name`.
fn build(src: &str, name: &str) -> PathBuf {
    let lib_dir = hcomm_bin().parent().expect("target dir").to_path_buf();
    assert!(
        lib_dir.join("libhcomm.so").is_file(),
        "libhcomm.so is missing next to {}: run `cargo build --release` with the same \
         CARGO_TARGET_DIR first",
        hcomm_bin().display()
    );
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("hcomm-stats-test-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let exe = dir.join(name);
    let out = Command::new("cc")
        .args(["-O1", "-I"])
        .arg(format!("{SOURCE}/include"))
        .arg(format!("{SOURCE}/{src}"))
        .arg("-o")
        .arg(&exe)
        .arg("-L")
        .arg(&lib_dir)
        .arg("-lhcomm")
        .arg(format!("-Wl,-rpath,{}", lib_dir.display()))
        .output()
        .expect("start cc");
    assert!(
        out.status.success(),
        "cc failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// Runs the demo on 2 ranks with `HCOMM_STATS` set to `stats`; returns stderr.
fn run(exe: &PathBuf, stats: &str) -> String {
    let out = Command::new(hcomm_bin())
        .args(["run", "-n", "2"])
        .arg(exe)
        .env("HCOMM_STATS", stats)
        .stdin(Stdio::null())
        .output()
        .expect("start hcomm run");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "demo failed ({}):\n{}\n{err}",
        out.status,
        String::from_utf8_lossy(&out.stdout)
    );
    err
}

#[test]
fn standalone_prints_one_stats_line_per_rank() {
    let exe = build_demo();
    let err = run(&exe, "1");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("hcomm-stats "))
        .collect();
    assert_eq!(lines.len(), 2, "one line per rank expected:\n{err}");
    let mut ranks = Vec::new();
    for l in lines {
        let kv: BTreeMap<&str, u64> = l
            .split_whitespace()
            .skip(1)
            .map(|f| {
                let (k, v) = f.split_once('=').expect("key=value");
                (k, v.parse().expect("number"))
            })
            .collect();
        ranks.push(kv["rank"]);
        assert!(kv["allreduce_handled"] > 0, "{l}");
        assert!(kv["bytes_shm"] > 0, "{l}");
        for name in [
            "allreduce",
            "bcast",
            "allgather",
            "reduce_scatter",
            "reduce_scatter_block",
            "reduce",
            "barrier",
        ] {
            assert!(kv.contains_key(format!("{name}_handled").as_str()), "{l}");
            assert_eq!(kv[format!("{name}_forwarded").as_str()], 0, "{l}");
        }
    }
    ranks.sort();
    assert_eq!(ranks, [0, 1]);

    let quiet = run(&exe, "0");
    assert!(!quiet.contains("hcomm-stats"), "{quiet}");
    let _ = std::fs::remove_dir_all(exe.parent().unwrap());
}

/// `HCOMM_PROFILE=1` prints a per-collective summary per rank; `HCOMM_PROFILE=path` writes one
/// JSON file per rank, which `hcomm profile path` merges.
#[test]
fn profile_to_stderr_and_to_files_merged_by_hcomm_profile() {
    let exe = build_demo();
    let dir = exe.parent().unwrap().to_path_buf();
    let run_with = |value: &str| {
        let out = Command::new(hcomm_bin())
            .args(["run", "-n", "2"])
            .arg(&exe)
            .env("HCOMM_PROFILE", value)
            .stdin(Stdio::null())
            .output()
            .expect("start hcomm run");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = run_with("1");
    for rank in 0..2 {
        let row = err
            .lines()
            .find(|l| l.starts_with(&format!("hcomm-profile rank={rank}: allreduce ")))
            .unwrap_or_else(|| panic!("no allreduce row for rank {rank}:\n{err}"));
        let calls: u64 = row.split_whitespace().nth(3).unwrap().parse().unwrap();
        assert!(calls > 0, "{row}");
        assert!(row.contains("oneshot:") || row.contains("ring:"), "{row}");
    }

    let base = dir.join("prof.json");
    run_with(base.to_str().unwrap());
    for rank in 0..2 {
        let f = dir.join(format!("prof.{rank}.json"));
        let text = std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert!(text.contains(&format!("\"rank\": {rank}")), "{text}");
    }
    let merged = Command::new(hcomm_bin())
        .arg("profile")
        .arg(&base)
        .output()
        .expect("start hcomm profile");
    let text = String::from_utf8_lossy(&merged.stdout);
    assert!(merged.status.success(), "{merged:?}");
    assert!(text.contains("2 rank(s) from 2 file(s)"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("allreduce ")), "{text}");
    assert!(text.lines().any(|l| l.starts_with("barrier ")), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs `exe` on `n` ranks with `env`; returns stderr (the run must succeed).
fn run_env(exe: &PathBuf, n: usize, env: &[(&str, &str)]) -> String {
    let out = Command::new(hcomm_bin())
        .args(["run", "-n", &n.to_string()])
        .arg(exe)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("start hcomm run");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{} failed ({}):\n{}\n{err}",
        exe.display(),
        out.status,
        String::from_utf8_lossy(&out.stdout)
    );
    err
}

/// What `tests/stats/nb_calls.c` calls on every rank: (key, calls).
const NB_CALLS: [(&str, u64); 16] = [
    ("allreduce", 2),
    ("bcast", 1),
    ("allgather", 0),
    ("reduce_scatter", 0),
    ("reduce_scatter_block", 0),
    ("reduce", 0),
    ("barrier", 0),
    ("allgatherv", 3),
    ("iallreduce", 3),
    ("ibcast", 2),
    ("iallgather", 4),
    ("ireduce_scatter", 2),
    ("ireduce_scatter_block", 1),
    ("ireduce", 5),
    ("ibarrier", 6),
    ("iallgatherv", 1),
];

#[test]
fn nonblocking_calls_are_counted_under_their_own_names() {
    let exe = build("tests/stats/nb_calls.c", "nb_calls");
    for progress in ["thread", "caller"] {
        let err = run_env(
            &exe,
            2,
            &[("HCOMM_STATS", "1"), ("HCOMM_PROGRESS", progress)],
        );
        let lines: Vec<&str> = err
            .lines()
            .filter(|l| l.starts_with("hcomm-stats "))
            .collect();
        assert_eq!(lines.len(), 2, "one line per rank expected:\n{err}");
        for l in lines {
            let kv: BTreeMap<&str, u64> = l
                .split_whitespace()
                .skip(1)
                .map(|f| {
                    let (k, v) = f.split_once('=').expect("key=value");
                    (k, v.parse().expect("number"))
                })
                .collect();
            // Every key is one of these (nonblocking ones have no `_forwarded`).
            assert_eq!(kv.len(), 1 + 8 * 2 + 2 + 8 + 2, "{l}");
            for (name, calls) in NB_CALLS {
                let got = kv.get(format!("{name}_handled").as_str());
                assert_eq!(got, Some(&calls), "{name}_handled ({progress}): {l}");
                if !name.starts_with('i') {
                    assert_eq!(kv[format!("{name}_forwarded").as_str()], 0, "{l}");
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(exe.parent().unwrap());
}

/// `HCOMM_PROFILE` rows of nonblocking collectives: their own rows, exact calls and bytes,
/// time from the starting call to the completing wait (the first `MPI_Iallreduce` is waited
/// for after 300 ms asleep), in the stderr summary, the JSON files and `hcomm profile`.
#[test]
fn profile_has_rows_for_nonblocking_calls_timed_to_completion() {
    let exe = build("tests/stats/nb_calls.c", "nb_calls");
    let dir = exe.parent().unwrap().to_path_buf();
    // Bytes as the collectives note them at 2 ranks (ints): allreduce 4000 + 4, bcast 4,
    // iallreduce 3 x 4000, ibcast 2 x 2000, iallgather 4 x (250 x 4 x 2), ireduce_scatter
    // 2 x (100 x 4 x 2), ireduce_scatter_block 100 x 4 x 2, ireduce 5 x 40, allgatherv
    // 3 x (1 + 2) x 4, iallgatherv 2 x 4.
    let bytes: BTreeMap<&str, u64> = [
        ("allreduce", 4004),
        ("bcast", 4),
        ("allgatherv", 36),
        ("iallgatherv", 8),
        ("iallreduce", 12000),
        ("ibcast", 4000),
        ("iallgather", 8000),
        ("ireduce_scatter", 1600),
        ("ireduce_scatter_block", 800),
        ("ireduce", 200),
        ("ibarrier", 0),
    ]
    .into_iter()
    .collect();
    let err = run_env(&exe, 2, &[("HCOMM_PROFILE", "1")]);
    for rank in 0..2 {
        let prefix = format!("hcomm-profile rank={rank}: ");
        let rows: BTreeMap<&str, Vec<&str>> = err
            .lines()
            .filter_map(|l| l.strip_prefix(prefix.as_str()))
            .map(|r| r.split_whitespace().collect::<Vec<_>>())
            .filter(|f| f[0] != "collective")
            .map(|f| (f[0], f))
            .collect();
        let used: Vec<(&str, u64)> = NB_CALLS.into_iter().filter(|c| c.1 > 0).collect();
        assert_eq!(rows.len(), used.len(), "rank {rank}:\n{err}");
        for (name, calls) in used {
            let f = rows
                .get(name)
                .unwrap_or_else(|| panic!("no {name} row:\n{err}"));
            assert_eq!(f[1].parse::<u64>().unwrap(), calls, "{name}: {f:?}");
            assert_eq!(f[2].parse::<u64>().unwrap(), bytes[name], "{name}: {f:?}");
            // Every call noted its algorithm (a barrier's is dissemination).
            let algo_calls: u64 = f[6]
                .split(',')
                .map(|a| a.rsplit_once(':').unwrap().1.parse::<u64>().unwrap())
                .sum();
            assert_eq!(algo_calls, calls, "{name}: {f:?}");
        }
        let secs: f64 = rows["iallreduce"][3].parse().unwrap();
        assert!(
            secs >= 0.3,
            "iallreduce time {secs} s: {:?}",
            rows["iallreduce"]
        );
    }

    let base = dir.join("prof.json");
    run_env(&exe, 2, &[("HCOMM_PROFILE", base.to_str().unwrap())]);
    for rank in 0..2 {
        let f = dir.join(format!("prof.{rank}.json"));
        let text = std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert!(
            text.contains("\"name\": \"iallreduce\", \"calls\": 3, \"bytes\": 12000,"),
            "{text}"
        );
        assert!(
            text.contains("\"name\": \"allreduce\", \"calls\": 2, \"bytes\": 4004,"),
            "{text}"
        );
        assert!(
            text.contains("\"name\": \"ibarrier\", \"calls\": 6,"),
            "{text}"
        );
    }
    let merged = Command::new(hcomm_bin())
        .arg("profile")
        .arg(&base)
        .output()
        .expect("start hcomm profile");
    let text = String::from_utf8_lossy(&merged.stdout);
    assert!(merged.status.success(), "{merged:?}");
    let row = |name: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no {name} row:\n{text}"))
            .to_string()
    };
    assert!(
        row("iallreduce").split_whitespace().nth(1) == Some("3"),
        "{text}"
    );
    assert!(
        row("ireduce").split_whitespace().nth(1) == Some("5"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
