#!/usr/bin/env bash
# scripts/gpu-check.sh - the collectives on CUDA device buffers, on a GPU machine, from artifacts
# built elsewhere. One short run (under 5 minutes), one summary table at the end.
#
# Two halves:
#   scripts/gpu-check.sh --prepare   here, where Rust and a C compiler are: copies
#       target/release/{hcomm,libhcomm.so,libhcomm_preload.so} (debug info stripped) into
#       build/gpu/release/, builds tests/gpu/{gpu_coll,gpu_bench,gpu_probe}.c against
#       include/mpi.h into build/gpu/bin/ (RUNPATH $ORIGIN/../release), and downloads into
#       build/gpu/wheels/ the PyPI mpich wheel and the mpi4py wheels (CPython 3.9-3.14) of the
#       versions scripts/mpi4py-env.sh pins. Carry build/gpu/ (about 30 MiB) with the source
#       tree to the GPU machine.
#   scripts/gpu-check.sh             there, in the repository root. Needs the CUDA driver, and
#       for the Python steps python3 with torch (CUDA build); no Rust, no MPI, no network.
#
# The run:
#   machine   nvidia-smi -L, the driver, `hcomm doctor`'s CUDA line
#   probes    CUDA IPC between two processes, process_vm_readv between two processes
#             (gpu_probe ipc|cma): "unsupported" when the machine forbids it, not a failure;
#             MPIX_Query_cuda_support() under `hcomm run` (gpu_probe mpix)
#   gpu_coll  every collective x type x op, in place and not, counts 0/1/odd/1 Mi, device /
#             mixed host-device / managed / sub-allocated / reallocated / pool memory; 2 and 4
#             ranks on one GPU (`hcomm run`, libhcomm.so)
#   venv      python3 -m venv --system-site-packages build/gpu-venv (reuses the machine's torch)
#             + pip install --no-index of the carried mpich and mpi4py wheels
#   torch     tests/gpu/torch_coll.py: the collectives on torch tensors from the caching
#             allocator, 2 ranks, PyPI MPICH with libhcomm_preload.so preloaded
#   bench     gpu_bench at 2 and 4 ranks: device-buffer MPI_Allreduce (busbw, HBM traffic rate)
#             next to cuMemcpyDtoD and a host-staged allreduce measured in the same run; the
#             aims (HBM rate >= 60 % of the copy rate and >= 10x the staged path at 64 MiB and
#             above) are reported as met or not
#   hcomm-bench `hcomm bench allreduce --memory device -b 1M -e 256M` at 2 ranks: the
#             nccl-tests-style table on device buffers, with the GPU's cuMemcpyDtoD rate and
#             a host-staged allreduce column from the same run (every row checked)
#   train     examples/train_mlp_torch.py --device cuda, 2 ranks, PyPI MPICH's mpiexec with
#             LD_PRELOAD=libhcomm_preload.so and HCOMM_STATS=1 (every rank must show its
#             allreduces handled by hcomm, and identical weights)
# Each step has its own timeout, capped by what is left of $GPU_CHECK_BUDGET; a step that no
# longer fits is "skipped (time)". Logs: build/gpu-logs/<step>.log.
#
# Without a GPU (no libcuda, no device) the run says so, does the host-only probes and ends
# with status 0.
#
# scripts/gpu-check.sh --dry-run: every step, on any machine, with host memory standing in for
# device memory (gpu_coll/gpu_bench --host, --max-mib 64; hcomm bench --memory host -e 64M;
# torch tensors on the CPU): checks this
# script, the programs and the Python side against hcomm's host paths. No figure of a dry run
# is a GPU figure.
#
# Exit status: 0 when nothing failed ("unsupported", "skipped" and unmet aims are not
# failures), 1 otherwise, 2 on a usage or setup error.
#
# Env: GPU_CHECK_DIR=build/gpu  GPU_CHECK_BUDGET=285 (seconds for the whole run)
#      GPU_CHECK_QUICK=1 (gpu_coll: the device mix only)  BENCH_MAX_MIB=1024  BENCH_BUDGET=0.25
#      (seconds per measurement)  HCOMM_GPU_CHECK_DEVICE=0 (the GPU all ranks share)
#      HCOMM_BENCH_MAX=256M (hcomm bench -e)
#      PYTHON=python3  MPICH_WHEEL_VERSION / MPI4PY_VERSION (default: scripts/mpi4py-env.sh's)
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

