/*
 * gpu_bench.c - MPI_Allreduce on device buffers next to what the same GPU does on its own, in
 * one run.
 *
 * For every size S (per rank; 1 MiB to --max-mib, x4 steps), float sum, n ranks on one GPU:
 *   d2d     cuMemcpyDtoD of S bytes on rank 0 alone (the others wait): rate = 2S/t, bytes read
 *           plus bytes written, the memory traffic of a copy;
 *   device  MPI_Allreduce(send, recv) on cuMemAlloc buffers: busbw = S/t x 2(n-1)/n (the
 *           nccl-tests convention) and the HBM rate = n x (2S + (n-1)S/n) / t: the bytes the
 *           CUDA IPC allreduce reads (its own S, the (n-1)/n of S it gathers from its peers)
 *           and writes (S) per rank, as that algorithm documents them, for the n ranks that
 *           share the memory;
 *   staged  cuMemcpyDtoH to a pinned host buffer, MPI_Allreduce(MPI_IN_PLACE) on the host
 *           buffer, cuMemcpyHtoD back: what an MPI without GPU support makes the program do.
 * t is the slowest rank's time per call. Each measurement runs one timed warm-up call, then as
 * many calls as fit in --budget seconds (at least 2, at most 200; all ranks agree on the
 * count). The device result is checked (every element of n ranks' 1..n sums to n(n+1)/2, at
 * the start, middle and end of the buffer), and so is the staged one.
 *
 * Rank 0 prints the table and the aims: at 64 MiB and above the HBM rate should be >= 60 % of
 * the d2d rate, and the device path >= 10x faster than the staged one; and one line
 *   gpu_bench-summary n=N busbw_max=... hbm_max=... d2d_max=... hbm_over_d2d_min=...
 *                     dev_over_staged_min=... aims=met|not-met|n/a check=ok|FAIL
 * for scripts.
 *
 * Usage: gpu_bench [--host] [--max-mib M] [--min-mib M] [--budget S] [--device K]
 *   --host  host memory and memcpy stand in for the device (exercises this program's logic)
 * Exit 0; 1 when a result was wrong; 77 when there is no CUDA driver or device; 2: usage.
 */
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_driver.h"

static int rank, nranks;
static double budget = 1.0;

struct row {
    size_t bytes;
    int iters, staged_iters, d2d_iters;
    double dev_t, staged_t, d2d_t;
    int dev_ok, staged_ok;
};

