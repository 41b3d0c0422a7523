//! `hcomm info` and `hcomm doctor`, run as a user would.

use std::process::{Command, Output};

fn hcomm(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hcomm"));
    c.args(args).env_remove("HCOMM_URI");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("start hcomm")
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

#[test]
fn info_lists_every_variable_with_default_and_value() {
    let o = hcomm(&["info"], &[("HCOMM_SMALL_BYTES", "32K")]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.starts_with("hcomm "), "{out}");
    for p in hcomm_core::param::ALL {
        assert!(out.contains(p.name), "{} missing:\n{out}", p.name);
        assert!(out.contains(p.help), "{}'s help missing", p.name);
    }
    assert!(out.contains("32K  (set; default 16K)"), "{out}");
    let env = text(&hcomm(&["info", "--env"], &[("HCOMM_SMALL_BYTES", "32K")]));
    assert!(env.lines().any(|l| l == "HCOMM_SMALL_BYTES=32K"), "{env}");
}

/// Every line of the report is `pass`, `warn` or `FAIL` + a check name; the exit status is 1
/// exactly when a line says FAIL.
fn check_report(o: &Output) -> Vec<(String, String)> {
    let out = text(o);
    let lines: Vec<(String, String)> = out
        .lines()
        .filter(|l| l.starts_with("pass ") || l.starts_with("warn ") || l.starts_with("FAIL "))
        .map(|l| {
            let mut it = l.split_whitespace();
            (
                it.next().unwrap().to_string(),
                it.next().unwrap().to_string(),
            )
        })
        .collect();
    let failed = lines.iter().any(|(s, _)| s == "FAIL");
    assert_eq!(o.status.code(), Some(i32::from(failed)), "{out}");
    lines
}

#[test]
fn doctor_checks_everything_and_exits_by_failures() {
    let o = hcomm(&["doctor", "-n", "4"], &[]);
    let lines = check_report(&o);
    for what in [
        "libraries",
        "cores",
        "/dev/shm",
        "open",
        "locked",
        "single-copy",
        "network",
        "host",
        "CUDA",
    ] {
        assert!(
            lines.iter().any(|(_, w)| w == what),
            "no {what} check:\n{}",
            text(&o)
        );
    }
}

#[test]
fn doctor_fails_on_a_malformed_rendezvous() {
    let o = hcomm(&["doctor"], &[("HCOMM_URI", "udp://nowhere")]);
    let lines = check_report(&o);
    assert!(
        lines.iter().any(|(s, w)| s == "FAIL" && w == "rendezvous"),
        "{}",
        text(&o)
    );
    assert!(text(&o).contains("expected tcp://HOST:PORT or file:///DIR"));
}

#[test]
fn selftest_checks_every_pair_and_collective() {
    for (transport, expect) in [("auto", "shm"), ("tcp", "tcp")] {
        let o = hcomm(&["selftest", "-n", "3"], &[("HCOMM_TRANSPORT", transport)]);
        let out = text(&o);
        assert!(o.status.success(), "{out}");
        let pairs: Vec<&str> = out
            .lines()
            .filter(|l| l.split_whitespace().nth(2) == Some("OK") && l.contains(expect))
            .collect();
        assert_eq!(pairs.len(), 3, "3 pairs over {expect} expected:\n{out}");
        for c in [
            "MPI_Allreduce",
            "MPI_Bcast",
            "MPI_Reduce_scatter_block",
            "MPI_Barrier",
        ] {
            assert!(
                out.lines().any(|l| l.starts_with(c) && l.ends_with("OK")),
                "{c}:\n{out}"
            );
        }
        assert!(out.contains("hcomm selftest: all passed"), "{out}");
    }
}
