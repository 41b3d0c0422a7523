//! Fault injection under `hcomm run`: a rank killed, stopped or exiting mid-job, mismatched
//! collective calls, and rendezvous failures. Each test runs `tests/faults/fault.c` (compiled
//! here against `include/mpi.h` and the `libhcomm.so` next to the hcomm binary under test),
//! bounds its time, and checks the error text, the exit status, and that nothing is left
//! behind (rank processes, `/dev/shm/hcomm-<job>-*`).
//!
//! The tests run one at a time (a lock): each starts up to 4 ranks, and timing assertions
//! must not depend on how many other jobs share the cores.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

fn hcomm_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_hcomm"))
}

/// One test at a time.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A scratch directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("hcomm-faults-{}-{tag}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).expect("create temp dir");
        TempDir(d)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// `tests/faults/fault.c`, built once per test run.
fn fault_prog() -> &'static Path {
    static PROG: OnceLock<PathBuf> = OnceLock::new();
    PROG.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let lib = hcomm_bin().parent().expect("bin dir").to_path_buf();
        assert!(
            lib.join("libhcomm.so").exists(),
            "libhcomm.so must be next to the hcomm binary ({})",
            lib.display()
        );
        // Next to the library under test (the build directory), not in /tmp.
        let out = lib.join("hcomm-fault-test-prog");
        let status = Command::new("cc")
            .args(["-O1", "-Wall", "-I"])
            .arg(root.join("include"))
            .arg(root.join("tests/faults/fault.c"))
            .arg("-L")
            .arg(&lib)
            .arg("-lhcomm")
            .arg(format!("-Wl,-rpath,{}", lib.display()))
            .arg("-o")
            .arg(&out)
            .status()
            .expect("run cc");
        assert!(status.success(), "cc failed for tests/faults/fault.c");
        out
    })
}

/// `hcomm run -n N --tag-output fault ARGS...` with `env`, started.
fn spawn(n: usize, args: &[&str], env: &[(&str, &str)]) -> Child {
    let mut cmd = Command::new(hcomm_bin());
    cmd.args(["run", "-n", &n.to_string(), "--tag-output"])
        .arg(fault_prog())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().expect("start hcomm run")
}

