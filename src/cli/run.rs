//! `hcomm run`: start N ranks of a program on this host (or across hosts, see the last
//! section), wait for them, and turn their fate into one exit status — the equivalent of
//! `mpirun`.
//!
//! # Environment contract
//!
//! Each rank gets the variables of [`hcomm_core::bootstrap::contract`]: `HCOMM_RANK`,
//! `HCOMM_SIZE`, `HCOMM_LOCAL_RANK` (= rank), `HCOMM_LOCAL_SIZE` (= N), `HCOMM_URI`
//! (`tcp://127.0.0.1:<port>`) and `HCOMM_JOB_ID` (12 hex digits). The launcher binds the
//! rendezvous listener itself (port 0, so no race for a free port) and rank 0 alone
//! inherits it: its descriptor number is in `HCOMM_BOOTSTRAP_FD` (FD_CLOEXEC is cleared
//! in rank 0's child only; every other rank has the variable removed). The launcher
//! closes its own copy once every rank is started. Every rank also inherits a sealed memfd
//! holding a fresh random job secret, its number in `HCOMM_SECRET_FD` (any `HCOMM_SECRET` or
//! `HCOMM_SECRET_FILE` of the launcher's environment is removed); the ranks authenticate every
//! TCP connection with it (`hcomm_core::auth`), and the launcher closes its copy once every rank
//! is started.
//!
//! # Process group and parent-death signal
//!
//! All ranks run in one new process group whose id is the first rank's pid, so one
//! `killpg` reaches every rank and anything a rank started (a rank that moves itself to
//! another group is out of reach). The launcher only signals the group while at least
//! one rank is still unreaped: a zombie keeps the group id reserved, so the id cannot have
//! been recycled by an unrelated job. Each rank also sets `PR_SET_PDEATHSIG = SIGKILL`
//! before `exec` and then checks `getppid()`, closing the window where the launcher died
//! between `fork` and `prctl`: if the launcher is killed outright (even with SIGKILL),
//! its ranks die with it. (Only the ranks themselves get that: their own children are
//! reached by the group signals.)
//!
//! Because the ranks are in a background group, a terminal's Ctrl-C reaches only the
//! launcher, which forwards it (below). For the same reason a rank may not read the
//! terminal: when the launcher's stdin is a terminal, rank 0's stdin is a pipe that a
//! launcher thread feeds from it (as `mpirun` does); otherwise rank 0 inherits stdin
//! directly. Every other rank's stdin is `/dev/null`.
//!
//! # Output
//!
//! By default ranks write straight to the launcher's stdout and stderr. With
//! `--tag-output` each rank's stdout and stderr are pipes read by launcher threads that
//! forward them line by line, prefixed with `[<rank>] ` (Open MPI writes
//! `[1,<rank>]<stdout>:`; hcomm keeps it short), each line written whole under the
//! stream's lock so that lines of different ranks never mix. A last line without a
//! newline gets one.
//!
//! # Signals and waiting
//!
//! Before any thread or child exists the launcher blocks SIGCHLD, SIGINT, SIGTERM,
//! SIGHUP, SIGTSTP, SIGCONT (and SIGTTIN, see below); every thread inherits that mask,
//! and children get an empty mask back before `exec`. The main thread then loops:
//! reap every exited rank with `waitpid(WNOHANG)`, then `sigtimedwait` for the next
//! signal with a short timeout. A signal is never lost and no handler runs: a child that
//! exits between the reap and the wait leaves SIGCHLD pending, so the wait returns at
//! once. SIGTTIN stays blocked so that the stdin thread's read of a terminal the launcher
//! no longer owns fails with EIO (rank 0 then sees end of file) instead of stopping the
//! launcher.
//!
//! - A rank that exits non-zero or is killed by a signal ends the job: the launcher
//!   prints `hcomm run: rank R (pid P) exited with status S` (or `was killed by signal N
//!   (SIGNAME)`), gives the other ranks one second to notice the failure and report it
//!   themselves (hcomm's liveness checks name the lost rank; ranks that all exit end the
//!   wait sooner), then sends SIGCONT (so stopped ranks can act on what follows) and
//!   SIGTERM to the group, and SIGKILL once `--timeout-kill-secs` (default 3 s) have
//!   passed with ranks still alive.
//! - SIGINT, SIGTERM or SIGHUP to the launcher are forwarded the same way (SIGCONT,
//!   SIGTERM, SIGKILL after the grace period); a second one sends SIGKILL at once.
//! - SIGTSTP (Ctrl-Z) is forwarded to the group before the launcher stops itself; SIGCONT
//!   to the launcher is forwarded to the group.
//!
//! # Exit status
//!
//! 0 if every rank exits 0. Otherwise the status of the first event that ended the job:
//! the first failing rank's exit code, or 128 + signal number for a rank killed by a
//! signal; 128 + signal number when the launcher itself was interrupted (130 for
//! Ctrl-C); 127 when the program cannot be started (any ranks already started are ended
//! first). Ranks that die because the launcher ended them are not reported.
//!
//! # Cleanup
//!
//! When the job is over, whatever matches `/dev/shm/hcomm-<job>-*` is removed: ranks
//! unlink their segments as soon as every peer has mapped them, this catches a rank
//! killed at the wrong moment.
//!
//! # Across hosts
//!
//! With `--hosts h1:4,h2:4` (a host without `:N` has one slot), `--hostfile FILE` (`host
//! slots=N` lines, `#` comments), or inside a Slurm allocation (`SLURM_JOB_NODELIST`, expanded
//! by [`super::hosts::expand_nodelist`], each node taking ceil(N / nodes) ranks) the job runs
//! across hosts ([`super::proxy`]); without them everything above holds unchanged. Ranks fill
//! the hosts' slots in order (`mpirun --map-by slot`); more ranks than slots is an error.
//!
//! **One proxy per host.** The launcher starts `hcomm proxy` (a hidden subcommand of this
//! binary, at this binary's absolute path on every host, or `--proxy-path`) once per host:
//! through `ssh HOST WORDS...` by default, `--launcher-exec CMD` (an ssh-like program called
//! as `CMD [its own words] HOST WORDS...`; like ssh, the remote side joins the words with
//! spaces and runs them in a shell, so each word is shell-quoted), `srun -N 1 -n 1
//! --ntasks-per-node=1 --mpi=none --input=all -w HOST` inside Slurm (one step per host, so
//! that each proxy has its own stdin and stdout), or `--launcher fork` (the proxy runs here:
//! every "host" is this machine; for tests). Each agent runs in its own process group with
//! stdin and stdout piped to the launcher and stderr inherited. The proxy changes to the
//! launcher's working directory (`--wdir`) and forks its ranks (with `HCOMM_LOCAL_RANK` /
//! `HCOMM_LOCAL_SIZE` counting that host's ranks) exactly as above: one process group,
//! `PR_SET_PDEATHSIG` against the proxy, stdin from `/dev/null` for every rank.
//!
//! **Launcher → proxy (the agent's stdin), one line each:** `secret <text>` first (the job
//! secret never appears on a command line or in an environment: the proxy seals it in a memfd
//! and hands it to its ranks as `HCOMM_SECRET_FD`), then `env <hex of NAME=VALUE>` for each
//! of the launcher's `HCOMM_*` settings (a remote shell does not get the launcher's
//! environment; the secret and contract variables are not sent), then `start`. A proxy
//! without rank 0 then waits for `uri <uri>`. Afterwards: `term` (SIGCONT + SIGTERM to its
//! ranks' group), `kill` (SIGKILL). End of stdin (the launcher or the connection died) and
//! SIGHUP/SIGTERM/SIGINT to the proxy act as `term`, followed by SIGKILL after the grace
//! period (`--grace`, from `--timeout-kill-secs`).
//!
//! **Proxy → launcher (the agent's stdout), one line each:** `U tcp://addr:port` (rank 0's
//! proxy only), `O <rank> <line>` and `E <rank> <line>` (a line the rank wrote to stdout or
//! stderr; the launcher prints it to its own stdout or stderr, prefixed `[rank] ` with
//! `--tag-output`; a last line without a newline gets one, and output is always line-based
//! across hosts), `X <rank> <pid> <code> <text>` (the rank ended; code as the exit status
//! rules above, text as `exited with status S` / `was killed by signal N (NAME)`). Other
//! lines (an agent's own messages) go to the launcher's stderr. The proxy exits once its
//! ranks are reaped and their output relayed, removing `/dev/shm/hcomm-<job>-*` on its host.
//!
//! **Rendezvous.** Rank 0's proxy binds the listener itself, on the interface that
//! `--iface IFNAME` or `HCOMM_SOCKET_IFNAME` names, else the first non-loopback interface
//! that is up ([`hcomm_core::bootstrap::net`]), port 0; rank 0 inherits it as
//! `HCOMM_BOOTSTRAP_FD` as above, and the proxy reports the address (`U`). The launcher then
//! sends it (`uri`) to the other proxies, and every rank gets it as `HCOMM_URI`. So the port
//! is never raced for, and the address is one of rank 0's host that the others can reach.
//! `--iface` is also exported to every rank as `HCOMM_SOCKET_IFNAME` (as Hydra's `-iface`).
//! On one host, `--iface` makes the launcher's own listener bind that interface's address
//! instead of loopback.
//!
//! **Failures.** The first `X` with a non-zero code ends the job as on one host (`rank R (pid
//! P on HOST) exited with status S`, the report window, then `term` to every proxy and `kill`
//! after the grace period). A proxy whose stdout ends before all of its ranks reported
//! (host down, ssh failed, proxy killed) ends the job with `lost host HOST: its proxy ended
//! (...)`, status 1. SIGINT/SIGTERM/SIGHUP to the launcher become `term` (a second one
//! `kill`) and status 128 + N. If rank 0's proxy does not report the rendezvous address
//! within 60 s the job ends. Proxies that do not end 5 s after `kill` plus the grace period
//! are killed (their agents are). Ctrl-Z (SIGTSTP) and SIGCONT are not forwarded across
//! hosts.
//!
//! **Other launchers' variables.** Every rank, on one host or many, has `PMI_FD`, `PMI_PORT`,
//! `PMI_RANK`, `PMI_SIZE`, `PMI_JOBID`, `PMIX_*`, `OMPI_COMM_WORLD_*`, `SLURM_STEP_ID`,
//! `SLURM_STEP_NUM_TASKS` and `SLURM_PROCID` removed: libhcomm prefers PMIx and PMI over
//! `HCOMM_RANK` and would otherwise join the launcher that started `hcomm run` itself.

