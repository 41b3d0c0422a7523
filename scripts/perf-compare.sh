#!/usr/bin/env bash
# scripts/perf-compare.sh - hcomm against MPICH and Open MPI on this machine, side by side.
#
# Builds benches/coll_bench.c three ways into build/bench/ (mpicc.mpich, mpicc.openmpi, and
# cc -I include -lhcomm against $TARGET), then runs it REPS times for each implementation,
# ALTERNATING (rep 1: A B C D E, rep 2: A B C D E, ...) so that slow drifts of the machine hit
# every implementation alike:
#   mpich          mpiexec.mpich -n N           build/bench/coll_bench.mpich
#   openmpi        mpirun.openmpi -n N          build/bench/coll_bench.openmpi   (default
#                  components; --oversubscribe when N > nproc; root needs
#                  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1, set here)
#   hcomm          $TARGET/hcomm run -n N       build/bench/coll_bench.hcomm
#   hcomm-mpich    mpiexec.mpich -genv LD_PRELOAD $TARGET/libhcomm_preload.so ... .mpich
#   hcomm-openmpi  mpirun.openmpi -x LD_PRELOAD=$TARGET/libhcomm_preload.so ... .openmpi
#   (optional)     openmpi-noavx: Open MPI with --mca op ^avx; hcomm-bench: the Rust tool
#                  `hcomm run -n N hcomm bench` with the same settings; hcomm-cma: hcomm
#                  standalone with HCOMM_CMA=1 (single copy within the host), hcomm-nocma:
#                  with HCOMM_CMA=0, hcomm-copies: with HCOMM_CMA=copies (the rings' large
#                  copies as single copies without auto's measurement), hcomm-nostage: with
#                  HCOMM_SHM_STAGE=0 (no fan-out: large bcast/allgather by chain and ring)
# Every implementation runs the same program with the same arguments (sizes, iteration
# counts, out-of-place, float sum, results checked outside the timed batch). Then
# benches/perf_report.py computes per implementation x collective x size the median and
# min-max of busbw and time over the repetitions, writes SVG plots into docs/perf/ and
# regenerates the results part of docs/PERFORMANCE.md (between its perf-results markers),
# stating the machine, the versions and these commands. Raw outputs: build/perf/raw/np<N>/,
# metadata of the run that made them: build/perf/meta-np<N>.txt.
# Idempotent: a rerun replaces the raw outputs and metadata of the rank counts it runs (those
# of other rank counts are kept, so NPS=2 and a later NPS=4 end up in one report), the plots
# and the results part of the doc.
#
# Usage: scripts/perf-compare.sh            (the full settings: 8 B .. 64 MiB, 2 ranks, 5 reps)
#        REPS=3 MAX_ITERS=200 ITER_BYTES=64M scripts/perf-compare.sh   (a quicker pass)
#        NPS="2 4" scripts/perf-compare.sh  (a second table at 4 ranks)
# Env:   REPS=5                 repetitions (at least 5 for a report; fewer for a look)
#        NPS="2"                rank counts
#        IMPLS="mpich openmpi hcomm hcomm-mpich hcomm-openmpi"   (+ openmpi-noavx, hcomm-bench)
#        COLLS="allreduce,reduce_scatter,allgather,allgatherv,bcast,reduce" (coll_bench -c)
#        MINB=8 MAXB=64M FACTOR=2                                 size sweep
#        ITER_BYTES=256M MAX_ITERS=2000   default iterations clamp(ITER_BYTES/size, 10, MAX_ITERS)
#        DTYPE=float OP=sum INPLACE=0 CHECK=1
#        TARGET=target/release  where libhcomm.so, libhcomm_preload.so and hcomm are
#        TIMEOUT=900            seconds per run
#        OUT=build/perf         raw outputs and the metadata
#        DOC=docs/PERFORMANCE.md SVGDIR=docs/perf   (REPORT=0: leave them alone)
#        NOTE="..."             a line for the doc (e.g. how loaded the machine was)
#        HOSTS=2x2              two-host mode: scripts/perf-hosts.sh (namespace hosts, shaped
#                               links, hcomm vs Open MPI); HOSTS is its LAYOUTS
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
if [ -n "${HOSTS:-}" ]; then
    LAYOUTS=$HOSTS exec scripts/perf-hosts.sh
