//! `hcomm info`: the version, what this build contains, and every `HCOMM_*` variable with its
//! default, its value in this environment and a one-line description (from
//! `hcomm_core::param::ALL`, the single list the library reads its settings from).

use clap::Args;

#[derive(Debug, Args)]
pub struct InfoArgs {
    /// Print the variables as `NAME=value` lines only (set ones), for scripts.
    #[arg(long)]
    pub env: bool,
}

/// Where the two libraries are, next to this binary (as `cargo build --release` and `hcomm
/// install` lay them out).
fn library(name: &str) -> String {
    match std::env::current_exe() {
        Ok(exe) => {
            let lib = exe.with_file_name(name);
            if lib.is_file() {
                lib.display().to_string()
            } else {
                format!("not found next to {}", exe.display())
            }
        }
        Err(e) => format!("unknown ({e})"),
    }
}

pub fn info(args: InfoArgs) -> i32 {
    let set: Vec<(&str, String)> = hcomm_core::param::ALL
        .iter()
        .filter_map(|p| std::env::var(p.name).ok().map(|v| (p.name, v)))
        .collect();
    if args.env {
        for (name, value) in set {
            println!("{name}={value}");
        }
        return 0;
    }
    println!("hcomm {}", env!("CARGO_PKG_VERSION"));
    let (mut version, mut subversion) = (0, 0);
    // SAFETY: MPI_Get_version may be called before MPI_Init; both outputs are valid ints.
    unsafe { hcomm_core::abi::api::get_version(&mut version, &mut subversion) };
    println!("  MPI ABI:        MPICH (include/mpi.h), MPI {version}.{subversion}");
    println!("  libhcomm.so:    {}", library("libhcomm.so"));
    println!("  preload:        {}", library("libhcomm_preload.so"));
    println!("  transports:     shared memory (one host), TCP (between hosts)");
    println!("  GPU buffers:    not in this build (host memory only)");
    println!(
        "  build:          {} {}, {}",
        std::env::consts::ARCH,
        std::env::consts::OS,
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
    );
    println!();
    println!("Environment variables (value: as set here, or the default):");
    let width = hcomm_core::param::ALL
        .iter()
        .map(|p| p.name.len())
        .max()
        .unwrap_or(0);
    for p in hcomm_core::param::ALL {
        let value = match std::env::var(p.name) {
            Ok(v) => format!("{v}  (set; default {})", p.default),
            Err(_) => format!("{}  (default)", p.default),
        };
        println!("  {:<width$}  {value}", p.name);
        println!("  {:<width$}    {}", "", p.help);
    }
    0
}
