#!/usr/bin/env bash
# compat-tests/run.sh - build the C test programs three ways and run them.
#
# Builds every program in compat-tests/*.c and tests/c/*.c against
#   hcomm    cc -O2 -I include prog.c -L target/release -lhcomm -Wl,-rpath,$PWD/target/release -lpthread
#   mpich    mpicc.mpich   (Debian MPICH 4.0.2)
#   openmpi  mpicc.openmpi (Debian Open MPI 4.1.4)
# into compat-tests/bin/<impl>/, runs each for N in $NPROCS ranks (hcomm: `hcomm run -n N`,
# MPICH: `mpiexec.mpich -n N`, Open MPI: `mpirun.openmpi --oversubscribe --mca op ^avx -n N`;
# `--mca op ^avx` because Open MPI 4.1.4's AVX op component saturates signed 8-bit sums
# instead of wrapping), and prints a PASS/FAIL/SKIP table per (program, impl, N, variant).
#
# Per program:
#   compat-tests/*.c   exit 0 and no "FAIL" line; stdout equal to
#                      compat-tests/expected/<prog>.n<N>.out when that file exists
#                      (`--bless` writes those files from this run); exit 77 = SKIP.
#                      A file containing "compat-expect: nonzero-exit" (abort.c) must end
#                      non-zero instead, and must not print "FAIL".
#   coll_check         hcomm: for every N in $HCOMM_NPROCS (default 1..8) and every setting
#                      in $HCOMM_ALGOS: HCOMM_ALGO unset, =ring, =oneshot, =tree, =pipeline,
#                      HCOMM_CHUNK_SIZE=4096 (alone and with pipeline), HCOMM_SHM_STAGE=2 (a
#                      fan-out's fragments mostly find the stage full: staged and slot fragments
#                      in one message). Others: N in $NPROCS.
#   bitwise            run twice, the "bitwise:" hash lines of both runs must be equal.
#   threads            plain run (exit 77 = SKIP where MPI_THREAD_MULTIPLE is missing).
#   nb_*.c, persistent*.c  hcomm: also run with HCOMM_PROGRESS=caller (no progress thread).
#   errors             plain run, and "fatal" mode for N >= 2 (or N = 1 alone): the job must
#                      end non-zero within $FATAL_TIMEOUT s and stderr must name
#                      MPI_Allreduce, the count and the rank. Not built for MPICH (4.0.2
#                      checks no arguments).
# After every hcomm run, /dev/shm must hold no hcomm-* entry that was not there before.
#
# Usage: compat-tests/run.sh [--impl hcomm|mpich|openmpi|all] [--only NAME[,NAME...]] [--bless]
# Env:   NPROCS="1 2 3 4 5"  HCOMM_NPROCS="1 2 3 4 5 6 7 8"
#        HCOMM_ALGOS="default ring oneshot tree pipeline chunk4096 pipeline-chunk4096 stage2"
#        TIMEOUT=120 (per run)  LONG_TIMEOUT=300 (coll_check on MPICH/Open MPI, slow when
#        oversubscribed)  FATAL_TIMEOUT=30  REQUIRE_ALL=1 (a missing impl is a failure)
#        CHECK_LARGE (passed through to coll_check and bitwise)
#        SHM_STRICT=1 (hcomm-* entries already in /dev/shm before the hcomm runs also fail;
#        by default only entries that appear during the runs do)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

IMPL=all
ONLY=""
BLESS=0
while [ $# -gt 0 ]; do
    case "$1" in
        --impl) IMPL=${2:?--impl needs a value}; shift 2 ;;
        --impl=*) IMPL=${1#--impl=}; shift ;;
        --only) ONLY=${2:?--only needs a value}; shift 2 ;;
        --only=*) ONLY=${1#--only=}; shift ;;
        --bless) BLESS=1; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "run.sh: unknown argument: $1 (try --help)" >&2; exit 2 ;;
    esac
done
case "$IMPL" in
    all) IMPLS="hcomm mpich openmpi" ;;
    hcomm|mpich|openmpi) IMPLS=$IMPL ;;
    *) echo "run.sh: --impl must be hcomm, mpich, openmpi or all" >&2; exit 2 ;;