fi
case "${1:-}" in
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    "") ;;
    *) echo "perf-compare.sh: no arguments (settings are environment variables, see --help)" >&2; exit 2 ;;
esac

REPS=${REPS:-5}
NPS=${NPS:-2}
IMPLS=${IMPLS:-"mpich openmpi hcomm hcomm-mpich hcomm-openmpi"}
COLLS=${COLLS:-allreduce,reduce_scatter,allgather,allgatherv,bcast,reduce}
MINB=${MINB:-8}
MAXB=${MAXB:-64M}
FACTOR=${FACTOR:-2}
ITER_BYTES=${ITER_BYTES:-256M}
MAX_ITERS=${MAX_ITERS:-2000}
DTYPE=${DTYPE:-float}
OP=${OP:-sum}
INPLACE=${INPLACE:-0}
CHECK=${CHECK:-1}
TARGET=${TARGET:-target/release}
TIMEOUT=${TIMEOUT:-900}
OUT=${OUT:-build/perf}
DOC=${DOC:-docs/PERFORMANCE.md}
SVGDIR=${SVGDIR:-docs/perf}
REPORT=${REPORT:-1}
NOTE=${NOTE:-}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

TARGET=$(cd "$TARGET" && pwd)
PRELOAD=$TARGET/libhcomm_preload.so
for f in "$TARGET/libhcomm.so" "$TARGET/hcomm" "$PRELOAD"; do
    [ -e "$f" ] || { echo "perf-compare.sh: $f is missing (cargo build --release)" >&2; exit 1; }
done
for t in mpicc.mpich mpicc.openmpi mpiexec.mpich mpirun.openmpi python3; do
    command -v $t >/dev/null || { echo "perf-compare.sh: $t not found (scripts/test.sh installs MPICH and Open MPI)" >&2; exit 1; }
done

# -- build ----------------------------------------------------------------------------------
BIN=build/bench
mkdir -p "$BIN"
mpicc.mpich -O2 -o "$BIN/coll_bench.mpich" benches/coll_bench.c
mpicc.openmpi -O2 -o "$BIN/coll_bench.openmpi" benches/coll_bench.c
cc -O2 -I include -o "$BIN/coll_bench.hcomm" benches/coll_bench.c -L "$TARGET" -lhcomm -Wl,-rpath,"$TARGET"

ARGS="-c $COLLS -b $MINB -e $MAXB -f $FACTOR -B $ITER_BYTES -m $MAX_ITERS -d $DTYPE -o $OP -k $CHECK"
[ "$INPLACE" = 1 ] && ARGS="$ARGS -i"
# The same settings for the Rust tool (hcomm bench takes the collectives as words).
BENCH_ARGS="${COLLS//,/ } -b $MINB -e $MAXB -f $FACTOR --iter-bytes $ITER_BYTES --max-iters $MAX_ITERS -d $DTYPE -o $OP -c $CHECK"
[ "$INPLACE" = 1 ] && BENCH_ARGS="$BENCH_ARGS --inplace"

NCPU=$(nproc)
# The command line of implementation $1 at $2 ranks (word-split on purpose when run).
command_for() {
    local impl=$1 np=$2 over=""
    [ "$np" -gt "$NCPU" ] && over="--oversubscribe"
    case "$impl" in
        mpich) echo "mpiexec.mpich -n $np $BIN/coll_bench.mpich $ARGS -l mpich" ;;
        openmpi) echo "mpirun.openmpi -n $np $over $BIN/coll_bench.openmpi $ARGS -l openmpi" ;;
        openmpi-noavx) echo "mpirun.openmpi -n $np $over --mca op ^avx $BIN/coll_bench.openmpi $ARGS -l openmpi-noavx" ;;
        hcomm) echo "$TARGET/hcomm run -n $np $BIN/coll_bench.hcomm $ARGS -l hcomm" ;;
        hcomm-mpich) echo "mpiexec.mpich -n $np -genv LD_PRELOAD $PRELOAD $BIN/coll_bench.mpich $ARGS -l hcomm-mpich" ;;
        hcomm-openmpi) echo "mpirun.openmpi -n $np $over -x LD_PRELOAD=$PRELOAD $BIN/coll_bench.openmpi $ARGS -l hcomm-openmpi" ;;
        hcomm-bench) echo "$TARGET/hcomm run -n $np $TARGET/hcomm bench $BENCH_ARGS" ;;
        hcomm-cma) echo "env HCOMM_CMA=1 $TARGET/hcomm run -n $np $BIN/coll_bench.hcomm $ARGS -l hcomm-cma" ;;
        hcomm-nocma) echo "env HCOMM_CMA=0 $TARGET/hcomm run -n $np $BIN/coll_bench.hcomm $ARGS -l hcomm-nocma" ;;
        hcomm-copies) echo "env HCOMM_CMA=copies $TARGET/hcomm run -n $np $BIN/coll_bench.hcomm $ARGS -l hcomm-copies" ;;
        hcomm-nostage) echo "env HCOMM_SHM_STAGE=0 $TARGET/hcomm run -n $np $BIN/coll_bench.hcomm $ARGS -l hcomm-nostage" ;;
        *) echo "perf-compare.sh: unknown implementation $impl" >&2; return 1 ;;
    esac
}