use std::ffi::OsString;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::mem::MaybeUninit;
use std::net::{IpAddr, Ipv4Addr, TcpListener};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::Args;
use hcomm_core::bootstrap::contract;

/// Exit status when the program cannot be started (as a shell does).
pub(crate) const EXIT_CANNOT_START: i32 = 127;
/// Exit status for a launcher-side failure (no rendezvous socket, signal setup).
pub(crate) const EXIT_LAUNCHER_ERROR: i32 = 1;
/// Longest sleep of the wait loop: a safety net, signals wake it sooner.
const WAIT_TICK: Duration = Duration::from_millis(500);
/// With --tag-output, how long to wait for output after the last rank exited when no
/// line at all is forwarded (a process the ranks left behind may hold the pipes open).
const OUTPUT_DRAIN_IDLE: Duration = Duration::from_secs(2);
/// After a rank fails, how long the others get to notice (hcomm's liveness checks run every
/// 100 ms) and report the failure themselves before the launcher signals them.
pub(crate) const REPORT_WINDOW: Duration = Duration::from_secs(1);

/// Arguments of `hcomm run`.
#[derive(Debug, Args)]
#[command(
    override_usage = "hcomm run -n N [--tag-output] [--timeout-kill-secs S] [--hosts H1:N,H2:N | --hostfile F] [--launcher ssh|fork] [--launcher-exec CMD] [--iface IF] [--] PROG [ARGS]...",
    after_help = "\
Each rank gets HCOMM_RANK, HCOMM_SIZE, HCOMM_LOCAL_RANK, HCOMM_LOCAL_SIZE, HCOMM_URI and
HCOMM_JOB_ID; rank 0 also gets HCOMM_BOOTSTRAP_FD, an inherited listening socket bound to
HCOMM_URI. Only rank 0 reads stdin. Ranks run in their own process group and die with
the launcher.

