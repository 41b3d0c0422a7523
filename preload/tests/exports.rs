//! `libhcomm_preload.so` exports exactly `libhcomm_preload.symbols`: the MPI calls it
//! intercepts, no `PMPI_` name, nothing the host MPI must keep answering (`MPI_Get_version`,
//! `MPI_Comm_rank`, ...), nothing from Rust or from dependencies. It also has a SONAME.

use std::path::PathBuf;
use std::process::Command;

/// The library cargo built for this test: in the test executable's directory (`deps/`) or
/// the one above it (`target/<profile>/`, where cargo copies it).
fn library() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let deps = exe.parent().expect("deps directory");
    [deps, deps.parent().expect("profile directory")]
        .iter()
        .map(|d| d.join("libhcomm_preload.so"))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("libhcomm_preload.so not found next to {}", exe.display()))
}

fn exports() -> Vec<String> {
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(library())
        .output()
        .expect("nm (binutils) must be installed");
    assert!(out.status.success());
    let mut got: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
        .collect();
    got.sort();
    got
}

#[test]
fn exported_symbols_match_checked_in_list() {
    let listed = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/libhcomm_preload.symbols"
    ))
    .unwrap();
    let mut want: Vec<String> = listed
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    want.sort();
    assert_eq!(
        exports(),
        want,
        "exports of {} differ from preload/libhcomm_preload.symbols",
        library().display()
    );
}

#[test]
fn shadows_nothing_the_host_must_answer() {
    for s in exports() {
        assert!(s.starts_with("MPI_"), "unexpected export {s}");
        for never in [
            "MPI_Get_version",
            "MPI_Get_library_version",
            "MPI_Comm_rank",
            "MPI_Comm_size",
            "MPI_Initialized",
            "MPI_Finalized",
            "MPI_Query_thread",
        ] {
            assert_ne!(s, never, "{never} must stay the host's");
        }
    }
}

#[test]
fn library_has_a_soname() {
    let out = Command::new("readelf")
        .arg("-d")
        .arg(library())
        .output()
        .expect("readelf");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Library soname: [libhcomm_preload.so]"),
        "{text}"
    );
}
