#!/usr/bin/env python3
"""Data-parallel training with mpi4py and PyTorch tensors: examples/train_mlp.py on torch.

The same task, model and schedule as examples/train_mlp.py (and examples/train_mlp.c): an MLP
D -> H -> H -> 8 (ReLU, softmax cross-entropy, plain SGD) learns 8 classes of synthetic
"images" (a fixed random prototype per class plus Gaussian noise) generated from a seed; rank r
trains on the samples whose index is r modulo N; rank 0's initial weights are broadcast; the
learning rate scales linearly with the global batch. The tensors live on --device (cuda: the
GPU of this rank's index on its host, modulo the GPUs visible; cpu otherwise), and so does all
the arithmetic (the gradients are computed by hand, as in the numpy twin, straight into one
flat gradient tensor). The gradients are summed by handing the torch tensors themselves to
mpi4py: comm.Allreduce(MPI.IN_PLACE, grad[lo:hi]) in buckets of --bucket-kb KiB, or one call
per tensor with --per-tensor. mpi4py takes a CUDA tensor through __cuda_array_interface__ and a
CPU tensor through DLPack, so the MPI library receives the tensor's own memory: with hcomm
preloaded, a device pointer. PyTorch runs kernels asynchronously, so the program waits for the
device (torch.cuda.synchronize) before every MPI call.

Run it with the host MPI and hcomm preloaded, e.g.
    mpiexec -n 2 -genv LD_PRELOAD $PWD/target/release/libhcomm_preload.so \\
        -genv HCOMM_STATS 1 python examples/train_mlp_torch.py --device cuda
(Open MPI: mpirun -n 2 -x LD_PRELOAD=... -x HCOMM_STATS=1 python examples/train_mlp_torch.py).

The data come from numpy's generator exactly as in train_mlp.py when numpy is importable (the
same samples, so the accuracies compare); without numpy from torch's generator (a different,
equally hard sample).

Prints (rank 0) samples/s, the compute/communication split, training and held-out accuracy
and the weight checksum; exits 1 if the weights differ between ranks or the training accuracy
is below --min-accuracy.
"""

import argparse
import hashlib
import sys
import time

import torch
from mpi4py import MPI

try:
    import numpy as np
except ImportError:  # the data then come from torch's generator
    np = None

NCLASS = 8


def make_data(seed, n, d):
    """(x, labels) as CPU tensors: train_mlp.py's samples when numpy is there."""
    if np is not None:
        rng = np.random.default_rng(seed)
        protos = rng.uniform(-1.0, 1.0, size=(NCLASS, d)).astype(np.float32)
        labels = rng.integers(0, NCLASS, size=n)
        x = 0.6 * protos[labels] + 1.1 * rng.standard_normal((n, d)).astype(np.float32)
        return torch.from_numpy(x.astype(np.float32)), torch.from_numpy(labels).long()
    g = torch.Generator().manual_seed(seed)
    protos = torch.rand(NCLASS, d, generator=g) * 2 - 1
    labels = torch.randint(0, NCLASS, (n,), generator=g)
    x = 0.6 * protos[labels] + 1.1 * torch.randn(n, d, generator=g)
    return x, labels


def shapes(d, h):
    return [(d, h), (h,), (h, h), (h,), (h, NCLASS), (NCLASS,)]


def views(flat, shp):
    """The tensors as views into one flat tensor."""
    out, at = [], 0
    for s in shp:
        n = 1
        for k in s:
            n *= k
        out.append(flat[at:at + n].view(s))
        at += n
    return out


def forward(p, x):
    w1, b1, w2, b2, w3, b3 = p
    a1 = torch.relu(x @ w1 + b1)
    a2 = torch.relu(a1 @ w2 + b2)
    z = a2 @ w3 + b3
    z = z - z.max(dim=1, keepdim=True).values
    e = torch.exp(z)
    return a1, a2, e / e.sum(dim=1, keepdim=True)