MODE=run
DRY=0
case "${1:-}" in
    "") ;;
    --prepare) MODE=prepare ;;
    --dry-run) DRY=1 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-check.sh: unknown argument: $1 (try --help)" >&2; exit 2 ;;
esac

DIR=${GPU_CHECK_DIR:-build/gpu}
PYTHON=${PYTHON:-python3}
# The pins of scripts/mpi4py-env.sh, so that CI and the GPU machine run the same wheels.
pin() { sed -n "s/^$1=\${$1:-\(.*\)}\$/\1/p" scripts/mpi4py-env.sh; }
MPICH_WHEEL_VERSION=${MPICH_WHEEL_VERSION:-$(pin MPICH_WHEEL_VERSION)}
MPI4PY_VERSION=${MPI4PY_VERSION:-$(pin MPI4PY_VERSION)}
PROGS="gpu_coll gpu_bench gpu_probe"
ARTIFACTS="hcomm libhcomm.so libhcomm_preload.so"

# ---------------------------------------------------------------------------------------------
prepare() {
    local f p
    for f in $ARTIFACTS; do
        [ -f "target/release/$f" ] || {
            echo "gpu-check --prepare: target/release/$f is missing: run cargo build --release first" >&2
            exit 2
        }
    done
    [ -n "$MPICH_WHEEL_VERSION" ] && [ -n "$MPI4PY_VERSION" ] || {
        echo "gpu-check --prepare: cannot read the wheel pins from scripts/mpi4py-env.sh" >&2
        exit 2
    }
    mkdir -p "$DIR/release" "$DIR/bin" "$DIR/wheels"
    for f in $ARTIFACTS; do
        # Debug info is most of their size; the device copy limit is 64 MiB.
        strip --strip-debug -o "$DIR/release/$f" "target/release/$f" 2>/dev/null ||
            cp "target/release/$f" "$DIR/release/$f"
    done
    for p in $PROGS; do
        # shellcheck disable=SC2016 # $ORIGIN is for the dynamic linker, not the shell
        cc -O2 -Wall -Wextra -Werror -I include "tests/gpu/$p.c" -o "$DIR/bin/$p" \
            -L "$DIR/release" -lhcomm -ldl -Wl,-rpath,'$ORIGIN/../release' || {
            echo "gpu-check --prepare: building tests/gpu/$p.c failed" >&2
            exit 1
        }
    done
    local pipd=("$PYTHON" -m pip download --disable-pip-version-check --no-input -q
        --only-binary :all: --no-deps -d "$DIR/wheels")
    if ! ls "$DIR/wheels/mpich-$MPICH_WHEEL_VERSION-"*.whl >/dev/null 2>&1; then
        "${pipd[@]}" "mpich==$MPICH_WHEEL_VERSION" || {
            echo "gpu-check --prepare: pip download mpich==$MPICH_WHEEL_VERSION failed" >&2
            exit 1
        }
    fi
    local v
    for v in 3.9 3.10 3.11 3.12 3.13 3.14; do
        ls "$DIR/wheels/mpi4py-$MPI4PY_VERSION-cp${v/./}-"*.whl >/dev/null 2>&1 && continue
        "${pipd[@]}" --python-version "$v" --implementation cp --platform manylinux1_x86_64 \
            --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
            "mpi4py==$MPI4PY_VERSION" ||
            echo "gpu-check --prepare: no mpi4py==$MPI4PY_VERSION wheel for CPython $v (skipped)"
    done
    # Wheels of other versions left from an earlier pin would only add to the copy.
    for f in "$DIR"/wheels/*.whl; do
        case "${f##*/}" in
            "mpich-$MPICH_WHEEL_VERSION-"*|"mpi4py-$MPI4PY_VERSION-"*) ;;
            *) rm -f "$f" ;;
        esac
    done
    {
        echo "prepared $(date -u +%Y-%m-%dT%H:%M:%SZ) from $(git rev-parse --short HEAD 2>/dev/null)$([ -z "$(git status --porcelain 2>/dev/null)" ] || echo "+changes")"
        echo "mpich==$MPICH_WHEEL_VERSION mpi4py==$MPI4PY_VERSION"
        (cd "$DIR" && find release bin wheels -type f -printf '%s %p\n' | sort -k2)
    } >"$DIR/MANIFEST"
    local kib
    kib=$(du -sk "$DIR" | cut -f1)
    echo "gpu-check --prepare: $DIR ready: $((kib / 1024)) MiB (release/: $(ls "$DIR/release" | tr '\n' ' '); bin/: $PROGS; wheels/: $(ls "$DIR/wheels" | wc -l) files)"
    if [ "$kib" -gt $((60 * 1024)) ]; then
        echo "gpu-check --prepare: $DIR is over 60 MiB: too big to carry" >&2
        exit 1
    fi
    echo "gpu-check --prepare: on the GPU machine, with $DIR next to the source tree: scripts/gpu-check.sh"
}

