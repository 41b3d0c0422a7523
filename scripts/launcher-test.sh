#!/usr/bin/env bash
# scripts/launcher-test.sh - libhcomm.so started by real cluster launchers: a one-node Slurm
# (srun --mpi=pmi2 / pmix / none), MPICH's Hydra (mpiexec.mpich, PMI-1) and Open MPI's mpirun
# (PMIx).
#
# What each launcher needs (for the docs):
#   - Slurm, srun --mpi=pmi2: only Slurm's mpi_pmi2 plugin (in slurm-wlm-basic-plugins). Each
#     task gets PMI_FD (a socket to its slurmstepd's PMI-2 server), PMI_RANK, PMI_SIZE,
#     PMI_JOBID, and SLURM_MPI_TYPE=pmi2; hcomm speaks PMI-2 on PMI_FD.
#   - Slurm, srun --mpi=pmix: Slurm's mpi_pmix plugin (also in slurm-wlm-basic-plugins on
#     Debian 12) and libpmix (libpmix2; the plugin opens libpmix.so, from libpmix-dev). Each
#     task gets PMIX_NAMESPACE (slurm.pmix.<job>.<step>), PMIX_RANK, PMIX_SERVER_URI2/21/3/4/41
#     (the slurmstepd's PMIx server), PMIX_SERVER_TMPDIR, PMIX_SYSTEM_TMPDIR, PMIX_SECURITY_MODE,
#     PMIX_GDS_MODULE, PMIX_VERSION, PMIX_HOSTNAME, PMIX_DSTORE_*, PMIX_BFROP_BUFFER_TYPE (and
#     SLURM_MPI_TYPE=pmix); hcomm loads libpmix.so.2 at run time (HCOMM_PMIX_LIB overrides).
#   - Slurm, srun --mpi=none (MpiDefault=none): no PMI at all, only SLURM_STEP_ID,
#     SLURM_STEP_NUM_TASKS, SLURM_PROCID, ...: hcomm cannot join and fails in MPI_Init, naming
#     Slurm and `srun --mpi=pmi2`; it never runs N worlds of one.
#   - MPICH's mpiexec.mpich (Hydra): PMI-1 over PMI_FD, with PMI_RANK, PMI_SIZE,
#     MPI_LOCALNRANKS, MPI_LOCALRANKID; nothing to install beyond mpich.
#   - Open MPI's mpirun.openmpi (4.1, built against the system PMIx): PMIX_NAMESPACE,
#     PMIX_RANK, PMIX_ID, PMIX_SERVER_URI2/21/3/4/41, PMIX_SERVER_TMPDIR, ... and
#     OMPI_COMM_WORLD_SIZE/RANK/LOCAL_RANK/LOCAL_SIZE; hcomm needs libpmix2 to join, mpirun
#     needs --oversubscribe for more ranks than cores, and as root
#     OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1.
#   - The Slurm daemons themselves, in a container: no cgroups (proctrack/linuxproc,
#     task/none), munge for authentication (here a private munged, AuthInfo=socket=...).
#
# The Slurm "cluster" is started here and stopped at exit: a munged with its own key, socket,
# pid and log files in a temporary directory (so it never meets a system munged), a
# slurm.conf there (this host as controller and as the only node, CPUs=8 whatever the machine
# has through SlurmdParameters=config_overrides, proctrack/linuxproc and task/none since a
# container has no cgroups, free ports near 20000 + 2*($$ % 5000)), then `slurmctld -D` and
# `slurmd -D` in the background. Client commands see only this cluster (SLURM_CONF). Missing
# Debian packages (slurmd slurmctld slurm-client munge libpmix-dev mpich openmpi-bin) are
# installed with apt-get first.
#
# Cases (each under `timeout`, one PASS/FAIL line each, then "N passed, N failed"):
#   control: hcomm's own `hcomm run -n 3` with the same assertions as below (proves the checks
#            accept a good run): coll_check, MPI_Abort, SIGKILL of rank 1.
#   slurm:   srun sanity without hcomm (srun -n 2 --mpi=none hostname; srun -n 3 --mpi=pmi2 env
#            has PMI_FD in every task; --mpi=pmix env has PMIX_RANK); then
#            srun -n 3 --mpi=pmi2 and --mpi=pmix: tests/c/coll_check.c in one world of 3;
#            srun -n 2 --mpi=none: exits non-zero naming Slurm and --mpi=pmi2, no world of 1;
#            srun -n 3 --mpi=pmi2 with tests/launcher/fault.c: MPI_Abort in rank 1, and rank 1
#            killed by SIGKILL: the job ends non-zero in time and rank 1 is named.
#   hydra:   mpiexec.mpich -n 3: coll_check in one world of 3; MPI_Abort; SIGKILL of rank 1.
#   openmpi: mpirun.openmpi --oversubscribe -n 3: coll_check in one world of 3.
# Until hcomm has its PMI-1/PMI-2/PMIx clients, the world-of-3 and fault cases under srun,
# mpiexec.mpich and mpirun.openmpi fail (each rank refuses to run alone); control, the srun
# sanity cases and --mpi=none pass.
# Every process this script starts carries HCOMM_LT_TAG=<tag> in its environment; at exit
# (also on failure or Ctrl-C) those still running are killed by PID, the daemons first by
# their recorded PIDs, and the temporary directory goes. Where it can (root, unshare), the
# script runs in its own mount namespace with a private /dev/shm, so after every case it can
# check that no /dev/shm/hcomm-* segment is left, and nothing reaches the machine's /dev/shm.
#
# Usage: scripts/launcher-test.sh [--only control,reference,slurm,hydra,openmpi]
#   env BUILD=dir with libhcomm.so (default target/release); HCOMM_BIN=the hcomm launcher
#   (default $BUILD/hcomm); TIMEOUT per case in seconds (default 60); CHECK_LARGE for
#   coll_check (default 4099); KEEP=1 keeps the temporary directory (outputs, daemon logs,
#   slurm.conf) for a look afterwards. Exit status 0 only when every selected case passed.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

