//! Integration tests of `hcomm run` across hosts, with `--launcher fork`: every "host"
//! (`localhost`, `127.0.0.1`) is this machine, but each gets its own proxy, and the ranks
//! meet through the rendezvous rank 0's proxy opened.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn hcomm() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hcomm"))
}

fn run_hosts(n: usize, extra: &[&str], prog: &[&str]) -> (Output, Duration) {
    let start = Instant::now();
    let out = hcomm()
        // The launcher that started `hcomm run` (here: pretend Hydra and Open MPI) must not
        // leak into the ranks: libhcomm would join it.
        .env("PMI_RANK", "5")
        .env("PMI_SIZE", "9")
        .env("OMPI_COMM_WORLD_SIZE", "9")
        .args(["run", "-n", &n.to_string()])
        .args(["--hosts", "localhost:2,127.0.0.1:2", "--launcher", "fork"])
        .args(extra)
        .args(prog)
        .stdin(Stdio::null())
        .output()
        .expect("start hcomm");
    (out, start.elapsed())
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn contract_and_output_across_two_hosts() {
    let (out, _) = run_hosts(
        4,
        &["--tag-output"],
        &[
            "sh",
            "-c",
            "echo rank=$HCOMM_RANK size=$HCOMM_SIZE local=$HCOMM_LOCAL_RANK/$HCOMM_LOCAL_SIZE \
             job=$HCOMM_JOB_ID uri=$HCOMM_URI pmi=${PMI_RANK:-none}${PMI_SIZE:-}${OMPI_COMM_WORLD_SIZE:-}; \
             echo to-stderr >&2",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stdout = text(&out.stdout);
    for (r, l) in [(0, 0), (1, 1), (2, 0), (3, 1)] {
        assert!(
            stdout.contains(&format!("[{r}] rank={r} size=4 local={l}/2 job=")),
            "{stdout}"
        );
        assert!(
            text(&out.stderr).contains(&format!("[{r}] to-stderr")),
            "{out:?}"
        );
    }
    assert!(stdout.contains("uri=tcp://"), "{stdout}");
    assert!(stdout.contains("pmi=none"), "{stdout}");
}

#[test]
fn collectives_work_across_two_hosts() {
    let exe = env!("CARGO_BIN_EXE_hcomm");
    let (out, _) = run_hosts(
        4,
        &[],
        &[exe, "bench", "allreduce", "-b", "8", "-e", "1K", "-n", "5"],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stdout = text(&out.stdout);
    assert!(stdout.contains("allreduce"), "{stdout}");
}

#[test]
fn failing_rank_on_second_host_is_named() {
    let (out, elapsed) = run_hosts(
        4,
        &[],
        &[
            "sh",
            "-c",
            "if [ $HCOMM_RANK = 3 ]; then exit 7; fi; exec sleep 30",
        ],
    );
    assert_eq!(out.status.code(), Some(7), "{out:?}");
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("rank 3 (pid ") && stderr.contains("on 127.0.0.1) exited with status 7"),
        "{stderr}"
    );
}

#[test]
fn killed_rank_is_named() {
    let (out, elapsed) = run_hosts(
        4,
        &[],
        &[
            "sh",
            "-c",
            "if [ $HCOMM_RANK = 2 ]; then kill -KILL $$; fi; exec sleep 30",
        ],
    );
    assert_eq!(out.status.code(), Some(137), "{out:?}");
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");
    assert!(
        text(&out.stderr).contains("rank 2 (pid ")
            && text(&out.stderr).contains("was killed by signal 9 (SIGKILL)"),
        "{out:?}"
    );
}

#[test]
fn unreachable_host_is_named() {
    // An "agent" that fails as ssh does for a host it cannot reach.
    let out = hcomm()
        .args(["run", "-n", "2", "--hosts", "nowhere:2", "--launcher-exec"])
        .args(["sh -c exit\\ 255 agent", "true"])
        .stdin(Stdio::null())
        .output()
        .expect("start hcomm");
    assert_ne!(out.status.code(), Some(0), "{out:?}");
    assert!(text(&out.stderr).contains("lost host nowhere"), "{out:?}");
}

#[test]
fn too_many_ranks_for_the_slots() {
    let (out, _) = run_hosts(5, &[], &["true"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(text(&out.stderr).contains("5 ranks requested"), "{out:?}");
}

/// An ssh-like agent that runs the joined words in a shell with an empty environment, as a
/// remote login would: quoting and the forwarding of HCOMM_* settings must survive it.
fn env_less_agent(tag: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("hcomm-agent-{tag}-{}", std::process::id()));
    std::fs::write(
        &path,
        "#!/bin/sh\nwhile :; do case \"$1\" in -o) shift 2 ;; -*) shift ;; *) break ;; esac; done\n\
         shift\nexec env -i /bin/sh -c \"$*\"\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn agent_gets_quoted_words_and_hcomm_settings_travel_on_stdin() {
    let agent = env_less_agent("quote");
    let out = hcomm()
        .args(["run", "-n", "3", "--hosts", "h1:1,h2:2", "--tag-output"])
        .args([
            "--launcher-exec",
            &format!("{} -o BatchMode=yes", agent.display()),
        ])
        .args([
            "sh",
            "-c",
            "echo \"$HCOMM_FOO|$1|${HCOMM_SECRET:-nosecret}\"",
            "x",
            "a b 'c' $d",
        ])
        .env("HCOMM_FOO", "bar baz")
        .env("HCOMM_SECRET", "must-not-travel-0123456789")
        .stdin(Stdio::null())
        .output()
        .expect("start hcomm");
    let _ = std::fs::remove_file(&agent);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stdout = text(&out.stdout);
    for r in 0..3 {
        assert!(
            stdout.contains(&format!("[{r}] bar baz|a b 'c' $d|nosecret")),
            "{stdout}"
        );
    }
}

#[test]
fn sigterm_to_the_launcher_ends_every_host() {
    let mut child = hcomm()
        .args([
            "run",
            "-n",
            "4",
            "--hosts",
            "localhost:2,127.0.0.1:2",
            "--launcher",
            "fork",
        ])
        .args(["sh", "-c", "echo up; exec sleep 30"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start hcomm");
    // Wait until every rank runs.
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    for _ in 0..4 {
        let mut l = String::new();
        std::io::BufRead::read_line(&mut out, &mut l).unwrap();
    }
    let start = Instant::now();
    // SAFETY: plain syscall on our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143), "{status:?}");
    assert!(start.elapsed() < Duration::from_secs(10));
}

#[test]
fn hostfile_and_single_host_iface() {
    let path = std::env::temp_dir().join(format!("hcomm-hostfile-{}", std::process::id()));
    std::fs::write(
        &path,
        "# two hosts\nlocalhost slots=1\n127.0.0.1 slots=2 # comment\n",
    )
    .unwrap();
    let out = hcomm()
        .args(["run", "-n", "3", "--hostfile", path.to_str().unwrap()])
        .args(["--launcher", "fork", "--tag-output"])
        .args(["sh", "-c", "echo local=$HCOMM_LOCAL_RANK/$HCOMM_LOCAL_SIZE"])
        .stdin(Stdio::null())
        .output()
        .expect("start hcomm");
    let _ = std::fs::remove_file(&path);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stdout = text(&out.stdout);
    for line in ["[0] local=0/1", "[1] local=0/2", "[2] local=1/2"] {
        assert!(stdout.contains(line), "{stdout}");
    }
    // One host with --iface: the rendezvous is on that interface, exported to the ranks.
    let out = hcomm()
        .args(["run", "-n", "2", "--iface", "lo", "--tag-output"])
        .args([
            "sh",
            "-c",
            "echo $HCOMM_SOCKET_IFNAME $HCOMM_URI ${PMIX_RANK:-nopmix}",
        ])
        .env("PMIX_RANK", "3")
        .stdin(Stdio::null())
        .output()
        .expect("start hcomm");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        text(&out.stdout).contains("[1] lo tcp://127.0.0.1:"),
        "{out:?}"
    );
}
