//! The bench smoke test (CI): `hcomm bench` and `benches/coll_bench.c` on 2 ranks over a short
//! size sweep of every collective, with result checking; every row must report `#wrong` 0.
//! Benchmarks are benchmarks: nothing here looks at the times.
//!
//! Uses the `hcomm` binary under test and the `libhcomm.so` next to it (`cargo build --release`
//! with the same `CARGO_TARGET_DIR` first, as `scripts/test.sh` does).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const SOURCE: &str = env!("CARGO_MANIFEST_DIR");
const COLLS: [&str; 5] = [
    "allreduce",
    "bcast",
    "allgather",
    "reduce_scatter",
    "reduce",
];

fn hcomm_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_hcomm"))
}

/// Runs `cmd` to completion, killing it after `limit` (a hung collective fails the test
/// instead of hanging CI; the launcher's ranks die with it, by their parent-death signal).
fn run_bounded(cmd: &mut Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start");
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("stdout")));
    let err = drain(Box::new(child.stderr.take().expect("stderr")));
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            break child.wait().expect("wait");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out.join().expect("stdout reader"),
        stderr: err.join().expect("stderr reader"),
    }
}

/// The result rows of a table (`#` lines skipped), as whitespace-separated columns.
fn rows(stdout: &str) -> Vec<Vec<String>> {
    stdout
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect()
}

/// Every collective has rows, every row has 12 columns and `#wrong` 0; returns the row count.
fn check_table(out: &Output, what: &str, colls: &[&str]) -> usize {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    let rows = rows(&stdout);
    for r in &rows {
        assert_eq!(r.len(), 12, "{what}: malformed row {r:?}\n{stdout}");
        assert_eq!(r[11], "0", "{what}: wrong elements in row {r:?}\n{stdout}");
        let busbw: f64 = r[10].parse().expect("busbw is a number");
        assert!(busbw.is_finite() && busbw >= 0.0, "{what}: busbw {r:?}");
    }
    for c in colls {
        assert!(
            rows.iter().any(|r| r[0] == *c),
            "{what}: no row for {c}:\n{stdout}"
        );
    }
    rows.len()
}

fn bench(args: &[&str]) -> Output {
    let bin = hcomm_bin();
    run_bounded(
        Command::new(&bin)
            .args(["run", "-n", "2"])
            .arg(&bin)
            .arg("bench")
            .args(args),
        Duration::from_secs(120),
    )
}

const QUICK: [&str; 10] = [
    "-b",
    "8",
    "-e",
    "256K",
    "-f",
    "8",
    "--iter-bytes",
    "1M",
    "--max-iters",
    "20",
];

#[test]
fn hcomm_bench_checks_every_collective() {
    let out = bench(&QUICK);
    // 8 B .. 256 KiB by 8: 6 sizes for each of the five collectives.
    assert_eq!(check_table(&out, "hcomm bench", &COLLS), 30);
    let head = String::from_utf8_lossy(&out.stdout);
    assert!(head.starts_with("# hcomm bench "), "{head}");
    assert!(head.contains("# ranks 2,"), "{head}");
}

#[test]
fn hcomm_bench_in_place_other_types_and_root() {
    let mut args = QUICK.to_vec();
    args.extend(["--inplace", "-r", "1"]);
    check_table(&bench(&args), "hcomm bench --inplace -r 1", &COLLS);
    for (dt, op) in [
        ("int8", "prod"),
        ("half", "sum"),
        ("bfloat16", "max"),
        ("uint32", "bxor"),
    ] {
        let mut args = QUICK.to_vec();
        args.extend(["allreduce", "reduce_scatter", "-d", dt, "-o", op]);
        check_table(
            &bench(&args),
            &format!("hcomm bench -d {dt} -o {op}"),
            &["allreduce", "reduce_scatter"],
        );
    }
}

#[test]
fn hcomm_bench_json() {
    let mut args = QUICK.to_vec();
    args.extend(["allgather", "--json"]);
    let out = bench(&args);
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{s}");
    assert!(
        s.trim_start().starts_with("{\"tool\":\"hcomm bench\""),
        "{s}"
    );
    assert!(s.trim_end().ends_with("]}"), "{s}");
    assert_eq!(s.matches("\"collective\":\"allgather\"").count(), 6, "{s}");
    assert_eq!(s.matches("\"wrong\":0}").count(), 6, "{s}");
}

