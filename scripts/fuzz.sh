#!/usr/bin/env bash
# scripts/fuzz.sh - run every cargo-fuzz target for a while, then minimise its corpus.
#
# The targets (fuzz/fuzz_targets/*.rs) are one per parser of untrusted input: the frame header,
# the TCP transport's byte stream (prefix, header, payload, per-link reordering over several
# sockets), its connection hello, the bootstrap star's hello and rank table, the address-exchange
# blob, HCOMM_URI, HCOMM_SOCKET_IFNAME and the numeric/flag variables. Each calls the function
# of the same name in core/src/fuzz.rs, which states the properties checked (never a panic;
# round trips where cheap). What the fuzzer finds new is added to fuzz/corpus/<target>/, which
# is checked in and replayed by plain `cargo test` (core/tests/fuzz_corpus.rs). Not run in CI:
# it needs libFuzzer and a sanitizer build, and its value grows with the time given to it.
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`) and a C++ compiler; on a stable toolchain the
# nightly-only flags are enabled with RUSTC_BOOTSTRAP=1 (set here).
#
# Usage: scripts/fuzz.sh [SECONDS per target, default 60] [TARGET...]
# Env:   JOBS=N parallel fuzzing jobs per target (default 1); MAX_LEN (default 4096);
#        CARGO_TARGET_DIR (the fuzz build goes to $CARGO_TARGET_DIR/fuzz, else fuzz/target).
# A crash leaves its input in fuzz/artifacts/<target>/ and makes the script exit non-zero;
# replay it with `RUSTC_BOOTSTRAP=1 cargo fuzz run -O -a <target> <file>`, fix the parser, and
# copy the input into fuzz/corpus/<target>/ so the replay test keeps it fixed. The corpus is
# minimised after each run (libFuzzer -merge=1), so it stays small enough to check in.
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTC_BOOTSTRAP=1
secs=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    for f in fuzz/fuzz_targets/*.rs; do targets+=("$(basename "$f" .rs)"); done
fi
tdir=${CARGO_TARGET_DIR:-$PWD/fuzz/target}/fuzz
command -v cargo-fuzz >/dev/null || { echo "cargo-fuzz is missing: cargo install cargo-fuzz"; exit 1; }

# Built once (-O -a: optimised, with debug assertions and overflow checks: an overflow is a
# finding too), then each target's libFuzzer binary runs directly, so that a source change
# during a long session does not rebuild per target.
cargo fuzz build -O -a --target-dir "$tdir"
bin=$tdir/$(rustc -vV | sed -n 's/^host: //p')/release
failed=()
for t in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
    before=$(ls "fuzz/corpus/$t" | wc -l)
    echo "== $t: ${secs}s (corpus: $before inputs)"
    if ! "$bin/$t" "fuzz/corpus/$t" -artifact_prefix="fuzz/artifacts/$t/" \
        -max_total_time="$secs" -max_len="${MAX_LEN:-4096}" -jobs="${JOBS:-1}" -workers="${JOBS:-1}" \
        -print_final_stats=1 >"fuzz/$t.log" 2>&1; then
        tail -40 "fuzz/$t.log"
        failed+=("$t")
        continue
    fi
    grep -E '^stat::(number_of_executed_units|peak_rss_mb)' "fuzz/$t.log" | tr '\n' ' '; echo
    # Minimise: keep only inputs that add coverage (libFuzzer's merge into an empty directory).
    min=$(mktemp -d)
    "$bin/$t" -merge=1 "$min" "fuzz/corpus/$t" >/dev/null 2>&1
    rm -rf "fuzz/corpus/$t"
    mv "$min" "fuzz/corpus/$t"
    chmod 755 "fuzz/corpus/$t"
    rm -f "fuzz/$t.log"
    echo "   corpus: $before -> $(ls "fuzz/corpus/$t" | wc -l) inputs, $(du -sk "fuzz/corpus/$t" | cut -f1) KiB"
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "FAIL: crashes in ${failed[*]} (inputs in fuzz/artifacts/, logs in fuzz/<target>.log)"
    exit 1
fi
echo "== all targets ran ${secs}s without a crash"