ONLY="control,reference,slurm,hydra,openmpi"
while [ $# -gt 0 ]; do
    case $1 in
    --only) ONLY=$2; shift 2 ;;
    --only=*) ONLY=${1#--only=}; shift ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "launcher-test: unknown argument $1 (use --only control,reference,slurm,hydra,openmpi)" >&2; exit 2 ;;
    esac
done
want() { [[ ",$ONLY," == *",$1,"* ]]; }

# A private /dev/shm: re-run this script in its own mount namespace (same PID: exec).
if [ -z "${HCOMM_LT_NS:-}" ] && [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null &&
    unshare --mount --propagation private true 2>/dev/null; then
    export HCOMM_LT_NS=1
    exec unshare --mount --propagation private -- "$BASH" "$0" --only "$ONLY"
fi
PRIVATE_SHM=0
if [ "${HCOMM_LT_NS:-}" = 1 ] && mount -t tmpfs -o mode=1777,size=1g hcomm-lt /dev/shm 2>/dev/null; then
    PRIVATE_SHM=1
fi
unset HCOMM_LT_NS

BUILD=${BUILD:-$ROOT/target/release}
HCOMM_BIN=${HCOMM_BIN:-$BUILD/hcomm}
TIMEOUT=${TIMEOUT:-60}
CHECK_LARGE=${CHECK_LARGE:-4099}
TAG=hclt$$
WORK=$(mktemp -d /tmp/hcomm-launcher-test.XXXXXX)
chmod 755 "$WORK"
DAEMONS=() # PIDs of munged, slurmctld, slurmd
PASSED=0 FAILED=0

# Every process started here gets HCOMM_LT_TAG in its environment ("${TAGGED[@]}" cmd: a plain
# command, so `cmd &` leaves the command's own PID in $!). The daemons start under setsid (which
# execs in place here): a Ctrl-C on the terminal must reach this script, not them.
TAGGED=(env HCOMM_LT_TAG="$TAG")

# PIDs of running processes whose environment holds our tag (never this shell).
tagged_pids() {
    local d p
    for d in /proc/[0-9]*; do
        p=${d#/proc/}
        [ "$p" = "$$" ] && continue
        grep -qsz "^HCOMM_LT_TAG=$TAG\$" "$d/environ" 2>/dev/null && echo "$p"
    done
}

cleanup() {
    local rc=$? p i
    trap - EXIT INT TERM
    if [ -n "${SLURM_CONF:-}" ] && [ ${#DAEMONS[@]} -gt 0 ]; then
        timeout 10 scancel --quiet --full --user=root 2>/dev/null || true
    fi
    for p in $(tagged_pids); do
        case " ${DAEMONS[*]} " in *" $p "*) ;; *) kill -9 "$p" 2>/dev/null || true ;; esac
    done
    # Daemons last-started first: slurmd, slurmctld, munged.
    for ((i = ${#DAEMONS[@]} - 1; i >= 0; i--)); do kill -TERM "${DAEMONS[i]}" 2>/dev/null || true; done
    for i in $(seq 30); do
        local alive=0
        for p in "${DAEMONS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
        [ "$alive" = 0 ] && break
        sleep 0.1
    done
    for p in "${DAEMONS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    # What the daemons forked (slurmctld's slurmscriptd, slurmstepd, tasks) carries the tag too.
    for i in $(seq 30); do
        local left
        left=$(tagged_pids)
        [ -z "$left" ] && break
        for p in $left; do kill -9 "$p" 2>/dev/null || true; done
        sleep 0.1
    done
    if [ "${KEEP:-0}" = 1 ]; then echo "launcher-test: kept $WORK (KEEP=1)"; else rm -rf "$WORK"; fi
    [ "$PRIVATE_SHM" = 1 ] && umount -l /dev/shm 2>/dev/null
    exit "$rc"
}
trap cleanup EXIT
trap 'echo "launcher-test: interrupted"; exit 130' INT
trap 'echo "launcher-test: terminated"; exit 143' TERM

pass() { echo "PASS: $*"; PASSED=$((PASSED + 1)); }
fail() { echo "FAIL: $*"; FAILED=$((FAILED + 1)); }

if [ "$PRIVATE_SHM" = 1 ]; then
    echo "== private /dev/shm (own mount namespace): every case must leave no hcomm-* segment"
else
    echo "== no private /dev/shm (needs root and unshare): leftover segments are not checked"
fi

# ---- packages -------------------------------------------------------------------------------
need=()
if want slurm || want reference; then
    command -v slurmctld >/dev/null || need+=(slurmctld)
    command -v slurmd >/dev/null || need+=(slurmd)
    command -v srun >/dev/null || need+=(slurm-client)
    command -v munged >/dev/null || need+=(munge)
    ls /usr/lib/*/libpmix.so >/dev/null 2>&1 || need+=(libpmix-dev)
fi
if want hydra || want reference; then command -v mpiexec.mpich >/dev/null || need+=(mpich); fi
if want openmpi || want reference; then command -v mpirun.openmpi >/dev/null || need+=(openmpi-bin); fi
if want reference; then
    command -v mpicc.mpich >/dev/null || need+=(libmpich-dev)
    command -v mpicc.openmpi >/dev/null || need+=(libopenmpi-dev)
fi
command -v cc >/dev/null || need+=(gcc)
if [ ${#need[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    echo "== installing: ${need[*]}"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${need[@]}"
fi

# ---- programs -------------------------------------------------------------------------------
if [ ! -e "$BUILD/libhcomm.so" ]; then
    echo "launcher-test: no $BUILD/libhcomm.so (cargo build --release, or set BUILD=)" >&2
    exit 1
fi
cc -O1 -I include tests/c/coll_check.c -o "$WORK/coll_check" -L "$BUILD" -lhcomm \
    -Wl,-rpath,"$BUILD" -lpthread || exit 1
cc -O1 -Wall -I include tests/launcher/fault.c -o "$WORK/fault" -L "$BUILD" -lhcomm \
    -Wl,-rpath,"$BUILD" || exit 1

if want reference; then
    mpicc.mpich -O1 tests/launcher/fault.c -o "$WORK/fault.mpich" || exit 1
    mpicc.openmpi -O1 tests/launcher/fault.c -o "$WORK/fault.ompi" || exit 1
fi

# ---- case helpers ---------------------------------------------------------------------------
# run NAME CMD...: runs CMD under timeout with the tag, output (stdout+stderr) in $WORK/NAME.out;
# sets RC, and TIMED_OUT=1 when timeout ended it.
RC=0 TIMED_OUT=0
run() {
    local name=$1
    shift
    RC=0
    local t0=$SECONDS
    # In the background and then `wait`: a trapped Ctrl-C or SIGTERM interrupts `wait` at once
    # (timeout runs the case in its own process group, which Ctrl-C does not reach).
    "${TAGGED[@]}" HCOMM_BOOTSTRAP_TIMEOUT=30 CHECK_LARGE="$CHECK_LARGE" \
        timeout -k 5 "$TIMEOUT" "$@" >"$WORK/$name.out" 2>&1 </dev/null &
    wait $! || RC=$?
    TIMED_OUT=0
    if [ "$RC" -eq 124 ] || { [ "$RC" -eq 137 ] && [ $((SECONDS - t0)) -ge "$TIMEOUT" ]; }; then
        TIMED_OUT=1
        echo "(timed out after ${TIMEOUT}s)" >>"$WORK/$name.out"
    fi
    # Ranks that outlived their launcher (timeout) must not linger into the next case.
    local p
    for p in $(tagged_pids); do
        case " ${DAEMONS[*]} " in *" $p "*) continue ;; esac
        [ -n "${SLURMSTEP_OK:-}" ] && [ "$(cat "/proc/$p/comm" 2>/dev/null)" = slurmstepd ] && continue
        kill -9 "$p" 2>/dev/null || true
    done
}
show() { sed 's/^/    | /' "$WORK/$1.out" | tail -n "${2:-8}"; }

# shm_left NAME: with a private /dev/shm, fails the case if a hcomm segment is left behind.
shm_clean() {
    [ "$PRIVATE_SHM" = 1 ] || return 0
    local left
    sleep 0.2
    left=$(find /dev/shm -maxdepth 1 -name 'hcomm-*' 2>/dev/null | head -5)
    [ -z "$left" ] && return 0
    echo "    | /dev/shm left behind: $left"
    rm -f /dev/shm/hcomm-* 2>/dev/null
    return 1
}

# world3 NAME CMD...: coll_check must pass in one world of 3.
world3() {
    local name=$1
    shift
    run "$name" "$@" "$WORK/coll_check"
    local out=$WORK/$name.out
    if [ "$RC" -ne 0 ]; then
        fail "$name: exit status $RC$([ "$TIMED_OUT" = 1 ] && echo " (timed out after ${TIMEOUT}s)")"
        show "$name"
    elif grep -q 'size=1[,)]' "$out"; then
        fail "$name: a rank ran in a world of 1"
        show "$name"
    elif [ "$(grep -c 'checks passed (size=3,' "$out")" -ne 1 ] || grep -q '^FAIL' "$out"; then
        fail "$name: no single 'checks passed (size=3' line"
        show "$name"
    elif ! shm_clean; then
        fail "$name: shared-memory segments left behind"
    else
        pass "$name: $(grep -m1 -o 'coll_check: .*' "$out")"
    fi
}

# fault NAME MODE PROG CMD...: the job must end non-zero within the timeout, every rank having been in
# one world of 3 and none getting past the Allreduce that rank 1 never joins; rank 1 must be
# named: "MPI_Abort called on rank 1" (abort), hcomm's "lost rank 1" or, when the launcher ended
# the others before they noticed, the launcher's own line about rank/task 1 or its pid (kill).
# ABORT_BY_CODE=1: the launcher's exit status 7 (fault.c's abort code) also names the abort.
LOST_RE='lost rank 1\b|task 1: Killed|rank 1 .*(killed by signal|signal 9)|rank 1 with PID [0-9]+ on node .* exited on signal 9'
ABORT_RE='MPI_Abort called on rank 1 |MPI_Abort\(MPI_COMM_WORLD, 7\) - process 1|MPI_ABORT was invoked on rank 1 ' 
fault() {
    local name=$1 mode=$2 prog=$3
    shift 3
    run "$name" "$@" "$prog" "$mode"
    local out=$WORK/$name.out pid1 lost_re why
    # The launcher may name the dead rank only by its pid (Hydra: "PID <pid> RUNNING AT").
    pid1=$(sed -nE 's/^fault: rank 1 of 3 \(pid ([0-9]+)\)$/\1/p' "$out" | head -1)
    lost_re="$LOST_RE${pid1:+|PID $pid1 RUNNING AT}"
    # ANY_PID=1 (Hydra with libhcomm.so): Hydra SIGKILLs the survivors within milliseconds of
    # rank 1's death, before hcomm's liveness check (100 ms) can name it, and its report names
    # whichever of the job's pids it lists first — often a victim of its own cleanup. What
    # can be checked is that the launcher reports a bad termination of one of the job's ranks.
    if [ -n "${ANY_PID:-}" ]; then
        local pids
        pids=$(sed -nE 's/^fault: rank [0-2] of 3 \(pid ([0-9]+)\)$/\1/p' "$out" | paste -sd'|')
        [ -n "$pids" ] && lost_re="$lost_re|PID ($pids) RUNNING AT"
    fi
    if [ "$RC" -eq 0 ] || [ "$TIMED_OUT" = 1 ]; then
        fail "$name: exit status $RC$([ "$TIMED_OUT" = 1 ] && echo " (timed out after ${TIMEOUT}s)") (want non-zero, within ${TIMEOUT}s)"
        show "$name"
    elif grep -q '^fault: rank .* of 1 ' "$out"; then
        fail "$name: a rank ran in a world of 1"
        show "$name"
    elif [ "$(grep -cE '^fault: rank [0-2] of 3 \(pid [0-9]+\)$' "$out")" -ne 3 ]; then
        fail "$name: not every rank reported a world of 3"
        show "$name"
    elif grep -q 'fault: survived' "$out"; then
        fail "$name: a rank got past the Allreduce without rank 1"
        show "$name"
    elif [ "$mode" = abort ] && ! grep -qE "$ABORT_RE" "$out" &&
        ! { [ -n "${ABORT_BY_CODE:-}" ] && [ "$RC" -eq 7 ]; }; then
        fail "$name: the output does not say that rank 1 called MPI_Abort"
        show "$name"
    elif [ "$mode" = kill ] && ! grep -qE "$lost_re" "$out"; then
        fail "$name: the output does not name rank 1 as lost ('lost rank 1', or the launcher's own line)"
        show "$name"
    elif ! shm_clean; then
        fail "$name: shared-memory segments left behind"
    else
        if [ "$mode" = abort ]; then
            why=$(grep -m1 -oE "($ABORT_RE).{0,40}" "$out") || why="(the abort's error code 7)"
        else
            why=$(grep -m1 -oE 'lost rank 1\b.{0,80}' "$out") ||
                why="(launcher) $(grep -m1 -oE "($lost_re).{0,40}" "$out")"
        fi
        pass "$name: exit status $RC; $why"
    fi
}

# ---- control: hcomm's own launcher ----------------------------------------------------------
# The same assertions on a launcher hcomm already joins: if these fail, the script is wrong.
if want control; then
    echo "== control: hcomm run (hcomm's own launcher)"
    if [ -x "$HCOMM_BIN" ]; then
        world3 "hcomm run -n 3" "$HCOMM_BIN" run -n 3
        fault "hcomm run MPI_Abort" abort "$WORK/fault" "$HCOMM_BIN" run -n 3
        fault "hcomm run SIGKILL of rank 1" kill "$WORK/fault" "$HCOMM_BIN" run -n 3
    else
        fail "control: no hcomm launcher at $HCOMM_BIN (set HCOMM_BIN=)"
    fi
fi

# worldf NAME PROG CMD...: `PROG world` must run as one world of 3 and exit 0.
worldf() {
    local name=$1 prog=$2
    shift 2
    run "$name" "$@" "$prog" world
    local out=$WORK/$name.out
    if [ "$RC" -ne 0 ]; then
        fail "$name: exit status $RC$([ "$TIMED_OUT" = 1 ] && echo " (timed out after ${TIMEOUT}s)")"
        show "$name"
    elif grep -q '^fault: rank .* of 1 ' "$out" ||
        [ "$(grep -cE '^fault: rank [0-2] of 3 \(pid [0-9]+\)$' "$out")" -ne 3 ]; then
        fail "$name: not one world of 3"
        show "$name"
    else
        pass "$name: ranks 0-2 of 3"
    fi
}

# reference LAUNCHER: the launcher-level checks with MPICH's and Open MPI's own libraries
# (tests/launcher/fault.c built with mpicc.mpich / mpicc.openmpi), so that a failure of the
# same case under hcomm is hcomm's, not the launcher's or this script's.
reference() {
    want reference || return 0
    case $1 in
    slurm)
        worldf "reference: MPICH under srun -n 3 --mpi=pmi2" "$WORK/fault.mpich" srun -n 3 --mpi=pmi2
        fault "reference: MPICH under srun --mpi=pmi2, MPI_Abort" abort "$WORK/fault.mpich" srun -n 3 --mpi=pmi2
        # Plain srun leaves the other tasks running when one is killed (KillOnBadExit=0), and
        # MPICH's survivors wait forever: the reference needs --kill-on-bad-exit. hcomm's ranks
        # notice the lost rank themselves, so its case below runs plain srun.
        fault "reference: MPICH under srun --mpi=pmi2 -K1, SIGKILL of rank 1" kill "$WORK/fault.mpich" \
            srun -n 3 --mpi=pmi2 --kill-on-bad-exit=1
        worldf "reference: Open MPI under srun -n 3 --mpi=pmix" "$WORK/fault.ompi" srun -n 3 --mpi=pmix
        ;;
    hydra)
        worldf "reference: MPICH under mpiexec.mpich -n 3" "$WORK/fault.mpich" mpiexec.mpich -n 3
        # Hydra's cleanup after MPICH's PMI abort can beat the forwarding of the abort's
        # message: its exit status (the error code, 7) counts too.
        ABORT_BY_CODE=1 fault "reference: MPICH under mpiexec.mpich, MPI_Abort" abort "$WORK/fault.mpich" mpiexec.mpich -n 3
        # Hydra names whichever of the job's pids it lists first, MPICH's ranks as hcomm's
        # (seen in CI: "PID <rank 0's pid> RUNNING AT"): any of the job's pids is accepted.
        ANY_PID=1 fault "reference: MPICH under mpiexec.mpich, SIGKILL of rank 1" kill "$WORK/fault.mpich" mpiexec.mpich -n 3
        ;;
    openmpi)
        worldf "reference: Open MPI under mpirun.openmpi -n 3" "$WORK/fault.ompi" \
            env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun.openmpi --oversubscribe -n 3
        ;;
    esac
}

# ---- Slurm ----------------------------------------------------------------------------------
port_free() { ! ss -Htan "sport = :$1" 2>/dev/null | grep -q .; }

slurm_up() {
    local S=$WORK/slurm host i
    host=$(hostname -s)
    mkdir -p "$S/munge" "$S/state" "$S/spool/$host" "$S/log"
    chmod 711 "$S/munge" # munged wants its socket's directory searchable by every user
    head -c 1024 /dev/urandom >"$S/munge/munge.key"
    chmod 600 "$S/munge/munge.key"
    MUNGE_SOCKET=$S/munge/munge.socket
    setsid "${TAGGED[@]}" munged --foreground --force --socket="$MUNGE_SOCKET" --key-file="$S/munge/munge.key" \
        --pid-file="$S/munge/munged.pid" --log-file="$S/munge/munged.log" \
        --seed-file="$S/munge/munged.seed" >"$S/log/munged.out" 2>&1 </dev/null &
    DAEMONS+=($!)
    disown $!
    for i in $(seq 50); do
        munge -S "$MUNGE_SOCKET" -n 2>/dev/null | unmunge -S "$MUNGE_SOCKET" >/dev/null 2>&1 && break
        sleep 0.1
    done
    if ! munge -S "$MUNGE_SOCKET" -n 2>/dev/null | unmunge -S "$MUNGE_SOCKET" >/dev/null 2>&1; then
        echo "launcher-test: munged did not start:"; cat "$S/log/munged.out" "$S/munge/munged.log" 2>/dev/null
        return 1
    fi

    local port=$((20000 + 2 * ($$ % 5000)))
    for i in $(seq 100); do
        port_free "$port" && port_free $((port + 1)) && break
        port=$((port + 2))
    done
    cat >"$S/slurm.conf" <<EOF
ClusterName=hclt$$
SlurmctldHost=$host
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET
CredType=cred/munge
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool/%n
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$S/plugstack.conf
MailProg=/bin/true
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
KillWait=2
MessageTimeout=20
InactiveLimit=0
MinJobAge=10
NodeName=$host CPUs=8 State=UNKNOWN
PartitionName=hclt Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
    : >"$S/plugstack.conf"
    export SLURM_CONF=$S/slurm.conf
    setsid "${TAGGED[@]}" slurmctld -D -f "$SLURM_CONF" >"$S/log/slurmctld.out" 2>&1 </dev/null &
    DAEMONS+=($!)
    disown $!
    setsid "${TAGGED[@]}" slurmd -D -f "$SLURM_CONF" >"$S/log/slurmd.out" 2>&1 </dev/null &
    DAEMONS+=($!)
    disown $!
    local state=""
    for i in $(seq 150); do
        state=$(timeout 5 sinfo -h -N -o %t 2>/dev/null | head -1)
        [ "$state" = idle ] && break
        sleep 0.2
    done
    if [ "$state" != idle ]; then
        echo "launcher-test: the Slurm node is not idle (state '$state'):"
        tail -n 5 "$S/log/slurmctld.out" "$S/log/slurmctld.log" "$S/log/slurmd.out" "$S/log/slurmd.log" 2>/dev/null
        return 1
    fi
    echo "== Slurm up: $(sinfo -h -N -o '%N %t cpus=%c') (ports $port-$((port + 1)), mpi: $(srun --mpi=list 2>&1 | grep -oE 'pmi2|pmix|none' | sort -u | tr '\n' ' '))"
}

if want slurm || want reference; then
    echo "== Slurm"
    if ! slurm_up; then
        fail "slurm: cluster did not come up"
    else
        SLURMSTEP_OK=1
        reference slurm
    fi
    if [ -n "${SLURMSTEP_OK:-}" ] && want slurm; then
        # Launcher sanity (no hcomm): srun itself must work in each mode.
        run srun-hostname srun -n 2 --mpi=none hostname
        if [ "$RC" -eq 0 ] && [ "$(wc -l <"$WORK/srun-hostname.out")" -eq 2 ]; then
            pass "srun -n 2 --mpi=none hostname"
        else
            fail "srun -n 2 --mpi=none hostname: exit status $RC"; show srun-hostname
        fi
        run srun-env-pmi2 srun -n 3 --mpi=pmi2 env
        if [ "$RC" -eq 0 ] && [ "$(grep -c '^PMI_FD=' "$WORK/srun-env-pmi2.out")" -eq 3 ]; then
            pass "srun -n 3 --mpi=pmi2 env: $(grep -oE '^(PMI[A-Z0-9_]*|SLURM_MPI_TYPE=.*)' "$WORK/srun-env-pmi2.out" | sort -u | tr '\n' ' ')"
        else
            fail "srun -n 3 --mpi=pmi2 env: exit status $RC, PMI_FD not set in every task"; show srun-env-pmi2
        fi
        run srun-env-pmix srun -n 3 --mpi=pmix env
        if [ "$RC" -eq 0 ] && [ "$(grep -c '^PMIX_RANK=' "$WORK/srun-env-pmix.out")" -eq 3 ]; then
            pass "srun -n 3 --mpi=pmix env: $(grep -m1 '^PMIX_NAMESPACE=' "$WORK/srun-env-pmix.out"); $(grep -oE '^PMIX_[A-Z0-9_]*' "$WORK/srun-env-pmix.out" | sort -u | tr '\n' ' ')"
        else
            fail "srun -n 3 --mpi=pmix env: exit status $RC, PMIX_RANK not set in every task"; show srun-env-pmix
        fi

        world3 "srun -n 3 --mpi=pmi2" srun -n 3 --mpi=pmi2
        world3 "srun -n 3 --mpi=pmix" srun -n 3 --mpi=pmix
        # hcomm's own launcher inside an allocation: hosts from SLURM_JOB_NODELIST, its proxy
        # started through srun.
        world3 "salloc -N 1 hcomm run -n 3" salloc -N 1 "$HCOMM_BIN" run -n 3

        # --mpi=none: no PMI; every task must fail in MPI_Init, naming Slurm and the fix.
        name="srun -n 2 --mpi=none"
        run "$name" srun -n 2 --mpi=none "$WORK/coll_check"
        out=$WORK/$name.out
        if [ "$RC" -eq 0 ] || [ "$TIMED_OUT" = 1 ]; then
            fail "$name: exit status $RC (want non-zero, within ${TIMEOUT}s)"; show "$name"
        elif grep -qE 'size=1[,)]|checks passed' "$out"; then
            fail "$name: a task ran as a world of 1"; show "$name"
        elif ! grep -q 'Slurm' "$out" || ! grep -q -- '--mpi=pmi2' "$out"; then
            fail "$name: the error does not name Slurm and --mpi=pmi2"; show "$name"
        elif ! shm_clean; then
            fail "$name: shared-memory segments left behind"
        else
            pass "$name: exit status $RC: $(grep -m1 -oE '[^:]*Slurm.{0,80}' "$out")..."
        fi

        fault "srun --mpi=pmi2 MPI_Abort" abort "$WORK/fault" srun -n 3 --mpi=pmi2
        fault "srun --mpi=pmi2 SIGKILL of rank 1" kill "$WORK/fault" srun -n 3 --mpi=pmi2
        unset SLURMSTEP_OK
    fi
fi

# ---- MPICH's Hydra (PMI-1) ------------------------------------------------------------------
if want hydra || want reference; then
    echo "== mpiexec.mpich (Hydra, PMI-1)"
    reference hydra
fi
if want hydra; then
    world3 "mpiexec.mpich -n 3" mpiexec.mpich -n 3
    fault "mpiexec.mpich MPI_Abort" abort "$WORK/fault" mpiexec.mpich -n 3
    ANY_PID=1 fault "mpiexec.mpich SIGKILL of rank 1" kill "$WORK/fault" mpiexec.mpich -n 3
fi

# ---- Open MPI's mpirun (PMIx) ---------------------------------------------------------------
if want openmpi || want reference; then
    echo "== mpirun.openmpi (PMIx)"
    reference openmpi
fi
if want openmpi; then
    world3 "mpirun.openmpi -n 3" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        mpirun.openmpi --oversubscribe -n 3
fi

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
