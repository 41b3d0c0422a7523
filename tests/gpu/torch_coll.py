#!/usr/bin/env python3
"""Collectives through mpi4py on PyTorch tensors from the caching allocator.

PyTorch does not hand out one cudaMalloc per tensor: its caching allocator carves tensors out
of large cached segments, gives a freed block to the next tensor of a fitting size (same
address, new contents), and views start at an offset into their base tensor. An MPI library
that caches CUDA IPC mappings by address, or maps a pointer as if it were the start of an
allocation, gets these wrong. For every collective (Allreduce in place and not, Reduce at
rank 0 and at the last rank, Bcast, Allgather, Reduce_scatter_block, Reduce_scatter), dtypes
float32, float64, float16, int8, uint8, int32, int64, ops sum and max (plus prod on float32,
bxor on int32), counts 0, 1, 4099 and --large, and these tensors:
    fresh    torch.empty of the size
    view     a slice at an odd offset of a larger tensor
    reuse    the case run twice, the tensors deleted in between and allocated again (the
             caching allocator usually returns the same block: counted and printed)
    packed   the 6th of 8 small tensors allocated together (one cached segment)
the results are compared with the exact expected values (small integers, exact in every dtype
and order). The large count runs with fresh tensors only. bfloat16 is left out: mpi4py hands
it over as bytes (DLPack's bfloat has no datatype in its table), which no reduction accepts;
tests/gpu/gpu_coll.c covers MPIX_BFLOAT16.

Run under the MPI with hcomm preloaded (scripts/gpu-check.sh does), e.g.
    mpiexec -n 2 -genv LD_PRELOAD .../libhcomm_preload.so python tests/gpu/torch_coll.py --device cuda
--device cpu runs the same checks on CPU tensors (mpi4py takes them through DLPack).
Prints (rank 0) "torch_coll: PASS p FAIL f ..."; exits 1 on any failure.
"""

import argparse
import sys

import torch
from mpi4py import MPI

DTYPES = [torch.float32, torch.float64, torch.float16, torch.int8, torch.uint8, torch.int32, torch.int64]
SIGNED = {torch.float32, torch.float64, torch.float16, torch.int8, torch.int32, torch.int64}
MPI_OPS = {"sum": MPI.SUM, "max": MPI.MAX, "prod": MPI.PROD, "bxor": MPI.BXOR}


def values(op, dtype, seed, r, n):
    """Rank r's input (int64, on the CPU): small integers whose reduction is exact."""
    i = torch.arange(n, dtype=torch.int64)
    sgn = dtype in SIGNED
    if op == "sum":
        v = (i * 7 + r * 3 + seed) % 5 + 1
        return v - 3 if sgn else v
    if op == "prod":
        v = torch.where((i + r + seed) % 3 == 0, 2, 1)
        return torch.where((i * 5 + r + seed) % 4 == 0, -v, v) if sgn else v
    if op == "max":
        v = (i * 13 + r * 29 + seed * 7) % 100
        return v - 50 if sgn else v
    return (i * 2654435761 + r * 40503 + seed * 97) % 251  # bxor, bcast, allgather: bytes


def reduced(op, dtype, seed, nranks, n):
    acc = values(op, dtype, seed, 0, n)
    for r in range(1, nranks):
        v = values(op, dtype, seed, r, n)
        acc = {"sum": acc + v, "prod": acc * v, "max": torch.maximum(acc, v), "bxor": acc ^ v}[op]
    return acc


