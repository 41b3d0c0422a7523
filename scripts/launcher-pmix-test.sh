#!/usr/bin/env bash
# scripts/launcher-pmix-test.sh - libhcomm.so under a PMIx launcher (Open MPI's mpirun).
#
# A program built against hcomm's own mpi.h and libhcomm.so, started by `mpirun.openmpi`,
# joins the launcher's PMIx server (libpmix.so.2, opened at run time) and forms one world:
#
#   1. -n 3 and -n 4: tests/c/coll_check.c passes; HCOMM_DEBUG=INFO shows every rank
#      "joined PMIx: rank r of N" and shared memory between every pair of peers (one host);
#      the checker's summary is printed once (by rank 0 of one world, not by N worlds of one).
#   2. -n 1: a world of one, still joined through PMIx.
#   3. -n 3 with HCOMM_TRANSPORT=tcp: every peer on TCP (addresses exchanged through PMIx).
#   4. HCOMM_PMIX_LIB=/nonexistent, -n 2: every rank fails (non-zero exit) with the error
#      naming Open MPI and PMIx, instead of running as two worlds of one.
#
# Prints SKIP and exits 0 only when mpirun.openmpi is absent.
#
# Usage: scripts/launcher-pmix-test.sh   (env BUILD=dir holding libhcomm.so; default
#        target/release; CHECK_LARGE for coll_check, default 20000; TIMEOUT per run, 300)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-$ROOT/target/release}
CHECK_LARGE=${CHECK_LARGE:-20000}
TIMEOUT=${TIMEOUT:-300}
export CHECK_LARGE

if ! command -v mpirun.openmpi >/dev/null 2>&1; then
    echo "SKIP: mpirun.openmpi not installed (Debian: apt-get install openmpi-bin)"
    exit 0
fi
if [ ! -e "$BUILD/libhcomm.so" ]; then
    echo "FAIL: $BUILD/libhcomm.so missing (cargo build --release first)"
    exit 1
fi

WORK=$(mktemp -d /tmp/hcomm-pmix-test.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

FAILS=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }

cc -O1 -I include tests/c/coll_check.c -o "$WORK/coll_check" -L "$BUILD" -lhcomm \
    -Wl,-rpath,"$BUILD" -lpthread

# Open MPI refuses root without these, and more ranks than cores without --oversubscribe.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Keep Open MPI's own launcher quiet and local: no ssh, no network probing of other hosts.
MPIRUN=(mpirun.openmpi --oversubscribe --bind-to none --mca plm_rsh_agent false)

# mpirun_ok N [TRANSPORT]: coll_check on N ranks passes as one world of N, every peer on
# TRANSPORT (default shm: one host).
mpirun_ok() {
    local n=$1 tr=${2:-shm} out=$WORK/ok.$1.${2:-auto} rc=0 r bad=""
    local name="mpirun -n $n${2:+ HCOMM_TRANSPORT=$2}"
    timeout -k 10 "$TIMEOUT" "${MPIRUN[@]}" -n "$n" -x HCOMM_DEBUG=INFO -x CHECK_LARGE \
        ${2:+-x HCOMM_TRANSPORT="$2"} \
        "$WORK/coll_check" >"$out.out" 2>"$out.err" </dev/null || rc=$?
    if [ "$rc" -ne 0 ]; then
        fail "$name: exit status $rc"
        tail -n 30 "$out.out" "$out.err"
        return
    fi
    for ((r = 0; r < n; r++)); do
        grep -q "joined PMIx: rank $r of $n" "$out.err" || bad="$bad no-join-$r"
    done
    # One world: one summary (rank 0's), never one per rank.
    [ "$(grep -c 'checks passed' "$out.out")" -eq 1 ] || bad="$bad summaries"
    if [ "$n" -gt 1 ]; then
        # Every ordered pair of ranks: n*(n-1) peers, all on the expected transport.
        local ntr
        ntr=$(grep -c "transport $tr" "$out.err" || true)
        [ "$ntr" -eq $((n * (n - 1))) ] || bad="$bad $tr-peers=$ntr"
    fi
    if [ -n "$bad" ]; then
        fail "$name:$bad"
        tail -n 30 "$out.out" "$out.err"
    else
        local peers=""
        [ "$n" -gt 1 ] && peers=", every peer on $tr"
        pass "$name: one world of $n over PMIx$peers, coll_check passed"
    fi
}

mpirun_ok 3
mpirun_ok 4
mpirun_ok 1
# TCP addresses and the job secret travel through PMIx too.
mpirun_ok 3 tcp

# Without a loadable PMIx client library every rank must fail with the clear error.
out=$WORK/nolib
rc=0
timeout -k 10 "$TIMEOUT" "${MPIRUN[@]}" -n 2 -x HCOMM_PMIX_LIB=/nonexistent/libpmix.so \
    "$WORK/coll_check" >"$out.out" 2>"$out.err" </dev/null || rc=$?
nerr=$(grep -c "Open MPI's mpirun, which hcomm joins through PMIx" "$out.out" "$out.err" |
    awk -F: '{s += $NF} END {print s + 0}')
if [ "$rc" -eq 0 ] || [ "$rc" -ge 124 ]; then
    fail "HCOMM_PMIX_LIB=/nonexistent: exit status $rc (want a failure, not success or timeout)"
    tail -n 20 "$out.out" "$out.err"
elif grep -q 'checks passed' "$out.out"; then
    fail "HCOMM_PMIX_LIB=/nonexistent: a rank ran as a world of its own"
elif [ "$nerr" -lt 1 ] || ! grep -q '/nonexistent/libpmix.so' "$out.out" "$out.err"; then
    fail "HCOMM_PMIX_LIB=/nonexistent: no error naming Open MPI, PMIx and the library"
    tail -n 20 "$out.out" "$out.err"
else
    pass "HCOMM_PMIX_LIB=/nonexistent: exit $rc, error names Open MPI and PMIx ($nerr ranks reported)"
fi

if [ "$FAILS" -ne 0 ]; then
    echo "launcher-pmix-test: $FAILS failure(s)"
    exit 1
fi
echo "launcher-pmix-test: all passed"