When a rank exits non-zero or is killed by a signal, the others get SIGTERM, then SIGKILL
after the grace period. Ctrl-C, SIGTERM and SIGHUP are forwarded the same way.

Exit status: 0 if every rank exits 0; otherwise the first failing rank's exit code, or
128+N for a rank killed by signal N; 128+N when the launcher got signal N (130 for
Ctrl-C); 127 if the program cannot be started."
)]
pub struct RunArgs {
    /// Number of ranks to start (-np N and --np N work too)
    #[arg(short = 'n', long = "np", value_name = "N", value_parser = parse_nranks)]
    pub nranks: usize,

    // Help given as a string: rustdoc would read "[<rank>]" as a link.
    #[arg(
        long,
        help = "Prefix each line a rank writes to stdout or stderr with \"[<rank>] \""
    )]
    pub tag_output: bool,

    /// Seconds between SIGTERM and SIGKILL when ending the ranks (fractions allowed)
    #[arg(long, value_name = "S", default_value = "3", value_parser = parse_grace)]
    pub timeout_kill_secs: Duration,

    /// Hosts to run on, with their slots: h1:4,h2:4 (a host without :N has 1 slot)
    #[arg(long, value_name = "LIST", conflicts_with = "hostfile")]
    pub hosts: Option<String>,

    /// File of hosts, one "host slots=N" a line (# starts a comment)
    #[arg(long, value_name = "FILE")]
    pub hostfile: Option<std::path::PathBuf>,

    /// How to reach the hosts: ssh (the default with hosts) or fork (run every host's
    /// proxy here, for tests)
    #[arg(long, value_name = "ssh|fork", value_parser = ["ssh", "fork"])]
    pub launcher: Option<String>,

    /// ssh-like program called as CMD [OPTIONS] HOST COMMAND... (default: ssh); words
    /// after the first are its options
    #[arg(long, value_name = "CMD")]
    pub launcher_exec: Option<String>,

    /// Network interface of the rendezvous, exported to ranks as HCOMM_SOCKET_IFNAME
    #[arg(long, value_name = "IFNAME")]
    pub iface: Option<String>,

    /// Path of the hcomm binary on the other hosts (default: this one's)
    #[arg(long, value_name = "PATH")]
    pub proxy_path: Option<String>,

    /// Program to run, then its arguments (passed verbatim, even those starting with -)
    // trailing_var_arg: from PROG on, every argument is the program's, `-n` and `--`
    // included. No allow_hyphen_values, so that a mistyped launcher option before PROG
    // is reported as such instead of being taken for the program.
    #[arg(
        value_name = "PROG",
        required = true,
        num_args = 1..,
        trailing_var_arg = true
    )]
    pub command: Vec<OsString>,
}

