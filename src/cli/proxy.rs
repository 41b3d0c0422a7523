//! `hcomm run` across hosts: the launcher's side ([`run_hosts`]) and the per-host proxy
//! (`hcomm proxy`, hidden; [`proxy`]). The protocol between them is described in the
//! header of [`super::run`].

use std::ffi::OsString;
use std::io::{self, BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use clap::Args;
use hcomm_core::bootstrap::contract;

use super::hosts::{Host, Placement};
use super::run::{
    child_setup, os_error_text, remove_leftover_segments, say, scrub_launcher_env, signal_name,
    RunArgs, Signals, EXIT_CANNOT_START, EXIT_LAUNCHER_ERROR, REPORT_WINDOW,
};

/// How long the launcher waits for rank 0's proxy to report the rendezvous address.
const URI_TIMEOUT: Duration = Duration::from_secs(60);
/// Poll period of the launcher's and the proxy's loops (signals wake them sooner).
const TICK: Duration = Duration::from_millis(50);

/// How the launcher reaches a host.
#[derive(Clone, Debug)]
pub enum Agent {
    /// Run the proxy here (every "host" is this one: for tests).
    Fork,
    /// An ssh-like program: `WORDS... HOST COMMAND...`, the command's words joined by the
    /// remote side and run by a shell (so each is quoted here).
    Exec(Vec<String>),
    /// `srun` inside a Slurm allocation, one step per host.
    Srun,
}

/// Arguments of the hidden `hcomm proxy` (the launcher writes them; not for users).
#[derive(Debug, Args)]
pub struct ProxyArgs {
    #[arg(long)]
    pub job: String,
    #[arg(long)]
    pub size: usize,
    #[arg(long)]
    pub first: usize,
    #[arg(long)]
    pub count: usize,
    #[arg(long)]
    pub host: String,
    /// This proxy runs rank 0: bind the rendezvous listener and report it.
    #[arg(long)]
    pub root: bool,
    #[arg(long)]
    pub iface: Option<String>,
    #[arg(long)]
    pub wdir: Option<OsString>,
    /// Seconds between SIGTERM and SIGKILL when the launcher is lost.
    #[arg(long, default_value = "3")]
    pub grace: f64,
    #[arg(required = true, num_args = 1.., trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<OsString>,
}

/// The launcher's `HCOMM_*` settings (not the secret ones), as `env <hex>` lines for the
/// proxies: a remote shell does not get the launcher's environment.
fn forwarded_env() -> Vec<String> {
    use std::os::unix::ffi::OsStrExt;
    let skip = [
        hcomm_core::auth::ENV_SECRET,
        hcomm_core::auth::ENV_SECRET_FD,
        hcomm_core::auth::ENV_SECRET_FILE,
        contract::ENV_RANK,
        contract::ENV_SIZE,
        contract::ENV_LOCAL_RANK,
        contract::ENV_LOCAL_SIZE,
        contract::ENV_URI,
        contract::ENV_JOB_ID,
        contract::ENV_BOOTSTRAP_FD,
    ];
    std::env::vars_os()
        .filter(|(k, _)| {
            k.as_bytes().starts_with(b"HCOMM_")
                && !skip.iter().any(|s| k.as_bytes() == s.as_bytes())
        })
        .map(|(k, v)| {
            let mut kv = k.as_bytes().to_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            let hex: String = kv.iter().map(|b| format!("{b:02x}")).collect();
            format!("env {hex}\n")
        })
        .collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Quotes `w` for a POSIX shell.
pub fn shell_quote(w: &str) -> String {
    if !w.is_empty()
        && w.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b))
    {
        return w.to_string();
    }
    format!("'{}'", w.replace('\'', "'\\''"))
}

// ---------------------------------------------------------------------------------------
// The launcher's side.

enum Event {
    Uri(String),
    Exit {
        host: usize,
        rank: usize,
        pid: String,
        code: i32,
        what: String,
    },
    /// The proxy's stdout reached end of file.
    Gone(usize),
}

