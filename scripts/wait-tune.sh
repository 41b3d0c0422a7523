#!/usr/bin/env bash
# Measures hcomm's waiting policy (HCOMM_SPIN, HCOMM_YIELD, or any other setting) on this
# machine: every setting runs the same benchmark, alternating, REPS times; the table gives the
# median time per call (µs) and, per row, each setting's ratio to the first one: the median of
# its per-repetition ratios (each against the first setting's run of the same repetition, a
# few seconds apart — robust when the machine's speed drifts between slow and fast phases),
# and in how many repetitions it was the faster.
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
                timeout 300 "${cmd[@]}" 2>/dev/null | awk -v np="$np" -v s="$s" -v rep="$rep" '!/^#/ && NF > 8 {print np, s, $1, $2, $9, rep}' >>"$raw" || true
            done
        done
    done
done

python3 - "$raw" "${RUNS[@]}" <<'EOF'
import statistics, sys
raw, settings = sys.argv[1], sys.argv[2:]
t = {}
for line in open(raw):
    np_, s, coll, size, us, rep = line.split()
    t.setdefault((int(np_), coll, int(size)), {}).setdefault(s, {})[rep] = float(us)
cols = settings
print("Median µs per call over the repetitions (median of the per-repetition ratios to the first")
print("setting, lower is better; then in how many repetitions it was faster than the first).\n")
print("| ranks | collective | bytes | " + " | ".join("defaults" if c == "-" else c for c in cols) + " |")
print("|" + "---|" * (3 + len(cols)))
for (np_, coll, size), v in sorted(t.items()):
    base = v.get(cols[0], {})
    cells = []
    for c in cols:
        if c not in v:
            cells.append("–")
            continue
        m = statistics.median(v[c].values())
        pairs = [(v[c][r], base[r]) for r in v[c] if r in base and base[r] > 0]
        if c == cols[0] or not pairs:
            cells.append(f"{m:.4g}")
            continue
        ratio = statistics.median(a / b for a, b in pairs)
        won = sum(a < b for a, b in pairs)
        cells.append(f"{m:.4g} ({ratio:.2f}, {won}/{len(pairs)})")
    print(f"| {np_} | {coll} | {size} | " + " | ".join(cells) + " |")
EOF
