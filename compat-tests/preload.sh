#!/usr/bin/env bash
# compat-tests/preload.sh - libhcomm_preload.so preloaded into programs built against the real
# MPIs (Debian MPICH 4.0.2 via mpicc.mpich / mpiexec.mpich, Debian Open MPI 4.1.4 via
# mpicc.openmpi / mpirun.openmpi), at 2 and 3 ranks.
#
# Programs (built into build/preload/<impl>/):
#   coll_check   tests/c/coll_check.c (CHECK_LARGE defaults to 4099 here to stay quick)
#   coll, coll_c compat-tests/coll.c, coll_c.c (stdout must equal compat-tests/expected/ when
#                that file exists; coll_c exits 77 = SKIP on Open MPI, which has no _c calls)
#   init_thread  compat-tests/init_thread.c (the MPI_Init_thread path)
#   allgatherv   compat-tests/preload/allgatherv.c: MPI_Allgatherv and MPI_Allgatherv_c (declared
#                by the program on Open MPI 4.1, which lacks it: the preload narrows to the
#                host's int version what it does not take), uneven gapped blocks, in place, and
#                a derived datatype (forwarded: allgatherv_forwarded above zero)
#   errors       compat-tests/preload/errors.c: errors hcomm raises come back through the host's
#                error handler as the host's error classes (MPI_ERRORS_RETURN, a user handler)
#   comm_churn   compat-tests/preload/comm_churn.c: communicators created (dup, split, create)
#                and freed CHURN_ROUNDS (100) times, results checked: MPICH reuses freed handle
#                values, so state keyed by the value alone would go stale
#   threads      tests/c/threads.c: two threads on two dup'd communicators at once under
#                MPI_THREAD_MULTIPLE (their first use, and so hcomm's set-up, is concurrent)
#   comm, userop compat-tests/comm.c, userop.c: communicator management; user-defined ops
#                (forwarded to the host: userop must show <coll>_forwarded above zero)
#   local        compat-tests/preload/local_main.c dlopen()s local_ext.c's shared object
#                RTLD_LOCAL, as Python does with an MPI extension: the host MPI is then outside
#                the global scope and the preload must find PMPI_X through dlopen(RTLD_NOLOAD)
#   fake-abi5    the same fake host as "libmpi_abi.so.1" (MPI-5 standard ABI): recognised (INFO
#                log) and everything forwarded untouched
#   fake         first, without any MPI: compat-tests/preload/fake_host.c as "libmpich.so.12"
#                calls MPI_Allreduce from inside PMPI_Barrier (the re-entry guard must forward
#                it uncounted) and lacks PMPI_Bcast_c (MPI_Bcast_c must return MPI_ERR_INTERN)
# Every run: exit 0 (77 = SKIP), no line starting with "FAIL", and with HCOMM_STATS=1 exactly
# one "hcomm-stats" line per rank on stderr (ranks 0..N-1), with <coll>_handled above zero for
# each collective hcomm must take (predefined types and ops, any intracommunicator), bytes
# moved over hcomm's transports, and <coll>_forwarded above zero where the program uses
# user-defined ops; coll_check also with HCOMM_TRANSPORT=tcp (bytes_tcp > 0). coll_check runs
# with HCOMM_PRELOADED=1, so it also checks the cases the host alone gets wrong (MPICH's
# in-place Reduce at a non-zero root, ...), and on Open MPI without --mca op ^avx (its AVX op
# saturates signed 8-bit sums; hcomm wraps).
# Then HCOMM_DISABLE=1 (with HCOMM_STATS=1): the program passes and no hcomm-stats line appears;
# and LD_PRELOAD set for the launcher itself (mpiexec and its daemons load it too).
#
# Usage: compat-tests/preload.sh [--impl mpich|openmpi|all]
# Env:   PRELOAD=target/release/libhcomm_preload.so  NPROCS="2 3"  TIMEOUT=180 (per run)
#        OUTDIR=build/preload (programs and logs)  CHURN_ROUNDS=100  THREADS_ITERS=200
#        REQUIRE_ALL=1 (a missing MPI is a failure instead of a skip)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