def backward(p, g, x, y):
    """Adds the summed gradient of the batch to g (views); returns the summed loss (a tensor,
    so that no step waits for the device)."""
    w1, b1, w2, b2, w3, b3 = p
    a1, a2, prob = forward(p, x)
    rows = torch.arange(len(y), device=x.device)
    loss = -torch.log(prob[rows, y] + 1e-12).sum()
    dz = prob
    dz[rows, y] -= 1
    g[4] += a2.T @ dz
    g[5] += dz.sum(dim=0)
    d2 = (dz @ w3.T) * (a2 > 0)
    g[2] += a1.T @ d2
    g[3] += d2.sum(dim=0)
    d1 = (d2 @ w2.T) * (a1 > 0)
    g[0] += x.T @ d1
    g[1] += d1.sum(dim=0)
    return loss


def accuracy(comm, p, x, y, indices):
    mine = indices[comm.rank::comm.size]
    right = 0
    if len(mine):
        right = int((forward(p, x[mine])[2].argmax(dim=1) == y[mine]).sum().item())
    total = comm.allreduce(right, op=MPI.SUM)
    return 100.0 * total / len(indices)


def weights_digest(flat):
    """The first 8 bytes of the SHA-256 of the weights' bytes, as a signed integer."""
    cpu = flat.detach().cpu().contiguous()
    raw = cpu.numpy().tobytes() if np is not None else bytes(cpu.view(torch.uint8).tolist())
    return int.from_bytes(hashlib.sha256(raw).digest()[:8], "little", signed=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--input", type=int, default=64)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=32, help="samples per rank per step")
    ap.add_argument("--train", type=int, default=16384)
    ap.add_argument("--lr", type=float, default=0.05, help="for a global batch of 32")
    ap.add_argument("--bucket-kb", type=int, default=4096)
    ap.add_argument("--per-tensor", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--min-accuracy", type=float, default=-1)
    ap.add_argument("--device", choices=["cpu", "cuda"], default=None,
                    help="default: cuda when a GPU is visible, else cpu")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    a = ap.parse_args()

    comm = MPI.COMM_WORLD
    rank, nranks = comm.rank, comm.size
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    kind = a.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if kind == "cuda":
        if not torch.cuda.is_available():
            print(f"train_mlp_torch.py: rank {rank}: --device cuda, but torch sees no GPU", flush=True)
            return 2
        local = comm.Split_type(MPI.COMM_TYPE_SHARED)
        dev = torch.device("cuda", local.rank % torch.cuda.device_count())
        local.Free()
        torch.cuda.set_device(dev)

        def sync():
            torch.cuda.synchronize(dev)
    else:
        dev = torch.device("cpu")

        def sync():
            pass

    ntest = 4096
    xc, yc = make_data(a.seed, a.train + ntest, a.input)
    x, y = xc.to(dev), yc.to(dev)
    shp = shapes(a.input, a.hidden)
    nparam = sum(int(torch.Size(s).numel()) for s in shp)
    flat = torch.zeros(nparam, dtype=torch.float32, device=dev)
    grad = torch.zeros(nparam, dtype=torch.float32, device=dev)
    p, g = views(flat, shp), views(grad, shp)
    if rank == 0:
        fan_in = [a.input, 1, a.hidden, 1, a.hidden, 1]
        if np is not None:
            rng = np.random.default_rng(a.seed + 1000)
            for t, (s, f) in enumerate(zip(shp, fan_in)):
                if t % 2 == 0:
                    p[t].copy_(torch.from_numpy(rng.standard_normal(s) * np.sqrt(2.0 / f)))
        else:
            gen = torch.Generator().manual_seed(a.seed + 1000)
            for t, (s, f) in enumerate(zip(shp, fan_in)):
                if t % 2 == 0:
                    p[t].copy_(torch.randn(s, generator=gen, dtype=torch.float64) * (2.0 / f) ** 0.5)
    sync()
    comm.Bcast(flat, root=0)

    gbatch = a.batch * nranks
    steps = a.train // gbatch
    lr = a.lr * gbatch / 32.0
    shard = torch.arange(rank, a.train - (a.train % nranks or 0), nranks)
    bucket = max(1, a.bucket_kb * 1024 // 4)
    if rank == 0:
        where = f"CUDA tensors on {torch.cuda.get_device_name(dev)}" if kind == "cuda" else "CPU tensors"
        print(f"train_mlp_torch.py: {nranks} ranks ({MPI.Get_library_version().splitlines()[0].strip()}), "
              f"torch {torch.__version__}, {where}, MLP {a.input}-{a.hidden}-{a.hidden}-{NCLASS} "
              f"({nparam} parameters), {a.train} training samples"
              f"{'' if np is not None else ' (from torch: numpy not found)'}, {a.epochs} epochs, "
              f"batch {a.batch} per rank ({gbatch} global), lr {lr:.4g}, "
              f"{'one allreduce per tensor' if a.per_tensor else 'bucketed allreduce'}", flush=True)

    compute = comm_time = 0.0
    calls = 0
    comm.Barrier()
    start = time.perf_counter()
    for e in range(a.epochs):
        if np is not None:
            perm = torch.from_numpy(np.random.default_rng(a.seed * 7919 + e).permutation(shard.numpy()))
        else:
            perm = shard[torch.randperm(len(shard), generator=torch.Generator().manual_seed(a.seed * 7919 + e))]
        order = perm.to(dev)
        loss = torch.zeros((), dtype=torch.float64, device=dev)
        for s in range(steps):
            t0 = time.perf_counter()
            grad.zero_()
            idx = order[s * a.batch:(s + 1) * a.batch]
            loss += backward(p, g, x[idx], y[idx])
            sync()  # the gradient must be complete in memory before MPI reads it
            compute += time.perf_counter() - t0
            t0 = time.perf_counter()
            if a.per_tensor:
                for t in g:
                    comm.Allreduce(MPI.IN_PLACE, t, op=MPI.SUM)
                    calls += 1
            else:
                for lo in range(0, nparam, bucket):
                    comm.Allreduce(MPI.IN_PLACE, grad[lo:lo + bucket], op=MPI.SUM)
                    calls += 1
            comm_time += time.perf_counter() - t0
            t0 = time.perf_counter()
            flat.sub_(grad, alpha=lr / gbatch)
            compute += time.perf_counter() - t0
        total_loss = comm.allreduce(float(loss.item()), op=MPI.SUM)
        acc = accuracy(comm, p, x, y, torch.arange(a.train, a.train + ntest, device=dev))
        if rank == 0:
            print(f"epoch {e + 1}: loss {total_loss / (steps * gbatch):.4f}, held-out accuracy {acc:.2f}%",
                  flush=True)
    sync()
    elapsed = time.perf_counter() - start

    train_acc = accuracy(comm, p, x, y, torch.arange(a.train, device=dev))
    test_acc = accuracy(comm, p, x, y, torch.arange(a.train, a.train + ntest, device=dev))
    digest = weights_digest(flat)
    lo = comm.allreduce(digest, op=MPI.MIN)
    hi = comm.allreduce(digest, op=MPI.MAX)
    tmax = [comm.allreduce(compute, op=MPI.MAX), comm.allreduce(comm_time, op=MPI.MAX)]
    ok = lo == hi and (a.min_accuracy < 0 or train_acc >= a.min_accuracy)
    if rank == 0:
        samples = a.epochs * steps * gbatch
        print(f"throughput: {samples / elapsed:.0f} samples/s ({samples} samples in {elapsed:.2f} s)")
        print(f"time split (slowest rank): compute {tmax[0]:.2f} s, communication {tmax[1]:.2f} s "
              f"({100 * tmax[1] / (tmax[0] + tmax[1]):.1f}% of the step time), {calls} allreduce calls per rank")
        print(f"accuracy: training {train_acc:.2f}%, held-out {test_acc:.2f}% (chance: 12.5%)")
        print(f"weights checksum: {digest & (2**64 - 1):016x} "
              f"({'identical' if lo == hi else 'DIFFERENT'} on all {nranks} ranks)")
        if lo != hi:
            print("FAIL train_mlp_torch.py: the weights differ between ranks")
        if a.min_accuracy >= 0 and train_acc < a.min_accuracy:
            print(f"FAIL train_mlp_torch.py: training accuracy {train_acc:.2f}% is below --min-accuracy {a.min_accuracy}")
        sys.stdout.flush()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
