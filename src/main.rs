//! hcomm — collective communication over the MPI C ABI.
//!
//! The `hcomm` command-line tool: `hcomm run`, the launcher that starts the ranks of a job on
//! this host ([`cli::run`]); `hcomm install`, a drop-in MPI prefix with `mpicc` and `mpiexec`
//! ([`cli::install`]); `hcomm bench`, the nccl-tests-style benchmark run as the ranks of a job
//! ([`cli::bench`]); `hcomm selftest`, `hcomm doctor`, `hcomm info` and `hcomm profile`. Each
//! subcommand is a variant of [`Command`] whose arguments and entry point live in a module
//! under `src/cli/`, and whose entry point returns the process exit code.

mod cli;

use clap::{Parser, Subcommand};

/// hcomm — collective communication over the MPI C ABI
#[derive(Debug, Parser)]
#[command(name = "hcomm", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Start N ranks of a program on this host (like mpirun)
    Run(cli::run::RunArgs),
    /// Install a drop-in MPI prefix: bin/mpicc, mpicxx, mpiexec; include/mpi.h; lib/libhcomm.so
    Install(cli::install::InstallArgs),
    /// Measure collectives nccl-tests style, as a rank: hcomm run -n 2 hcomm bench allreduce -b 8 -e 64M
    Bench(cli::bench::BenchArgs),
    /// Version, build contents, and every HCOMM_* variable with its default and current value
    Info(cli::info::InfoArgs),
    /// Check this machine for what hcomm needs (/dev/shm, limits, network, MPI, CUDA)
    Doctor(cli::doctor::DoctorArgs),
    /// Merge the per-rank files of HCOMM_PROFILE=path.json into one table
    Profile(cli::profile::ProfileArgs),
    /// Check every pair of ranks and every collective once: hcomm selftest -n 3
    Selftest(cli::selftest::SelftestArgs),
    /// One host's share of `hcomm run` across hosts (started by the launcher)
    #[command(hide = true)]
    Proxy(cli::proxy::ProxyArgs),
}

fn main() {
    let argv = cli::normalize_args(std::env::args_os().collect());
    // On bad usage clap prints the error (or the help / version text) and exits
    // with status 2 (0 for --help / --version).
    let cli = Cli::parse_from(argv);
    let code = match cli.command {
        Command::Run(args) => cli::run::run(args),
        Command::Install(args) => cli::install::install(args),
        Command::Bench(args) => cli::bench::bench(args),
        Command::Info(args) => cli::info::info(args),
        Command::Doctor(args) => cli::doctor::doctor(args),
        Command::Profile(args) => cli::profile::profile(args),
        Command::Selftest(args) => cli::selftest::selftest(args),
        Command::Proxy(args) => cli::proxy::proxy(args),
    };
    std::process::exit(code);
}