IMPL=all
while [ $# -gt 0 ]; do
    case "$1" in
        --impl) IMPL=${2:?--impl needs a value}; shift 2 ;;
        --impl=*) IMPL=${1#--impl=}; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "preload.sh: unknown argument: $1 (try --help)" >&2; exit 2 ;;
    esac
done
case "$IMPL" in
    all) IMPLS="mpich openmpi" ;;
    mpich|openmpi) IMPLS=$IMPL ;;
    *) echo "preload.sh: --impl must be mpich, openmpi or all" >&2; exit 2 ;;
esac

PRELOAD=${PRELOAD:-$ROOT/target/release/libhcomm_preload.so}
PRELOAD=$(cd "$(dirname "$PRELOAD")" && pwd)/$(basename "$PRELOAD")
NPROCS=${NPROCS:-"2 3"}
TIMEOUT=${TIMEOUT:-180}
REQUIRE_ALL=${REQUIRE_ALL:-0}
export CHECK_LARGE=${CHECK_LARGE:-4099}
CHURN_ROUNDS=${CHURN_ROUNDS:-100}
THREADS_ITERS=${THREADS_ITERS:-200}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

if [ ! -f "$PRELOAD" ]; then
    echo "preload.sh: $PRELOAD not built (cargo build --release)" >&2
    exit 1
fi

NFAIL=0
OUTDIR=${OUTDIR:-build/preload}
OUTDIR=$(mkdir -p "$OUTDIR" && cd "$OUTDIR" && pwd)
LOGS=$OUTDIR/logs
mkdir -p "$LOGS"

report() { # result what note
    printf '[%-4s] %s  %s\n' "$1" "$2" "$3"
    if [ "$1" = FAIL ]; then NFAIL=$((NFAIL + 1)); fi
}

have_impl() {
    case "$1" in
        mpich) command -v mpicc.mpich >/dev/null && command -v mpiexec.mpich >/dev/null ;;
        openmpi) command -v mpicc.openmpi >/dev/null && command -v mpirun.openmpi >/dev/null ;;
    esac
}

mpicc_of() { case "$1" in mpich) echo mpicc.mpich ;; openmpi) echo mpicc.openmpi ;; esac; }

# launch impl np out err preload(0|1) VAR=value... -- prog args; sets RC
# OMPI_OP_ARGS: the Open MPI op selection ("--mca op ^avx" unless set, even to empty).
launch() {
    local impl=$1 np=$2 out=$3 err=$4 pre=$5 opargs
    # shellcheck disable=SC2206 # word splitting wanted
    opargs=(${OMPI_OP_ARGS---mca op ^avx})
    shift 5
    local envs=() cmd=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    [ "$pre" = 1 ] && envs+=("LD_PRELOAD=$PRELOAD")
    case "$impl" in
        mpich)
            cmd=(mpiexec.mpich -n "$np")
            for e in ${envs[@]+"${envs[@]}"}; do cmd+=(-genv "${e%%=*}" "${e#*=}"); done ;;
        openmpi)
            cmd=(mpirun.openmpi --oversubscribe ${opargs[@]+"${opargs[@]}"} -n "$np")
            for e in ${envs[@]+"${envs[@]}"}; do cmd+=(-x "$e"); done ;;
    esac
    RC=0
    timeout -k 10 "$TIMEOUT" "${cmd[@]}" "$@" >"$out" 2>"$err" </dev/null || RC=$?
}

# check_stats err np "handled keys" "forwarded keys" [bytes key]: one hcomm-stats line per
# rank, <key>_handled > 0 for each handled key, <key>_forwarded > 0 for each forwarded key,
# and when something is handled at np > 1, bytes over hcomm's transports (bytes_shm +
# bytes_tcp, or the named bytes key alone) > 0. Prints the problem and returns 1 on failure.
check_stats() {
    local err=$1 np=$2 hkeys=$3 fkeys=$4 bkey=${5:-}
    grep '^hcomm-stats ' "$err" | awk -v np="$np" -v keys="$fkeys" -v hkeys="$hkeys" -v bkey="$bkey" '
        { n++
          for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
          if (v["rank"] in seen) { print "duplicate stats line for rank " v["rank"]; bad = 1 }
          seen[v["rank"]] = 1
          nk = split(keys, k, " ")
          for (i = 1; i <= nk; i++)
              if (!(v[k[i] "_forwarded"] > 0)) { print "rank " v["rank"] ": " k[i] "_forwarded=" v[k[i] "_forwarded"]; bad = 1 }
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

# program name -> collectives it must show as handled (on MPI_COMM_WORLD) / forwarded
# (other communicators)
handled_of() {
    case "$1" in
        coll_check|coll|coll_c) echo "$ALL7" ;;
        init_thread) echo "" ;;
        local) echo "allreduce bcast barrier" ;;
        errors) echo "allreduce bcast" ;;
        comm_churn) echo "allreduce bcast allgather reduce_scatter_block reduce barrier" ;;
        threads) echo "allreduce bcast allgather reduce_scatter_block barrier" ;;
        comm) echo "allreduce allgather" ;;
        userop) echo "allreduce" ;;
        ops_all) echo "allreduce reduce_scatter reduce_scatter_block reduce" ;;
        allgatherv) echo "allreduce allgatherv" ;; # its final check, and the taken calls
    esac
}
forwarded_of() {
    case "$1" in
        userop) echo "allreduce reduce reduce_scatter_block" ;; # user-defined ops
        allgatherv) echo "allgatherv" ;; # its derived datatype
        *) echo "" ;;
    esac
}

