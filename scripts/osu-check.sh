#!/usr/bin/env bash
# scripts/osu-check.sh - the OSU micro-benchmarks (7.x, with `-c` validation) on hcomm, three
# ways, with their own validation:
#   hcomm   built with `hcomm install`'s mpicc, run by its mpiexec
#   mpich@hcomm  built with Debian's mpicc.mpich, run on the prefix's libmpich.so.12
#           (LD_LIBRARY_PATH=<prefix>/lib, LD_BIND_NOW=1: every MPI symbol the binary
#           references must exist in libhcomm.so, not only those it happens to call)
#   mpich   the same binary under MPICH itself (the reference)
# The OSU sources are not part of this repository and cannot be fetched by CI (no network but
# the package registries), so this is a check to run by hand, not a CI step:
#
#   OSU_SRC=/path/to/osu-micro-benchmarks-7.x scripts/osu-check.sh
#
# OSU_SRC is an unpacked OSU tree (its c/util and c/mpi folders). Every benchmark under
# c/mpi/collective/{blocking,non_blocking} runs at NP_COLL ranks (3) and every one under
# c/mpi/pt2pt/standard at 2, with `-c` and ARGS (default: sizes up to 1 MiB, 20 iterations).
# Benchmarks are compiled directly (c/util/*.c + the benchmark), no configure step, no CUDA.
# Output: a table benchmark x way (PASS: exit 0 and every size "Pass"); logs in OUT
# (build/osu). Exit status 1 when any hcomm way fails where MPICH passes.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
: "${OSU_SRC:?set OSU_SRC to an unpacked OSU micro-benchmarks 7.x tree}"
OUT=${OUT:-$ROOT/build/osu}
NP_COLL=${NP_COLL:-3}
ARGS=${ARGS:--m 1:1048576 -i 20 -x 5}
TARGET=${TARGET:-$ROOT/target/release}
PREFIX=$OUT/prefix

[ -x "$TARGET/hcomm" ] || (cd "$ROOT" && cargo build --release)
"$TARGET/hcomm" install --prefix "$PREFIX" > /dev/null
rm -rf "$OUT/bin-hcomm" "$OUT/bin-mpich" "$OUT/obj-hcomm" "$OUT/obj-mpich" "$OUT/logs"
mkdir -p "$OUT/logs"

UTIL=$OSU_SRC/c/util
CFLAGS=(-O2 -I"$UTIL" -DPACKAGE_VERSION='"7.x"' -w)
benches=()
for d in collective/blocking collective/non_blocking pt2pt/standard; do
    for f in "$OSU_SRC"/c/mpi/$d/osu_*.c; do
        [ -e "$f" ] && benches+=("$d/$(basename "$f" .c)")
    done
done
[ ${#benches[@]} -gt 0 ] || { echo "osu-check: no benchmarks under $OSU_SRC/c/mpi" >&2; exit 2; }

declare -A built
for way in hcomm mpich; do
    cc=$PREFIX/bin/mpicc
    [ $way = mpich ] && cc=mpicc.mpich
    mkdir -p "$OUT/bin-$way" "$OUT/obj-$way"
    for u in "$UTIL"/*.c; do
        "$cc" "${CFLAGS[@]}" -c "$u" -o "$OUT/obj-$way/$(basename "$u" .c).o" \
            2>> "$OUT/logs/build-$way.log" || echo "compile error: $way $(basename "$u")" | tee -a "$OUT/logs/build-$way.log"
    done
    for b in "${benches[@]}"; do
        n=$(basename "$b")
        if "$cc" "${CFLAGS[@]}" "$OSU_SRC/c/mpi/$b.c" "$OUT/obj-$way"/*.o -lm -o "$OUT/bin-$way/$n" \
            2>> "$OUT/logs/build-$way.log"; then
            built[$way/$n]=1
        fi
    done
done

# $1 log: PASS when the run exited 0 and printed Pass for every size, else FAIL. A benchmark
# without a validation column (osu_barrier) is RAN when it exited 0 with no error.
verdict() {
    local log=$1 rc=$2 checked=$3
    if [ "$rc" -eq 0 ] && [ "$checked" = no ] && ! grep -qi "fail\|error" "$log"; then
        echo RAN
    elif [ "$rc" -eq 0 ] && grep -q "Pass" "$log" && ! grep -qi "fail\|error" "$log"; then
        echo PASS
    elif [ "$rc" -eq 124 ]; then
        echo TIMEOUT
    else
        echo "FAIL($rc)"
    fi
}

bad=0
printf '%-32s %-12s %-12s %-12s\n' benchmark hcomm mpich@hcomm mpich
for b in "${benches[@]}"; do
    n=$(basename "$b")
    np=$NP_COLL
    case $b in pt2pt/*) np=2 ;; esac
    # osu_barrier moves no data: OMB rejects -c and -m for it ("Invalid option [-c]").
    args=(-c $ARGS)
    checked=yes
    case $n in osu_barrier) args=(-i 20 -x 5); checked=no ;; esac
    row=()
    for way in hcomm mpich@hcomm mpich; do
        bin=hcomm
        [ $way != hcomm ] && bin=mpich
        if [ -z "${built[$bin/$n]:-}" ]; then
            row+=("NO-BUILD")
            continue
        fi
        log=$OUT/logs/$n.$way.log
        set +e
        case $way in
            hcomm) timeout 300 "$PREFIX/bin/mpiexec" -n "$np" "$OUT/bin-hcomm/$n" "${args[@]}" > "$log" 2>&1 ;;
            mpich@hcomm) LD_BIND_NOW=1 LD_LIBRARY_PATH=$PREFIX/lib timeout 300 "$PREFIX/bin/mpiexec" -n "$np" "$OUT/bin-mpich/$n" "${args[@]}" > "$log" 2>&1 ;;
            mpich) timeout 300 mpiexec.mpich -n "$np" "$OUT/bin-mpich/$n" "${args[@]}" > "$log" 2>&1 ;;
        esac
        rc=$?
        set -e
        row+=("$(verdict "$log" $rc $checked)")
    done
    printf '%-32s %-12s %-12s %-12s\n' "$b" "${row[@]}"
    if [ "${row[2]}" = PASS ] || [ "${row[2]}" = RAN ]; then
        [ "${row[0]}" = "${row[2]}" ] && [ "${row[1]}" = "${row[2]}" ] || bad=1
    fi
done
exit $bad