fn parse_nranks(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "'{s}' is not a valid number of ranks (expected a whole number >= 1)"
        )),
    }
}

fn parse_grace(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !(0.0..=1e9).contains(&secs) {
        return Err(format!("'{s}' is out of range (0 to 1e9 seconds)"));
    }
    Duration::try_from_secs_f64(secs).map_err(|e| format!("'{s}': {e}"))
}

/// Runs the job; returns the launcher's exit status.
pub fn run(args: RunArgs) -> i32 {
    // Must come first: every thread created later inherits the mask.
    let signals = match Signals::block() {
        Ok(s) => s,
        Err(e) => {
            say(&format!(
                "cannot set up signal handling: {}",
                os_error_text(&e)
            ));
            return EXIT_LAUNCHER_ERROR;
        }
    };
    match host_plan(&args) {
        Ok(Some((hosts, agent))) => {
            return super::proxy::run_hosts(&args, &hosts, agent, &signals);
        }
        Ok(None) => {}
        Err(e) => {
            say(&e);
            return EXIT_LAUNCHER_ERROR;
        }
    }
    // --iface on one host: listen there, and the ranks use it too.
    let bind_ip = match &args.iface {
        None => IpAddr::V4(Ipv4Addr::LOCALHOST),
        Some(i) => {
            std::env::set_var("HCOMM_SOCKET_IFNAME", i);
            match hcomm_core::bootstrap::net::listen_address() {
                Ok((ip, _)) => ip,
                Err(e) => {
                    say(&format!("--iface {i}: {e}"));
                    return EXIT_LAUNCHER_ERROR;
                }
            }
        }
    };
    let listener = match TcpListener::bind((bind_ip, 0)).and_then(|l| {
        let port = l.local_addr()?.port();
        Ok((l, port))
    }) {
        Ok(l) => l,
        Err(e) => {
            say(&format!(
                "cannot open the rendezvous socket on {bind_ip}: {}",
                os_error_text(&e)
            ));
            return EXIT_LAUNCHER_ERROR;
        }
    };
    let job_id = new_job_id();
    // The job secret: every rank inherits this memfd (see hcomm_core::auth).
    let secret = match hcomm_core::auth::SecretFd::new() {
        Ok(s) => s,
        Err(e) => {
            say(&format!("cannot make the job secret: {e}"));
            return EXIT_LAUNCHER_ERROR;
        }
    };
    let mut job = Job::new(args.timeout_kill_secs);
    let mut output = OutputForwarding::new();

    spawn_ranks(
        &args,
        bind_ip,
        &listener,
        &job_id,
        &secret,
        &mut job,
        &mut output,
    );
    // Every rank has its copy of the secret.
    drop(secret);
    // Rank 0 has its own copy of the listener (if it started); the launcher's goes now.
    drop(listener);

    job.wait(&signals);
    output.drain();
    remove_leftover_segments(&job_id);
    job.exit_status()
}

/// Variables of other launchers that would make libhcomm join them instead of this job
/// (its detection prefers PMIx and PMI over HCOMM_RANK): removed from every rank's
/// environment, with every `PMIX_*` and `OMPI_COMM_WORLD_*`.
const FOREIGN_LAUNCHER_VARS: &[&str] = &[
    "PMI_FD",
    "PMI_PORT",
    "PMI_RANK",
    "PMI_SIZE",
    "PMI_JOBID",
    "SLURM_STEP_ID",
    "SLURM_STEP_NUM_TASKS",
    "SLURM_PROCID",
];
const FOREIGN_LAUNCHER_PREFIXES: &[&str] = &["PMIX_", "OMPI_COMM_WORLD_"];

/// Removes the variables of [`FOREIGN_LAUNCHER_VARS`] and prefixes from `cmd`'s environment.
pub(crate) fn scrub_launcher_env(cmd: &mut Command) {
    for v in FOREIGN_LAUNCHER_VARS {
        cmd.env_remove(v);
    }
    for (k, _) in std::env::vars_os() {
        let b = k.as_encoded_bytes();
        if FOREIGN_LAUNCHER_PREFIXES
            .iter()
            .any(|p| b.starts_with(p.as_bytes()))
        {
            cmd.env_remove(&k);
        }
    }
}