struct ProxyConn {
    host: String,
    pid: libc::pid_t,
    stdin: Option<ChildStdin>,
    count: usize,
    reported: usize,
    gone: bool,
    reaped: Option<i32>,
}

impl ProxyConn {
    fn send(&mut self, line: &str) {
        if let Some(s) = &mut self.stdin {
            if s.write_all(line.as_bytes())
                .and_then(|()| s.flush())
                .is_err()
            {
                self.stdin = None;
            }
        }
    }
}

fn proxy_words(
    args: &RunArgs,
    hosts: &[Host],
    p: &Placement,
    job: &str,
    proxy_path: &str,
    wdir: &str,
) -> Vec<String> {
    let mut w = vec![
        proxy_path.to_string(),
        "proxy".into(),
        "--job".into(),
        job.into(),
        "--size".into(),
        args.nranks.to_string(),
        "--first".into(),
        p.first.to_string(),
        "--count".into(),
        p.count.to_string(),
        "--host".into(),
        hosts[p.host].name.clone(),
        "--grace".into(),
        args.timeout_kill_secs.as_secs_f64().to_string(),
        "--wdir".into(),
        wdir.into(),
    ];
    if p.first == 0 {
        w.push("--root".into());
    }
    if let Some(i) = &args.iface {
        w.push("--iface".into());
        w.push(i.clone());
    }
    w.push("--".into());
    w.extend(
        args.command
            .iter()
            .map(|a| a.to_string_lossy().into_owned()),
    );
    w
}