build_all() { # impl dir; prints build failures as FAIL
    local impl=$1 dir=$2 cc
    cc=$(mpicc_of "$impl")
    mkdir -p "$dir"
    local p src
    for p in coll_check coll coll_c init_thread errors comm_churn threads comm userop ops_all allgatherv; do
        src=compat-tests/$p.c
        case "$p" in
            coll_check|threads) src=tests/c/$p.c ;;
            errors|comm_churn|allgatherv) src=compat-tests/preload/$p.c ;;
        esac
        if ! $cc -O2 -Wall "$src" -o "$dir/$p" -lpthread >"$dir/$p.build.log" 2>&1; then
            report FAIL "build $p ($impl)" "see $dir/$p.build.log"
        fi
    done
    if ! { $cc -O2 -Wall -shared -fPIC compat-tests/preload/local_ext.c -o "$dir/local_ext.so" &&
           cc -O2 -Wall compat-tests/preload/local_main.c -o "$dir/local" -ldl; } >"$dir/local.build.log" 2>&1; then
        report FAIL "build local ($impl)" "see $dir/local.build.log"
    fi
}

# A fake host MPI (no real MPI needed): re-entry guard and a missing PMPI_ symbol.
fake=$OUTDIR/fake
mkdir -p "$fake"
if cc -O1 -shared -fPIC -Wl,-soname,libmpich.so.12 compat-tests/preload/fake_host.c -o "$fake/libmpich.so.12" \
       >"$fake/build.log" 2>&1 &&
   cc -O1 -Wall compat-tests/preload/fake_main.c -o "$fake/fake_main" "$fake/libmpich.so.12" \
       -Wl,-rpath,"$fake" -ldl >>"$fake/build.log" 2>&1; then
    out=$LOGS/fake.out err=$LOGS/fake.err
    RC=0
    env LD_PRELOAD="$PRELOAD" HCOMM_STATS=1 timeout 30 "$fake/fake_main" >"$out" 2>"$err" </dev/null || RC=$?
    what="fake host: re-entry guard, missing PMPI_Bcast_c"
    if [ "$RC" != 0 ]; then report FAIL "$what" "exit $RC [logs: $out $err]"
    elif grep -q '^FAIL' "$out"; then report FAIL "$what" "$(grep -m1 '^FAIL' "$out")"
    elif ! grep -qx 'reentry: pmpi_allreduce_calls=2' "$out"; then report FAIL "$what" "host saw the wrong Allreduce calls [log: $out]"
    elif ! grep -qx 'missing: MPI_Bcast_c rc=16' "$out"; then report FAIL "$what" "MPI_Bcast_c did not return MPI_ERR_INTERN [log: $out]"
    elif ! grep -q 'has no PMPI_Bcast' "$err"; then report FAIL "$what" "no message about PMPI_Bcast (the fallback of MPI_Bcast_c) [log: $err]"
    elif ! grep -q '^hcomm-stats rank=0 allreduce_handled=0 allreduce_forwarded=1 .* barrier_forwarded=1 ' "$err"; then
        report FAIL "$what" "stats: re-entrant call counted or line missing [log: $err]"
    else report PASS "$what" ""; fi
else
    report FAIL "build fake host" "see $fake/build.log"
fi