esac

NPROCS=${NPROCS:-"1 2 3 4 5"}
HCOMM_NPROCS=${HCOMM_NPROCS:-"1 2 3 4 5 6 7 8"}
HCOMM_ALGOS=${HCOMM_ALGOS:-"default ring oneshot tree pipeline chunk4096 pipeline-chunk4096 stage2"}
TIMEOUT=${TIMEOUT:-120}
LONG_TIMEOUT=${LONG_TIMEOUT:-300}
FATAL_TIMEOUT=${FATAL_TIMEOUT:-30}
REQUIRE_ALL=${REQUIRE_ALL:-0}
SHM_STRICT=${SHM_STRICT:-0}

BIN=compat-tests/bin
EXPECTED=compat-tests/expected
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

RESULTS=()   # "prog|impl|N|variant|RESULT|seconds|note"
NFAIL=0

record() { # prog impl np variant result seconds note
    RESULTS+=("$1|$2|$3|$4|$5|$6|$7")
    if [ "$5" = FAIL ]; then NFAIL=$((NFAIL + 1)); fi
    printf '[%-4s] %-14s %-8s n=%-2s %-20s %6ss  %s\n' "$5" "$1" "$2" "$3" "$4" "$6" "$7"
}

selected() { # prog
    [ -z "$ONLY" ] && return 0
    case ",$ONLY," in *",$1,"*) return 0 ;; esac
    return 1
}

have_impl() {
    case "$1" in
        hcomm) [ -f target/release/libhcomm.so ] && [ -x target/release/hcomm ] && [ -f include/mpi.h ] ;;
        mpich) command -v mpicc.mpich >/dev/null && command -v mpiexec.mpich >/dev/null ;;
        openmpi) command -v mpicc.openmpi >/dev/null && command -v mpirun.openmpi >/dev/null ;;
    esac
}

build() { # impl src out log
    local impl=$1 src=$2 out=$3 log=$4
    case "$impl" in
        hcomm) cc -O2 -Wall -Wextra -I include "$src" -o "$out" -L target/release -lhcomm \
                   -Wl,-rpath,"$ROOT/target/release" -lpthread >"$log" 2>&1 ;;
        mpich) mpicc.mpich -O2 -Wall -Wextra "$src" -o "$out" -lpthread >"$log" 2>&1 ;;
        openmpi) mpicc.openmpi -O2 -Wall -Wextra "$src" -o "$out" -lpthread >"$log" 2>&1 ;;
    esac
}

# launch impl np timeout out err [VAR=value ...] -- prog [args]; sets RC and SECS
launch() {
    local impl=$1 np=$2 tmo=$3 out=$4 err=$5
    shift 5
    local envs=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    local cmd
    case "$impl" in
        hcomm) cmd=(target/release/hcomm run -n "$np") ;;
        mpich) cmd=(mpiexec.mpich -n "$np") ;;
        openmpi) cmd=(mpirun.openmpi --oversubscribe --mca op ^avx -n "$np") ;;
    esac
    local t0 t1
    t0=$(date +%s.%N)
    set +e
    env ${envs[@]+"${envs[@]}"} timeout -k 10 "$tmo" "${cmd[@]}" "$@" >"$out" 2>"$err" </dev/null
    RC=$?
    set -e
    t1=$(date +%s.%N)
    SECS=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
}

skip_reason() { # out
    local l
    l=$(grep -m1 '^SKIP' "$1" 2>/dev/null || true)
    echo "${l:-exit 77}"
}

first_fail() { # out err
    local l
    l=$(grep -m1 'FAIL' "$1" 2>/dev/null || true)
    [ -z "$l" ] && l=$(grep -m1 -iE 'error|abort|assert|fault|panic' "$2" 2>/dev/null || true)
    echo "${l:0:160}"
}