/// Runs the job on `hosts` through one proxy per host; returns the exit status.
pub fn run_hosts(args: &RunArgs, hosts: &[Host], agent: Agent, signals: &Signals) -> i32 {
    let placements = match super::hosts::place(hosts, args.nranks) {
        Ok(p) => p,
        Err(e) => {
            say(&e);
            return EXIT_LAUNCHER_ERROR;
        }
    };
    let proxy_path = match &args.proxy_path {
        Some(p) => p.clone(),
        None => match std::env::current_exe() {
            Ok(p) => p.to_string_lossy().into_owned(),
            Err(e) => {
                say(&format!("cannot find the hcomm binary: {e}"));
                return EXIT_LAUNCHER_ERROR;
            }
        },
    };
    let wdir = std::env::current_dir()
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "/".into());
    let job_id = super::run::new_job_id();
    let secret = match hcomm_core::auth::Secret::random("the launcher") {
        Ok(s) => s,
        Err(e) => {
            say(&format!("cannot make the job secret: {e}"));
            return EXIT_LAUNCHER_ERROR;
        }
    };
    let env_lines = forwarded_env();
    let (tx, rx) = mpsc::channel::<Event>();
    let mut conns: Vec<ProxyConn> = Vec::new();
    let mut readers = Vec::new();
    let mut status: Option<i32> = None;
    for (i, p) in placements.iter().enumerate() {
        let host = &hosts[p.host].name;
        let words = proxy_words(args, hosts, p, &job_id, &proxy_path, &wdir);
        let mut cmd = match &agent {
            Agent::Fork => {
                let mut c = Command::new(&words[0]);
                c.args(&words[1..]);
                c
            }
            Agent::Exec(exec) => {
                let mut c = Command::new(&exec[0]);
                c.args(&exec[1..]).arg(host);
                c.args(words.iter().map(|w| shell_quote(w)));
                c
            }
            Agent::Srun => {
                let mut c = Command::new("srun");
                c.args([
                    "--ntasks-per-node=1",
                    "-N",
                    "1",
                    "-n",
                    "1",
                    "--mpi=none",
                    "--input=all",
                    "-w",
                    host,
                ]);
                c.args(&words);
                c
            }
        };
        if let Some(iface) = &args.iface {
            cmd.env("HCOMM_SOCKET_IFNAME", iface);
        }
        // Own group: a terminal's Ctrl-C reaches the launcher only, which forwards it.
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .process_group(0);
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                say(&format!(
                    "cannot start the proxy for host {host}: {}",
                    os_error_text(&e)
                ));
                status = Some(EXIT_CANNOT_START);
                break;
            }
        };
        let mut conn = ProxyConn {
            host: host.clone(),
            pid: child.id() as libc::pid_t,
            stdin: child.stdin.take(),
            count: p.count,
            reported: 0,
            gone: false,
            reaped: None,
        };
        // The secret goes over the agent's stdin, never a command line or environment.
        let mut first = b"secret ".to_vec();
        first.extend_from_slice(secret.text());
        first.push(b'\n');
        conn.send(&String::from_utf8_lossy(&first));
        for line in &env_lines {
            conn.send(line);
        }
        conn.send("start\n");
        let out = child.stdout.take().expect("piped stdout");
        let tx = tx.clone();
        let tag = args.tag_output;
        readers.push(std::thread::spawn(move || read_proxy(out, i, tag, tx)));
        conns.push(conn);
    }
    drop(tx);
    drop(secret);

    let started = Instant::now();
    let mut uri_sent = false;
    let mut report_until: Option<Instant> = None;
    let mut kill_at: Option<Instant> = None;
    let mut killed = false;
    let mut gave_up = false;
    let mut interrupts = 0;
    let grace = args.timeout_kill_secs;

    let terminate = |conns: &mut Vec<ProxyConn>, kill_at: &mut Option<Instant>| {
        if kill_at.is_some() {
            return;
        }
        let live: usize = conns
            .iter()
            .filter(|c| !c.gone)
            .map(|c| c.count - c.reported)
            .sum();
        if live > 0 {
            say(&format!(
                "terminating the remaining {}",
                super::run::ranks_word(live)
            ));
        }
        for c in conns.iter_mut() {
            c.send("term\n");
        }
        *kill_at = Some(Instant::now() + grace);
    };

    loop {
        // Events from the proxies.
        let mut events = Vec::new();
        if let Ok(ev) = rx.recv_timeout(TICK) {
            events.push(ev);
            events.extend(rx.try_iter());
        }
        for ev in events {
            match ev {
                Event::Uri(uri) => {
                    if !uri_sent {
                        uri_sent = true;
                        for c in conns.iter_mut() {
                            c.send(&format!("uri {uri}\n"));
                        }
                    }
                }
                Event::Exit {
                    host,
                    rank,
                    pid,
                    code,
                    what,
                } => {
                    conns[host].reported += 1;
                    if code != 0 && status.is_none() {
                        say(&format!(
                            "rank {rank} (pid {pid} on {}) {what}",
                            conns[host].host
                        ));
                        status = Some(code);
                        report_until = Some(Instant::now() + REPORT_WINDOW);
                    }
                }
                Event::Gone(h) => {
                    conns[h].gone = true;
                    let st = reap_blocking(conns[h].pid);
                    conns[h].reaped = Some(st);
                    let missing = conns[h].count - conns[h].reported.min(conns[h].count);
                    if missing > 0 && status.is_none() {
                        say(&format!(
                            "lost host {}: its proxy ended ({}) with {} unaccounted for",
                            conns[h].host,
                            describe_status(st),
                            super::run::ranks_word(missing)
                        ));
                        status = Some(EXIT_LAUNCHER_ERROR);
                        report_until = Some(Instant::now());
                    }
                }
            }
        }
        if conns.iter().all(|c| c.gone) {
            break;
        }
        let now = Instant::now();
        if !uri_sent && status.is_none() && now - started > URI_TIMEOUT {
            say(&format!(
                "the proxy on {} did not report the rendezvous address within {} s",
                conns.first().map(|c| c.host.as_str()).unwrap_or("?"),
                URI_TIMEOUT.as_secs()
            ));
            status = Some(EXIT_LAUNCHER_ERROR);
        }
        if status.is_some() {
            match report_until {
                Some(t) if now < t => {}
                _ => terminate(&mut conns, &mut kill_at),
            }
        }
        if let (Some(at), false) = (kill_at, killed) {
            if now >= at {
                say("ranks still running after the grace period, sending SIGKILL");
                killed = true;
                conns.iter_mut().for_each(|c| c.send("kill\n"));
            }
        }
        if let (Some(at), true) = (kill_at, killed) {
            // Proxies that do not end even after SIGKILL to their ranks (a host that
            // hangs): stop waiting for them.
            if now >= at + grace + Duration::from_secs(5) && !gave_up {
                gave_up = true;
                for c in conns.iter_mut().filter(|c| !c.gone) {
                    say(&format!("giving up on host {}", c.host));
                    // SAFETY: plain syscall on our own child's group.
                    unsafe { libc::killpg(c.pid, libc::SIGKILL) };
                }
            }
        }
        match signals.wait(Duration::ZERO) {
            None | Some(libc::SIGCHLD) | Some(libc::SIGCONT) | Some(libc::SIGTSTP) => {}
            Some(sig) => {
                interrupts += 1;
                if status.is_none() {
                    say(&format!("received {}", signal_name(sig)));
                }
                status.get_or_insert(128 + sig);
                if interrupts > 1 && !killed {
                    say("sending SIGKILL");
                    killed = true;
                    conns.iter_mut().for_each(|c| c.send("kill\n"));
                } else {
                    report_until = None;
                    terminate(&mut conns, &mut kill_at);
                }
            }
        }
    }
    for r in readers {
        let _ = r.join();
    }
    status.unwrap_or(0)
}

