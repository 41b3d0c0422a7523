#!/usr/bin/env bash
# scripts/perf-hosts.sh - two hosts on one machine, their link shaped: hcomm against Open MPI.
#
# The two-host mode of scripts/perf-compare.sh (`HOSTS=2x2 scripts/perf-compare.sh` runs this).
# Two network namespaces joined by a veth pair are two "hosts"; each end's egress is shaped
# with `tc ... tbf rate $RATE` (so each host's link carries RATE each way), and every rank gets
# its host's hostname in its own UTS namespace (host identity differs across, matches within).
# Ranks are laid host by host (ranks 0..L-1 on host A). The same benches/coll_bench.c runs as:
#   hcomm          libhcomm.so, ranks started per the environment contract in each namespace
#   hcomm-flat     the same with HCOMM_ALGO=flat (one-level algorithms across hosts)
#   hcomm-hier     the same with HCOMM_ALGO=hier (two levels at every size; optional)
#   openmpi        Open MPI's mpirun in host A, host B reached through an ssh-like agent
#                  (--mca plm_rsh_agent; btl tcp,self,vader on the veth)
#   hcomm-openmpi  that Open MPI with libhcomm_preload.so preloaded
# alternating implementations within each repetition; the median over REPS is reported with
# the link model's limit beside it: a two-level allreduce moves 2(H-1)/H * S bytes over each
# host link per direction, so busbw <= RATE * (2(n-1)/n) / (2(H-1)/H); allgather and
# reduce-scatter move (H-1)/H * S, busbw <= RATE * ((n-1)/n) / ((H-1)/H); alltoall moves
# L(n-L)/n * S (every rank's blocks for the other hosts), busbw <= RATE * (n-1) / (L(n-L)).
# MPICH 4.0.2 (ch4:ucx) is left out: it shares memory between these namespaces (one kernel,
# one /dev/shm), so its figures would not cross the shaped link (docs/PERFORMANCE.md).
#
# Usage: scripts/perf-hosts.sh   Env: LAYOUTS="2x2 2x4" RATES="1gbit 10gbit" REPS=3
#        SIZES="8 65536 1048576 16777216" COLLS=allreduce,allgather,reduce_scatter,alltoall
#        IMPLS="hcomm hcomm-flat openmpi hcomm-openmpi" TARGET=target/release OUT=build/perf-hosts
#        REPORT=1: write the tables and plots into docs/PERFORMANCE.md (between its perf-hosts
#        markers) and docs/perf/hosts-*.svg (benches/perf_hosts_report.py); NOTE="..." a line
#        for the doc
# Needs root (namespaces, tc); prints SKIP and exits 0 elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
TARGET=${TARGET:-$ROOT/target/release}
LAYOUTS=${LAYOUTS:-"2x2 2x4"}
RATES=${RATES:-"1gbit 10gbit"}
REPS=${REPS:-3}
SIZES=${SIZES:-"8 65536 1048576 16777216"}
COLLS=${COLLS:-allreduce,allgather,reduce_scatter,alltoall}
IMPLS=${IMPLS:-"hcomm hcomm-flat openmpi hcomm-openmpi"}
OUT=${OUT:-$ROOT/build/perf-hosts}
TIMEOUT=${TIMEOUT:-600}
TAG=hp$$
NSA=$TAG-a NSB=$TAG-b VA=${TAG}va VB=${TAG}vb
NET=10.214.$(($$ % 250))
IPA=$NET.1 IPB=$NET.2
WORK=$(mktemp -d /tmp/hcomm-perf-hosts.XXXXXX)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

cleanup() {
    ip netns del "$NSA" 2>/dev/null || true
    ip netns del "$NSB" 2>/dev/null || true
    rm -rf "$WORK"
    rm -f /dev/shm/hcomm-"$TAG"* 2>/dev/null || true
}
trap cleanup EXIT
[ "$(id -u)" -eq 0 ] || { echo "SKIP: perf-hosts needs root"; exit 0; }
ip netns add "$NSA" && ip netns add "$NSB" || { echo "SKIP: cannot create namespaces"; exit 0; }
ip link add "$VA" type veth peer name "$VB"
ip link set "$VA" netns "$NSA"
ip link set "$VB" netns "$NSB"
ip -n "$NSA" addr add "$IPA/24" dev "$VA"
ip -n "$NSB" addr add "$IPB/24" dev "$VB"
for ns in "$NSA" "$NSB"; do ip -n "$ns" link set lo up; done
ip -n "$NSA" link set "$VA" up
ip -n "$NSB" link set "$VB" up

