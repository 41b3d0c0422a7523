//! Replays the checked-in fuzz corpus (`fuzz/corpus/<target>/*`) through the same entry points
//! the `cargo fuzz` targets call ([`hcomm_core::fuzz::TARGETS`]), so every input the fuzzer
//! ever kept — crashes it found included, once fixed — is a regression test of plain
//! `cargo test`, on the stable toolchain and without libFuzzer.

use std::path::{Path, PathBuf};

fn corpus_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus")
}

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    v
}

#[test]
fn every_target_has_a_corpus_and_every_input_passes() {
    let root = corpus_root();
    let mut total = 0;
    for (name, entry) in hcomm_core::fuzz::TARGETS {
        let files = inputs(&root.join(name));
        assert!(!files.is_empty(), "fuzz target {name} has no corpus");
        for f in &files {
            let data = std::fs::read(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            // A failing input names itself: replay it alone with
            // `cargo fuzz run <target> <file>` (see scripts/fuzz.sh).
            let res = std::panic::catch_unwind(|| entry(&data));
            assert!(
                res.is_ok(),
                "fuzz target {name}: input {} fails",
                f.display()
            );
        }
        total += files.len();
    }
    assert!(total > 0);
}

#[test]
fn every_corpus_directory_belongs_to_a_target() {
    let names: Vec<&str> = hcomm_core::fuzz::TARGETS.iter().map(|(n, _)| *n).collect();
    for d in std::fs::read_dir(corpus_root()).expect("fuzz/corpus") {
        let d = d.expect("directory entry");
        let n = d.file_name().to_string_lossy().into_owned();
        assert!(
            names.contains(&n.as_str()),
            "fuzz/corpus/{n} has no target in hcomm_core::fuzz::TARGETS"
        );
    }
}
