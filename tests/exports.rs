//! The symbols `libhcomm.so` exports are exactly the checked-in list `src/libhcomm.symbols`
//! (written by `scripts/gen-mpi-api.py`): every MPI function as `MPI_X` and `PMPI_X`, the
//! data symbols of MPICH's `mpi.h` and `MPIR_Dup_fn`, nothing from Rust or from dependencies.

use std::path::PathBuf;
use std::process::Command;

/// Exports that are not functions with a `PMPI_` twin: MPICH's data symbols and the function
/// behind `MPI_DUP_FN` (src/constants.rs).
const NOT_PAIRED: &[&str] = &[
    "MPIR_Dup_fn",
    "MPI_F08_STATUSES_IGNORE",
    "MPI_F08_STATUS_IGNORE",
    "MPI_F_STATUSES_IGNORE",
    "MPI_F_STATUS_IGNORE",
    "MPI_T_PVAR_ALL_HANDLES",
    "MPI_UNWEIGHTED",
    "MPI_WEIGHTS_EMPTY",
];

fn library() -> PathBuf {
    // The CLI binary and the library land in the same target directory.
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_hcomm"));
    bin.with_file_name("libhcomm.so")
}

#[test]
fn exported_symbols_match_checked_in_list() {
    let lib = library();
    assert!(lib.exists(), "{} not built", lib.display());
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&lib)
        .output()
        .expect("nm (binutils) must be installed");
    assert!(out.status.success());
    let mut got: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
        .collect();
    got.sort();
    let listed =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/libhcomm.symbols"))
            .unwrap();
    let mut want: Vec<String> = listed
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    want.sort();
    assert_eq!(
        got,
        want,
        "exports of {} differ from src/libhcomm.symbols",
        lib.display()
    );
    // Every function comes as MPI_X and PMPI_X (extensions: MPIX_X and PMPIX_X).
    for s in want.iter().filter(|s| !NOT_PAIRED.contains(&s.as_str())) {
        if let Some(rest) = s.strip_prefix("MPI_") {
            assert!(
                want.contains(&format!("PMPI_{rest}")),
                "{s} has no PMPI_ twin"
            );
        } else if let Some(rest) = s.strip_prefix("MPIX_") {
            assert!(
                want.contains(&format!("PMPIX_{rest}")),
                "{s} has no PMPIX_ twin"
            );
        } else {
            assert!(
                s.starts_with("PMPI_") || s.starts_with("PMPIX_"),
                "unexpected export {s}"
            );
        }
    }
    // CUDA-aware programs ask MPICH's question; hcomm answers it.
    assert!(want.iter().any(|s| s == "MPIX_Query_cuda_support"));
}

#[test]
fn library_has_a_soname() {
    let out = Command::new("readelf")
        .arg("-d")
        .arg(library())
        .output()
        .expect("readelf");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Library soname: [libhcomm.so]"), "{text}");
}

#[test]
fn header_declares_exactly_the_exports() {
    let header =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/mpi.h")).unwrap();
    let listed =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/libhcomm.symbols"))
            .unwrap();
    let mut declared: Vec<&str> = header
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let open = l.find('(')?;
            if !l.ends_with(");") || l.starts_with('#') {
                return None;
            }
            l[..open]
                .split_whitespace()
                .last()
                .map(|n| n.trim_start_matches('*'))
        })
        .filter(|n| {
            ["MPI_", "PMPI_", "MPIX_", "PMPIX_"]
                .iter()
                .any(|p| n.starts_with(p))
        })
        .collect();
    declared.sort();
    let mut exported: Vec<&str> = listed
        .lines()
        .filter(|l| !l.is_empty() && !NOT_PAIRED.contains(l))
        .collect();
    exported.sort();
    assert_eq!(declared, exported);
}
