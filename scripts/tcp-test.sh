#!/usr/bin/env bash
# scripts/tcp-test.sh - the TCP transport and the file:// rendezvous, with ranks started by a
# script (no launcher, no HCOMM_JOB_ID: rank 0's job id is adopted).
#
#   1. file:// rendezvous, HCOMM_TRANSPORT=tcp, 3 ranks, 2 sockets per peer: tests/c/coll_check.c
#      passes, and HCOMM_DEBUG=INFO shows every peer on TCP; rank 0's address file is gone after.
#   2. file:// rendezvous, default transport: the same ranks take shared memory (one host).
#   3. A dead peer during TCP transfers: rank 1 of 3 is SIGKILLed while large allreduces run;
#      the others must end by themselves (no launcher to end them) with an error naming rank 1,
#      never with SIGPIPE (exit 141), never hanging.
#   4. HCOMM_TRANSPORT disagreeing between ranks, or invalid, is an error naming it.
#
# Usage: scripts/tcp-test.sh   (env BUILD=dir holding libhcomm.so and hcomm; default
#        target/release; CHECK_LARGE for coll_check, default 20000)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-$ROOT/target/release}
CHECK_LARGE=${CHECK_LARGE:-20000}
export CHECK_LARGE
WORK=$(mktemp -d /tmp/hcomm-tcp-test.XXXXXX)
PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

FAILS=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }

cc -O1 -I include tests/c/coll_check.c -o "$WORK/coll_check" -L "$BUILD" -lhcomm \
    -Wl,-rpath,"$BUILD" -lpthread