# The same fake host as an MPI-5 standard-ABI library (libmpi_abi.so.1): recognised, and every
# call forwarded untouched (MPI-5's error classes: MPI_ERR_INTERN is 17).
abi5=$OUTDIR/fake-abi5
mkdir -p "$abi5"
if cc -O1 -shared -fPIC -Wl,-soname,libmpi_abi.so.1 compat-tests/preload/fake_host.c -o "$abi5/libmpi_abi.so.1" \
       >"$abi5/build.log" 2>&1 &&
   cc -O1 -Wall compat-tests/preload/fake_main.c -o "$abi5/fake_main" "$abi5/libmpi_abi.so.1" \
       -Wl,-rpath,"$abi5" -ldl >>"$abi5/build.log" 2>&1; then
    out=$LOGS/fake-abi5.out err=$LOGS/fake-abi5.err
    RC=0
    env LD_PRELOAD="$PRELOAD" HCOMM_STATS=1 HCOMM_DEBUG=info timeout 30 "$abi5/fake_main" >"$out" 2>"$err" </dev/null || RC=$?
    what="fake MPI-5 ABI host: recognised, forwarded untouched"
    if [ "$RC" != 0 ]; then report FAIL "$what" "exit $RC [logs: $out $err]"
    elif grep -q '^FAIL' "$out"; then report FAIL "$what" "$(grep -m1 '^FAIL' "$out")"
    elif ! grep -q 'host MPI is MPI-5 standard ABI .*(MPI-5 ABI: untouched)' "$err"; then report FAIL "$what" "not recognised as MPI-5 [log: $err]"
    elif ! grep -qx 'missing: MPI_Bcast_c rc=17' "$out"; then report FAIL "$what" "MPI_Bcast_c did not return MPI-5's MPI_ERR_INTERN [log: $out]"
    elif ! grep -q '^hcomm-stats rank=-\{0,1\}[0-9]* allreduce_handled=0 allreduce_forwarded=1 .* barrier_handled=0 barrier_forwarded=1 ' "$err"; then
        report FAIL "$what" "stats: not forwarded [log: $err]"
    else report PASS "$what" ""; fi
else
    report FAIL "build fake MPI-5 host" "see $abi5/build.log"
fi

