//! `HCOMM_STATS=1` in standalone mode: `examples/allreduce_demo.c`, built against
//! `include/mpi.h` and the `libhcomm.so` next to the hcomm binary under test, run on 2 ranks
//! with `hcomm run`; each rank prints exactly one `hcomm-stats` line at `MPI_Finalize`, with
//! `allreduce_handled` above zero, every `_forwarded` zero (nothing is forwarded without a host
//! MPI) and bytes moved over shared memory. Without the variable, no line.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};

const SOURCE: &str = env!("CARGO_MANIFEST_DIR");

fn hcomm_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_hcomm"))
}

/// Builds the demo into a fresh directory; returns its path.
fn build_demo() -> PathBuf {
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
    let exe = dir.join("allreduce_demo");
    let out = Command::new("cc")
        .args(["-O1", "-I"])
        .arg(format!("{SOURCE}/include"))
        .arg(format!("{SOURCE}/examples/allreduce_demo.c"))
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