# Generic verdict from RC, the output and (optionally) an expected-output file.
judge() { # prog impl np variant out err [expected]
    local prog=$1 impl=$2 np=$3 variant=$4 out=$5 err=$6 exp=${7:-}
    if [ "$RC" -eq 77 ]; then
        record "$prog" "$impl" "$np" "$variant" SKIP "$SECS" "$(skip_reason "$out")"
    elif [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ]; then
        record "$prog" "$impl" "$np" "$variant" FAIL "$SECS" "timeout; $(first_fail "$out" "$err") [log: $out]"
    elif [ "$RC" -ne 0 ]; then
        record "$prog" "$impl" "$np" "$variant" FAIL "$SECS" "exit $RC; $(first_fail "$out" "$err") [log: $out]"
    elif grep -q '^FAIL' "$out"; then
        record "$prog" "$impl" "$np" "$variant" FAIL "$SECS" "$(first_fail "$out" "$err") [log: $out]"
    elif [ -n "$exp" ] && [ "$BLESS" = 1 ]; then
        cp "$out" "$exp"
        record "$prog" "$impl" "$np" "$variant" PASS "$SECS" "blessed $exp"
    elif [ -n "$exp" ] && [ -f "$exp" ] && ! diff -q "$exp" "$out" >/dev/null; then
        local d
        d=$(diff "$exp" "$out" | grep -m1 '^[<>]' || true)
        record "$prog" "$impl" "$np" "$variant" FAIL "$SECS" "output differs from $exp: ${d:0:120}"
    else
        local note=""
        case "$prog" in
            coll_check) note=$(grep -m1 '^coll_check:.*passed' "$out" || true)
                        if grep -q '^coll_check: SKIPPED' "$out"; then
                            note="$note; $(grep -c '^coll_check: SKIPPED' "$out") kinds of checks skipped (reference bugs)"
                        fi ;;
        esac
        if [ -n "$exp" ] && [ ! -f "$exp" ]; then note="no expected output for n=$np"; fi
        record "$prog" "$impl" "$np" "$variant" PASS "$SECS" "$note"
    fi
}

shm_list() {
    local f
    for f in /dev/shm/hcomm-*; do
        if [ -e "$f" ]; then echo "${f#/dev/shm/}"; fi
    done
}

SHM_BEFORE=""
shm_check() { # prog impl np variant: hcomm must leave no new /dev/shm/hcomm-* behind
    local now leaked
    now=$(shm_list)
    leaked=$(comm -13 <(echo "$SHM_BEFORE" | sort) <(echo "$now" | sort) | tr '\n' ' ')
    if [ -n "${leaked// /}" ]; then
        sleep 1 # give a concurrent job's cleanup a moment before blaming this run
        now=$(shm_list)
        leaked=$(comm -13 <(echo "$SHM_BEFORE" | sort) <(echo "$now" | sort) | tr '\n' ' ')
    fi
    if [ -n "${leaked// /}" ]; then
        record "$1" "$2" "$3" "$4/dev-shm" FAIL 0 "left in /dev/shm: $leaked"
        SHM_BEFORE=$now # report each leak once
    fi
}

algo_env() { # variant -> env assignments
    case "$1" in
        default) echo "" ;;
        chunk4096) echo "HCOMM_CHUNK_SIZE=4096" ;;
        pipeline-chunk4096) echo "HCOMM_ALGO=pipeline HCOMM_CHUNK_SIZE=4096" ;;
        stage2) echo "HCOMM_SHM_STAGE=2" ;;
        *) echo "HCOMM_ALGO=$1" ;;
    esac
}

PASSENV=()
if [ -n "${CHECK_LARGE:-}" ]; then PASSENV+=("CHECK_LARGE=$CHECK_LARGE"); fi