/* The slowest rank's value. */
static double max_all(double v)
{
    double m = 0;
    MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

static int iterations(double warm)
{
    double n = warm > 0 ? budget / warm : 200;
    return n < 2 ? 2 : n > 200 ? 200 : (int)n;
}

static int fill(struct gbuf *b, float v, size_t count)
{
    if (gpu_host_mode) {
        float *f = b->ptr;
        for (size_t i = 0; i < count; i++)
            f[i] = v;
        return 0;
    }
    unsigned int bits;
    memcpy(&bits, &v, 4);
    return cu.MemsetD32((CUdeviceptr)(uintptr_t)b->ptr, bits, count) != CUDA_SUCCESS ||
           cu.CtxSynchronize() != CUDA_SUCCESS;
}

static int copy_d2d(struct gbuf *dst, struct gbuf *src, size_t bytes)
{
    if (gpu_host_mode) {
        memcpy(dst->ptr, src->ptr, bytes);
        return 0;
    }
    return cu.MemcpyDtoD((CUdeviceptr)(uintptr_t)dst->ptr, (CUdeviceptr)(uintptr_t)src->ptr,
                         bytes) != CUDA_SUCCESS;
}

static int copy_d2h(void *dst, struct gbuf *src, size_t bytes)
{
    if (gpu_host_mode) {
        memcpy(dst, src->ptr, bytes);
        return 0;
    }
    return cu.MemcpyDtoH(dst, (CUdeviceptr)(uintptr_t)src->ptr, bytes) != CUDA_SUCCESS;
}

static int copy_h2d(struct gbuf *dst, const void *src, size_t bytes)
{
    if (gpu_host_mode) {
        memcpy(dst->ptr, src, bytes);
        return 0;
    }
    return cu.MemcpyHtoD((CUdeviceptr)(uintptr_t)dst->ptr, src, bytes) != CUDA_SUCCESS;
}

/* Whether the first, middle and last element of `count` floats equal `want`. */
static int check(struct gbuf *b, size_t count, float want)
{
    size_t at[3] = {0, count / 2, count - 1};
    for (int k = 0; k < 3; k++) {
        float got = 0;
        struct gbuf e = gbuf_sub(b, at[k] * 4, 4);
        if (gbuf_download(&got, &e, 4) != CUDA_SUCCESS || got != want)
            return 0;
    }
    return 1;
}

static int all_ok(int ok)
{
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

/* Times `iters` device allreduces (iters = 0: one warm-up call). */
static double time_device(struct gbuf *s, struct gbuf *r, int count, int iters)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < (iters ? iters : 1); i++)
        MPI_Allreduce(s->ptr, r->ptr, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    cuda_sync();
    return max_all((MPI_Wtime() - t0) / (iters ? iters : 1));
}

static double time_staged(struct gbuf *s, struct gbuf *r, float *h, int count, int iters)
{
    size_t bytes = (size_t)count * 4;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < (iters ? iters : 1); i++) {
        copy_d2h(h, s, bytes);
        MPI_Allreduce(MPI_IN_PLACE, h, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        copy_h2d(r, h, bytes);
    }
    cuda_sync();
    return max_all((MPI_Wtime() - t0) / (iters ? iters : 1));
}

/* Rank 0 copies while the others wait; everyone learns the time. */
static double time_d2d(struct gbuf *s, struct gbuf *r, size_t bytes, int iters)
{
    double t = 0;
    if (rank == 0) {
        double t0 = MPI_Wtime();
        for (int i = 0; i < (iters ? iters : 1); i++)
            copy_d2d(r, s, bytes);
        cuda_sync();
        t = (MPI_Wtime() - t0) / (iters ? iters : 1);
    }
    MPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return t;
}

static int measure(struct row *w, struct gbuf *s, struct gbuf *r, float *h)
{
    int count = (int)(w->bytes / 4);
    float want = (float)nranks * (float)(nranks + 1) / 2;

    w->d2d_iters = iterations(time_d2d(s, r, w->bytes, 0));
    w->d2d_t = time_d2d(s, r, w->bytes, w->d2d_iters);

    if (fill(s, (float)(rank + 1), (size_t)count) || fill(r, 0, (size_t)count))
        return 1;
    w->iters = iterations(time_device(s, r, count, 0));
    w->dev_t = time_device(s, r, count, w->iters);
    w->dev_ok = all_ok(check(r, (size_t)count, want));

    if (fill(r, 0, (size_t)count))
        return 1;
    w->staged_iters = iterations(time_staged(s, r, h, count, 0));
    w->staged_t = time_staged(s, r, h, count, w->staged_iters);
    w->staged_ok = all_ok(check(r, (size_t)count, want));
    return 0;
}

static const char *size_text(size_t b)
{
    static char buf[32];
    if (b >= (1u << 30))
        snprintf(buf, sizeof buf, "%zu GiB", b >> 30);
    else
        snprintf(buf, sizeof buf, "%zu MiB", b >> 20);
    return buf;
}

int main(int argc, char **argv)
{
    size_t min_mib = 1, max_mib = 1024;
    int ordinal = 0;
    const char *env = getenv("HCOMM_GPU_CHECK_DEVICE");
    if (env)
        ordinal = atoi(env);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--host"))
            gpu_host_mode = 1;
        else if (!strcmp(argv[i], "--max-mib") && i + 1 < argc)
            max_mib = (size_t)strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--min-mib") && i + 1 < argc)
            min_mib = (size_t)strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--budget") && i + 1 < argc)
            budget = atof(argv[++i]);
        else if (!strcmp(argv[i], "--device") && i + 1 < argc)
            ordinal = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: gpu_bench [--host] [--max-mib M] [--min-mib M] [--budget S] "
                            "[--device K]\n");
            return 2;
        }
    }
    if (min_mib < 1 || max_mib < min_mib || max_mib > 4096 || !(budget > 0)) {
        fprintf(stderr, "gpu_bench: need 1 <= --min-mib <= --max-mib <= 4096 and --budget > 0\n");
        return 2;
    }
    char why[256] = "";
    int cuda_rc = cuda_open(ordinal, why, sizeof why);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    int worst = 0;
    MPI_Allreduce(&cuda_rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (worst != 0) {
        if (rank == 0)
            printf(worst == GPU_EXIT_SKIP ? "no CUDA device: skipped (%s)\n"
                                          : "gpu_bench: CUDA unusable: %s\n",
                   why[0] ? why : "on another rank");
        MPI_Finalize();
        return worst == GPU_EXIT_SKIP ? GPU_EXIT_SKIP : 1;
    }

    size_t maxb = max_mib << 20;
    struct gbuf s, r;
    float *h = NULL;
    int host_pinned = !gpu_host_mode && cu.MemAllocHost((void **)&h, maxb) == CUDA_SUCCESS;
    if (!host_pinned)
        h = malloc(maxb);
    CUresult rc1 = gbuf_alloc(&s, MEM_DEVICE, maxb), rc2 = gbuf_alloc(&r, MEM_DEVICE, maxb);
    if (!all_ok(rc1 == CUDA_SUCCESS && rc2 == CUDA_SUCCESS && h != NULL)) {
        if (rank == 0)
            printf("gpu_bench: cannot allocate 2 x %zu MiB of device memory and %zu MiB of host "
                   "memory per rank (%s); try --max-mib\n",
                   max_mib, max_mib, rc1 != CUDA_SUCCESS ? cu_err(rc1) : cu_err(rc2));
        MPI_Finalize();
        return 1;
    }
    if (rank == 0) {
        printf("gpu_bench: %d ranks on one GPU (%s), MPI_Allreduce float sum, %s staging "
               "buffer, %.2g s per measurement\n",
               nranks, gpu_name, gpu_host_mode ? "host (--host)" : host_pinned ? "pinned" : "pageable",
               budget);
        printf("%-8s %6s %10s %9s %9s %9s %7s %11s %9s %10s %8s\n", "size", "iters", "dev_us",
               "busbw", "hbm", "d2d", "hbm/d2d", "staged_us", "st_busbw", "dev/staged", "check");
        printf("%-8s %6s %10s %9s %9s %9s %7s %11s %9s %10s %5s\n", "", "", "", "GB/s", "GB/s",
               "GB/s", "", "", "GB/s", "", "");
        fflush(stdout);
    }
    double n = nranks, bus = 2.0 * (n - 1) / n;
    double min_ratio = 1e30, min_speedup = 1e30, max_busbw = 0, max_hbm = 0, max_d2d = 0;
    int bad = 0, in_range = 0;
    for (size_t mib = min_mib; mib <= max_mib; mib *= 4) {
        struct row w = {.bytes = mib << 20};
        if (measure(&w, &s, &r, h)) {
            if (rank == 0)
                printf("%-8s fill failed\n", size_text(w.bytes));
            bad = 1;
            break;
        }
        double S = (double)w.bytes;
        double busbw = S / w.dev_t * bus / 1e9;
        double hbm = n * (2 * S + (n - 1) * S / n) / w.dev_t / 1e9;
        double d2d = 2 * S / w.d2d_t / 1e9;
        double st_busbw = S / w.staged_t * bus / 1e9;
        double speedup = w.staged_t / w.dev_t;
        bad |= !w.dev_ok || !w.staged_ok;
        if (busbw > max_busbw)
            max_busbw = busbw;
        if (hbm > max_hbm)
            max_hbm = hbm;
        if (d2d > max_d2d)
            max_d2d = d2d;
        if (w.bytes >= (64u << 20)) {
            in_range = 1;
            if (hbm / d2d < min_ratio)
                min_ratio = hbm / d2d;
            if (speedup < min_speedup)
                min_speedup = speedup;
        }
        if (rank == 0) {
            printf("%-8s %6d %10.1f %9.2f %9.2f %9.2f %7.2f %11.1f %9.2f %10.1f %8s\n",
                   size_text(w.bytes), w.iters, w.dev_t * 1e6, busbw, hbm, d2d, hbm / d2d,
                   w.staged_t * 1e6, st_busbw, speedup,
                   w.dev_ok && w.staged_ok ? "ok" : !w.dev_ok ? "FAIL-dev" : "FAIL-stg");
            fflush(stdout);
        }
    }
    if (rank == 0) {
        if (in_range) {
            printf("aim: HBM rate >= 0.60 x d2d at 64 MiB and above: lowest %.2f: %s\n", min_ratio,
                   min_ratio >= 0.6 ? "met" : "NOT met");
            printf("aim: device >= 10x host-staged at 64 MiB and above: lowest %.1fx: %s\n",
                   min_speedup, min_speedup >= 10 ? "met" : "NOT met");
        } else {
            printf("aim: not evaluated (no size of 64 MiB or more measured)\n");
            min_ratio = min_speedup = 0;
        }
        printf("gpu_bench-summary n=%d busbw_max=%.2f hbm_max=%.2f d2d_max=%.2f hbm_over_d2d_min=%.2f "
               "dev_over_staged_min=%.1f aims=%s check=%s\n",
               nranks, max_busbw, max_hbm, max_d2d, min_ratio, min_speedup,
               !in_range ? "n/a" : min_ratio >= 0.6 && min_speedup >= 10 ? "met" : "not-met",
               bad ? "FAIL" : "ok");
        if (bad)
            printf("FAIL gpu_bench: a result was wrong (check column)\n");
        fflush(stdout);
    }
    gbuf_free(&s);
    gbuf_free(&r);
    if (host_pinned)
        cu.MemFreeHost(h);
    else
        free(h);
    MPI_Finalize();
    return bad;
}