# -- metadata -------------------------------------------------------------------------------
mkdir -p "$OUT"
META=$OUT/meta.tmp
rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] && rev="$rev + uncommitted changes"
{
    echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "machine=$(nproc) CPUs (nproc), $(uname -m)"
    echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
    echo "memory=$(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
    echo "kernel=$(uname -r)"
    echo "load_before=$(cut -d' ' -f1-3 /proc/loadavg)"
    echo "mpich=$(mpichversion 2>/dev/null | sed -n 's/^MPICH Version:[[:space:]]*//p') (device $(mpichversion 2>/dev/null | sed -n 's/^MPICH Device:[[:space:]]*//p'))"
    echo "openmpi=$(mpirun.openmpi --version 2>/dev/null | head -1 | awk '{print $NF}')"
    echo "hcomm=git $rev, $($TARGET/hcomm --version 2>/dev/null)"
    echo "settings=REPS=$REPS NPS=\"$NPS\" sizes $MINB..$MAXB x$FACTOR, iterations clamp($ITER_BYTES/size, 10, $MAX_ITERS), warm-up max(2, iters/10), $DTYPE $OP, $([ "$INPLACE" = 1 ] && echo in-place || echo out-of-place), check $CHECK"
    echo "command=REPS=$REPS NPS=\"$NPS\" IMPLS=\"$IMPLS\" COLLS=$COLLS MINB=$MINB MAXB=$MAXB FACTOR=$FACTOR ITER_BYTES=$ITER_BYTES MAX_ITERS=$MAX_ITERS scripts/perf-compare.sh"
    [ -n "$NOTE" ] && echo "note=$NOTE"
} >"$META"
for np in $NPS; do
    rm -rf "$OUT/raw/np$np"
    cp "$META" "$OUT/meta-np$np.txt"
done

# -- runs, alternating ----------------------------------------------------------------------
failed=0
for rep in $(seq 1 "$REPS"); do
    for np in $NPS; do
        mkdir -p "$OUT/raw/np$np"
        i=0
        for impl in $IMPLS; do
            i=$((i + 1))
            cmd=$(command_for "$impl" "$np")
            [ "$rep" = 1 ] && echo "cmd.$i=$cmd" | sed "s|$ROOT/||g" >>"$OUT/meta-np$np.txt"
            log=$OUT/raw/np$np/rep$rep.$impl.txt
            start=$(date +%s)
            # shellcheck disable=SC2086
            if ! timeout "$TIMEOUT" $cmd >"$log" 2>"$log.err"; then
                echo "perf-compare.sh: FAIL: rep $rep, $np ranks, $impl (see $log.err)" >&2
                failed=1
            fi
            echo "rep $rep/$REPS  np $np  $impl: $(($(date +%s) - start)) s"
        done
    done
done
for np in $NPS; do
    echo "load_after=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/meta-np$np.txt"
done
rm -f "$META"
left=$(ls /dev/shm 2>/dev/null | grep '^hcomm-' || true)
[ -n "$left" ] && echo "perf-compare.sh: warning: shared-memory segments left: $left" >&2

# -- report ---------------------------------------------------------------------------------
if [ "$REPORT" = 1 ]; then
    python3 benches/perf_report.py --raw "$OUT/raw" --meta "$OUT"/meta-np*.txt --doc "$DOC" --svgdir "$SVGDIR"
    echo "perf-compare.sh: wrote $DOC and $SVGDIR/*.svg (raw outputs in $OUT/raw)"
fi
exit $failed