if [ "$MODE" = prepare ]; then
    prepare
    exit 0
fi

# ---------------------------------------------------------------------------------------------
START=$SECONDS
BUDGET=${GPU_CHECK_BUDGET:-285}
REL=$DIR/release
[ -x "$REL/hcomm" ] || REL=target/release
BIN=$DIR/bin
LOGS=build/gpu-logs
VENV=build/gpu-venv
for f in $ARTIFACTS; do
    [ -f "$REL/$f" ] || { echo "gpu-check: no $f in $DIR/release or target/release: run scripts/gpu-check.sh --prepare where hcomm builds" >&2; exit 2; }
done
for p in $PROGS; do
    [ -x "$BIN/$p" ] || { echo "gpu-check: no $BIN/$p: run scripts/gpu-check.sh --prepare where hcomm builds" >&2; exit 2; }
done
REL=$(cd "$REL" && pwd)
export LD_LIBRARY_PATH="$REL${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p "$LOGS"
rm -f "$LOGS"/*.log

ROWS=()
NFAIL=0
SHM_BEFORE=$(find /dev/shm -maxdepth 1 -name 'hcomm-*' 2>/dev/null | sort)
row() { # check result figures
    ROWS+=("$1|$2|$3")
    [ "$2" = FAIL ] && NFAIL=$((NFAIL + 1))
    printf -- '-- %-14s %-12s %s\n' "$1" "$2" "$3" >&2
}

# step name timeout command...: runs with its output in $LOGS/name.log; sets RC (124: timed
# out, 125: skipped, no time left) and LOG.
step() {
    local name=$1 tmo=$2 left
    shift 2
    LOG=$LOGS/$name.log
    left=$((BUDGET - (SECONDS - START)))
    if [ "$left" -lt 10 ]; then
        RC=125
        echo "skipped: no time left in the budget" >"$LOG"
        return
    fi
    [ "$tmo" -gt "$left" ] && tmo=$left
    echo "== $name ($*)" >&2
    local t0=$SECONDS
    timeout -k 5 "$tmo" "$@" >"$LOG" 2>&1
    RC=$?
    STEP_SECS=$((SECONDS - t0))
}

# The last lines of the log, indented, for a failure.
tail_log() { tail -n "${2:-15}" "$1" | sed 's/^/   | /'; }

# "PASS p FAIL f (unsupported: x)" -> "p cases right, f wrong, unsupported: x"
counts() {
    sed -n 's/.*PASS \([0-9]*\) FAIL \([0-9]*\)\( (\(unsupported: [^)]*\))\)\{0,1\}.*/\1 cases right, \2 wrong, \4/p' <<<"$1" |
        sed 's/, $//'
}

# The value of key=... in a line.
field() { sed -n "s/.*[ ]$1=\([^ ]*\).*/\1/p" <<<"$2" | head -1; }

echo "gpu-check: $(uname -srm), $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
[ -f "$DIR/MANIFEST" ] && echo "gpu-check: artifacts $(head -1 "$DIR/MANIFEST")"

