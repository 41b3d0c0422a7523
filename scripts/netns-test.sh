#!/usr/bin/env bash
# scripts/netns-test.sh - two "hosts" on one machine: TCP between them, shared memory within.
#
# Creates two network namespaces joined by a veth pair (10.213.<x>.1 and .2), each with `lo`
# and its veth end up, and starts 4 ranks of tests/c/coll_check.c with plain `ip netns exec`
# and the environment contract (HCOMM_RANK/HCOMM_SIZE/HCOMM_URI, no launcher): ranks 0,1 on
# "hostA", ranks 2,3 on "hostB". Every namespace shares the machine's boot id, so each rank
# also gets its own UTS namespace with the hostname of its "host" (`unshare --uts`): host
# identity then differs between the namespaces and matches within one.
#
#   run 1: HCOMM_URI=tcp://<hostA's address>:<port>
#   run 2: HCOMM_URI=file://<dir> and HCOMM_SOCKET_IFNAME=<veth prefix>, 2 sockets per peer
#   run 3: HCOMM_TRANSPORT=shm: every rank must fail, naming a rank on the other host
#
# Each run must pass, and the HCOMM_DEBUG=INFO lines must show shm between 0-1 and 2-3 and
# TCP across (4 shm lines, 8 TCP lines). Needs root; where namespaces cannot be created it
# prints "SKIP: ..." and exits 0. Namespaces and veths are removed at exit.
#
# Usage: scripts/netns-test.sh   (env BUILD=dir with libhcomm.so; default target/release;
#        CHECK_LARGE for coll_check, default 20000; TIMEOUT per run, default 120)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-$ROOT/target/release}
CHECK_LARGE=${CHECK_LARGE:-20000}
TIMEOUT=${TIMEOUT:-120}
TAG=hc$$
NSA=$TAG-a NSB=$TAG-b
VA=${TAG}va VB=${TAG}vb # interface names: at most 15 characters
NET=10.213.$(($$ % 250))
WORK=$(mktemp -d /tmp/hcomm-netns-test.XXXXXX)
PIDS=()

cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    ip netns del "$NSA" 2>/dev/null || true
    ip netns del "$NSB" 2>/dev/null || true
    ip link del "$VA" 2>/dev/null || true
    rm -rf "$WORK"
    rm -f /dev/shm/hcomm-"$TAG"-* 2>/dev/null || true
}
trap cleanup EXIT

skip() {
    echo "SKIP: cannot create network namespaces ($*)"
    exit 0
}
[ "$(id -u)" -eq 0 ] || skip "not root"
command -v ip >/dev/null || skip "no ip command (iproute2)"
command -v unshare >/dev/null || skip "no unshare command (util-linux)"
err=$(ip netns add "$NSA" 2>&1) || skip "ip netns add: $err"
err=$(ip netns add "$NSB" 2>&1) || skip "ip netns add: $err"
err=$(ip link add "$VA" type veth peer name "$VB" 2>&1) || skip "veth pair: $err"
ip link set "$VA" netns "$NSA"
ip link set "$VB" netns "$NSB"
ip -n "$NSA" addr add "$NET.1/24" dev "$VA"
ip -n "$NSB" addr add "$NET.2/24" dev "$VB"
for ns in "$NSA" "$NSB"; do ip -n "$ns" link set lo up; done
ip -n "$NSA" link set "$VA" up
ip -n "$NSB" link set "$VB" up
err=$(ip netns exec "$NSA" unshare --uts sh -c 'hostname hcomm-test && true' 2>&1) ||
    skip "unshare --uts: $err"

cc -O1 -I include tests/c/coll_check.c -o "$WORK/coll_check" -L "$BUILD" -lhcomm \
    -Wl,-rpath,"$BUILD" -lpthread

FAILS=0