run_program() { # impl prog exe kind(compat|tests)
    local impl=$1 prog=$2 exe=$3 kind=$4 logs=$BIN/$1/logs np out err
    local src
    if [ "$kind" = compat ]; then src=compat-tests/$prog.c; else src=tests/c/$prog.c; fi
    case "$prog" in
        coll_check)
            if [ "$impl" = hcomm ]; then
                local v
                for v in $HCOMM_ALGOS; do
                    for np in $HCOMM_NPROCS; do
                        out=$logs/$prog.$v.n$np.out err=$logs/$prog.$v.n$np.err
                        # shellcheck disable=SC2046
                        launch "$impl" "$np" "$TIMEOUT" "$out" "$err" ${PASSENV[@]+"${PASSENV[@]}"} $(algo_env "$v") -- "$exe"
                        judge "$prog" "$impl" "$np" "$v" "$out" "$err"
                        shm_check "$prog" "$impl" "$np" "$v"
                    done
                done
            else
                for np in $NPROCS; do
                    out=$logs/$prog.n$np.out err=$logs/$prog.n$np.err
                    launch "$impl" "$np" "$LONG_TIMEOUT" "$out" "$err" ${PASSENV[@]+"${PASSENV[@]}"} -- "$exe"
                    judge "$prog" "$impl" "$np" plain "$out" "$err"
                done
            fi
            ;;
        bitwise)
            for np in $NPROCS; do
                local o1=$logs/$prog.n$np.run1.out o2=$logs/$prog.n$np.run2.out e1=$logs/$prog.n$np.run1.err
                local e2=$logs/$prog.n$np.run2.err
                launch "$impl" "$np" "$TIMEOUT" "$o1" "$e1" ${PASSENV[@]+"${PASSENV[@]}"} -- "$exe"
                judge "$prog" "$impl" "$np" run1 "$o1" "$e1"
                if [ "$impl" = hcomm ]; then shm_check "$prog" "$impl" "$np" run1; fi
                local rc1=$RC
                launch "$impl" "$np" "$TIMEOUT" "$o2" "$e2" ${PASSENV[@]+"${PASSENV[@]}"} -- "$exe"
                judge "$prog" "$impl" "$np" run2 "$o2" "$e2"
                if [ "$impl" = hcomm ]; then shm_check "$prog" "$impl" "$np" run2; fi
                if [ "$rc1" -eq 0 ] && [ "$RC" -eq 0 ]; then
                    if diff -q <(grep '^bitwise:' "$o1") <(grep '^bitwise:' "$o2") >/dev/null; then
                        record "$prog" "$impl" "$np" same-bits-twice PASS 0 "$(grep -m1 'total hash' "$o1")"
                    else
                        record "$prog" "$impl" "$np" same-bits-twice FAIL 0 \
                            "hashes differ between two runs: $(diff <(grep '^bitwise:' "$o1") <(grep '^bitwise:' "$o2") | grep -m1 '^[<>]')"
                    fi
                fi
            done
            ;;
        errors)
            for np in $NPROCS; do
                out=$logs/$prog.n$np.out err=$logs/$prog.n$np.err
                launch "$impl" "$np" "$TIMEOUT" "$out" "$err" -- "$exe"
                judge "$prog" "$impl" "$np" return "$out" "$err"
                if [ "$impl" = hcomm ]; then shm_check "$prog" "$impl" "$np" return; fi
            done
            local fnps=""
            for np in $NPROCS; do if [ "$np" -ge 2 ]; then fnps="$fnps $np"; fi; done
            if [ -z "$fnps" ]; then fnps=$NPROCS; fi
            for np in $fnps; do
                out=$logs/$prog.fatal.n$np.out err=$logs/$prog.fatal.n$np.err
                local culprit=1 attempt=1 attempts=1 verdict note
                if [ "$np" -lt 2 ]; then culprit=0; fi
                # Open MPI 4.1.4 sometimes loses the error message of a rank that dies at once
                # ("ORTE_ERROR_LOG: Data unpack would read past end of buffer ... show_help.c",
                # about 1 run in 10): up to 3 attempts for it, one for the others.
                if [ "$impl" = openmpi ]; then attempts=3; fi
                while :; do
                    launch "$impl" "$np" "$FATAL_TIMEOUT" "$out" "$err" -- "$exe" fatal
                    if [ "$RC" -eq 77 ]; then
                        verdict=SKIP note=$(skip_reason "$out")
                    elif [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ]; then
                        verdict=FAIL note="job did not end within ${FATAL_TIMEOUT}s [log: $err]"
                    elif [ "$RC" -eq 0 ]; then
                        verdict=FAIL note="job exited 0 after a fatal error [log: $out]"
                    elif grep -q FAIL "$out"; then
                        verdict=FAIL note=$(grep -m1 FAIL "$out")
                    else
                        local miss=""
                        grep -q 'MPI_Allreduce' "$err" || miss="$miss MPI_Allreduce"
                        grep -qi 'count' "$err" || miss="$miss count"
                        grep -qiE "rank[ =:#]*$culprit\b|process \[[0-9]+,$culprit\]|\[$culprit\]" "$err" ||
                            miss="$miss rank-$culprit"
                        if [ -n "$miss" ] && [ "$impl" = openmpi ] && grep -q 'ORTE_ERROR_LOG.*show_help' "$err"; then
                            # Open MPI 4.1.4 itself lost the message (its show_help machinery
                            # failed): the job did end non-zero, which is what can be checked.
                            verdict=PASS note="exit $RC; Open MPI lost the error message (known Open MPI bug)"
                        elif [ -n "$miss" ]; then
                            verdict=FAIL note="stderr does not name:$miss [log: $err]"
                        else
                            verdict=PASS note="exit $RC"
                        fi
                    fi
                    if [ "$verdict" != FAIL ] || [ "$attempt" -ge "$attempts" ]; then break; fi
                    attempt=$((attempt + 1))
                done
                if [ "$attempt" -gt 1 ]; then note="$note (attempt $attempt)"; fi
                record "$prog" "$impl" "$np" fatal "$verdict" "$SECS" "$note"
                if [ "$impl" = hcomm ]; then shm_check "$prog" "$impl" "$np" fatal; fi
            done
            ;;
        *)
            local nonzero=0 exp="" tmo=$TIMEOUT
            if grep -q 'compat-expect: nonzero-exit' "$src"; then nonzero=1; fi
            # Programs of thousands of collectives: the references are slow oversubscribed.
            if [ "$impl" != hcomm ] && grep -q 'compat-timeout: long' "$src"; then tmo=$LONG_TIMEOUT; fi
            for np in $NPROCS; do
                out=$logs/$prog.n$np.out err=$logs/$prog.n$np.err
                launch "$impl" "$np" "$tmo" "$out" "$err" -- "$exe"
                if [ "$nonzero" = 1 ]; then
                    if [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ]; then
                        record "$prog" "$impl" "$np" nonzero-exit FAIL "$SECS" "job did not end [log: $err]"
                    elif [ "$RC" -eq 0 ] || grep -q FAIL "$out"; then
                        record "$prog" "$impl" "$np" nonzero-exit FAIL "$SECS" "exit $RC; $(first_fail "$out" "$err")"
                    else
                        record "$prog" "$impl" "$np" nonzero-exit PASS "$SECS" "exit $RC"
                    fi
                else
                    exp=""
                    if [ "$kind" = compat ]; then exp=$EXPECTED/$prog.n$np.out; fi
                    judge "$prog" "$impl" "$np" plain "$out" "$err" "$exp"
                fi
                if [ "$impl" = hcomm ]; then shm_check "$prog" "$impl" "$np" plain; fi
                if [ "$impl" = hcomm ] && { [ "${prog#nb_}" != "$prog" ] || [ "${prog#persistent}" != "$prog" ]; }; then
                    # Nonblocking and persistent programs also without the progress thread.
                    out=$logs/$prog.caller.n$np.out err=$logs/$prog.caller.n$np.err
                    launch "$impl" "$np" "$TIMEOUT" "$out" "$err" HCOMM_PROGRESS=caller -- "$exe"
                    judge "$prog" "$impl" "$np" progress-caller "$out" "$err" "$exp"
                    shm_check "$prog" "$impl" "$np" progress-caller
                fi
            done
            ;;
    esac
}