# ---- machine --------------------------------------------------------------------------------
gpus=""
if command -v nvidia-smi >/dev/null 2>&1; then
    gpus=$(timeout 20 nvidia-smi -L 2>/dev/null | head -8)
    drv=$(timeout 20 nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
    [ -n "$gpus" ] && echo "$gpus"
fi
step doctor 30 "$REL/hcomm" doctor -n 4
cuda_line=$(grep -a -m1 -E '^[a-zA-Z]+ +CUDA ' "$LOG" | sed 's/^[a-zA-Z]* *CUDA *//')
grep -a -E '^[a-zA-Z]+ +CUDA +GPU [0-9]' "$LOG" | head -4 | sed 's/^[a-zA-Z]* *CUDA */   /'

step probe-ipc 40 "$BIN/gpu_probe" ipc
ipc_rc=$RC
ipc_text=$(grep -a -m1 '^ipc:' "$LOG" | sed 's/^ipc: *//;s/^supported (\(.*\))$/\1/;s/^unsupported: //')

if [ "$DRY" = 1 ]; then
    row machine "dry run" "host memory stands in for device memory: no figure below is a GPU figure"
elif [ "$ipc_rc" = 77 ]; then
    row machine "no GPU" "${gpus:-no nvidia-smi}; hcomm doctor: ${cuda_line:-?}"
else
    row machine ok "$(head -1 <<<"$gpus" | sed 's/ (UUID.*//')${drv:+, driver $drv}$( [ "$(wc -l <<<"$gpus")" -gt 1 ] && echo " (+$(( $(wc -l <<<"$gpus") - 1 )) more GPUs)")"
    row doctor "$([ -n "$cuda_line" ] && echo ok || echo '?')" "${cuda_line:-no CUDA line in $LOG}"
fi

# ---- probes -------------------------------------------------------------------------------
case $ipc_rc in
    0) row cuda-ipc supported "$ipc_text" ;;
    3) row cuda-ipc unsupported "$ipc_text" ;;
    77) row cuda-ipc skipped "no GPU" ;;
    *) row cuda-ipc FAIL "status $ipc_rc: ${ipc_text:-see $LOG}" ;;
esac

step probe-cma 20 "$BIN/gpu_probe" cma
cma_text=$(grep -a -m1 '^cma:' "$LOG" | sed 's/^cma: *//;s/^supported (\(.*\))$/\1/;s/^unsupported: //')
case $RC in
    0) row vm-readv supported "$cma_text" ;;
    3) row vm-readv unsupported "$cma_text" ;;
    *) row vm-readv FAIL "status $RC: ${cma_text:-see $LOG}" ;;
esac

step probe-mpix 40 "$REL/hcomm" run -n 2 "$BIN/gpu_probe" mpix
mpix_text=$(grep -a -m1 '^mpix:' "$LOG" | sed 's/^mpix: *//')
mpix_val=$(sed -n 's/.*= \([0-9-]*\) on all.*/\1/p' <<<"$mpix_text")
if [ "$ipc_rc" = 77 ]; then
    # No GPU: an honest library answers 0 (or does not export the call).
    case "$mpix_val" in
        0) row mpix-cuda PASS "libhcomm.so: $mpix_text (no GPU here)" ;;
        "") row mpix-cuda unsupported "${mpix_text#unsupported: }" ;;
        *) row mpix-cuda FAIL "libhcomm.so: $mpix_text, but there is no GPU" ;;
    esac
else
    case "$mpix_val" in
        1) row mpix-cuda PASS "libhcomm.so: $mpix_text" ;;
        *) row mpix-cuda FAIL "libhcomm.so: ${mpix_text:-status $RC, see $LOG} (want 1 on a GPU machine)" ;;
    esac
fi

TDEV=cuda
BENCH_MIB=${BENCH_MAX_MIB:-1024}
coll_args=()
bench_args=()
if [ "$DRY" = 1 ]; then
    TDEV=cpu
    BENCH_MIB=${BENCH_MAX_MIB:-64}
    coll_args+=(--host --quick --large 65536)
    bench_args+=(--host)
fi
if [ "$ipc_rc" = 77 ] && [ "$DRY" = 0 ]; then
    for c in gpu_coll torch_coll gpu_bench hcomm-bench train_torch; do row "$c" skipped "no GPU"; done
    echo
    echo "gpu-check: no GPU on this machine ${ipc_text#no CUDA device: skipped }: nothing to check on device buffers; this is not a failure"
