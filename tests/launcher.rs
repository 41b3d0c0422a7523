//! Integration tests of `hcomm run`, driving real processes (`sh -c` scripts as ranks).
//!
//! Every test that waits on processes bounds its wait; the slow paths (a rank sleeping
//! 30 s) are only there to prove the launcher does not wait for them.

use std::collections::BTreeSet;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

fn hcomm() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hcomm"))
}

/// `hcomm run -n N [extra...] sh -c SCRIPT`, run to completion.
fn run_sh(n: usize, extra: &[&str], script: &str) -> (Output, Duration) {
    let start = Instant::now();
    let out = hcomm()
        .args(["run", "-n", &n.to_string()])
        .args(extra)
        .args(["sh", "-c", script])
        .stdin(Stdio::null())
        .output()
        .expect("start hcomm");
    (out, start.elapsed())
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A scratch directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "hcomm-launcher-test-{}-{tag}-{n}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }

    fn str(&self) -> &str {
        self.0.to_str().expect("utf-8 temp path")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Polls `cond` every 20 ms until it holds or `limit` passes.
fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if cond() {
            return true;
        }
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Reads the pids the ranks wrote as `<dir>/pid.<rank>`, waiting for all `n`.
fn read_pids(dir: &Path, n: usize) -> Vec<i32> {
    let read = || -> Option<Vec<i32>> {
        (0..n)
            .map(|r| {
                fs::read_to_string(dir.join(format!("pid.{r}")))
                    .ok()
                    .and_then(|s| s.trim().parse().ok())
            })
            .collect()
    };
    assert!(
        wait_until(Duration::from_secs(10), || read().is_some()),
        "ranks did not all write their pid files"
    );
    read().unwrap()
}

/// Process state letter from /proc (None: no such process).
fn proc_state(pid: i32) -> Option<char> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// Gone, or a zombie nobody reaped yet (dead either way).
fn is_dead(pid: i32) -> bool {
    matches!(proc_state(pid), None | Some('Z') | Some('X'))
}

fn assert_all_dead_soon(pids: &[i32]) {
    assert!(
        wait_until(Duration::from_secs(5), || pids.iter().all(|&p| is_dead(p))),
        "still alive: {:?}",
        pids.iter().filter(|&&p| !is_dead(p)).collect::<Vec<_>>()
    );
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: plain kill(2) on a process we started.
    let rc = unsafe { libc::kill(pid as libc::pid_t, sig) };
    assert_eq!(rc, 0, "kill({pid}, {sig})");
}

/// Waits for a child at most `limit`; kills it and panics on timeout.
fn wait_child(child: &mut Child, limit: Duration) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("hcomm did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `script` as ranks, spawned (not waited), with stdout/stderr discarded.
fn spawn_sh(n: usize, script: &str) -> Child {
    hcomm()
        .args(["run", "-n", &n.to_string(), "--timeout-kill-secs", "1"])
        .args(["sh", "-c", script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start hcomm")
}

#[test]
fn env_contract_for_every_rank() {
    let (out, _) = run_sh(
        4,
        &[],
        r#"echo "$HCOMM_RANK $HCOMM_SIZE $HCOMM_LOCAL_RANK $HCOMM_LOCAL_SIZE $HCOMM_URI $HCOMM_JOB_ID""#,
    );
    assert!(out.status.success(), "{out:?}");
    let stdout = text(&out.stdout);
    let rows: Vec<Vec<&str>> = stdout.lines().map(|l| l.split(' ').collect()).collect();
    assert_eq!(rows.len(), 4, "{stdout}");
    let ranks: BTreeSet<&str> = rows.iter().map(|r| r[0]).collect();
    assert_eq!(ranks, BTreeSet::from(["0", "1", "2", "3"]));
    for row in &rows {
        assert_eq!(row.len(), 6, "{stdout}");
        assert_eq!(row[1], "4", "HCOMM_SIZE");
        assert_eq!(row[2], row[0], "HCOMM_LOCAL_RANK");
        assert_eq!(row[3], "4", "HCOMM_LOCAL_SIZE");
        let port = row[4].strip_prefix("tcp://127.0.0.1:").expect("HCOMM_URI");
        assert!(port.parse::<u16>().is_ok_and(|p| p > 0), "{}", row[4]);
        assert_eq!(row[4], rows[0][4], "one URI for all");
        assert_eq!(row[5].len(), 12, "HCOMM_JOB_ID {}", row[5]);
        assert!(row[5].bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(row[5], rows[0][5], "one job id for all");
    }
}

#[test]
fn only_rank0_gets_a_listening_bootstrap_fd() {
    // Rank 0 prints the URI, what its fd is, and the kernel's TCP socket table (read
    // while the socket is open); the others report on stderr whether they have the
    // variable or an open listener.
    let (out, _) = run_sh(
        3,
        &[],
        r#"if [ "$HCOMM_RANK" = 0 ]; then
             echo "$HCOMM_URI"; readlink "/proc/self/fd/$HCOMM_BOOTSTRAP_FD"; cat /proc/net/tcp
           else
             echo "rank $HCOMM_RANK fd=[${HCOMM_BOOTSTRAP_FD-unset}] sockets=$(ls -l /proc/self/fd | grep -c socket)" >&2
           fi"#,
    );
    assert!(out.status.success(), "{out:?}");
    let stdout = text(&out.stdout);
    let mut lines = stdout.lines();
    let uri = lines.next().expect("uri");
    let port: u16 = uri.rsplit(':').next().unwrap().parse().expect("port");
    let link = lines.next().expect("readlink");
    let inode = link
        .strip_prefix("socket:[")
        .and_then(|s| s.strip_suffix(']'))
        .unwrap_or_else(|| panic!("HCOMM_BOOTSTRAP_FD is not a socket: {link}"));
    // /proc/net/tcp: sl local_address rem_address st ... inode (10th column).
    let listening = lines.any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.len() > 9 && f[9] == inode && f[3] == "0A" && f[1] == format!("0100007F:{port:04X}")
    });
    assert!(listening, "fd is not listening on {uri}:\n{stdout}");
    let stderr = text(&out.stderr);
    for rank in 1..3 {
        assert!(
            stderr.contains(&format!("rank {rank} fd=[unset] sockets=0")),
            "{stderr}"
        );
    }
}

#[test]
fn failing_rank_status_propagates_and_ends_the_others() {
    let dir = TempDir::new("fail");
    // Ranks other than 2 leave a grandchild (background sleep) to show the group
    // signal reaches it too.
    let script = format!(
        r#"if [ $HCOMM_RANK = 2 ]; then sleep 0.3; exit 7; fi
           sleep 30 & echo $! > {d}/pid.$HCOMM_RANK; wait"#,
        d = dir.str()
    );
    let (out, elapsed) = run_sh(4, &[], &script);
    assert_eq!(out.status.code(), Some(7), "{out:?}");
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("hcomm run: rank 2 (pid ") && stderr.contains(") exited with status 7"),
        "{stderr}"
    );
    let pids: Vec<i32> = [0, 1, 3]
        .iter()
        .map(|r| {
            fs::read_to_string(dir.path().join(format!("pid.{r}")))
                .expect("pid file")
                .trim()
                .parse()
                .unwrap()
        })
        .collect();
    assert_all_dead_soon(&pids);
}

#[test]
fn signal_death_is_128_plus_signal() {
    let (out, elapsed) = run_sh(
        3,
        &[],
        r#"if [ $HCOMM_RANK = 1 ]; then kill -KILL $$; fi; exec sleep 30"#,
    );
    assert_eq!(out.status.code(), Some(137), "{out:?}");
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("rank 1 (pid ") && stderr.contains("was killed by signal 9 (SIGKILL)"),
        "{stderr}"
    );
}

#[test]
fn np_alias() {
    for flag in ["-np", "--np"] {
        let out = hcomm()
            .args(["run", flag, "3", "sh", "-c", "echo $HCOMM_SIZE"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{flag}: {out:?}");
        assert_eq!(text(&out.stdout), "3\n3\n3\n", "{flag}");
    }
}

#[test]
fn tag_output_prefixes_lines() {
    let (out, _) = run_sh(
        2,
        &["--tag-output"],
        r#"echo "out $HCOMM_RANK"; echo "err $HCOMM_RANK" >&2; printf 'partial'"#,
    );
    assert!(out.status.success(), "{out:?}");
    let stdout: BTreeSet<String> = text(&out.stdout).lines().map(String::from).collect();
    let want: BTreeSet<String> = ["[0] out 0", "[1] out 1", "[0] partial", "[1] partial"]
        .into_iter()
        .map(String::from)
        .collect();
    assert_eq!(stdout, want);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("[0] err 0\n") && stderr.contains("[1] err 1\n"),
        "{stderr}"
    );
}

#[test]
fn program_args_pass_through_verbatim() {
    // `sh -c SCRIPT $0 ARGS...`: the args look like launcher options and must not be
    // taken as such.
    let out = hcomm()
        .args([
            "run",
            "-n",
            "1",
            "--",
            "sh",
            "-c",
            r#"printf '%s|' "$0" "$@""#,
        ])
        .args(["-n", "--tag-output", "-np", "5", "--", "-x", ""])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(text(&out.stdout), "-n|--tag-output|-np|5|--|-x||");
}

#[test]
fn stdin_goes_to_rank0_only() {
    let mut child = hcomm()
        .args(["run", "-n", "2", "sh", "-c", r#"echo "$HCOMM_RANK:$(cat)""#])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"hello").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let lines: BTreeSet<String> = text(&out.stdout).lines().map(String::from).collect();
    assert_eq!(lines, BTreeSet::from(["0:hello".into(), "1:".into()]));
}

#[test]
fn missing_program_exits_127() {
    let out = hcomm()
        .args(["run", "-n", "3", "/nonexistent/hcomm-test-prog", "-x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127), "{out:?}");
    assert!(
        text(&out.stderr).contains(
            "hcomm run: cannot start '/nonexistent/hcomm-test-prog': No such file or directory"
        ),
        "{out:?}"
    );
}

#[test]
fn bad_usage_is_an_error() {
    for args in [
        &["run", "-n", "0", "true"][..],
        &["run", "-n", "x", "true"],
        &["run", "-n", "2"],
        &["run", "true"],
        &["run", "--timeout-kill-secs", "-1", "-n", "1", "true"],
        &["run", "--bogus", "-n", "1", "true"],
    ] {
        let out = hcomm().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        assert!(!out.stderr.is_empty(), "{args:?}");
    }
    let out = hcomm().args(["run", "-n", "0", "true"]).output().unwrap();
    assert!(text(&out.stderr).contains(">= 1"), "{out:?}");
}

#[test]
fn stopped_sibling_is_ended_when_a_rank_fails() {
    let (out, elapsed) = run_sh(
        3,
        &[],
        r#"case $HCOMM_RANK in
             1) kill -STOP $$; exec sleep 30;;
             2) sleep 0.5; exit 3;;
             *) exec sleep 30;;
           esac"#,
    );
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    // SIGCONT + SIGTERM end the stopped rank at once, well before the 3 s SIGKILL.
    assert!(elapsed < Duration::from_millis(2900), "took {elapsed:?}");
}

#[test]
fn sigkill_follows_after_the_grace_period() {
    // Rank 1 ignores SIGTERM; `--timeout-kill-secs 0.5` bounds how long it survives.
    let (out, elapsed) = run_sh(
        2,
        &["--timeout-kill-secs", "0.5"],
        r#"if [ $HCOMM_RANK = 0 ]; then sleep 0.3; exit 1; fi
           trap '' TERM; exec sleep 30"#,
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
    assert!(text(&out.stderr).contains("sending SIGKILL"), "{out:?}");
}

#[test]
fn leftover_shm_segments_are_removed() {
    if !Path::new("/dev/shm").is_dir() {
        eprintln!("no /dev/shm: skipped");
        return;
    }
    // Each rank leaves hcomm-<job>-x<rank>; rank 0 also a look-alike of another job
    // (hcomm-<job>0-keep) that must survive.
    let (out, _) = run_sh(
        2,
        &[],
        r#"touch /dev/shm/hcomm-$HCOMM_JOB_ID-x$HCOMM_RANK
           [ $HCOMM_RANK = 0 ] && touch /dev/shm/hcomm-${HCOMM_JOB_ID}0-keep
           echo $HCOMM_JOB_ID"#,
    );
    assert!(out.status.success(), "{out:?}");
    let job = text(&out.stdout)
        .lines()
        .next()
        .expect("job id")
        .to_string();
    let keep = PathBuf::from(format!("/dev/shm/hcomm-{job}0-keep"));
    let kept = keep.exists();
    let _ = fs::remove_file(&keep);
    assert!(kept, "removed another job's segment");
    for rank in 0..2 {
        let seg = format!("/dev/shm/hcomm-{job}-x{rank}");
        assert!(!Path::new(&seg).exists(), "{seg} left behind");
    }
}

#[test]
fn ranks_die_with_a_killed_launcher() {
    let dir = TempDir::new("pdeath");
    let mut child = spawn_sh(
        3,
        &format!("echo $$ > {}/pid.$HCOMM_RANK; exec sleep 30", dir.str()),
    );
    let pids = read_pids(dir.path(), 3);
    assert!(pids.iter().all(|&p| !is_dead(p)));
    signal(child.id(), libc::SIGKILL);
    child.wait().unwrap();
    assert_all_dead_soon(&pids);
}

#[test]
fn interrupt_is_forwarded() {
    for (sig, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let dir = TempDir::new("int");
        let mut child = spawn_sh(
            2,
            &format!("echo $$ > {}/pid.$HCOMM_RANK; exec sleep 30", dir.str()),
        );
        let pids = read_pids(dir.path(), 2);
        signal(child.id(), sig);
        let status = wait_child(&mut child, Duration::from_secs(5));
        assert_eq!(status.code(), Some(code), "signal {sig}");
        assert_all_dead_soon(&pids);
    }
}

#[test]
fn ctrl_z_stops_and_resumes_the_ranks() {
    let dir = TempDir::new("tstp");
    let mut child = spawn_sh(
        2,
        &format!("echo $$ > {}/pid.$HCOMM_RANK; exec sleep 30", dir.str()),
    );
    let pids = read_pids(dir.path(), 2);
    let launcher = child.id() as i32;
    signal(child.id(), libc::SIGTSTP);
    let stopped = |p: i32| proc_state(p) == Some('T');
    assert!(
        wait_until(Duration::from_secs(5), || stopped(launcher)
            && pids.iter().all(|&p| stopped(p))),
        "not all stopped"
    );
    signal(child.id(), libc::SIGCONT);
    assert!(
        wait_until(Duration::from_secs(5), || !stopped(launcher)
            && pids.iter().all(|&p| !stopped(p))),
        "not all resumed"
    );
    signal(child.id(), libc::SIGTERM);
    assert_eq!(
        wait_child(&mut child, Duration::from_secs(5)).code(),
        Some(143)
    );
}