fn reap_blocking(pid: libc::pid_t) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut st = 0;
        // SAFETY: waitpid writes into a valid local.
        let r = unsafe { libc::waitpid(pid, &mut st, libc::WNOHANG) };
        if r == pid {
            return st;
        }
        if r < 0 || Instant::now() > deadline {
            return 0;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn describe_status(st: i32) -> String {
    if libc::WIFSIGNALED(st) {
        let s = libc::WTERMSIG(st);
        format!("killed by signal {s} ({})", signal_name(s))
    } else {
        format!("exit status {}", libc::WEXITSTATUS(st))
    }
}

/// Reads a proxy's framed stdout: `O <rank> <line>`, `E <rank> <line>`, `U <uri>`,
/// `X <rank> <pid> <code> <text>`. Anything else (an agent's own chatter) goes to stderr.
fn read_proxy(out: impl io::Read, host: usize, tag: bool, tx: mpsc::Sender<Event>) {
    let mut r = BufReader::with_capacity(64 * 1024, out);
    let mut line = Vec::with_capacity(256);
    loop {
        line.clear();
        match r.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let body = line.strip_suffix(b"\n").unwrap_or(&line);
        let (kind, rest) = match body.split_first() {
            Some((k, rest)) if rest.first() == Some(&b' ') => (*k, &rest[1..]),
            _ => (0, body),
        };
        match kind {
            b'O' | b'E' => {
                let (rank, text) = split_word(rest);
                let mut buf = Vec::with_capacity(text.len() + 16);
                if tag {
                    buf.extend_from_slice(b"[");
                    buf.extend_from_slice(rank);
                    buf.extend_from_slice(b"] ");
                }
                buf.extend_from_slice(text);
                buf.push(b'\n');
                if kind == b'O' {
                    let mut o = io::stdout().lock();
                    let _ = o.write_all(&buf).and_then(|()| o.flush());
                } else {
                    let _ = io::stderr().lock().write_all(&buf);
                }
            }
            b'U' => {
                let _ = tx.send(Event::Uri(String::from_utf8_lossy(rest).into()));
            }
            b'X' => {
                let text = String::from_utf8_lossy(rest).into_owned();
                let mut w = text.splitn(4, ' ');
                let rank = w.next().and_then(|x| x.parse().ok());
                let pid = w.next().unwrap_or("?").to_string();
                let code = w.next().and_then(|x| x.parse().ok());
                let what = w.next().unwrap_or("").to_string();
                if let (Some(rank), Some(code)) = (rank, code) {
                    let _ = tx.send(Event::Exit {
                        host,
                        rank,
                        pid,
                        code,
                        what,
                    });
                }
            }
            _ => {
                let mut b = body.to_vec();
                b.push(b'\n');
                let _ = io::stderr().lock().write_all(&b);
            }
        }
    }
    let _ = tx.send(Event::Gone(host));
}

fn split_word(b: &[u8]) -> (&[u8], &[u8]) {
    match b.iter().position(|&c| c == b' ') {
        Some(i) => (&b[..i], &b[i + 1..]),
        None => (b, &[]),
    }
}

// ---------------------------------------------------------------------------------------
// The proxy.

/// Writes one framed line to the proxy's stdout, whole.
fn emit(line: &[u8]) {
    let mut o = io::stdout().lock();
    let _ = o.write_all(line).and_then(|()| o.flush());
}

/// `hcomm proxy`: starts this host's ranks and relays their output, exits and signals.
pub fn proxy(args: ProxyArgs) -> i32 {
    let signals = match Signals::block() {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "hcomm proxy on {}: signals: {}",
                args.host,
                os_error_text(&e)
            );
            return EXIT_LAUNCHER_ERROR;
        }
    };
    let host = args.host.clone();
    let fail = |msg: String| {
        eprintln!("hcomm proxy on {host}: {msg}");
        EXIT_LAUNCHER_ERROR
    };
    if let Some(d) = &args.wdir {
        if let Err(e) = std::env::set_current_dir(d) {
            return fail(format!(
                "cannot change to {}: {}",
                d.to_string_lossy(),
                os_error_text(&e)
            ));
        }
    }
    // stdin: `secret <text>` first, then (other than rank 0's proxy) `uri <uri>`.
    let stdin = io::stdin();
    let mut lines = stdin.lock();
    let mut read_line = || -> Option<String> {
        let mut l = String::new();
        match lines.read_line(&mut l) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(l.trim_end_matches('\n').to_string()),
        }
    };
    let Some(secret_line) = read_line() else {
        return fail("no job secret on stdin".into());
    };
    let Some(secret_text) = secret_line.strip_prefix("secret ") else {
        return fail("no job secret on stdin".into());
    };
    let secret = match hcomm_core::auth::Secret::from_text(secret_text.as_bytes(), "the launcher")
        .and_then(|s| hcomm_core::auth::SecretFd::with_secret(&s))
    {
        Ok(s) => s,
        Err(e) => return fail(format!("job secret: {e}")),
    };
    drop(secret_line);
    // `env <hex of NAME=VALUE>` lines, then `start`.
    loop {
        match read_line() {
            Some(l) if l == "start" => break,
            Some(l) => {
                if let Some((k, v)) = l.strip_prefix("env ").and_then(unhex).and_then(|kv| {
                    let i = kv.iter().position(|&b| b == b'=')?;
                    Some((kv[..i].to_vec(), kv[i + 1..].to_vec()))
                }) {
                    use std::os::unix::ffi::OsStringExt;
                    // Single-threaded still: nothing else reads the environment.
                    std::env::set_var(OsString::from_vec(k), OsString::from_vec(v));
                }
            }
            None => return fail("the launcher went away before the job started".into()),
        }
    }
    if let Some(i) = &args.iface {
        // Still single-threaded: the rendezvous choice below and the ranks read it.
        std::env::set_var("HCOMM_SOCKET_IFNAME", i);
    }
    let mut listener: Option<TcpListener> = None;
    let uri = if args.root {
        let (ip, ifname) = match hcomm_core::bootstrap::net::listen_address() {
            Ok(a) => a,
            Err(e) => return fail(format!("cannot choose the rendezvous address: {e}")),
        };
        let l = match TcpListener::bind((hcomm_core::bootstrap::net::bind_ip(ip), 0)) {
            Ok(l) => l,
            Err(e) => {
                return fail(format!(
                    "cannot listen on {ip} ({ifname}): {}",
                    os_error_text(&e)
                ))
            }
        };
        let port = match l.local_addr() {
            Ok(a) => a.port(),
            Err(e) => return fail(format!("rendezvous socket: {e}")),
        };
        listener = Some(l);
        let uri = format!("tcp://{}", SocketAddr::new(ip, port));
        emit(format!("U {uri}\n").as_bytes());
        uri
    } else {
        loop {
            match read_line() {
                Some(l) if l.starts_with("uri ") => break l[4..].to_string(),
                Some(l) if l == "term" || l == "kill" => return 0,
                Some(_) => {}
                None => return fail("the launcher went away before the job started".into()),
            }
        }
    };
    drop(lines);

    // SAFETY: getpid has no preconditions.
    let proxy_pid = unsafe { libc::getpid() };
    let size = args.size.to_string();
    let local_size = args.count.to_string();
    let (ev_tx, ev_rx) = mpsc::channel::<()>();
    let mut pids: Vec<(libc::pid_t, usize, bool)> = Vec::new();
    let mut pgid: Option<libc::pid_t> = None;
    let mut readers = Vec::new();
    let mut start_failed = false;
    for local in 0..args.count {
        let rank = args.first + local;
        let mut cmd = Command::new(&args.command[0]);
        cmd.args(&args.command[1..])
            .env(contract::ENV_RANK, rank.to_string())
            .env(contract::ENV_SIZE, &size)
            .env(contract::ENV_LOCAL_RANK, local.to_string())
            .env(contract::ENV_LOCAL_SIZE, &local_size)
            .env(contract::ENV_URI, &uri)
            .env(contract::ENV_JOB_ID, &args.job)
            .env(hcomm_core::auth::ENV_SECRET_FD, secret.raw().to_string())
            .env_remove(hcomm_core::auth::ENV_SECRET_FILE)
            .env_remove(hcomm_core::auth::ENV_SECRET)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(pgid.unwrap_or(0));
        scrub_launcher_env(&mut cmd);
        let inherit = match (&listener, rank) {
            (Some(l), 0) => {
                cmd.env(contract::ENV_BOOTSTRAP_FD, l.as_raw_fd().to_string());
                Some(l.as_raw_fd())
            }
            _ => {
                cmd.env_remove(contract::ENV_BOOTSTRAP_FD);
                None
            }
        };
        // SAFETY: see run.rs: child_setup is async-signal-safe and allocates nothing.
        unsafe {
            cmd.pre_exec(move || child_setup(proxy_pid, inherit));
        }
        match cmd.spawn() {
            Ok(mut child) => {
                let pid = child.id() as libc::pid_t;
                pgid.get_or_insert(pid);
                pids.push((pid, rank, false));
                for (src, kind) in [
                    (
                        child
                            .stdout
                            .take()
                            .map(|s| Box::new(s) as Box<dyn io::Read + Send>),
                        b'O',
                    ),
                    (
                        child
                            .stderr
                            .take()
                            .map(|s| Box::new(s) as Box<dyn io::Read + Send>),
                        b'E',
                    ),
                ] {
                    if let Some(src) = src {
                        let done = ev_tx.clone();
                        readers.push(std::thread::spawn(move || {
                            relay(src, rank, kind);
                            let _ = done.send(());
                        }));
                    }
                }
            }
            Err(e) => {
                let what = format!("could not be started: {}", os_error_text(&e));
                emit(format!("X {rank} - {EXIT_CANNOT_START} {what}\n").as_bytes());
                start_failed = true;
                break;
            }
        }
    }
    drop(secret);
    drop(listener);
    drop(ev_tx);

    // Commands from the launcher (after the handshake): `term`, `kill`, `cont`.
    let (cmd_tx, cmd_rx) = mpsc::channel::<Option<String>>();
    std::thread::spawn(move || {
        let stdin = io::stdin();
        for l in stdin.lock().lines() {
            match l {
                Ok(l) => {
                    if cmd_tx.send(Some(l)).is_err() {
                        return;
                    }
                }
                Err(_) => break,
            }
        }
        let _ = cmd_tx.send(None);
    });

    let grace = Duration::try_from_secs_f64(args.grace).unwrap_or(Duration::from_secs(3));
    let mut kill_at: Option<Instant> = None;
    let signal_group = |pids: &Vec<(libc::pid_t, usize, bool)>, sig: libc::c_int| {
        if let Some(g) = pgid {
            if pids.iter().any(|p| !p.2) {
                // SAFETY: plain syscall on our ranks' group, kept alive by an unreaped rank.
                unsafe { libc::killpg(g, sig) };
            }
        }
    };
    if start_failed {
        signal_group(&pids, libc::SIGKILL);
    }
    loop {
        // Reap.
        loop {
            let mut st = 0;
            // SAFETY: waitpid writes into a valid local.
            let r = unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG) };
            if r <= 0 {
                break;
            }
            if let Some(p) = pids.iter_mut().find(|p| p.0 == r && !p.2) {
                let (code, what) = if libc::WIFEXITED(st) {
                    let c = libc::WEXITSTATUS(st);
                    (c, format!("exited with status {c}"))
                } else if libc::WIFSIGNALED(st) {
                    let s = libc::WTERMSIG(st);
                    (
                        128 + s,
                        format!("was killed by signal {s} ({})", signal_name(s)),
                    )
                } else {
                    continue;
                };
                p.2 = true;
                emit(format!("X {} {r} {code} {what}\n", p.1).as_bytes());
            }
        }
        if pids.iter().all(|p| p.2) {
            break;
        }
        while let Ok(c) = cmd_rx.try_recv() {
            match c.as_deref() {
                Some("term") | None => {
                    signal_group(&pids, libc::SIGCONT);
                    signal_group(&pids, libc::SIGTERM);
                    kill_at.get_or_insert(Instant::now() + grace);
                }
                Some("kill") => signal_group(&pids, libc::SIGKILL),
                Some("cont") => signal_group(&pids, libc::SIGCONT),
                Some(_) => {}
            }
        }
        if let Some(at) = kill_at {
            if Instant::now() >= at {
                signal_group(&pids, libc::SIGKILL);
            }
        }
        match signals.wait(TICK) {
            None | Some(libc::SIGCHLD) | Some(libc::SIGCONT) | Some(libc::SIGTSTP) => {}
            Some(_) => {
                // The agent's connection was cut (SIGHUP) or we were told to stop.
                signal_group(&pids, libc::SIGCONT);
                signal_group(&pids, libc::SIGTERM);
                kill_at.get_or_insert(Instant::now() + grace);
            }
        }
    }
    // Output of the ranks: wait for end of file, not forever.
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut left = readers.len();
    while left > 0 {
        let now = Instant::now();
        if now >= deadline || ev_rx.recv_timeout(deadline - now).is_err() {
            break;
        }
        left -= 1;
    }
    remove_leftover_segments(&args.job);
    0
}

/// Relays one rank stream as framed lines `O|E <rank> <line>`.
fn relay(src: impl io::Read, rank: usize, kind: u8) {
    let mut r = BufReader::with_capacity(64 * 1024, src);
    let mut line = Vec::with_capacity(256);
    let prefix = format!("{} {rank} ", kind as char);
    loop {
        line.clear();
        line.extend_from_slice(prefix.as_bytes());
        match r.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if !line.ends_with(b"\n") {
            line.push(b'\n');
        }
        emit(&line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_for_a_shell() {
        assert_eq!(shell_quote("abc/d-e.f"), "abc/d-e.f");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("$HOME;x"), "'$HOME;x'");
    }

    #[test]
    fn unhexes() {
        assert_eq!(unhex("413d62").unwrap(), b"A=b");
        assert!(unhex("4").is_none());
        assert!(unhex("zz").is_none());
    }
}