/// Waits for `child` at most `limit`; kills it (and fails) past that.
fn finish(mut child: Child, limit: Duration) -> (Output, Duration) {
    let start = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().expect("collect output");
            panic!(
                "hcomm run still running after {limit:?}; stderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let elapsed = start.elapsed();
    (child.wait_with_output().expect("collect output"), elapsed)
}

fn run(n: usize, args: &[&str], env: &[(&str, &str)], limit: Duration) -> (Output, Duration) {
    finish(spawn(n, args, env), limit)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The ranks' `(pid, job id)` from `<dir>/pid.<rank>`, waiting for all `n`.
fn rank_pids(dir: &Path, n: usize) -> Vec<(i32, String)> {
    let start = Instant::now();
    loop {
        let got: Vec<_> = (0..n)
            .filter_map(|r| fs::read_to_string(dir.join(format!("pid.{r}"))).ok())
            .filter_map(|s| {
                let mut it = s.split_whitespace();
                Some((it.next()?.parse().ok()?, it.next()?.to_string()))
            })
            .collect();
        if got.len() == n {
            return got;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "ranks did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(pid: i32, sig: i32) {
    // SAFETY: plain syscall on a pid this test started (through hcomm run).
    unsafe { libc::kill(pid, sig) };
}

/// Every rank process is gone (or a zombie about to be reaped) and the job left no segment.
fn assert_nothing_left(ranks: &[(i32, String)]) {
    let start = Instant::now();
    for &(pid, _) in ranks {
        while Path::new(&format!("/proc/{pid}")).exists()
            && !fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z"))
        {
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "rank process {pid} still running"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let job = &ranks[0].1;
    if let Ok(dir) = fs::read_dir("/dev/shm") {
        let left: Vec<String> = dir
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(&format!("hcomm-{job}-")))
            .collect();
        assert!(left.is_empty(), "left in /dev/shm: {left:?}");
    }
}

/// The `[r] ...` lines of rank `r` in tagged output.
fn lines_of(out: &str, r: usize) -> Vec<&str> {
    let tag = format!("[{r}] ");
    out.lines().filter(|l| l.starts_with(&tag)).collect()
}

/// Starts `fault ARGS` on 4 ranks, SIGKILLs rank 2 after 300 ms and checks the job ends with
/// the signal's status within 15 s; stderr and the ranks' pids.
fn kill_rank_2_of(tag: &str, args: &[&str]) -> (String, Vec<(i32, String)>) {
    let dir = TempDir::new(tag);
    let d = dir.0.to_str().unwrap();
    let child = spawn(4, args, &[("FAULT_DIR", d)]);
    let ranks = rank_pids(&dir.0, 4);
    std::thread::sleep(Duration::from_millis(300));
    signal(ranks[2].0, libc::SIGKILL);
    let (out, elapsed) = finish(child, Duration::from_secs(15));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(128 + 9), "{err}");
    assert!(elapsed < Duration::from_secs(15), "took {elapsed:?}");
    (err, ranks)
}

/// How many survivors (ranks 0, 1, 3) printed a line that `fatal` accepts and that names the
/// lost rank 2 with its host and pid.
fn survivors_naming_rank_2(
    err: &str,
    ranks: &[(i32, String)],
    fatal: impl Fn(&str) -> bool,
) -> usize {
    let lost = format!(
        "lost rank 2 (host {}, pid {})",
        hcomm_core::log::hostname(),
        ranks[2].0
    );
    [0, 1, 3]
        .iter()
        .filter(|&&r| {
            lines_of(err, r)
                .iter()
                .any(|l| fatal(l) && l.contains(&lost))
        })
        .count()
}

#[test]
fn sigkill_during_allreduce_ends_the_job_and_names_the_rank() {
    let _g = serial();
    let (err, ranks) = kill_rank_2_of("kill", &["loop", "1048576"]);
    assert!(
        err.contains(&format!(
            "rank 2 (pid {}) was killed by signal 9 (SIGKILL)",
            ranks[2].0
        )),
        "{err}"
    );
    // The survivors leave their call themselves, naming the lost rank and its host.
    let named = survivors_naming_rank_2(&err, &ranks, |l| {
        l.contains("fatal error in MPI_Allreduce") && l.contains("(MPI_ERR_OTHER)")
    });
    assert!(named >= 1, "no survivor named rank 2:\n{err}");
    assert_nothing_left(&ranks);
}

/// A reader killed in the middle of fan-outs (bcast and allgather of 1 MiB on 4 ranks, which
/// go through the senders' stages): the job ends, a survivor names it, nothing is left.
#[test]
fn sigkill_during_fan_outs_names_the_rank() {
    let _g = serial();
    let (err, ranks) = kill_rank_2_of("kill-fan", &["fanloop", "1048576"]);
    let named = survivors_naming_rank_2(&err, &ranks, |l| {
        l.contains("fatal error in MPI_Bcast") || l.contains("fatal error in MPI_Allgather")
    });
    assert!(named >= 1, "no survivor named rank 2:\n{err}");
    assert!(!err.contains("FAIL rank"), "{err}");
    assert_nothing_left(&ranks);
}

/// The fan-out loop runs clean with a stage so small that most fragments find it full (the
/// slots take them), results checked every call.
#[test]
fn fan_outs_with_a_tiny_stage_are_exact() {
    let _g = serial();
    let (out, _) = run(
        4,
        &["fanloop", "1048576"],
        &[
            ("FAULT_SECS", "1"),
            ("HCOMM_SHM_STAGE", "2"),
            ("HCOMM_STATS", "1"),
        ],
        Duration::from_secs(30),
    );
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{err}");
    assert_eq!(stdout.matches(": done").count(), 4, "{stdout}\n{err}");
    // Both ways were taken: fragments staged, and fragments that found the stage full.
    let stat = |key: &str| -> u64 {
        err.lines()
            .filter(|l| l.contains("hcomm-stats rank="))
            .flat_map(|l| l.split_whitespace())
            .filter_map(|kv| kv.strip_prefix(key))
            .map(|v| v.parse::<u64>().unwrap())
            .sum()
    };
    assert!(stat("bytes_staged=") > 0, "{err}");
    assert!(stat("stage_full=") > 0, "{err}");
}

#[test]
fn sigkill_under_errors_return_returns_mpi_err_other() {
    let _g = serial();
    let dir = TempDir::new("kill-return");
    let d = dir.0.to_str().unwrap();
    let child = spawn(
        4,
        &["loop", "1048576"],
        &[("FAULT_DIR", d), ("FAULT_ERRH", "return")],
    );
    let ranks = rank_pids(&dir.0, 4);
    std::thread::sleep(Duration::from_millis(300));
    signal(ranks[1].0, libc::SIGKILL);
    let (out, _) = finish(child, Duration::from_secs(15));
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(128 + 9), "{err}");
    // MPI_ERR_OTHER is class 15.
    let returned = [0, 2, 3]
        .iter()
        .filter(|&&r| {
            lines_of(&stdout, r)
                .iter()
                .any(|l| l.contains("MPI_Allreduce returned class 15"))
        })
        .count();
    assert!(returned >= 1, "stdout:\n{stdout}\nstderr:\n{err}");
    assert_nothing_left(&ranks);
}

#[test]
fn a_rank_that_exits_is_named_by_the_one_waiting_for_it() {
    let _g = serial();
    let (out, elapsed) = run(3, &["exit", "1"], &[], Duration::from_secs(10));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(err.contains(") exited with status 5"), "{err}");
    assert!(
        lines_of(&err, 0)
            .iter()
            .any(|l| l.contains("fatal error in MPI_Recv") && l.contains("lost rank 1 (host")),
        "{err}"
    );
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
}

#[test]
fn a_stopped_rank_is_reported_then_times_out() {
    let _g = serial();
    let dir = TempDir::new("stop");
    let d = dir.0.to_str().unwrap();
    let child = spawn(
        3,
        &["loop", "4096"],
        &[
            ("FAULT_DIR", d),
            ("HCOMM_WARN_AFTER", "0.3"),
            ("HCOMM_TIMEOUT", "1.5"),
        ],
    );
    let ranks = rank_pids(&dir.0, 3);
    std::thread::sleep(Duration::from_millis(200));
    let stopped = Instant::now();
    signal(ranks[1].0, libc::SIGSTOP);
    let (out, _) = finish(child, Duration::from_secs(15));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("hcomm WARN: no progress for")
            && err.contains(&format!(
                "waiting for rank 1 (host {}",
                hcomm_core::log::hostname()
            )),
        "{err}"
    );
    assert!(
        err.contains("timed out after") && err.contains("(HCOMM_TIMEOUT)"),
        "{err}"
    );
    // Timeout 1.5 s, a 1 s report window, then SIGCONT + SIGTERM end the stopped rank.
    assert!(
        stopped.elapsed() < Duration::from_secs(8),
        "took {:?}",
        stopped.elapsed()
    );
    assert_nothing_left(&ranks);
}

#[test]
fn a_late_rank_only_warns_without_hcomm_timeout() {
    let _g = serial();
    let dir = TempDir::new("late");
    let d = dir.0.to_str().unwrap();
    let child = spawn(
        2,
        &["loop", "4096"],
        &[
            ("FAULT_DIR", d),
            ("FAULT_SECS", "2"),
            ("HCOMM_WARN_AFTER", "0.2"),
        ],
    );
    let ranks = rank_pids(&dir.0, 2);
    signal(ranks[1].0, libc::SIGSTOP);
    std::thread::sleep(Duration::from_millis(800));
    signal(ranks[1].0, libc::SIGCONT);
    let (out, _) = finish(child, Duration::from_secs(15));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        lines_of(&err, 0)
            .iter()
            .any(|l| l.contains("no progress for") && l.contains("waiting for rank 1")),
        "{err}"
    );
    assert_nothing_left(&ranks);
}

/// Every rank of a 4-rank job stops with a "mismatch" message when rank `odd` (2: not a ring
/// neighbour of rank 0) makes a different call.
fn mismatch_case(kind: &str, odd: usize, errh_return: bool) {
    let odd_s = odd.to_string();
    let env: &[(&str, &str)] = if errh_return {
        &[("FAULT_ERRH", "return"), ("HCOMM_DEBUG", "INFO")]
    } else {
        &[]
    };
    let (out, elapsed) = run(4, &["mismatch", kind, &odd_s], env, Duration::from_secs(30));
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert!(
        elapsed < Duration::from_secs(10),
        "{kind}: took {elapsed:?}"
    );
    assert_ne!(out.status.code(), Some(0), "{kind}: {err}");
    for r in 0..4 {
        if errh_return {
            // The call returns MPI_ERR_OTHER (15) or MPI_ERR_TRUNCATE (14); the text is logged
            // at INFO.
            assert!(
                lines_of(&stdout, r)
                    .iter()
                    .any(|l| l.contains("returned class 1")),
                "{kind}: rank {r} did not return an error:\n{stdout}\n{err}"
            );
            assert!(
                lines_of(&err, r).iter().any(|l| l.contains("mismatch")),
                "{kind}: rank {r} logged no mismatch:\n{err}"
            );
        } else {
            assert!(
                lines_of(&err, r)
                    .iter()
                    .any(|l| l.contains("fatal error in MPI_") && l.contains("mismatch")),
                "{kind}: rank {r} reported no mismatch:\n{err}"
            );
        }
    }
}

#[test]
fn mismatched_calls_stop_every_rank_with_both_sides() {
    let _g = serial();
    for kind in [
        "count",
        "dtype",
        "op",
        "root",
        "coll",
        "large",
        "bcastsize",
        "reducesize",
        "gathersize",
    ] {
        mismatch_case(kind, 2, false);
    }
}

#[test]
fn mismatched_calls_under_errors_return() {
    let _g = serial();
    for kind in ["count", "coll", "large", "bcastsize", "gathersize"] {
        mismatch_case(kind, 2, true);
    }
}

#[test]
fn allreduce_count_10_against_20_names_both_calls() {
    let _g = serial();
    let (out, elapsed) = run(2, &["mismatch", "count", "0"], &[], Duration::from_secs(30));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(elapsed < Duration::from_secs(30), "took {elapsed:?}");
    // Call 0 is the communicator's agreement on device buffers (crate::cuda::path), made
    // at its first collective that can carry them: the program's first allreduce is call 1.
    let want = "collective call mismatch on MPI_COMM_WORLD (call 1): rank 0 in MPI_Allreduce(count=10, MPI_FLOAT, MPI_SUM), rank 1 in MPI_Allreduce(count=20, MPI_FLOAT, MPI_SUM)";
    for r in 0..2 {
        assert!(
            lines_of(&err, r).iter().any(|l| l.contains(want)),
            "rank {r}:\n{err}"
        );
    }
}

/// Runs `fault init` as a rank started by hand (no launcher) with `env`.
fn lone_rank(env: &[(&str, &str)]) -> (Output, Duration) {
    let start = Instant::now();
    let mut cmd = Command::new(fault_prog());
    cmd.arg("init").stdin(Stdio::null());
    for k in ["HCOMM_JOB_ID", "HCOMM_BOOTSTRAP_FD", "HCOMM_LOCAL_RANK"] {
        cmd.env_remove(k);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run fault");
    (out, start.elapsed())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind")
        .port()
}

#[test]
fn missing_ranks_are_listed_with_the_rendezvous_address() {
    let _g = serial();
    let uri = format!("tcp://127.0.0.1:{}", free_port());
    let (out, elapsed) = lone_rank(&[
        ("HCOMM_RANK", "0"),
        ("HCOMM_SIZE", "3"),
        ("HCOMM_URI", &uri),
        ("HCOMM_BOOTSTRAP_TIMEOUT", "1"),
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&uri) && err.contains("ranks 1,2 never arrived"),
        "{err}"
    );
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");
}

#[test]
fn occupied_rendezvous_port_is_named() {
    let _g = serial();
    let busy = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = busy.local_addr().unwrap().port();
    let uri = format!("tcp://127.0.0.1:{port}");
    let (out, _) = lone_rank(&[
        ("HCOMM_RANK", "0"),
        ("HCOMM_SIZE", "2"),
        ("HCOMM_URI", &uri),
        ("HCOMM_BOOTSTRAP_TIMEOUT", "1"),
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("{port}")) && err.contains("choose another port in HCOMM_URI"),
        "{err}"
    );
}

#[test]
fn malformed_uri_says_what_is_expected() {
    let _g = serial();
    let (out, _) = lone_rank(&[
        ("HCOMM_RANK", "0"),
        ("HCOMM_SIZE", "2"),
        ("HCOMM_URI", "foo://x"),
        ("HCOMM_BOOTSTRAP_TIMEOUT", "1"),
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("expected tcp://host:port or file:///shared/dir"),
        "{err}"
    );
}