# run NAME URI [VAR=value ...]: 4 ranks, 2 per namespace; checks results and transports.
run() {
    local name=$1 uri=$2 r ns host
    shift 2
    PIDS=()
    for r in 0 1 2 3; do
        if [ "$r" -lt 2 ]; then ns=$NSA host=hostA; else ns=$NSB host=hostB; fi
        # shellcheck disable=SC2016 # $0 and $@ expand in the inner shell
        timeout -k 5 "$TIMEOUT" ip netns exec "$ns" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$host" \
            env HCOMM_RANK="$r" HCOMM_SIZE=4 HCOMM_URI="$uri" HCOMM_JOB_ID="$TAG" HCOMM_DEBUG=INFO \
            HCOMM_BOOTSTRAP_TIMEOUT=60 CHECK_LARGE="$CHECK_LARGE" "$@" "$WORK/coll_check" \
            >"$WORK/$name.$r.out" 2>"$WORK/$name.$r.err" </dev/null &
        PIDS+=($!)
    done
    local rcs=() p rc
    for p in "${PIDS[@]}"; do
        rc=0
        wait "$p" || rc=$?
        rcs+=("$rc")
    done
    PIDS=()
    local nshm ntcp bad=""
    nshm=$(cat "$WORK/$name".*.err | grep -c 'transport shm' || true)
    ntcp=$(cat "$WORK/$name".*.err | grep -c 'transport tcp' || true)
    # Within a host shm, across hosts tcp: rank 0 sees 1 on shm, 2 and 3 on tcp, and so on.
    grep -q 'peer 1: transport shm' "$WORK/$name.0.err" || bad="$bad rank0-peer1-not-shm"
    grep -q 'peer 2: transport tcp' "$WORK/$name.0.err" || bad="$bad rank0-peer2-not-tcp"
    grep -q 'peer 2: transport shm' "$WORK/$name.3.err" || bad="$bad rank3-peer2-not-shm"
    grep -q 'peer 1: transport tcp' "$WORK/$name.3.err" || bad="$bad rank3-peer1-not-tcp"
    if [ "${rcs[*]}" != "0 0 0 0" ]; then
        echo "FAIL: $name: exit statuses ${rcs[*]}"
        grep -h -m2 -iE 'fatal|error|FAIL' "$WORK/$name".*.err "$WORK/$name".*.out | head -4 || true
        FAILS=$((FAILS + 1))
    elif grep -q '^FAIL' "$WORK/$name".*.out; then
        echo "FAIL: $name: $(grep -h -m1 '^FAIL' "$WORK/$name".*.out | head -1)"
        FAILS=$((FAILS + 1))
    elif [ "$nshm" -ne 4 ] || [ "$ntcp" -ne 8 ] || [ -n "$bad" ]; then
        echo "FAIL: $name: transports: $nshm shm lines (want 4), $ntcp tcp lines (want 8);$bad"
        FAILS=$((FAILS + 1))
    else
        echo "PASS: $name: $(grep -h -m1 'checks passed' "$WORK/$name.0.out"); shm within a host, tcp across:"
        grep -h 'transport' "$WORK/$name.0.err" | sed 's/^/    /'
    fi
}

run tcp-uri "tcp://$NET.1:29517"
mkdir -p "$WORK/rv"
run file-uri "file://$WORK/rv" HCOMM_SOCKET_IFNAME="$TAG" HCOMM_SOCKETS_PER_PEER=2

# HCOMM_TRANSPORT=shm across hosts: every rank must fail, naming a rank on the other host.
PIDS=()
for r in 0 1 2 3; do
    if [ "$r" -lt 2 ]; then ns=$NSA host=hostA; else ns=$NSB host=hostB; fi
    # shellcheck disable=SC2016 # $0 and $@ expand in the inner shell
    timeout -k 5 "$TIMEOUT" ip netns exec "$ns" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$host" \
        env HCOMM_RANK="$r" HCOMM_SIZE=4 HCOMM_URI="tcp://$NET.1:29518" HCOMM_TRANSPORT=shm \
        CHECK_LARGE=0 "$WORK/coll_check" >"$WORK/shm.$r.out" 2>"$WORK/shm.$r.err" </dev/null &
    PIDS+=($!)
done
rcs=()
for p in "${PIDS[@]}"; do rc=0; wait "$p" || rc=$?; rcs+=("$rc"); done
PIDS=()
if [[ " ${rcs[*]} " == *" 0 "* ]] || [[ " ${rcs[*]} " == *" 124 "* ]] ||
    ! grep -q 'HCOMM_TRANSPORT=shm, but rank 2 runs on another host' "$WORK/shm.0.err"; then
    echo "FAIL: HCOMM_TRANSPORT=shm across hosts: exit statuses ${rcs[*]}: $(head -c 300 "$WORK/shm.0.err")"
    FAILS=$((FAILS + 1))
else
    echo "PASS: HCOMM_TRANSPORT=shm across hosts is an error: $(grep -m1 -o 'HCOMM_TRANSPORT=shm, but rank 2 runs on another host' "$WORK/shm.0.err")"
fi

if [ "$FAILS" -ne 0 ]; then
    echo "netns-test: $FAILS failure(s)"
    exit 1
fi
echo "netns-test: all passed"
