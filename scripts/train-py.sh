#!/usr/bin/env bash
# scripts/train-py.sh - the Python training example (examples/train_mlp.py: mpi4py + numpy)
# with libhcomm_preload.so preloaded into Debian's Open MPI and PyPI's MPICH wheel, 2 ranks.
# Each run must exit 0 (identical weights on every rank; training accuracy >= 75 %) and show
# HCOMM_STATS allreduce_handled > 0 on every rank. Needs scripts/mpi4py-env.sh's venvs (run
# first when missing).
# Env: PRELOAD=target/release/libhcomm_preload.so  MPI4PY_ENV_DIR=build/mpi4py  NP=2
set -euo pipefail
cd "$(dirname "$0")/.."
PRELOAD=${PRELOAD:-$PWD/target/release/libhcomm_preload.so}
DIR=${MPI4PY_ENV_DIR:-build/mpi4py}
NP=${NP:-2}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ -x "$DIR/venv-base/bin/python" ] && [ -x "$DIR/venv-mpich/bin/mpiexec" ] || scripts/mpi4py-env.sh
ARGS=(examples/train_mlp.py --epochs 2 --train 8192 --min-accuracy 75)
fail=0
run() { # name command...
    local name=$1 log=build/train-py.$1.log
    shift
    if ! timeout -k 5 300 "$@" >"$log" 2>&1; then
        echo "FAIL train-py $name: exit status $? (see $log)"; fail=1; return
    fi
    local n
    n=$(grep -ac '^hcomm-stats .* allreduce_handled=[1-9]' "$log" || true)
    if [ "$n" != "$NP" ]; then
        echo "FAIL train-py $name: $n of $NP ranks show allreduce_handled > 0 (see $log)"; fail=1; return
    fi
    echo "PASS train-py $name: $(grep -a -m1 '^accuracy' "$log"); $(grep -a -m1 '^weights' "$log")"
}
mkdir -p build
run openmpi mpirun.openmpi --oversubscribe -n "$NP" -x LD_PRELOAD="$PRELOAD" -x HCOMM_STATS=1 \
    "$DIR/venv-base/bin/python" "${ARGS[@]}"
run pypi-mpich "$DIR/venv-mpich/bin/mpiexec" -n "$NP" -genv LD_PRELOAD "$PRELOAD" -genv HCOMM_STATS 1 \
    "$DIR/venv-mpich/bin/python" "${ARGS[@]}"
exit $fail