shape() { # rate
    local ns dev
    for ns in "$NSA:$VA" "$NSB:$VB"; do
        dev=${ns#*:} ns=${ns%%:*}
        ip netns exec "$ns" tc qdisc replace dev "$dev" root tbf rate "$1" burst 512kb latency 100ms
    done
}

# The ssh-like agent: `agent [options] HOST COMMAND...` runs the joined words in a shell in
# HOST's namespace, with HOST's hostname (what ssh would do on a real host).
cat >"$WORK/agent" <<EOF
#!/bin/bash
while [ \$# -gt 0 ]; do case "\$1" in -*) shift ;; *) break ;; esac; done
host=\$1; shift
case "\$host" in $IPA|hostA) ns=$NSA name=hostA ;; $IPB|hostB) ns=$NSB name=hostB ;; *) echo "agent: unknown host \$host" >&2; exit 255 ;; esac
exec ip netns exec "\$ns" unshare --uts sh -c "hostname \$name; \$*"
EOF
chmod +x "$WORK/agent"

mkdir -p "$OUT"
cc -O2 -I include benches/coll_bench.c -o "$WORK/bench.hcomm" -L "$TARGET" -lhcomm -Wl,-rpath,"$TARGET" -lm
mpicc.openmpi -O2 benches/coll_bench.c -o "$WORK/bench.openmpi" -lm
SIZE_MIN=$(echo $SIZES | tr ' ' '\n' | sort -n | head -1)
SIZE_MAX=$(echo $SIZES | tr ' ' '\n' | sort -n | tail -1)
BENCH_ARGS=(-c "$COLLS" -b "$SIZE_MIN" -e "$SIZE_MAX" -f 8 -B 64M -m 500)

run_hcomm() { # n_per_host hosts out [env...]
    local l=$1 h=$2 out=$3 n r ns host pids=() job=$TAG$RANDOM
    shift 3
    n=$((l * h))
    for ((r = 0; r < n; r++)); do
        if [ "$r" -lt "$l" ]; then ns=$NSA host=hostA; else ns=$NSB host=hostB; fi
        # shellcheck disable=SC2016 # $0 and $@ expand in the inner shell
        timeout -k 5 "$TIMEOUT" ip netns exec "$ns" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$host" \
            env HCOMM_RANK="$r" HCOMM_SIZE="$n" HCOMM_URI="tcp://$IPA:29611" HCOMM_JOB_ID="$job" \
            HCOMM_SECRET=perf-hosts-benchmark-secret "$@" "$WORK/bench.hcomm" "${BENCH_ARGS[@]}" \
            >"$out.$r" 2>&1 </dev/null &
        pids+=($!)
    done
    local ok=0 p
    for p in "${pids[@]}"; do wait "$p" || ok=1; done
    mv "$out.0" "$out"
    rm -f "$out".*
    return $ok
}

run_ompi() { # n_per_host hosts out [preload]
    local l=$1 h=$2 out=$3 pre=()
    [ "${4:-}" = preload ] && pre=(-x LD_PRELOAD="$TARGET/libhcomm_preload.so")
    # shellcheck disable=SC2016
    timeout -k 5 "$TIMEOUT" ip netns exec "$NSA" unshare --uts sh -c 'hostname hostA && exec "$@"' sh \
        mpirun.openmpi --oversubscribe --host "$IPA:$l,$IPB:$l" -n $((l * h)) \
        --mca plm_rsh_agent "$WORK/agent" --mca btl tcp,self,vader --mca op ^avx \
        --mca btl_tcp_if_include "$NET.0/24" --mca oob_tcp_if_include "$NET.0/24" "${pre[@]}" \
        "$WORK/bench.openmpi" "${BENCH_ARGS[@]}" >"$out" 2>&1 </dev/null
}

echo "# perf-hosts: $(date -u +%F) $(nproc) cores; layouts $LAYOUTS; rates $RATES; reps $REPS" | tee "$OUT/summary.txt"
for rate in $RATES; do
    shape "$rate"
    for layout in $LAYOUTS; do
        h=${layout%x*} l=${layout#*x}
        for ((rep = 1; rep <= REPS; rep++)); do
            for impl in $IMPLS; do
                f="$OUT/raw.$rate.$layout.$impl.$rep"
                case $impl in
                    hcomm) run_hcomm "$l" "$h" "$f" ;;
                    hcomm-flat) run_hcomm "$l" "$h" "$f" HCOMM_ALGO=flat ;;
                    hcomm-hier) run_hcomm "$l" "$h" "$f" HCOMM_ALGO=hier ;;
                    openmpi) run_ompi "$l" "$h" "$f" ;;
                    hcomm-openmpi) run_ompi "$l" "$h" "$f" preload ;;
                esac || { echo "FAIL: $impl $layout $rate rep $rep:"; tail -5 "$f"; exit 1; }
            done
        done
    done
done
report=(python3 benches/perf_hosts_report.py "$OUT" "$REPS" "$IMPLS")
if [ "${REPORT:-0}" = 1 ]; then
    report+=(--doc docs/PERFORMANCE.md --svgdir docs/perf --note "${NOTE:-}")
fi
"${report[@]}" | tee -a "$OUT/summary.txt"
