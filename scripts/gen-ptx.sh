#!/usr/bin/env bash
# Regenerates kernels/hcomm_kernels.ptx from kernels/reduce.cu (and the kernels/*.cuh headers
# it includes) with a pinned NVRTC.
#
#   scripts/gen-ptx.sh           write kernels/hcomm_kernels.ptx
#   scripts/gen-ptx.sh --check   compile to a temporary file and fail if it differs from the
#                                committed kernels/hcomm_kernels.ptx (CI: stale PTX, or a
#                                kernel source that does not compile, fails the build)
#
# Needs python3 with the venv module (Debian: python3-venv) and pip access to PyPI. No CUDA
# toolkit, driver or GPU: NVRTC comes from the PyPI wheel `nvidia-cuda-nvrtc`, installed at the
# exact version and wheel hashes below into the venv build/nvrtc (gitignored), and is called
# through ctypes (scripts/nvrtc-ptx.py).
#
# Version and target: CUDA 13.0 (the newest 13.0 patch release on PyPI), the CUDA of driver
# branch 580. Its PTX is ISA version 9.0, which drivers >= 580 load. The target is
# compute_75 (Turing, the oldest architecture CUDA 13 supports); the driver JIT-compiles the
# PTX for the GPU it runs on (Turing and every later one). Changing the NVRTC version or the
# options changes the PTX: commit the regenerated file with the change.
set -euo pipefail
cd "$(dirname "$0")/.."

NVRTC_VERSION=13.0.88
# sha256 of the PyPI wheels of that version (x86_64, aarch64).
NVRTC_HASHES=(
    ad9b6d2ead2435f11cbb6868809d2adeeee302e9bb94bcf0539c7a40d80e8575
    d27f20a0ca67a4bb34268a5e951033496c5b74870b868bacd046b1b8e0c3267b
)
# IEEE arithmetic exactly as the CPU kernels do it: no multiply-add contraction (would change
# rounding), no flush of subnormals to zero, IEEE division and square root (unused today).
# No -lineinfo / -G: nothing machine-specific (paths) may reach the PTX.
NVRTC_OPTIONS=(
    --gpu-architecture=compute_75
    --std=c++17
    --fmad=false
    --ftz=false
    --prec-div=true
    --prec-sqrt=true
)
SRC=kernels/reduce.cu
PTX=kernels/hcomm_kernels.ptx
VENV=build/nvrtc

check=0
case "${1:-}" in
    --check) check=1 ;;
    "") ;;
    *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

installed() {
    "$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("nvidia-cuda-nvrtc"))' 2>/dev/null || true
}
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
if [ "$(installed)" != "$NVRTC_VERSION" ]; then
    req="$VENV/requirements.txt"
    {
        printf 'nvidia-cuda-nvrtc==%s' "$NVRTC_VERSION"
        for h in "${NVRTC_HASHES[@]}"; do printf ' \\\n    --hash=sha256:%s' "$h"; done
        echo
    } >"$req"
    "$VENV/bin/pip" install -q --disable-pip-version-check --no-deps --require-hashes -r "$req"
fi
lib=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/nvidia/cu13/lib/libnvrtc.so.13
if [ ! -f "$lib" ]; then
    echo "gen-ptx: $lib not found after installing nvidia-cuda-nvrtc==$NVRTC_VERSION" >&2
    exit 1
fi

if [ $check -eq 0 ]; then
    "$VENV/bin/python" scripts/nvrtc-ptx.py "$lib" "$SRC" "$PTX.tmp" "${NVRTC_OPTIONS[@]}"
    mv "$PTX.tmp" "$PTX"
    echo "gen-ptx: wrote $PTX ($(grep -c '\.entry hcomm_reduce_' "$PTX") entry points)"
    exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$VENV/bin/python" scripts/nvrtc-ptx.py "$lib" "$SRC" "$tmp/hcomm_kernels.ptx" "${NVRTC_OPTIONS[@]}"
if ! diff -u "$PTX" "$tmp/hcomm_kernels.ptx" >"$tmp/diff"; then
    head -n 40 "$tmp/diff"
    echo "gen-ptx: FAIL: $PTX is not what $SRC compiles to (NVRTC $NVRTC_VERSION)." >&2
    echo "gen-ptx: run scripts/gen-ptx.sh and commit the regenerated $PTX." >&2
    exit 1
fi
echo "gen-ptx: $PTX is up to date ($(grep -c '\.entry hcomm_reduce_' "$PTX") entry points, NVRTC $NVRTC_VERSION)"
