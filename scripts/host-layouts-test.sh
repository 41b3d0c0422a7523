#!/usr/bin/env bash
# scripts/host-layouts-test.sh - collectives on communicators that span "hosts", every layout.
#
# Each rank runs in its own UTS namespace (`unshare --uts`) with the hostname of its "host",
# given by a layout such as 0,0,1,1 (rank -> host). Host identity (hostname + boot id) then
# differs between hosts and matches within one, so ranks of one host share memory and ranks
# of different hosts talk TCP (over loopback: what is tested here is the algorithms across
# hosts, not the network; scripts/multihost-test.sh puts hosts in network namespaces).
#
# Layouts: 2x1, 2x2 (blocked and round-robin), 2x3, 3x2, and uneven 3+1 (two-level
# algorithms must not apply there, results must still be exact). Programs: tests/c/coll_check.c
# (every collective, type, op, in place or not, exact expected values, on the world and on
# split communicators — some span one host, some several) and compat-tests/nb_coll.c
# (nonblocking collectives), compat-tests/coll2.c (allgatherv, alltoall(v), gather, scan, …:
# as chosen — small alltoalls aggregated through the host leaders — then with the aggregated
# alltoall and the two-level allgatherv forced for every size) and tests/c/barrier_wait.c (no rank leaves a barrier early), each with HCOMM_ALGO unset, =allreduce:hier,...,bcast:hier (two
# levels even for small messages) and =flat; the INFO log must show the two-level
# allreduce, allgather, reduce-scatter and reduce exactly where the layout allows them (on
# the uneven layout: only the small allreduce, which goes through the host leaders). Also the soak program (random collectives, results checked)
# on 2x2, and benches/coll_bench.c at 9 MiB (checked results) on 2x2 and 2x3. Needs root for unshare; elsewhere prints SKIP and exits 0.
#
# Usage: scripts/host-layouts-test.sh   (env BUILD=dir with libhcomm.so and hcomm; TIMEOUT)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-$ROOT/target/release}
TIMEOUT=${TIMEOUT:-180}
WORK=$(mktemp -d /tmp/hcomm-layouts.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

if [ "$(id -u)" -ne 0 ] || ! unshare --uts true 2>/dev/null; then
    echo "SKIP: host-layouts-test needs root (unshare --uts)"
    exit 0
fi

cat > "$WORK/fakehost.sh" <<'EOS'
#!/bin/bash
# Runs "$@" as a rank of host h<k>, k = this rank's entry of HOSTMAP.
IFS=, read -ra map <<< "$HOSTMAP"
exec unshare --uts sh -c "hostname h${map[$HCOMM_RANK]}; exec \"\$@\"" sh "$@"
EOS
chmod +x "$WORK/fakehost.sh"

cc_hcomm() { cc -O2 -I include "$1" -L "$BUILD" -lhcomm -Wl,-rpath,"$BUILD" -lpthread -lm -o "$2"; }
cc_hcomm tests/c/coll_check.c "$WORK/coll_check"
cc_hcomm compat-tests/nb_coll.c "$WORK/nb_coll"
cc_hcomm compat-tests/coll2.c "$WORK/coll2"
cc_hcomm tests/soak/soak.c "$WORK/soak"
cc_hcomm tests/c/barrier_wait.c "$WORK/barrier_wait"
cc_hcomm benches/coll_bench.c "$WORK/coll_bench"

pass=0 fail=0
check() { # name, expect-hier(1/0/-), layout, cmd...
    local name=$1 want=$2 layout=$3; shift 3
    local n; n=$(tr ',' '\n' <<< "$layout" | wc -l)
    local out="$WORK/out" rc=0
    HOSTMAP=$layout HCOMM_DEBUG=INFO timeout "$TIMEOUT" "$BUILD/hcomm" run -n "$n" "$WORK/fakehost.sh" "$@" >"$out" 2>&1 || rc=$?
    # Two-level allreduce and allgather on the world, logged once per rank each.
    local hier; hier=$(grep -cE "MPI_(Allreduce|Allgather|Reduce_scatter_block|Reduce) on comm 0 \(size $n\): algorithm Hier" "$out" || true)
    local why=""
    [ "$rc" -eq 0 ] || why="exit $rc"
    grep -q "^FAIL" "$out" && why="$why FAIL lines"
    grep -qiE "fatal error|panick" "$out" && why="$why error"
    if [ "$want" = 1 ] && [ "$hier" -ne $((4 * n)) ]; then why="$why two-level allreduce/allgather/reduce_scatter_block/reduce logged $hier times (want $((4 * n)))"; fi
    if [ "$want" = 0 ] && [ "$hier" -ne 0 ]; then why="$why two-level algorithms used ($hier lines)"; fi
    # want=small: uneven hosts — only the small allreduce (host leaders, any layout) is two-level.
    if [ "$want" = small ]; then
        local ar; ar=$(grep -cE "MPI_Allreduce on comm 0 \(size $n\): algorithm Hier" "$out" || true)
        if [ "$ar" -ne "$n" ] || [ "$hier" -ne "$n" ]; then
            why="$why want only the small allreduce two-level ($ar allreduce, $hier in all; want $n)"
        fi
    fi
    # MUST_LOG: an extended regex the INFO log must match (e.g. a two-level Allgatherv).
    if [ -n "${MUST_LOG:-}" ] && ! grep -qE "$MUST_LOG" "$out"; then why="$why no log line /$MUST_LOG/"; fi
    if [ -z "$why" ]; then
        pass=$((pass + 1)); echo "PASS $name [$layout] ${HCOMM_ALGO:-default}"
    else
        fail=$((fail + 1)); echo "FAIL $name [$layout] ${HCOMM_ALGO:-default}:$why"; grep -E "^FAIL|error" "$out" | head -5
    fi
}

for layout in 0,1 0,0,1,1 0,1,0,1 0,0,0,1,1,1 0,0,1,1,2,2 0,0,0,1; do
    regular=1 expect=1
    [ "$layout" = 0,0,0,1 ] && regular=0 expect=small
    unset HCOMM_ALGO
    check coll_check "$expect" "$layout" "$WORK/coll_check"
    check nb_coll - "$layout" "$WORK/nb_coll"
    check barrier_wait - "$layout" "$WORK/barrier_wait"
    # Forced, small allreduces take the host leaders on any layout (the uneven one too).
    forced=-
    [ "$regular" = 1 ] && forced=1
    HCOMM_ALGO=allreduce:hier,allgather:hier,reduce_scatter:hier,reduce:hier,bcast:hier check coll_check "$forced" "$layout" "$WORK/coll_check"
    HCOMM_ALGO=flat check coll_check 0 "$layout" "$WORK/coll_check"
    # Allgatherv (blocks of any size, zero included) and the rest of compat-tests/coll2.c.
    # Unforced, small Alltoalls (any layout) go through the host leaders.
    MUST_LOG="MPI_Alltoall on comm 0 .*algorithm Hier" check coll2 - "$layout" "$WORK/coll2"
    HCOMM_ALGO=alltoall:hier MUST_LOG="MPI_Alltoall on comm 0 .*algorithm Hier" \
        check coll2 - "$layout" "$WORK/coll2"
    if [ "$regular" = 1 ]; then
        HCOMM_ALGO=allgatherv:hier MUST_LOG="MPI_Allgatherv on comm 0 .*algorithm Hier" \
            check coll2 - "$layout" "$WORK/coll2"
    fi
done
unset HCOMM_ALGO
# A short run, so the memory line is the one of `scripts/soak.sh --short`: half the calls warm
# up and 40 % growth is allowed. With the 10 % default and a 150-call warm-up, 2 of 6 runs here
# failed with one rank at +12 % (one more 2 MiB block kept by glibc's malloc; the same with
# HCOMM_SCRATCH_CACHE=0, so not the scratch pool). Leaks are the full soak's job.
check soak - 0,1,0,1 "$WORK/soak" --iters 1500 --seed 7 --warmup 750 --rss-slack 40
# Large messages: the segmented (pipelined) two-level allreduce and the rest, results checked
# exactly by the benchmark itself (exit 1 on any wrong element), in place and not.
for layout in 0,0,1,1 0,1,0,1,0,1; do
    check coll_bench - "$layout" "$WORK/coll_bench" -c allreduce,allgather,reduce_scatter,alltoall -b 9M -e 9M -m 2 -w 1
    check coll_bench - "$layout" "$WORK/coll_bench" -c allreduce -b 9M -e 9M -m 2 -w 1 -i -d double
done

left=$(ls /dev/shm 2>/dev/null | grep '^hcomm-' || true)
if [ -n "$left" ]; then fail=$((fail + 1)); echo "FAIL: left in /dev/shm: $left"; fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