#[test]
fn hcomm_bench_rejects_bad_arguments() {
    for args in [
        &["-d", "quaternion"][..],
        &["-d", "float", "-o", "band"],
        &["-r", "5"],
        &["--device-id", "0"],
        &["--memory", "device", "--overlap-us", "10"],
        &["--memory", "gpu"],
    ] {
        let out = bench(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
    }
}

/// The C benchmark built against hcomm (what scripts/perf-compare.sh runs as `hcomm`).
#[test]
fn c_benchmark_on_hcomm() {
    let lib_dir = hcomm_bin().parent().expect("target dir").to_path_buf();
    assert!(
        lib_dir.join("libhcomm.so").is_file(),
        "libhcomm.so is missing next to {}: run `cargo build --release` with the same \
         CARGO_TARGET_DIR first",
        hcomm_bin().display()
    );
    let dir = std::env::temp_dir().join(format!("hcomm-bench-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let exe = dir.join("coll_bench");
    let out = Command::new("cc")
        .args(["-O1", "-Wall", "-Werror", "-I"])
        .arg(Path::new(SOURCE).join("include"))
        .arg(Path::new(SOURCE).join("benches/coll_bench.c"))
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
    for extra in [
        &[][..],
        &["-i", "-r", "1"],
        &["-d", "int32", "-o", "max", "-c", "allreduce,reduce"],
    ] {
        let out = run_bounded(
            Command::new(hcomm_bin())
                .args(["run", "-n", "2"])
                .arg(&exe)
                .args(["-b", "8", "-e", "64K", "-f", "16", "-B", "1M", "-m", "20"])
                .args(extra),
            Duration::from_secs(120),
        );
        let colls: &[&str] = if extra.contains(&"allreduce,reduce") {
            &["allreduce", "reduce"]
        } else {
            &COLLS
        };
        check_table(&out, &format!("coll_bench {extra:?}"), colls);
    }
    // MPI_Allgatherv (by name only, not in "all") on 3 ranks, in and out of place: from 512 KiB
    // on its blocks go through the fan-out stage (one host, 3+ ranks); every result is checked.
    for extra in [&[][..], &["-i"]] {
        let out = run_bounded(
            Command::new(hcomm_bin())
                .args(["run", "-n", "3"])
                .arg(&exe)
                .args(["-c", "allgatherv,allgather", "-b", "8", "-e", "2M"])
                .args(["-f", "64", "-B", "4M", "-m", "20"])
                .args(extra),
            Duration::from_secs(120),
        );
        check_table(
            &out,
            &format!("coll_bench allgatherv {extra:?}"),
            &["allgatherv", "allgather"],
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--overlap-us`: the overlap table has one row per size with the four times and a hidden
/// share in 0..=100 % (no timing is asserted: on 2 cores nothing may be hidden).
#[test]
fn hcomm_bench_overlap_mode() {
    let out = bench(&[
        "--overlap-us",
        "200",
        "-b",
        "64K",
        "-e",
        "256K",
        "-f",
        "4",
        "-n",
        "3",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    let rows: Vec<&str> = stdout.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(rows.len(), 2, "{stdout}");
    for r in rows {
        let f: Vec<&str> = r.split_whitespace().collect();
        assert_eq!(f.len(), 6, "{r}");
        for v in &f[1..5] {
            assert!(v.parse::<f64>().unwrap() > 0.0, "{r}");
        }
        let hidden: f64 = f[5].trim_end_matches('%').parse().unwrap();
        assert!((0.0..=100.0).contains(&hidden), "{r}");
    }
}

/// `hcomm bench` on `n` ranks with extra environment variables.
fn bench_env(n: usize, env: &[(&str, &str)], args: &[&str]) -> Output {
    let bin = hcomm_bin();
    let mut cmd = Command::new(&bin);
    cmd.args(["run", "-n", &n.to_string()])
        .arg(&bin)
        .arg("bench")
        .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    run_bounded(&mut cmd, Duration::from_secs(300))
}

/// Large messages within a host take the single copy (CMA: the receiver reads the sender's
/// buffer with process_vm_readv) when the kernel allows it, and copy through shared memory
/// with HCOMM_CMA=0: both give exact results on every collective, at 3 ranks (uneven blocks),
/// out of place and in place, for copies and for reductions, with every message a single copy
/// (HCOMM_CMA_BYTES=1: odd sizes, one-byte elements, partial pieces), with the threshold of
/// HCOMM_CMA=1 (whole 128 KiB chunks), with HCOMM_CMA=copies (the allgather ring's 1 MiB
/// chunks from 3 MiB on, blocks not a multiple of the chunk) and by default (HCOMM_CMA=auto:
/// the same where a kernel read measured faster than two copies, else the slots, and every
/// peer's INFO line agrees with the measurement's).
#[test]
fn single_copy_large_messages_are_exact_and_can_be_turned_off() {
    const LARGE: &[&str] = &["-b", "64K", "-e", "8M"];
    type Run<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str]);
    let runs: [Run; 8] = [
        (
            &[("HCOMM_CMA", "copies")],
            &["-b", "1M", "-e", "13M", "-f", "3"],
        ),
        (
            &[("HCOMM_CMA", "copies")],
            &["-b", "1M", "-e", "13M", "-f", "3", "--inplace"],
        ),
        (&[], &["-b", "1M", "-e", "13M", "-f", "3"]),
        (&[("HCOMM_CMA", "1")], LARGE),
        (
            &[("HCOMM_CMA", "1")],
            &["-b", "64K", "-e", "8M", "--inplace", "-r", "2"],
        ),
        (
            &[("HCOMM_CMA", "1"), ("HCOMM_CMA_BYTES", "1")],
            &["-b", "8", "-e", "8M", "-d", "double"],
        ),
        (
            &[("HCOMM_CMA", "1"), ("HCOMM_CMA_BYTES", "1")],
            &["-b", "8", "-e", "1M", "-d", "int8", "-o", "max"],
        ),
        (&[("HCOMM_CMA", "0")], LARGE),
    ];
    for (env, extra) in runs {
        let mut args = vec!["--max-iters", "5"];
        if !extra.contains(&"-f") {
            args.extend(["-f", "8"]);
        }
        args.extend_from_slice(extra);
        let mut env = env.to_vec();
        env.push(("HCOMM_DEBUG", "INFO"));
        let out = bench_env(3, &env, &args);
        check_table(&out, &format!("{env:?} hcomm bench {extra:?}"), &COLLS);
        let err = String::from_utf8_lossy(&out.stderr);
        let peers: Vec<&str> = err
            .lines()
            .filter(|l| l.contains("transport shm"))
            .collect();
        assert_eq!(peers.len(), 6, "3 ranks, 2 shm peers each:\n{err}");
        if env.contains(&("HCOMM_CMA", "0")) {
            assert!(
                peers.iter().all(|l| l.contains("single copy from it: no")),
                "{err}"
            );
            assert!(
                !err.contains("single copy (CMA) unavailable"),
                "no probe: {err}"
            );
        } else if !err.contains("single copy (CMA) unavailable") {
            // Where the kernel allows it, every peer takes it (by default: where each rank's
            // measurement says it pays, one INFO line per rank); where not, one line says why.
            let verdicts: Vec<&str> = err
                .lines()
                .filter(|l| l.contains("HCOMM_CMA=auto"))
                .collect();
            let auto = env.iter().all(|(k, _)| *k != "HCOMM_CMA");
            assert_eq!(verdicts.len(), if auto { 3 } else { 0 }, "{err}");
            for rank in 0..3 {
                let tag = format!("[{rank}] hcomm INFO");
                let pays = !auto
                    || verdicts
                        .iter()
                        .any(|l| l.contains(&tag) && l.contains("single copies for"));
                let want = if pays { "yes" } else { "no" };
                assert!(
                    peers
                        .iter()
                        .filter(|l| l.contains(&tag))
                        .all(|l| l.contains(&format!("single copy from it: {want}"))),
                    "rank {rank}: {err}"
                );
            }
        }
    }
}