/// The hosts of a job across hosts and how to reach them; None for the single-host job
/// (no --hosts, no --hostfile, not inside a Slurm allocation).
fn host_plan(
    args: &RunArgs,
) -> Result<Option<(Vec<super::hosts::Host>, super::proxy::Agent)>, String> {
    use super::hosts;
    use super::proxy::Agent;
    let (list, slurm) = if let Some(h) = &args.hosts {
        (
            hosts::parse_host_list(h).map_err(|e| format!("--hosts: {e}"))?,
            false,
        )
    } else if let Some(f) = &args.hostfile {
        let text = std::fs::read_to_string(f)
            .map_err(|e| format!("--hostfile {}: {}", f.display(), os_error_text(&e)))?;
        (
            hosts::parse_hostfile(&text).map_err(|e| format!("{}: {e}", f.display()))?,
            false,
        )
    } else if let Some(nl) = std::env::var("SLURM_JOB_NODELIST")
        .ok()
        .filter(|v| !v.trim().is_empty())
    {
        let names = hosts::expand_nodelist(&nl).map_err(|e| format!("SLURM_JOB_NODELIST: {e}"))?;
        // Block distribution: as many ranks on each node as it takes.
        let per = args.nranks.div_ceil(names.len().max(1)).max(1);
        (
            names
                .into_iter()
                .map(|name| hosts::Host { name, slots: per })
                .collect(),
            true,
        )
    } else {
        return Ok(None);
    };
    let agent = match (args.launcher.as_deref(), &args.launcher_exec) {
        (Some("fork"), _) => Agent::Fork,
        (_, Some(exec)) => {
            let words: Vec<String> = exec.split_whitespace().map(String::from).collect();
            if words.is_empty() {
                return Err("--launcher-exec is empty".into());
            }
            Agent::Exec(words)
        }
        (Some(_), None) => Agent::Exec(vec!["ssh".into()]),
        (None, None) if slurm => Agent::Srun,
        (None, None) => Agent::Exec(vec!["ssh".into()]),
    };
    Ok(Some((list, agent)))
}

/// Starts the ranks one after the other, stopping at the first that cannot be started
/// (`job` then holds status 127, and [`Job::wait`] ends the ranks already started).
fn spawn_ranks(
    args: &RunArgs,
    bind_ip: IpAddr,
    listener: &(TcpListener, u16),
    job_id: &str,
    secret: &hcomm_core::auth::SecretFd,
    job: &mut Job,
    output: &mut OutputForwarding,
) {
    let (listener, port) = listener;
    let boot_fd = listener.as_raw_fd();
    let uri = format!("tcp://{}", std::net::SocketAddr::new(bind_ip, *port));
    let size = args.nranks.to_string();
    // SAFETY: getpid has no preconditions.
    let launcher_pid = unsafe { libc::getpid() };
    // SAFETY: isatty only inspects the descriptor.
    let stdin_is_tty = unsafe { libc::isatty(libc::STDIN_FILENO) } == 1;
    let prog = &args.command[0];

    for rank in 0..args.nranks {
        let mut cmd = Command::new(prog);
        cmd.args(&args.command[1..])
            .env(contract::ENV_RANK, rank.to_string())
            .env(contract::ENV_SIZE, &size)
            .env(contract::ENV_LOCAL_RANK, rank.to_string())
            .env(contract::ENV_LOCAL_SIZE, &size)
            .env(contract::ENV_URI, &uri)
            .env(contract::ENV_JOB_ID, job_id)
            // The launcher's secret wins over any the user's environment names.
            .env(hcomm_core::auth::ENV_SECRET_FD, secret.raw().to_string())
            .env_remove(hcomm_core::auth::ENV_SECRET_FILE)
            .env_remove(hcomm_core::auth::ENV_SECRET)
            // 0: a new group led by this child; then join it.
            .process_group(job.pgid.unwrap_or(0));
        scrub_launcher_env(&mut cmd);
        let inherit_fd = if rank == 0 {
            cmd.env(contract::ENV_BOOTSTRAP_FD, boot_fd.to_string());
            Some(boot_fd)
        } else {
            cmd.env_remove(contract::ENV_BOOTSTRAP_FD);
            None
        };
        cmd.stdin(match (rank, stdin_is_tty) {
            (0, false) => Stdio::inherit(),
            (0, true) => Stdio::piped(),
            _ => Stdio::null(),
        });
        if args.tag_output {
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        }
        // SAFETY: the closure runs in the forked child before exec and calls only
        // async-signal-safe functions (see child_setup); it allocates nothing.
        unsafe {
            cmd.pre_exec(move || child_setup(launcher_pid, inherit_fd));
        }
        match cmd.spawn() {
            Ok(mut child) => {
                // A pid always fits in pid_t.
                let pid = child.id() as libc::pid_t;
                job.pgid.get_or_insert(pid);
                job.ranks.push(Rank { pid, done: false });
                if let Some(stdin) = child.stdin.take() {
                    forward_stdin(stdin);
                }
                if let Some(out) = child.stdout.take() {
                    output.forward(out, rank, Stream::Stdout);
                }
                if let Some(err) = child.stderr.take() {
                    output.forward(err, rank, Stream::Stderr);
                }
                // Dropping `child` neither waits for nor kills it: Job reaps it.
            }
            Err(e) => {
                say(&format!(
                    "cannot start '{}': {}",
                    prog.to_string_lossy(),
                    os_error_text(&e)
                ));
                job.fail(EXIT_CANNOT_START);
                return;
            }
        }
    }
}

