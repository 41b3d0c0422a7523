#!/usr/bin/env bash
# scripts/preload-overhead.sh - what libhcomm_preload.so adds to the calls it does not take.
#
# benches/preload_overhead.c, built against MPICH and against Open MPI, runs as a singleton
# (one process: the MPI library's own cost is smallest there, so the preload's share shows)
# with and without the preload, alternating, REPS times; the medians of ns per call and their
# difference are printed. Cases: MPI_Comm_rank (the preload does not define it: no cost is
# expected), 8-byte MPI_Allreduce with a user-defined op (interposed, decided, forwarded to the
# host's PMPI_Allreduce), and 8-byte MPI_Allreduce(MPI_SUM), which hcomm takes (its whole
# path, against the host's). Instruction counts from callgrind (`--toggle-collect=measure`:
# the measured loop only; the difference of two iteration counts divided by their difference),
# stable whatever else the machine does, are printed beside.
#
# Usage: scripts/preload-overhead.sh   Env: REPS=5 ITERS=1000000 TARGET=target/release
#        IMPLS="mpich openmpi" CALLGRIND=1 (0: times only)
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=${TARGET:-target/release}
REPS=${REPS:-5}
ITERS=${ITERS:-1000000}
IMPLS=${IMPLS:-"mpich openmpi"}
CALLGRIND=${CALLGRIND:-1}
PRE=$PWD/$TARGET/libhcomm_preload.so
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
WORK=$(mktemp -d /tmp/hcomm-preload-overhead.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
[ -f "$PRE" ] || cargo build --release

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
ns() { "$@" | awk '/^preload_overhead/ {print $3}'; }
# Instructions per call of `case` (callgrind, measured loop only).
instr() { # prog case [preload]
    local n
    for n in 2000 4000; do
        env ${3:+LD_PRELOAD=$3} valgrind --tool=callgrind --toggle-collect=measure \
            --callgrind-out-file="$WORK/cg.$n" "$1" "$2" "$n" >/dev/null 2>&1
    done
    # The loop runs n + n/10 + 1 times (warm-up included).
    awk '/^summary:/ {print $2}' "$WORK/cg.4000" "$WORK/cg.2000" | paste -sd' ' |
        awk '{printf "%.0f", ($1 - $2) / 2200}'
}

printf '%-8s %-34s %12s %12s %10s' impl case "host ns" "+preload ns" "added ns"
[ "$CALLGRIND" = 1 ] && printf ' %10s %12s %8s' "host Ir" "+preload Ir" "added Ir"
printf '\n'
for impl in $IMPLS; do
    cc=mpicc.$impl
    command -v "$cc" >/dev/null || { echo "SKIP $impl: no $cc"; continue; }
    "$cc" -O2 -g -o "$WORK/po.$impl" benches/preload_overhead.c
    for c in rank fwd taken; do
        case $c in
            rank) what="MPI_Comm_rank (not interposed)" ;;
            fwd) what="Allreduce 8 B, user op (forwarded)" ;;
            taken) what="Allreduce 8 B, SUM (taken)" ;;
        esac
        : >"$WORK/a" && : >"$WORK/b"
        for ((i = 0; i < REPS; i++)); do
            ns "$WORK/po.$impl" "$c" "$ITERS" >>"$WORK/a"
            LD_PRELOAD=$PRE ns "$WORK/po.$impl" "$c" "$ITERS" >>"$WORK/b"
        done
        a=$(median <"$WORK/a") b=$(median <"$WORK/b")
        printf '%-8s %-34s %12.1f %12.1f %10.1f' "$impl" "$what" "$a" "$b" "$(echo "$b - $a" | bc -l)"
        if [ "$CALLGRIND" = 1 ]; then
            ia=$(instr "$WORK/po.$impl" "$c") ib=$(instr "$WORK/po.$impl" "$c" "$PRE")
            printf ' %10s %12s %8s' "$ia" "$ib" "$((ib - ia))"
        fi
        printf '\n'
    done
done