mkdir -p "$EXPECTED"
NSELECTED=0 NAVAIL=0
for impl in $IMPLS; do
    if ! have_impl "$impl"; then
        if [ "$REQUIRE_ALL" = 1 ]; then
            record "-" "$impl" "-" "-" FAIL 0 "not installed (REQUIRE_ALL=1)"
        else
            record "-" "$impl" "-" "-" SKIP 0 "SKIP (not installed)"
        fi
        continue
    fi
    mkdir -p "$BIN/$impl/logs"
    NAVAIL=$((NAVAIL + 1))
    if [ "$impl" = hcomm ]; then
        SHM_BEFORE=$(shm_list)
        if [ -n "$SHM_BEFORE" ]; then
            if [ "$SHM_STRICT" = 1 ]; then
                record "-" hcomm "-" dev-shm-before FAIL 0 "/dev/shm already holds: $(echo "$SHM_BEFORE" | tr '\n' ' ')"
            else
                echo "run.sh: warning: /dev/shm already holds (not counted; SHM_STRICT=1 fails on them): $(echo "$SHM_BEFORE" | tr '\n' ' ')"
            fi
        fi
    fi
    for src in compat-tests/*.c tests/c/*.c; do
        prog=$(basename "$src" .c)
        selected "$prog" || continue
        NSELECTED=$((NSELECTED + 1))
        kind=tests
        case "$src" in compat-tests/*) kind=compat ;; esac
        if [ "$prog" = errors ] && [ "$impl" = mpich ]; then
            record "$prog" "$impl" "-" build SKIP 0 "not built: Debian MPICH 4.0.2 checks no arguments"
            continue
        fi
        exe=$BIN/$impl/$prog
        blog=$BIN/$impl/logs/$prog.build.log
        if ! build "$impl" "$src" "$exe" "$blog"; then
            record "$prog" "$impl" "-" build FAIL 0 "$(grep -m1 -E 'error|undefined' "$blog" | cut -c1-150) [log: $blog]"
            continue
        fi
        if [ -s "$blog" ]; then
            record "$prog" "$impl" "-" build FAIL 0 "compiler warnings: $(grep -m1 warning "$blog" | cut -c1-150) [log: $blog]"
        fi
        run_program "$impl" "$prog" "$exe" "$kind"
    done
done

if [ -n "$ONLY" ] && [ "$NAVAIL" -gt 0 ] && [ "$NSELECTED" -eq 0 ]; then
    record "-" "$IMPL" "-" "--only" FAIL 0 "no program matches --only $ONLY"
fi

echo
echo "==================================== summary ===================================="
printf '%-14s %-8s %-3s %-20s %-5s %7s  %s\n' PROGRAM IMPL N VARIANT RESULT TIME NOTE
npass=0 nskip=0
for r in "${RESULTS[@]}"; do
    IFS='|' read -r p i n v res s note <<<"$r"
    printf '%-14s %-8s %-3s %-20s %-5s %6ss  %s\n' "$p" "$i" "$n" "$v" "$res" "$s" "$note"
    case "$res" in PASS) npass=$((npass + 1)) ;; SKIP) nskip=$((nskip + 1)) ;; esac
done
echo "================================================================================="
echo "PASS $npass  SKIP $nskip  FAIL $NFAIL"
# The failures once more, last, with the end of their logs: a CI record that keeps only the
# tail of the output still says what failed and why.
if [ "$NFAIL" -gt 0 ]; then
    echo "=================================== failures ==================================="
    for r in "${RESULTS[@]}"; do
        IFS='|' read -r p i n v res s note <<<"$r"
        [ "$res" = FAIL ] || continue
        printf 'FAIL %s %s n=%s %s: %s\n' "$p" "$i" "$n" "$v" "$note"
        for log in $(grep -o '\[log: [^]]*\]' <<<"$note" | sed 's/^\[log: //; s/\]$//'); do
            [ -f "$log" ] || continue
            echo "---- last lines of $log"
            tail -n 15 "$log"
            case "$log" in *.out) [ -f "${log%.out}.err" ] && { echo "---- last lines of ${log%.out}.err"; tail -n 15 "${log%.out}.err"; } ;; esac
        done
    done
    echo "PASS $npass  SKIP $nskip  FAIL $NFAIL"
fi
[ "$NFAIL" -eq 0 ]