else
    # ---- gpu_coll -------------------------------------------------------------------------
    [ "${GPU_CHECK_QUICK:-0}" = 1 ] && coll_args+=(--quick)
    for n in 2 4; do
        step "gpu_coll-n$n" $((n == 2 ? 80 : 110)) "$REL/hcomm" run -n "$n" "$BIN/gpu_coll" "${coll_args[@]}"
        line=$(grep -a -m1 '^gpu_coll: PASS' "$LOG")
        realloc=$(grep -a -m1 'realloc: the freed address' "$LOG" | sed 's/.*came back in \([0-9]*\) of \([0-9]*\).*/realloc same address \1\/\2/')
        if [ "$RC" = 125 ]; then
            row "gpu_coll n=$n" skipped "time budget spent"
        elif [ "$RC" = 0 ] && [ -n "$line" ]; then
            row "gpu_coll n=$n" PASS "$(counts "$line")${realloc:+; $realloc}; ${STEP_SECS} s"
        else
            row "gpu_coll n=$n" FAIL "status $RC$([ "$RC" = 124 ] && echo ' (timed out)'): ${line#gpu_coll: }; $(grep -a -c '^FAIL' "$LOG") FAIL lines in $LOG"
            tail_log "$LOG"
        fi
    done

    # ---- Python environment ---------------------------------------------------------------
    have_venv=0
    if ! "$PYTHON" -c 'import torch' >/dev/null 2>&1; then
        row venv skipped "$PYTHON has no torch"
    else
        # A venv of $PYTHON's interpreter that also sees $PYTHON's packages (torch, numpy)
        # through a .pth file: --system-site-packages would miss them when $PYTHON is itself a
        # venv. The carried mpich and mpi4py go into the venv and come first on sys.path.
        # (A shell function cannot run under timeout: a child bash runs this one.)
        mkvenv() {
            local pip site
            rm -rf "$VENV"
            if "$PYTHON" -m venv "$VENV"; then
                pip=("$VENV/bin/python" -m pip)
            else # no ensurepip (Debian without python3-venv): $PYTHON's pip installs into it
                rm -rf "$VENV"
                "$PYTHON" -m venv --without-pip "$VENV" || return 1
                pip=("$PYTHON" -m pip --python "$VENV/bin/python")
            fi
            site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') || return 1
            "$PYTHON" -c 'import site, sysconfig
p = [*site.getsitepackages(), site.getusersitepackages(), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
print("\n".join(dict.fromkeys(p)))' >"$site/hcomm-gpu-check-host.pth" || return 1
            "${pip[@]}" install --disable-pip-version-check --no-input -q --no-index \
                --ignore-installed --find-links "$DIR/wheels" "mpich==$MPICH_WHEEL_VERSION" "mpi4py==$MPI4PY_VERSION" &&
                "$VENV/bin/python" -c 'import torch, mpi4py; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), "mpi4py", mpi4py.__version__)'
        }
        export -f mkvenv
        export VENV PYTHON DIR MPICH_WHEEL_VERSION MPI4PY_VERSION
        step venv 90 bash -c mkvenv
        if [ "$RC" = 0 ] && [ -x "$VENV/bin/mpiexec" ]; then
            have_venv=1
            row venv ok "$(tail -1 "$LOG"), PyPI mpich $MPICH_WHEEL_VERSION"
        else
            row venv FAIL "status $RC: see $LOG"
            tail_log "$LOG" 8
        fi
    fi
    PRE=$REL/libhcomm_preload.so
    # stats_text log: the HCOMM_STATS lines of a run, summed over ranks.
    stats_text() {
        awk '/^hcomm-stats /{n++; for(i=2;i<=NF;i++){split($i,kv,"="); s[kv[1]]+=kv[2]}}
             END{if(n) printf "%d ranks: allreduce %d handled / %d forwarded, other collectives %d handled / %d forwarded",
                 n, s["allreduce_handled"], s["allreduce_forwarded"],
                 s["bcast_handled"]+s["allgather_handled"]+s["allgatherv_handled"]+s["reduce_handled"]+s["reduce_scatter_handled"]+s["reduce_scatter_block_handled"],
                 s["bcast_forwarded"]+s["allgather_forwarded"]+s["allgatherv_forwarded"]+s["reduce_forwarded"]+s["reduce_scatter_forwarded"]+s["reduce_scatter_block_forwarded"]}' "$1"
    }

    # ---- torch_coll -----------------------------------------------------------------------
    if [ "$have_venv" = 1 ]; then
        step torch_coll 70 "$VENV/bin/mpiexec" -n 2 -genv LD_PRELOAD "$PRE" -genv HCOMM_STATS 1 \
            "$VENV/bin/python" tests/gpu/torch_coll.py --device "$TDEV"
        line=$(grep -a -m1 '^torch_coll:' "$LOG")
        if [ "$RC" = 0 ] && [[ "$line" == *"FAIL 0"* ]]; then
            row "torch_coll n=2" PASS "$(counts "$line")$(sed -n 's/.*\(caching allocator.*\)/; \1/p' <<<"$line"); $(stats_text "$LOG"); ${STEP_SECS} s"
        elif [ "$RC" = 125 ]; then
            row "torch_coll n=2" skipped "time budget spent"
        else
            row "torch_coll n=2" FAIL "status $RC: ${line:-see $LOG}"
            tail_log "$LOG"
        fi
    else
        row "torch_coll n=2" skipped "no Python environment"
    fi

    # ---- gpu_bench ------------------------------------------------------------------------
    for n in 2 4; do
        step "gpu_bench-n$n" 60 "$REL/hcomm" run -n "$n" "$BIN/gpu_bench" \
            --max-mib "$BENCH_MIB" --budget "${BENCH_BUDGET:-0.25}" "${bench_args[@]}"
        sed -n '/^gpu_bench: /,/^gpu_bench-summary/p' "$LOG" | grep -av '^gpu_bench-summary' | sed 's/^/   /'
        s=$(grep -a -m1 '^gpu_bench-summary' "$LOG")
        if [ "$RC" = 125 ]; then
            row "gpu_bench n=$n" skipped "time budget spent"
        elif [ "$RC" = 0 ] && [ "$(field check "$s")" = ok ]; then
            row "gpu_bench n=$n" PASS "results right; busbw up to $(field busbw_max "$s") GB/s, HBM rate up to $(field hbm_max "$s") GB/s, d2d copy up to $(field d2d_max "$s") GB/s; ${STEP_SECS} s"
            a=$(field aims "$s")
            row "aims n=$n" "$([ "$a" = met ] && echo met || { [ "$a" = n/a ] && echo n/a || echo 'NOT met'; })" \
                "HBM rate / d2d copy rate, lowest at >= 64 MiB: $(field hbm_over_d2d_min "$s") (aim 0.60); device / host-staged: $(field dev_over_staged_min "$s")x (aim 10x)"
        else
            row "gpu_bench n=$n" FAIL "status $RC$([ "$RC" = 124 ] && echo ' (timed out)'): ${s:-see $LOG}"
            tail_log "$LOG"
        fi
    done

    # ---- hcomm bench on device memory ---------------------------------------------------
    # The CLI benchmark itself on device buffers: its header has the GPU's d2d copy rate, its
    # rows the device allreduce and the host-staged one, measured in the same run.
    hb_args=(allreduce --memory device -b 1M -e "${HCOMM_BENCH_MAX:-256M}")
    [ -n "${HCOMM_GPU_CHECK_DEVICE:-}" ] && hb_args+=(--device-id "$HCOMM_GPU_CHECK_DEVICE")
    hb_kind=device
    if [ "$DRY" = 1 ]; then
        hb_args=(allreduce --memory host -b 1M -e "${HCOMM_BENCH_MAX:-64M}")
        hb_kind="host memory"
    fi
    step hcomm-bench-n2 75 "$REL/hcomm" run -n 2 "$REL/hcomm" bench "${hb_args[@]}"
    grep -a -E '^# (memory|d2d copy)|^# +collective|^ +allreduce ' "$LOG" | sed 's/^/   /'
    # Rows: 1 coll, 2 size, 9 time(us), 11 busbw, 12 #wrong, 13 staged(us) (device memory).
    hb=$(awk '!/^#/ && $1 == "allreduce" && NF >= 12 {
            n++; if ($12 != "0") bad++; last = $2; t = $9; bw = $11; st = $13
            if ($11 > max) max = $11 }
         END { if (n) printf "%d %d %s %s %s %s %s", n, bad, last, t, bw, max, (st == "" ? "-" : st) }' "$LOG")
    read -r hb_n hb_bad hb_size hb_t hb_bw hb_max hb_st <<<"${hb:-0 0 0 0 0 0 -}"
    hb_d2d=$(sed -n 's/^# d2d copy: \([0-9.]*\) GB\/s.*/\1/p' "$LOG" | head -1)
    hb_gpus=$(sed -n 's/^# memory: device: .*(by rank: \([0-9 ]*\);.*/\1/p' "$LOG" | head -1)
    if [ "$RC" = 125 ]; then
        row "hcomm-bench n=2" skipped "time budget spent"
    elif [ "$RC" = 0 ] && [ "$hb_n" -gt 0 ] && [ "$hb_bad" = 0 ]; then
        hb_fig="$hb_n sizes right; at $((hb_size >> 20)) MiB: ${hb_kind} ${hb_t} us, busbw ${hb_bw} GB/s (up to ${hb_max})"
        if [ "$hb_st" != - ]; then
            hb_fig+=", host-staged ${hb_st} us ($(awk -v a="$hb_st" -v b="$hb_t" 'BEGIN { printf "%.1f", (b > 0 ? a / b : 0) }')x the device time)"
        fi
        [ -n "$hb_d2d" ] && hb_fig+="; d2d copy ${hb_d2d} GB/s"
        [ -n "$hb_gpus" ] && hb_fig+="; GPUs by rank: ${hb_gpus}"
        row "hcomm-bench n=2" PASS "${hb_fig}; ${STEP_SECS} s"
    else
        row "hcomm-bench n=2" FAIL "status $RC$([ "$RC" = 124 ] && echo ' (timed out)'): $hb_n rows, $hb_bad with wrong elements; see $LOG"
        tail_log "$LOG"
    fi

    # ---- training -------------------------------------------------------------------------
    if [ "$have_venv" = 1 ]; then
        step train_torch 90 "$VENV/bin/mpiexec" -n 2 -genv LD_PRELOAD "$PRE" -genv HCOMM_STATS 1 \
            "$VENV/bin/python" examples/train_mlp_torch.py --device "$TDEV" --epochs 2 --train 8192 \
            --min-accuracy 75
        sed -n '/^train_mlp_torch.py:/,/^weights checksum/p' "$LOG" | sed 's/^/   /'
        handled=$(grep -a -c '^hcomm-stats .* allreduce_handled=[1-9]' "$LOG")
        if [ "$RC" = 125 ]; then
            row train_torch skipped "time budget spent"
        elif [ "$RC" = 0 ] && [ "$handled" = 2 ]; then
            row train_torch PASS "$(grep -a -m1 '^throughput' "$LOG" | sed 's/throughput: //;s/ (.*//'); $(grep -a -m1 '^time split' "$LOG" | sed 's/.*communication [0-9.]* s (\([0-9.]*%\).*/comm \1 of step/'); $(grep -a -m1 '^accuracy' "$LOG" | sed 's/accuracy: //;s/ (chance.*//'); weights $(grep -a -m1 '^weights' "$LOG" | sed 's/.*(\(.*\) on all.*/\1/'); $(stats_text "$LOG")"
        else
            row train_torch FAIL "status $RC, $handled of 2 ranks show allreduce_handled > 0: see $LOG"
            tail_log "$LOG"
        fi
    else
        row train_torch skipped "no Python environment"
    fi
fi

shm_list() { find /dev/shm -maxdepth 1 -name 'hcomm-*' 2>/dev/null | sort; }
leftover=$(comm -13 <(echo "$SHM_BEFORE") <(shm_list) | grep -c . || true)
[ "$leftover" -gt 0 ] && row shm-leftovers FAIL "$leftover hcomm-* entries left in /dev/shm by this run"

# ---- the table ----------------------------------------------------------------------------
echo
printf '%-15s | %-12s | %s\n' check result figures
printf '%-15s-+-%-12s-+-%s\n' "---------------" "------------" "-------"
for r in "${ROWS[@]}"; do
    IFS='|' read -r c res fig <<<"$r"
    printf '%-15s | %-12s | %s\n' "$c" "$res" "$fig"
done
echo
echo "gpu-check: $NFAIL failed, $((SECONDS - START)) s (budget ${BUDGET} s); logs in $LOGS/"
[ "$NFAIL" = 0 ]