class Allocator:
    """Hands out tensors of one pattern and counts address reuse."""

    def __init__(self, device):
        self.device = device
        self.keep = []
        self.handed = []  # data pointers handed out in this round
        self.reused = 0
        self.reallocs = 0

    def get(self, pattern, n, dtype):
        t = self._get(pattern, n, dtype)
        self.handed.append(t.data_ptr())
        return t

    def _get(self, pattern, n, dtype):
        if pattern == "view":
            base = torch.empty(n + 7, dtype=dtype, device=self.device)
            self.keep.append(base)
            return base[3:3 + n]
        if pattern == "packed":
            group = [torch.empty(max(n, 1) + k, dtype=dtype, device=self.device) for k in range(8)]
            self.keep.append(group)
            return group[5][:n]
        return torch.empty(n, dtype=dtype, device=self.device)

    def release(self):
        self.keep.clear()


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def run_case(comm, dev, alloc, coll, dtype, op, inplace, n, pattern, seed, root):
    """Runs one case; returns this rank's error text ('' when right)."""
    rank, size = comm.rank, comm.size
    opname = op or "bytes"
    mpi_op = MPI_OPS.get(op, MPI.SUM)

    def tensor(v):
        t = alloc.get(pattern, v.numel(), dtype)
        t.copy_(v.to(dtype))
        return t

    if coll in ("allreduce", "reduce"):
        mine = values(opname, dtype, seed, rank, n)
        want = reduced(opname, dtype, seed, size, n)
        if coll == "allreduce":
            if inplace:
                out = tensor(mine)
                sync(dev)
                comm.Allreduce(MPI.IN_PLACE, out, op=mpi_op)
            else:
                src, out = tensor(mine), alloc.get(pattern, n, dtype)
                sync(dev)
                comm.Allreduce(src, out, op=mpi_op)
        else:
            if rank == root:
                if inplace:
                    out = tensor(mine)
                    sync(dev)
                    comm.Reduce(MPI.IN_PLACE, out, op=mpi_op, root=root)
                else:
                    src, out = tensor(mine), alloc.get(pattern, n, dtype)
                    sync(dev)
                    comm.Reduce(src, out, op=mpi_op, root=root)
            else:
                src = tensor(mine)
                sync(dev)
                comm.Reduce(src, None, op=mpi_op, root=root)
                return ""
    elif coll == "bcast":
        want = values(opname, dtype, seed, root, n)
        out = tensor(want) if rank == root else alloc.get(pattern, n, dtype).zero_()
        sync(dev)
        comm.Bcast(out, root=root)
    elif coll == "allgather":
        want = torch.cat([values(opname, dtype, seed, r, n) for r in range(size)])
        src = tensor(values(opname, dtype, seed, rank, n))
        out = alloc.get(pattern, n * size, dtype)
        sync(dev)
        comm.Allgather(src, out)
    else:  # reduce_scatter_block / reduce_scatter
        if coll == "reduce_scatter_block":
            counts = [n] * size
        else:
            counts = [0 if (n == 0 or r == 1) else n + r for r in range(size)]
        total = sum(counts)
        lo = sum(counts[:rank])
        mine = values(opname, dtype, seed, rank, total)
        want = reduced(opname, dtype, seed, size, total)[lo:lo + counts[rank]]
        if inplace:
            out = tensor(mine)
            sync(dev)
            if coll == "reduce_scatter_block":
                comm.Reduce_scatter_block(MPI.IN_PLACE, out, op=mpi_op)
            else:
                comm.Reduce_scatter(MPI.IN_PLACE, out, recvcounts=counts, op=mpi_op)
            out = out[:counts[rank]]
        else:
            src, out = tensor(mine), alloc.get(pattern, counts[rank], dtype)
            sync(dev)
            if coll == "reduce_scatter_block":
                comm.Reduce_scatter_block(src, out, op=mpi_op)
            else:
                comm.Reduce_scatter(src, out, recvcounts=counts, op=mpi_op)
    got = out.cpu()
    want = want.to(dtype)
    if got.shape != want.shape:
        return f"shape {tuple(got.shape)}, want {tuple(want.shape)}"
    if dtype.is_floating_point:
        same = torch.equal(got.view(torch.int16 if dtype == torch.float16 else
                                    torch.int32 if dtype == torch.float32 else torch.int64),
                           want.view(torch.int16 if dtype == torch.float16 else
                                     torch.int32 if dtype == torch.float32 else torch.int64))
    else:
        same = torch.equal(got, want)
    if same:
        return ""
    bad = (got != want).nonzero()
    k = int(bad[0, 0]) if len(bad) else 0
    return f"{len(bad)} of {got.numel()} wrong, first at {k}: got {got[k].item()}, want {want[k].item()}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default=None)
    ap.add_argument("--large", type=int, default=1 << 20)
    a = ap.parse_args()
    comm = MPI.COMM_WORLD
    rank, size = comm.rank, comm.size
    kind = a.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if kind == "cuda":
        local = comm.Split_type(MPI.COMM_TYPE_SHARED)
        dev = torch.device("cuda", local.rank % torch.cuda.device_count())
        local.Free()
        torch.cuda.set_device(dev)
    else:
        dev = torch.device("cpu")
    alloc = Allocator(dev)
    colls = ["allreduce", "reduce", "bcast", "allgather", "reduce_scatter_block", "reduce_scatter"]
    npass = nfail = 0
    shown = 0
    seed = 1
    for coll in colls:
        for dtype in DTYPES:
            if coll in ("bcast", "allgather"):
                ops = [None]
            else:
                ops = ["sum", "max"] + (["prod"] if dtype == torch.float32 else []) + \
                      (["bxor"] if dtype == torch.int32 else [])
            for op in ops:
                for inplace in ([False] if coll in ("bcast", "allgather") else [False, True]):
                    for n in (0, 1, 4099, a.large):
                        for pattern in (["fresh"] if n == a.large else ["fresh", "view", "reuse", "packed"]):
                            seed += 1
                            root = size - 1 if seed % 2 else 0
                            rounds = 2 if pattern == "reuse" else 1
                            err = ""
                            first = []
                            for k in range(rounds):
                                alloc.handed = []
                                try:
                                    e = run_case(comm, dev, alloc, coll, dtype, op, inplace,
                                                 n if coll not in ("allgather", "reduce_scatter_block",
                                                                   "reduce_scatter") or n != a.large
                                                 else a.large // size + 1,
                                                 "fresh" if pattern == "reuse" else pattern,
                                                 seed + 1000 * k, root)
                                except Exception as ex:  # an MPI error: a failed case, not a crash
                                    e = f"{type(ex).__name__}: {str(ex).splitlines()[0]}"
                                err = err or e
                                alloc.release()
                                if k == 0:
                                    first = alloc.handed
                                elif dev.type == "cuda":
                                    alloc.reallocs += len(first)
                                    alloc.reused += sum(p == q for p, q in zip(first, alloc.handed))
                            errs = comm.allgather(err)
                            bad = [(r, t) for r, t in enumerate(errs) if t]
                            if bad:
                                nfail += 1
                                if rank == 0 and shown < 20:
                                    shown += 1
                                    r, t = bad[0]
                                    print(f"FAIL {coll} {str(dtype).replace('torch.', '')} {op or ''}"
                                          f"{' in-place' if inplace else ''} count={n} {pattern} "
                                          f"rank {r}: {t}", flush=True)
                            else:
                                npass += 1
    reused = comm.allreduce(alloc.reused, op=MPI.SUM)
    reallocs = comm.allreduce(alloc.reallocs, op=MPI.SUM)
    if rank == 0:
        where = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "CPU tensors"
        extra = f", caching allocator returned the same block in {reused} of {reallocs} reallocations" \
            if reallocs else ""
        print(f"torch_coll: {size} ranks, {where}, torch {torch.__version__}: PASS {npass} FAIL {nfail}{extra}",
              flush=True)
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main())
