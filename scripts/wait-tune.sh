#!/usr/bin/env bash
# Measures hcomm's waiting policy (HCOMM_SPIN, HCOMM_YIELD, or any other setting) on this
# machine: every setting runs the same benchmark, alternating, REPS times; the table gives the
# median time per call (µs) and, per row, each setting's ratio to the first one.
#
# Usage: scripts/wait-tune.sh [SETTING ...]      a SETTING is VAR=VALUE[,VAR=VALUE...] or "-"
#                                                (the defaults); default: the list below
#        NPS="3 4"           rank counts
#        COLLS=allreduce,bcast  SIZES="8 64K 1M 16M"
#        REPS=5              alternating repetitions
#        OMPI=1              also run Open MPI (mpirun.openmpi --oversubscribe) as a reference
#        TARGET=target/release BIN=build/bench OUT=build/wait-tune
#
# Oversubscribed ranks (more than cores) are where the policy matters: a rank that polls holds
# a core its peer may need. docs/PERFORMANCE.md ("Waiting with more ranks than cores") has the
# figures that chose the defaults.
set -euo pipefail
cd "$(dirname "$0")/.."

NPS=${NPS:-"3 4"}
COLLS=${COLLS:-allreduce,bcast}
SIZES=${SIZES:-"8 64K 1M 16M"}
REPS=${REPS:-5}
OMPI=${OMPI:-1}
TARGET=${TARGET:-target/release}
BIN=${BIN:-build/bench}
OUT=${OUT:-build/wait-tune}
if [ $# -gt 0 ]; then
    SETTINGS=("$@")
else
    SETTINGS=(- HCOMM_YIELD=0 HCOMM_YIELD=20 HCOMM_YIELD=500 HCOMM_YIELD=2000 HCOMM_SPIN=5 HCOMM_SPIN=20)
fi

cargo build --release --quiet
mkdir -p "$BIN" "$OUT"
cc -O2 -I include -o "$BIN/coll_bench.hcomm" benches/coll_bench.c -L "$TARGET" -lhcomm -Wl,-rpath,"$PWD/$TARGET"
if [ "$OMPI" = 1 ]; then
    mpicc.openmpi -O2 -o "$BIN/coll_bench.openmpi" benches/coll_bench.c
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

RUNS=("${SETTINGS[@]}")
[ "$OMPI" = 1 ] && RUNS+=(openmpi)
raw=$OUT/raw.txt
: >"$raw"
for np in $NPS; do
    for rep in $(seq "$REPS"); do
        for s in "${RUNS[@]}"; do
            for size in $SIZES; do
                args=(-c "$COLLS" -b "$size" -e "$size" -B 64M -m 500 -k 0 -l x)
                if [ "$s" = openmpi ]; then
                    cmd=(mpirun.openmpi -n "$np" --oversubscribe "$BIN/coll_bench.openmpi" "${args[@]}")
                else
                    envs=()
                    [ "$s" != - ] && IFS=, read -r -a envs <<<"$s"
                    cmd=(env "${envs[@]}" "$TARGET/hcomm" run -n "$np" "$BIN/coll_bench.hcomm" "${args[@]}")
                fi
                # One line per collective: name, bytes, µs per call.
                timeout 300 "${cmd[@]}" 2>/dev/null | awk -v np="$np" -v s="$s" '!/^#/ && NF > 8 {print np, s, $1, $2, $9}' >>"$raw" || true
            done
        done
    done
done

python3 - "$raw" "${RUNS[@]}" <<'EOF'
import statistics, sys
raw, settings = sys.argv[1], sys.argv[2:]
t = {}
for line in open(raw):
    np_, s, coll, size, us = line.split()
    t.setdefault((int(np_), coll, int(size)), {}).setdefault(s, []).append(float(us))
cols = settings
print("Median µs per call over the repetitions (ratio to the first setting, lower is better).\n")
print("| ranks | collective | bytes | " + " | ".join("defaults" if c == "-" else c for c in cols) + " |")
print("|" + "---|" * (3 + len(cols)))
for (np_, coll, size), v in sorted(t.items()):
    base = statistics.median(v[cols[0]]) if cols[0] in v else None
    cells = []
    for c in cols:
        if c not in v:
            cells.append("–")
            continue
        m = statistics.median(v[c])
        cells.append(f"{m:.4g}" + (f" ({m / base:.2f})" if base and c != cols[0] else ""))
    print(f"| {np_} | {coll} | {size} | " + " | ".join(cells) + " |")
EOF