for impl in $IMPLS; do
    if ! have_impl "$impl"; then
        if [ "$REQUIRE_ALL" = 1 ]; then report FAIL "$impl" "not installed"; else report SKIP "$impl" "not installed"; fi
        continue
    fi
    dir=$OUTDIR/$impl
    build_all "$impl" "$dir"
    for np in $NPROCS; do
        for p in coll_check coll coll_c init_thread local errors comm_churn threads comm userop ops_all allgatherv; do
            [ -x "$dir/$p" ] || continue
            args=()
            [ "$p" = local ] && args=("$dir/local_ext.so")
            out=$LOGS/$impl.$p.n$np.out err=$LOGS/$impl.$p.n$np.err
            start=$SECONDS
            if [ "$p" = coll_check ]; then
                OMPI_OP_ARGS="" launch "$impl" "$np" "$out" "$err" 1 HCOMM_STATS=1 HCOMM_PRELOADED=1 CHECK_LARGE="$CHECK_LARGE" -- "$dir/$p"
            else
                launch "$impl" "$np" "$out" "$err" 1 HCOMM_STATS=1 CHECK_LARGE="$CHECK_LARGE" CHURN_ROUNDS="$CHURN_ROUNDS" THREADS_ITERS="$THREADS_ITERS" -- "$dir/$p" ${args[@]+"${args[@]}"}
            fi
            what="$p $impl n=$np preload"
            secs=$((SECONDS - start))
            if [ "$RC" = 77 ]; then report SKIP "$what" "exit 77 (${secs}s)"; continue; fi
            if [ "$RC" != 0 ]; then report FAIL "$what" "exit $RC [logs: $out $err]"; continue; fi
            if grep -q '^FAIL' "$out" "$err"; then report FAIL "$what" "$(grep -h -m1 '^FAIL' "$out" "$err")"; continue; fi
            exp=compat-tests/expected/$p.n$np.out
            if [ -f "$exp" ] && ! cmp -s "$exp" "$out"; then report FAIL "$what" "stdout differs from $exp"; continue; fi
            # shellcheck disable=SC2046
            if ! why=$(check_stats "$err" "$np" "$(handled_of "$p")" "$(forwarded_of "$p")"); then report FAIL "$what" "HCOMM_STATS: $(echo "$why" | head -3 | tr '\n' ';') [log: $err]"; continue; fi
            report PASS "$what" "${secs}s"
        done
        # HCOMM_TRANSPORT=tcp: hcomm's world over TCP between the ranks; the bytes go there.
        if [ -x "$dir/coll_check" ]; then
            out=$LOGS/$impl.coll_check-tcp.n$np.out err=$LOGS/$impl.coll_check-tcp.n$np.err
            OMPI_OP_ARGS="" launch "$impl" "$np" "$out" "$err" 1 HCOMM_STATS=1 HCOMM_PRELOADED=1 HCOMM_TRANSPORT=tcp CHECK_LARGE="$CHECK_LARGE" -- "$dir/coll_check"
            what="coll_check $impl n=$np preload HCOMM_TRANSPORT=tcp"
            if [ "$RC" != 0 ]; then report FAIL "$what" "exit $RC [logs: $out $err]"
            elif grep -q '^FAIL' "$out" "$err"; then report FAIL "$what" "$(grep -h -m1 '^FAIL' "$out" "$err")"
            elif ! why=$(check_stats "$err" "$np" "$ALL7" "" bytes_tcp); then report FAIL "$what" "HCOMM_STATS: $(echo "$why" | head -3 | tr '\n' ';') [log: $err]"
            else report PASS "$what" ""; fi
        fi
        # HCOMM_DISABLE=1: forwarded untouched, no stats line even with HCOMM_STATS=1.
        out=$LOGS/$impl.disable.n$np.out err=$LOGS/$impl.disable.n$np.err
        launch "$impl" "$np" "$out" "$err" 1 HCOMM_STATS=1 HCOMM_DISABLE=1 -- "$dir/coll"
        what="coll $impl n=$np preload HCOMM_DISABLE=1"
        exp=compat-tests/expected/coll.n$np.out
        if [ "$RC" != 0 ]; then report FAIL "$what" "exit $RC [logs: $out $err]"
        elif grep -q '^FAIL' "$out"; then report FAIL "$what" "$(grep -m1 '^FAIL' "$out")"
        elif [ -f "$exp" ] && ! cmp -s "$exp" "$out"; then report FAIL "$what" "stdout differs from $exp"
        elif grep -q '^hcomm-stats' "$err"; then report FAIL "$what" "printed hcomm-stats"
        else report PASS "$what" ""; fi
    done
    # LD_PRELOAD in the launcher's own environment: mpiexec, its proxies / orted daemons and
    # the ranks all load the preload; only the ranks may notice (no constructors).
    [ -x "$dir/coll" ] || continue
    out=$LOGS/$impl.launcher.out err=$LOGS/$impl.launcher.err
    case "$impl" in
        mpich) cmd=(mpiexec.mpich -n 2) ;;
        openmpi) cmd=(mpirun.openmpi --oversubscribe --mca op ^avx -n 2) ;;
    esac
    RC=0
    env LD_PRELOAD="$PRELOAD" HCOMM_STATS=1 timeout -k 10 "$TIMEOUT" "${cmd[@]}" "$dir/coll" \
        >"$out" 2>"$err" </dev/null || RC=$?
    what="coll $impl n=2 LD_PRELOAD on the launcher too"
    # shellcheck disable=SC2086 # ALL7 is a list of words
    if [ "$RC" != 0 ]; then report FAIL "$what" "exit $RC [logs: $out $err]"
    elif grep -q '^FAIL' "$out"; then report FAIL "$what" "$(grep -m1 '^FAIL' "$out")"
    elif ! cmp -s compat-tests/expected/coll.n2.out "$out"; then report FAIL "$what" "stdout differs from compat-tests/expected/coll.n2.out"
    elif ! why=$(check_stats "$err" 2 "$ALL7" ""); then report FAIL "$what" "HCOMM_STATS: $(echo "$why" | head -3 | tr '\n' ';') [log: $err]"
    else report PASS "$what" ""; fi
done

echo
if [ "$NFAIL" -gt 0 ]; then
    echo "preload.sh: $NFAIL failure(s)"
    exit 1
fi
echo "preload.sh: all passed"
