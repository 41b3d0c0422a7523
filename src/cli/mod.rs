//! Subcommands of the `hcomm` tool, one module each, plus the argv preprocessing that
//! clap cannot express.
//!
//! clap has no multi-character short flags, but every MPI user types `mpirun -np 4`.
//! [`normalize_args`] rewrites a `-np` given among `hcomm run`'s own options (before
//! the program name or `--`) into `-n`; the same spelling after the program name
//! belongs to the program and is left alone.

use std::ffi::{OsStr, OsString};

pub mod bench;
pub mod doctor;
pub mod hosts;
pub mod info;
pub mod install;
pub mod profile;
pub mod proxy;
pub mod run;
pub mod selftest;

/// Options of `hcomm run` that take a separate value (`-n 4`, `--timeout-kill-secs 3`),
/// so that the value is not mistaken for the program name while scanning.
const RUN_OPTS_WITH_VALUE: &[&str] = &[
    "-n",
    "--np",
    "--timeout-kill-secs",
    "--hosts",
    "--hostfile",
    "--launcher",
    "--launcher-exec",
    "--iface",
    "--proxy-path",
];

/// Rewrites Open MPI spellings clap cannot parse: in `hcomm run`'s own options,
/// `-np N` becomes `-n N` and `-npN` becomes `-nN`. Everything from the program name
/// (or a `--`) on is passed through untouched, as is every other subcommand.
pub fn normalize_args(mut argv: Vec<OsString>) -> Vec<OsString> {
    // The subcommand is the first argument after argv[0] that is not an option (the
    // top level has only flags without values: --help, --version).
    let Some(sub) = argv
        .iter()
        .skip(1)
        .position(|a| !a.as_encoded_bytes().starts_with(b"-"))
        .map(|p| p + 1)
    else {
        return argv;
    };
    if argv[sub] != OsStr::new("run") {
        return argv;
    }
    let mut i = sub + 1;
    while i < argv.len() {
        let arg = argv[i].as_encoded_bytes();
        if arg == b"--" || !arg.starts_with(b"-") || arg == b"-" {
            break; // The program (or the separator before it): the rest is its own.
        }
        if arg == b"-np" {
            argv[i] = OsString::from("-n");
            i += 2; // Skip the value.
            continue;
        }
        if let Some(rest) = arg.strip_prefix(b"-np") {
            if !rest.is_empty() && rest.iter().all(u8::is_ascii_digit) {
                argv[i] = OsString::from(format!("-n{}", String::from_utf8_lossy(rest)));
            }
            i += 1;
            continue;
        }
        let takes_value = RUN_OPTS_WITH_VALUE.iter().any(|o| arg == o.as_bytes());
        i += if takes_value { 2 } else { 1 };
    }
    argv
}

#[cfg(test)]
mod tests {
    use super::normalize_args;
    use std::ffi::OsString;

    fn norm(args: &[&str]) -> Vec<String> {
        let argv = args.iter().map(OsString::from).collect();
        normalize_args(argv)
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect()
    }

    #[test]
    fn rewrites_np_before_program_only() {
        assert_eq!(
            norm(&["hcomm", "run", "-np", "4", "prog", "-np", "2"]),
            ["hcomm", "run", "-n", "4", "prog", "-np", "2"]
        );
        assert_eq!(
            norm(&["hcomm", "run", "--tag-output", "-np4", "prog"]),
            ["hcomm", "run", "--tag-output", "-n4", "prog"]
        );
        assert_eq!(
            norm(&["hcomm", "run", "-n", "2", "--", "-np", "x"]),
            ["hcomm", "run", "-n", "2", "--", "-np", "x"]
        );
        // A value that looks like the alias is still a value.
        assert_eq!(
            norm(&["hcomm", "run", "--timeout-kill-secs", "1", "-np", "3", "p"]),
            ["hcomm", "run", "--timeout-kill-secs", "1", "-n", "3", "p"]
        );
    }

    #[test]
    fn leaves_other_subcommands_alone() {
        assert_eq!(norm(&["hcomm", "info", "-np"]), ["hcomm", "info", "-np"]);
        assert_eq!(norm(&["hcomm"]), ["hcomm"]);
        assert_eq!(norm(&["hcomm", "--help"]), ["hcomm", "--help"]);
    }
}
