#!/usr/bin/env bash
# scripts/soak.sh - the load test (issue 5, "Load"): tests/soak/soak.c under `hcomm run`.
#
# 4 ranks run collectives of random kind (Allreduce, Reduce, Bcast, Allgather,
# Reduce_scatter_block, Reduce_scatter, Barrier, Gather, Scatter, Alltoall, Allgatherv), size
# (0 B .. 4 MiB, log-uniform), datatype (int8..int64, uint8..uint64, float, double), op (SUM,
# PROD, MAX, MIN), root and in-place choice, drawn from one seed on every rank; every result is
# verified exactly, and the resident set size at the end must be within 10 % of the one after
# the warm-up, on every rank. Passes when no result is wrong and memory stayed flat.
#
#   scripts/soak.sh            the full test: 100 000 collectives (about 10 minutes on a
#                              2-core machine with 4 ranks oversubscribed)
#   scripts/soak.sh --short    what CI runs: 4 000 collectives, 2 000 of them warm-up (well under a minute)
#   scripts/soak.sh --tcp      every peer over TCP (HCOMM_TRANSPORT=tcp), with either of the above
#   scripts/soak.sh --seed S   replay a run (the seed is printed first; a FAIL line names the
#                              iteration, the call and its arguments)
#   scripts/soak.sh --iters N  any other length; further options go to the program
#                              (--warmup K, --max-bytes B, --rss-slack PCT, --progress N)
#
# Env: BUILD=dir holding libhcomm.so and hcomm (default target/release, built here with
#      `cargo build --release` unless NO_BUILD=1); NP=4 ranks; TIMEOUT seconds (default 3600,
#      --short 180).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-$ROOT/target/release}
NP=${NP:-4}
iters=100000
timeout=3600
progress=10000
args=()
while [ $# -gt 0 ]; do
    case "$1" in
        # Short runs warm up for half their calls and allow 40 % growth: the allocator's high-
        # water marks (one more 4 MiB message kept by malloc is +18 % of a 22 MiB rank) still
        # move for a few thousand calls. Measured over TCP: +15 % after a 300-call warm-up,
        # then +0.1 to +3 % from 2 000 to 20 000 calls. The full run holds the 10 % line.
        --short) iters=4000; timeout=180; progress=0; args+=(--warmup 2000 --rss-slack 40) ;;
        --tcp) export HCOMM_TRANSPORT=tcp ;;
        --iters) iters=$2; shift ;;
        *) args+=("$1") ;;
    esac
    shift
done
TIMEOUT=${TIMEOUT:-$timeout}

if [ "${NO_BUILD:-0}" != 1 ] && [ "$BUILD" = "$ROOT/target/release" ]; then
    cargo build --release -q
fi
WORK=$(mktemp -d /tmp/hcomm-soak.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cc -O2 -Wall -Wextra -Werror -I include tests/soak/soak.c -o "$WORK/soak" -L "$BUILD" -lhcomm \
    -Wl,-rpath,"$BUILD" -lm -lpthread

shm_before=$(ls /dev/shm 2>/dev/null | grep '^hcomm-' || true)
echo "== soak: $NP ranks, $iters collectives${HCOMM_TRANSPORT:+, HCOMM_TRANSPORT=$HCOMM_TRANSPORT}"
start=$(date +%s)
rc=0
timeout "$TIMEOUT" "$BUILD/hcomm" run -n "$NP" "$WORK/soak" --iters "$iters" --progress "$progress" \
    "${args[@]}" || rc=$?
echo "== soak: exit status $rc after $(( $(date +%s) - start )) s"
if [ "$rc" = 124 ]; then
    echo "FAIL: the soak did not finish within $TIMEOUT s (a hang?)"
fi
# Only segments that were not there before count: another job's may come and go meanwhile.
shm_after=$(ls /dev/shm 2>/dev/null | grep '^hcomm-' || true)
shm_new=$(comm -13 <(echo "$shm_before" | sort) <(echo "$shm_after" | sort) | grep . || true)
if [ -n "$shm_new" ]; then
    echo "FAIL: shared-memory segments left behind: $shm_new"
    rc=1
fi
exit "$rc"
