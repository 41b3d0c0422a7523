#!/usr/bin/env python3
"""Data-parallel training with mpi4py and numpy: the Python twin of examples/train_mlp.c.

An MLP D -> H -> H -> 8 (ReLU, softmax cross-entropy, plain SGD) learns 8 classes of
synthetic "images" (a fixed random prototype per class plus Gaussian noise), generated from a
seed so every rank builds the same data without communication. Rank r trains on the samples
whose index is r modulo N; rank 0's initial weights are broadcast; each step every rank
computes the gradient of its local batch, the gradients (one flat float32 buffer) are summed
with comm.Allreduce(MPI.IN_PLACE, ...) in buckets of --bucket-kb KiB (or one call per tensor
with --per-tensor), and every rank applies the same update, so the weights stay identical (the
final checksum proves it). The learning rate scales linearly with the global batch.

Run it with the host MPI and hcomm preloaded, e.g.
    mpiexec -n 2 -genv LD_PRELOAD $PWD/target/release/libhcomm_preload.so \\
        -genv HCOMM_STATS 1 python examples/train_mlp.py
(Open MPI: mpirun -n 2 -x LD_PRELOAD=... -x HCOMM_STATS=1 python examples/train_mlp.py).

Prints (rank 0) samples/s, the compute/communication split, training and held-out accuracy
and the weight checksum; exits 1 if the weights differ between ranks or the training accuracy
is below --min-accuracy.
"""

import argparse
import hashlib
import sys
import time

import numpy as np
from mpi4py import MPI

NCLASS = 8


def make_data(seed, n, d):
    rng = np.random.default_rng(seed)
    protos = rng.uniform(-1.0, 1.0, size=(NCLASS, d)).astype(np.float32)
    labels = rng.integers(0, NCLASS, size=n)
    x = 0.6 * protos[labels] + 1.1 * rng.standard_normal((n, d)).astype(np.float32)
    return x.astype(np.float32), labels


def shapes(d, h):
    return [(d, h), (h,), (h, h), (h,), (h, NCLASS), (NCLASS,)]


def views(flat, shp):
    """The tensors as views into one flat buffer."""
    out, at = [], 0
    for s in shp:
        n = int(np.prod(s))
        out.append(flat[at:at + n].reshape(s))
        at += n
    return out


def forward(p, x):
    w1, b1, w2, b2, w3, b3 = p
    a1 = np.maximum(x @ w1 + b1, 0)
    a2 = np.maximum(a1 @ w2 + b2, 0)
    z = a2 @ w3 + b3
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return a1, a2, e / e.sum(axis=1, keepdims=True)


def backward(p, g, x, y):
    """Adds the summed gradient of the batch to g (views); returns the summed loss."""
    w1, b1, w2, b2, w3, b3 = p
    a1, a2, prob = forward(p, x)
    loss = -np.log(prob[np.arange(len(y)), y] + 1e-12).sum()
    dz = prob
    dz[np.arange(len(y)), y] -= 1
    g[4] += a2.T @ dz
    g[5] += dz.sum(axis=0)
    d2 = (dz @ w3.T) * (a2 > 0)
    g[2] += a1.T @ d2
    g[3] += d2.sum(axis=0)
    d1 = (d2 @ w2.T) * (a1 > 0)
    g[0] += x.T @ d1
    g[1] += d1.sum(axis=0)
    return float(loss)


def accuracy(comm, p, x, y, indices):
    mine = indices[comm.rank::comm.size]
    right = np.array([0, 0], dtype=np.int64)
    if len(mine):
        right[0] = int((forward(p, x[mine])[2].argmax(axis=1) == y[mine]).sum())
        right[1] = len(mine)
    total = np.zeros(2, dtype=np.int64)
    comm.Allreduce(right, total, op=MPI.SUM)
    return 100.0 * total[0] / total[1]


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
    a = ap.parse_args()

    comm = MPI.COMM_WORLD
    rank, nranks = comm.rank, comm.size
    ntest = 4096
    x, y = make_data(a.seed, a.train + ntest, a.input)
    shp = shapes(a.input, a.hidden)
    nparam = sum(int(np.prod(s)) for s in shp)
    flat = np.zeros(nparam, dtype=np.float32)
    grad = np.zeros(nparam, dtype=np.float32)
    p, g = views(flat, shp), views(grad, shp)
    if rank == 0:
        rng = np.random.default_rng(a.seed + 1000)
        fan_in = [a.input, 1, a.hidden, 1, a.hidden, 1]
        for t, (s, f) in enumerate(zip(shp, fan_in)):
            if t % 2 == 0:
                p[t][...] = rng.standard_normal(s) * np.sqrt(2.0 / f)
    comm.Bcast(flat, root=0)

    gbatch = a.batch * nranks
    steps = a.train // gbatch
    lr = a.lr * gbatch / 32.0
    shard = np.arange(rank, a.train - (a.train % nranks or 0), nranks)
    bucket = max(1, a.bucket_kb * 1024 // 4)
    if rank == 0:
        print(f"train_mlp.py: {nranks} ranks ({MPI.Get_library_version().splitlines()[0].strip()}), "
              f"MLP {a.input}-{a.hidden}-{a.hidden}-{NCLASS} ({nparam} parameters), {a.train} training "
              f"samples, {a.epochs} epochs, batch {a.batch} per rank ({gbatch} global), lr {lr:.4g}, "
              f"{'one allreduce per tensor' if a.per_tensor else 'bucketed allreduce'}", flush=True)

    compute = comm_time = 0.0
    calls = 0
    comm.Barrier()
    start = time.perf_counter()
    for e in range(a.epochs):
        order = np.random.default_rng(a.seed * 7919 + e).permutation(shard)
        loss = 0.0
        for s in range(steps):
            t0 = time.perf_counter()
            grad[...] = 0
            idx = order[s * a.batch:(s + 1) * a.batch]
            loss += backward(p, g, x[idx], y[idx])
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
            flat -= (lr / gbatch) * grad
            compute += time.perf_counter() - t0
        total_loss = comm.allreduce(loss, op=MPI.SUM)
        acc = accuracy(comm, p, x, y, np.arange(a.train, a.train + ntest))
        if rank == 0:
            print(f"epoch {e + 1}: loss {total_loss / (steps * gbatch):.4f}, held-out accuracy {acc:.2f}%",
                  flush=True)
    elapsed = time.perf_counter() - start

    train_acc = accuracy(comm, p, x, y, np.arange(a.train))
    test_acc = accuracy(comm, p, x, y, np.arange(a.train, a.train + ntest))
    digest = int.from_bytes(hashlib.sha256(flat.tobytes()).digest()[:8], "little", signed=True)
    lo = comm.allreduce(digest, op=MPI.MIN)
    hi = comm.allreduce(digest, op=MPI.MAX)
    tmax = np.zeros(2)
    comm.Allreduce(np.array([compute, comm_time]), tmax, op=MPI.MAX)
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
            print("FAIL train_mlp.py: the weights differ between ranks")
        if a.min_accuracy >= 0 and train_acc < a.min_accuracy:
            print(f"FAIL train_mlp.py: training accuracy {train_acc:.2f}% is below --min-accuracy {a.min_accuracy}")
        sys.stdout.flush()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