/// Runs in the child between fork and exec: only async-signal-safe calls, no allocation.
pub(crate) fn child_setup(launcher_pid: libc::pid_t, inherit_fd: Option<RawFd>) -> io::Result<()> {
    // SAFETY: sigemptyset/sigprocmask/prctl/getppid/fcntl are async-signal-safe and are
    // given valid pointers (a local sigset) or plain integers.
    unsafe {
        // The launcher's blocked signals must not leak into the program.
        let mut set = MaybeUninit::<libc::sigset_t>::uninit();
        libc::sigemptyset(set.as_mut_ptr());
        if libc::sigprocmask(libc::SIG_SETMASK, set.as_ptr(), std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
        // The launcher may have died before prctl: then nothing would kill us later.
        if libc::getppid() != launcher_pid {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        if let Some(fd) = inherit_fd {
            // This child's descriptor table is its own: the launcher's copy keeps
            // FD_CLOEXEC, so no other rank inherits the listener.
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags < 0 || libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                return Err(io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// One started rank.
struct Rank {
    pid: libc::pid_t,
    /// Reaped.
    done: bool,
}

/// The ranks, and the state of the job's ending.
struct Job {
    ranks: Vec<Rank>,
    /// The process group of all ranks (the first rank's pid).
    pgid: Option<libc::pid_t>,
    grace: Duration,
    /// Exit status decided by the first event that ended the job.
    status: Option<i32>,
    /// When SIGKILL is due (set once the ranks got SIGTERM).
    kill_at: Option<Instant>,
    killed: bool,
    /// Number of forwarded SIGINT/SIGTERM/SIGHUP.
    interrupts: u32,
    /// A rank failed: the others may report it until then, or exit by themselves.
    report_until: Option<Instant>,
}

impl Job {
    fn new(grace: Duration) -> Self {
        Job {
            ranks: Vec::new(),
            pgid: None,
            grace,
            status: None,
            kill_at: None,
            killed: false,
            interrupts: 0,
            report_until: None,
        }
    }

    fn live(&self) -> usize {
        self.ranks.iter().filter(|r| !r.done).count()
    }

    /// Signals the ranks' group, but only while one of them is unreaped: that keeps the
    /// group id from having been recycled.
    fn signal_group(&self, sig: libc::c_int) {
        if let Some(pgid) = self.pgid {
            if self.live() > 0 {
                // SAFETY: plain syscall; pgid names our ranks' group (see above).
                unsafe { libc::killpg(pgid, sig) };
            }
        }
    }

    /// Records the job's exit status (first caller wins); the wait loop then ends the
    /// ranks still running.
    fn fail(&mut self, status: i32) {
        self.status.get_or_insert(status);
    }

    /// SIGCONT + SIGTERM to the group, SIGKILL after the grace period.
    fn terminate(&mut self) {
        if self.kill_at.is_some() {
            return;
        }
        let live = self.live();
        if live > 0 {
            say(&format!("terminating the remaining {}", ranks_word(live)));
        }
        self.signal_group(libc::SIGCONT);
        self.signal_group(libc::SIGTERM);
        self.kill_at = Some(Instant::now() + self.grace);
    }

    fn kill_now(&mut self) {
        self.killed = true;
        self.signal_group(libc::SIGKILL);
    }

    /// Reaps every rank that has exited so far.
    fn reap(&mut self) {
        loop {
            let mut status = 0;
            // SAFETY: waitpid writes the status into a valid local.
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if pid > 0 {
                self.on_exit(pid, status);
                continue;
            }
            if pid < 0 {
                let err = io::Error::last_os_error();
                if err.raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                if err.raw_os_error() == Some(libc::ECHILD) && self.live() > 0 {
                    // Cannot happen unless someone else reaped our children; do not
                    // wait forever for them.
                    say("lost track of the ranks (no child processes left)");
                    self.ranks.iter_mut().for_each(|r| r.done = true);
                    self.status.get_or_insert(EXIT_LAUNCHER_ERROR);
                }
            }
            return;
        }
    }

    fn on_exit(&mut self, pid: libc::pid_t, status: libc::c_int) {
        let Some(rank) = self.ranks.iter().position(|r| r.pid == pid && !r.done) else {
            return; // Not a rank (cannot happen: the launcher has no other children).
        };
        let (code, what) = if libc::WIFEXITED(status) {
            let code = libc::WEXITSTATUS(status);
            (code, format!("exited with status {code}"))
        } else if libc::WIFSIGNALED(status) {
            let sig = libc::WTERMSIG(status);
            let core = if libc::WCOREDUMP(status) {
                " (core dumped)"
            } else {
                ""
            };
            (
                128 + sig,
                format!("was killed by signal {sig} ({}){core}", signal_name(sig)),
            )
        } else {
            return; // Stopped or continued: only reported with WUNTRACED/WCONTINUED.
        };
        self.ranks[rank].done = true;
        if code != 0 && self.status.is_none() {
            say(&format!("rank {rank} (pid {pid}) {what}"));
            self.fail(code);
            self.report_until = Some(Instant::now() + REPORT_WINDOW);
        }
    }

    /// Waits until every started rank is reaped, ending the job on the first failure or
    /// on a forwarded signal.
    fn wait(&mut self, signals: &Signals) {
        loop {
            self.reap();
            if self.live() == 0 {
                return;
            }
            let now = Instant::now();
            let mut timeout = WAIT_TICK;
            if self.status.is_some() {
                match self.report_until {
                    Some(t) if now < t && self.kill_at.is_none() => timeout = t - now,
                    _ => self.terminate(), // Once only.
                }
            }
            if let (Some(at), false) = (self.kill_at, self.killed) {
                if now >= at {
                    say(&format!(
                        "{} still running after {:.1} s, sending SIGKILL",
                        ranks_word(self.live()),
                        self.grace.as_secs_f64()
                    ));
                    self.kill_now();
                } else {
                    timeout = timeout.min(at - now);
                }
            }
            match signals.wait(timeout) {
                None | Some(libc::SIGCHLD) => {}
                Some(libc::SIGCONT) => self.signal_group(libc::SIGCONT),
                Some(libc::SIGTSTP) => {
                    // Ctrl-Z: stop the ranks, then ourselves; SIGCONT (pending on
                    // resume) is forwarded by the branch above.
                    self.signal_group(libc::SIGTSTP);
                    // SAFETY: raise has no preconditions.
                    unsafe { libc::raise(libc::SIGSTOP) };
                }
                Some(sig) => {
                    // SIGINT, SIGTERM or SIGHUP.
                    self.interrupts += 1;
                    if self.status.is_none() {
                        say(&format!("received {}", signal_name(sig)));
                    }
                    self.status.get_or_insert(128 + sig);
                    if self.interrupts > 1 && !self.killed {
                        say("sending SIGKILL");
                        self.kill_now();
                    } else {
                        self.terminate();
                    }
                }
            }
        }
    }

    fn exit_status(&self) -> i32 {
        self.status.unwrap_or(0)
    }
}

/// The launcher's blocked signals, received synchronously with `sigtimedwait`.
pub(crate) struct Signals {
    wait_set: libc::sigset_t,
}

impl Signals {
    const WAITED: [libc::c_int; 6] = [
        libc::SIGCHLD,
        libc::SIGINT,
        libc::SIGTERM,
        libc::SIGHUP,
        libc::SIGTSTP,
        libc::SIGCONT,
    ];

    /// Blocks the waited signals (and SIGTTIN) in the calling thread; call it before
    /// any other thread exists so that all of them inherit the mask.
    pub(crate) fn block() -> io::Result<Self> {
        // SAFETY: the sigset functions get pointers to locals they initialise first;
        // signal(SIGCHLD, SIG_DFL) installs no handler.
        unsafe {
            // An inherited SIG_IGN for SIGCHLD would make the kernel reap the ranks
            // before we see their status.
            libc::signal(libc::SIGCHLD, libc::SIG_DFL);
            let mut set = MaybeUninit::<libc::sigset_t>::uninit();
            libc::sigemptyset(set.as_mut_ptr());
            for sig in Self::WAITED {
                libc::sigaddset(set.as_mut_ptr(), sig);
            }
            let wait_set = set.assume_init();
            let mut block_set = wait_set;
            libc::sigaddset(&mut block_set, libc::SIGTTIN);
            let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &block_set, std::ptr::null_mut());
            if rc != 0 {
                return Err(io::Error::from_raw_os_error(rc));
            }
            Ok(Signals { wait_set })
        }
    }

    /// Next waited signal, or None after `timeout`.
    pub(crate) fn wait(&self, timeout: Duration) -> Option<libc::c_int> {
        let ts = libc::timespec {
            tv_sec: timeout.as_secs().min(i32::MAX as u64) as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: valid set and timespec; a null siginfo pointer is allowed.
        let sig = unsafe { libc::sigtimedwait(&self.wait_set, std::ptr::null_mut(), &ts) };
        (sig > 0).then_some(sig)
    }
}

#[derive(Clone, Copy)]
enum Stream {
    Stdout,
    Stderr,
}

/// The --tag-output reader threads.
struct OutputForwarding {
    readers: usize,
    done_tx: mpsc::Sender<()>,
    done_rx: mpsc::Receiver<()>,
    /// Lines forwarded so far (to tell a slow consumer from a stuck pipe).
    lines: Arc<AtomicU64>,
}

impl OutputForwarding {
    fn new() -> Self {
        let (done_tx, done_rx) = mpsc::channel();
        OutputForwarding {
            readers: 0,
            done_tx,
            done_rx,
            lines: Arc::new(AtomicU64::new(0)),
        }
    }

    fn forward(&mut self, src: impl Read + Send + 'static, rank: usize, stream: Stream) {
        let done = self.done_tx.clone();
        let lines = Arc::clone(&self.lines);
        let spawned = std::thread::Builder::new()
            .name(format!("rank{rank}-output"))
            .spawn(move || {
                forward_lines(src, rank, stream, &lines);
                let _ = done.send(());
            });
        match spawned {
            Ok(_) => self.readers += 1,
            // The pipe is dropped with the closure: the rank gets EPIPE on write.
            Err(e) => say(&format!(
                "cannot forward the output of rank {rank}: {}",
                os_error_text(&e)
            )),
        }
    }

    /// Waits for the readers to reach end of file, giving up only if no line at all
    /// was forwarded for a while (some process the ranks left holds the pipes).
    fn drain(&mut self) {
        let mut last = self.lines.load(Ordering::Relaxed);
        while self.readers > 0 {
            match self.done_rx.recv_timeout(OUTPUT_DRAIN_IDLE) {
                Ok(()) => self.readers -= 1,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let now = self.lines.load(Ordering::Relaxed);
                    if now == last {
                        return;
                    }
                    last = now;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => return,
            }
        }
    }
}

/// Copies `src` to the launcher's stdout or stderr line by line, each line prefixed
/// with `[<rank>] ` and written whole while holding the stream's lock.
fn forward_lines(src: impl Read, rank: usize, stream: Stream, lines: &AtomicU64) {
    let mut reader = BufReader::with_capacity(64 * 1024, src);
    let prefix = format!("[{rank}] ");
    let mut line = Vec::with_capacity(256);
    // After a write error (our stdout closed) keep draining so the rank never blocks.
    let mut writable = true;
    loop {
        line.clear();
        line.extend_from_slice(prefix.as_bytes());
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if !line.ends_with(b"\n") {
            line.push(b'\n');
        }
        if writable {
            let written = match stream {
                Stream::Stdout => {
                    let mut out = io::stdout().lock();
                    out.write_all(&line).and_then(|()| out.flush())
                }
                Stream::Stderr => io::stderr().lock().write_all(&line),
            };
            writable = written.is_ok();
        }
        lines.fetch_add(1, Ordering::Relaxed);
    }
}

/// Feeds the launcher's stdin (a terminal) to rank 0 through a pipe. The thread ends at
/// end of input, on a read error (EIO once the launcher is in the background), or when
/// rank 0 closed its end; it may stay blocked in read until the launcher exits.
fn forward_stdin(mut dest: ChildStdin) {
    let spawned = std::thread::Builder::new()
        .name("stdin".into())
        .spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            let stdin = io::stdin();
            loop {
                match stdin.lock().read(&mut buf) {
                    Ok(0) => return,
                    Ok(n) => {
                        if dest.write_all(&buf[..n]).is_err() {
                            return;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => return,
                }
            }
        });
    if let Err(e) = spawned {
        say(&format!("cannot forward stdin: {}", os_error_text(&e)));
    }
}

/// Removes `/dev/shm/hcomm-<job>-*`, the shared-memory segments of this job that a rank
/// killed at the wrong moment did not unlink.
pub(crate) fn remove_leftover_segments(job_id: &str) {
    let prefix = format!("{}{job_id}-", contract::SHM_PREFIX);
    let Ok(dir) = std::fs::read_dir("/dev/shm") else {
        return;
    };
    for entry in dir.flatten() {
        if entry
            .file_name()
            .as_encoded_bytes()
            .starts_with(prefix.as_bytes())
        {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// A job id of 12 hex digits, unique enough per host: pid and time, mixed.
pub(crate) fn new_job_id() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let pid = u64::from(std::process::id());
    // splitmix64 finaliser, so that consecutive jobs do not share digits.
    let mut z = nanos ^ pid.rotate_left(40);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    format!("{:012x}", z & 0xffff_ffff_ffff)
}

/// Writes `hcomm run: <msg>` to stderr in one piece.
pub(crate) fn say(msg: &str) {
    let line = format!("hcomm run: {msg}\n");
    let _ = io::stderr().lock().write_all(line.as_bytes());
}

pub(crate) fn ranks_word(n: usize) -> String {
    if n == 1 {
        "1 rank".into()
    } else {
        format!("{n} ranks")
    }
}

/// An I/O error's text without std's " (os error N)" suffix.
pub(crate) fn os_error_text(e: &io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error ") {
        Some(i) if e.raw_os_error().is_some() => text[..i].to_string(),
        _ => text,
    }
}

pub(crate) fn signal_name(sig: libc::c_int) -> String {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGSTKFLT => "SIGSTKFLT",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGURG => "SIGURG",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGPROF => "SIGPROF",
        libc::SIGWINCH => "SIGWINCH",
        libc::SIGIO => "SIGIO",
        libc::SIGPWR => "SIGPWR",
        libc::SIGSYS => "SIGSYS",
        _ => {
            let (min, max) = (libc::SIGRTMIN(), libc::SIGRTMAX());
            return if (min..=max).contains(&sig) {
                format!("SIGRTMIN+{}", sig - min)
            } else {
                format!("signal {sig}")
            };
        }
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rank_counts() {
        assert_eq!(parse_nranks("4"), Ok(4));
        assert!(parse_nranks("0").is_err());
        assert!(parse_nranks("-1").is_err());
        assert!(parse_nranks("x").is_err());
    }

    #[test]
    fn parses_grace_periods() {
        assert_eq!(parse_grace("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_grace("0"), Ok(Duration::ZERO));
        assert!(parse_grace("-1").is_err());
        assert!(parse_grace("nan").is_err());
        assert!(parse_grace("inf").is_err());
    }

    #[test]
    fn job_ids_are_12_hex_digits() {
        let id = new_job_id();
        assert_eq!(id.len(), 12);
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
    }

    #[test]
    fn names_signals() {
        assert_eq!(signal_name(libc::SIGKILL), "SIGKILL");
        assert_eq!(signal_name(libc::SIGRTMIN() + 2), "SIGRTMIN+2");
    }
}