cat >"$WORK/dead_peer.c" <<'EOF'
/* Large allreduces forever; the test kills one rank from outside. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int n = 1 << 20;
    float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
    for (int i = 0; i < n; i++) a[i] = 1.0f;
    printf("rank %d running\n", rank);
    fflush(stdout);
    for (;;) MPI_Allreduce(a, b, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}
EOF
cc -O1 -I include "$WORK/dead_peer.c" -o "$WORK/dead_peer" -L "$BUILD" -lhcomm \
    -Wl,-rpath,"$BUILD" -lpthread

# start_ranks N OUTPREFIX [VAR=value ...] -- PROG: starts N ranks in the background (PIDS).
start_ranks() {
    local n=$1 out=$2 r
    shift 2
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    PIDS=()
    for r in $(seq 0 $((n - 1))); do
        env HCOMM_RANK="$r" HCOMM_SIZE="$n" HCOMM_BOOTSTRAP_TIMEOUT=30 ${envs[@]+"${envs[@]}"} \
            "$@" >"$out.$r.out" 2>"$out.$r.err" </dev/null &
        PIDS+=($!)
    done
}

# wait_ranks SECONDS: waits for every rank; sets RCS (one exit status per rank, 124 = still
# running after SECONDS, then killed).
wait_ranks() {
    local deadline=$((SECONDS + $1)) p
    RCS=()
    for p in "${PIDS[@]}"; do
        while kill -0 "$p" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
        if kill -0 "$p" 2>/dev/null; then
            kill -9 "$p" 2>/dev/null || true
            { wait "$p"; } 2>/dev/null || true
            RCS+=(124)
        else
            local rc=0
            { wait "$p"; } 2>/dev/null || rc=$?
            RCS+=("$rc")
        fi
    done
    PIDS=()
}

# 1. file:// + TCP everywhere.
RV=$WORK/rv1
mkdir -p "$RV"
start_ranks 3 "$WORK/t1" HCOMM_URI="file://$RV" HCOMM_TRANSPORT=tcp HCOMM_SOCKETS_PER_PEER=2 \
    HCOMM_DEBUG=INFO -- "$WORK/coll_check"
wait_ranks 120
if [ "${RCS[*]}" != "0 0 0" ]; then
    fail "file:// + tcp coll_check: exit statuses ${RCS[*]} ($(cat "$WORK"/t1.*.err | grep -m1 -iE 'error|fatal' || true))"
elif grep -q '^FAIL' "$WORK"/t1.*.out; then
    fail "file:// + tcp coll_check: $(grep -m1 -h '^FAIL' "$WORK"/t1.*.out)"
else
    ntcp=$(cat "$WORK"/t1.*.err | grep -c 'transport tcp' || true)
    nshm=$(cat "$WORK"/t1.*.err | grep -c 'transport shm' || true)
    if [ "$ntcp" -ne 6 ] || [ "$nshm" -ne 0 ]; then
        fail "file:// + tcp: expected 6 'transport tcp' lines and no shm, got $ntcp tcp / $nshm shm"
    elif ! grep -q '2 socket(s)' "$WORK/t1.0.err"; then
        fail "file:// + tcp: HCOMM_SOCKETS_PER_PEER=2 not applied: $(grep -m1 'transport tcp' "$WORK/t1.0.err")"
    elif [ -n "$(ls -A "$RV")" ]; then
        fail "file://: rendezvous directory not cleaned up: $(ls -A "$RV")"
    else
        pass "file:// rendezvous, HCOMM_TRANSPORT=tcp, 3 ranks: $(grep -h -m1 'checks passed' "$WORK/t1.0.out")"
    fi
fi

# 2. file:// + default transport (one host: shared memory).
RV=$WORK/rv2
mkdir -p "$RV"
start_ranks 3 "$WORK/t2" HCOMM_URI="file://$RV" HCOMM_DEBUG=INFO CHECK_LARGE=1000 -- "$WORK/coll_check"
wait_ranks 120
nshm=$(cat "$WORK"/t2.*.err | grep -c 'transport shm' || true)
if [ "${RCS[*]}" != "0 0 0" ] || [ "$nshm" -ne 6 ]; then
    fail "file:// + auto: exit statuses ${RCS[*]}, $nshm 'transport shm' lines (want 6)"
else
    pass "file:// rendezvous, default transport: shared memory between the 3 ranks"
fi

# 3. A peer killed during TCP transfers.
RV=$WORK/rv3
mkdir -p "$RV"
start_ranks 3 "$WORK/t3" HCOMM_URI="file://$RV" HCOMM_TRANSPORT=tcp -- "$WORK/dead_peer"
for _ in $(seq 1 100); do
    [ "$(cat "$WORK"/t3.*.out 2>/dev/null | grep -c running || true)" -eq 3 ] && break
    sleep 0.1
done
sleep 0.5
kill -9 "${PIDS[1]}"
t0=$SECONDS
{ wait "${PIDS[1]}"; } 2>/dev/null || true
wait_ranks 30
rc0=${RCS[0]} rc2=${RCS[2]}
if [ "$rc0" -eq 124 ] || [ "$rc2" -eq 124 ]; then
    fail "dead peer: survivors still running 30 s after rank 1 was killed (exit statuses ${RCS[*]})"
elif [ "$rc0" -eq 141 ] || [ "$rc2" -eq 141 ]; then
    fail "dead peer: a survivor died of SIGPIPE (exit statuses ${RCS[*]})"
elif [ "$rc0" -eq 0 ] || [ "$rc2" -eq 0 ]; then
    fail "dead peer: a survivor exited 0 (exit statuses ${RCS[*]})"
elif ! grep -q 'rank 1' "$WORK/t3.0.err" "$WORK/t3.2.err"; then
    fail "dead peer: no survivor named rank 1: $(head -c 300 "$WORK/t3.0.err")"
else
    pass "dead peer: survivors ended in $((SECONDS - t0)) s with statuses $rc0/$rc2: $(grep -h -m1 'rank 1' "$WORK/t3.0.err" "$WORK/t3.2.err" | head -1 | cut -c1-200)"
fi

# 4. Transport settings that cannot work are errors that say why.
RV=$WORK/rv4
mkdir -p "$RV"
PIDS=()
env HCOMM_RANK=0 HCOMM_SIZE=2 HCOMM_URI="file://$RV" HCOMM_BOOTSTRAP_TIMEOUT=20 HCOMM_TRANSPORT=tcp \
    CHECK_LARGE=0 "$WORK/coll_check" >"$WORK/t4.0.out" 2>"$WORK/t4.0.err" </dev/null &
PIDS+=($!)
env HCOMM_RANK=1 HCOMM_SIZE=2 HCOMM_URI="file://$RV" HCOMM_BOOTSTRAP_TIMEOUT=20 \
    CHECK_LARGE=0 "$WORK/coll_check" >"$WORK/t4.1.out" 2>"$WORK/t4.1.err" </dev/null &
PIDS+=($!)
wait_ranks 30
if [ "${RCS[*]}" = "0 0" ] || [[ " ${RCS[*]} " == *" 124 "* ]] || \
    ! grep -q 'HCOMM_TRANSPORT differs between ranks' "$WORK"/t4.*.err; then
    fail "mismatched HCOMM_TRANSPORT: statuses ${RCS[*]}: $(cat "$WORK"/t4.*.err | head -c 300)"
else
    pass "mismatched HCOMM_TRANSPORT is reported"
fi
rc=0
HCOMM_TRANSPORT=carrier-pigeon HCOMM_RANK=0 HCOMM_SIZE=2 HCOMM_URI="file://$RV" CHECK_LARGE=0 \
    timeout 20 "$WORK/coll_check" >"$WORK/t5.out" 2>&1 </dev/null || rc=$?
if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || ! grep -q 'HCOMM_TRANSPORT="carrier-pigeon"' "$WORK/t5.out"; then
    fail "invalid HCOMM_TRANSPORT: exit $rc: $(head -c 300 "$WORK/t5.out")"
else
    pass "invalid HCOMM_TRANSPORT is reported"
fi

if [ "$FAILS" -ne 0 ]; then
    echo "tcp-test: $FAILS failure(s)"
    exit 1
fi
echo "tcp-test: all passed"
