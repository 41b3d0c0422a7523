/* Floors of a 2-rank allgather on one host that need no shared-memory slots, without any
 * library: what a single copy can give, for comparison with the slot floor
 * (benches/slot_copy_floor.c), hcomm and the reference MPIs (docs/PERFORMANCE.md,
 * "Allgather: what the slots allow").
 *
 * Two processes, each with a block of BLOCK_BYTES (its send buffer) and a result of twice
 * that. One exchange: each process copies its own block into its place in its result and
 * the other's block into the other place.
 *
 *   direct  the send buffers live in memory both processes map (what XPMEM or KNEM would
 *           give a library, and what no stock kernel gives for a program's own buffers):
 *           two memcpy per process, the least memory traffic any allgather can make.
 *   kernel  the other's block is read with process_vm_readv in 1 MiB pieces (Open MPI's
 *           single copy, and hcomm's with HCOMM_CMA): one memcpy and one kernel copy.
 *
 * THP=1 in the environment asks for transparent huge pages on every buffer before it is
 * first touched (madvise MADV_HUGEPAGE), as GLIBC_TUNABLES=glibc.malloc.hugetlb=1 does for a
 * program's malloc: the kernel copy pins the source page by page, and 2 MiB pages make it
 * several times faster.
 *
 *   cc -O2 -o allgather_floor benches/allgather_floor.c
 *   ./allgather_floor direct|kernel BLOCK_BYTES [ITERS=50]
 *
 * Each process is bound to a CPU of its own (0 and 1), as MPIs bind two ranks on two cores.
 * Both processes start each exchange together (a shared counter); prints per process the
 * best and the mean time (µs) of one exchange after two warm-up rounds, and checks the
 * result.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static size_t PIECE = 1 << 20; /* PIECE=bytes in the environment changes it */

struct shared {
    _Alignas(64) atomic_long arrived; /* processes at the start of an exchange, in all */
    _Alignas(64) pid_t pid[2];
    _Alignas(64) char *src[2]; /* each process's send buffer, at its own address */
};

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* `len` bytes, 2 MiB aligned; shared between the processes or private. */
static char *buffer(size_t len, int shared)
{
    size_t sz = (len + (2 << 20) - 1) & ~(size_t)((2 << 20) - 1);
    char *p = mmap(NULL, sz + (2 << 20), PROT_READ | PROT_WRITE,
                   (shared ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    p = (char *)(((unsigned long)p + (2 << 20) - 1) & ~((2UL << 20) - 1));
    if (getenv("THP") && atoi(getenv("THP")))
        madvise(p, sz, MADV_HUGEPAGE);
    return p;
}

static void barrier(struct shared *s, long *round)
{
    *round += 2;
    atomic_fetch_add_explicit(&s->arrived, 1, memory_order_acq_rel);
    while (atomic_load_explicit(&s->arrived, memory_order_acquire) < *round)
        ;
}

int main(int argc, char **argv)
{
    if (argc < 3 || (strcmp(argv[1], "direct") && strcmp(argv[1], "kernel"))) {
        fprintf(stderr, "usage: %s direct|kernel BLOCK_BYTES [ITERS]\n", argv[0]);
        return 2;
    }
    int direct = !strcmp(argv[1], "direct");
    int late = getenv("LATE") && atoi(getenv("LATE"));
    if (getenv("PIECE"))
        PIECE = strtoul(getenv("PIECE"), NULL, 0);
    size_t blk = strtoul(argv[2], NULL, 0);
    int iters = argc > 3 ? atoi(argv[3]) : 50;
    struct shared *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (s == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    memset(s, 0, sizeof *s);
    /* The direct mode's send buffers are made before the fork, so both map them. */
    char *both[2] = {NULL, NULL};
    if (direct)
        for (int p = 0; p < 2; p++)
            both[p] = buffer(blk, 1);
    for (int p = 0; p < 2; p++) {
        if (fork() != 0)
            continue;
        /* One CPU each, as the MPIs bind two ranks on two cores. */
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(p, &one);
        sched_setaffinity(0, sizeof one, &one);
        char *src = direct ? both[p] : buffer(blk, 0);
        char *dst = buffer(2 * blk, 0);
        memset(src, 1 + p, blk);
        memset(dst, 0, 2 * blk);
        s->pid[p] = getpid();
        s->src[p] = src;
        long round = 0;
        barrier(s, &round);
        pid_t peer = s->pid[1 - p];
        char *theirs = s->src[1 - p];
        double best = 1e9, total = 0;
        for (int it = 0; it < iters + 2; it++) {
            barrier(s, &round);
            double t0 = now();
            if (!late)
                memcpy(dst + p * blk, src, blk);
            char *out = dst + (1 - p) * blk;
            if (direct) {
                memcpy(out, theirs, blk);
            } else {
                for (size_t o = 0; o < blk; o += PIECE) {
                    size_t n = blk - o < PIECE ? blk - o : PIECE;
                    struct iovec l = {out + o, n}, r = {theirs + o, n};
                    if (process_vm_readv(peer, &l, 1, &r, 1, 0) != (ssize_t)n) {
                        perror("process_vm_readv");
                        exit(1);
                    }
                }
            }
            if (late)
                memcpy(dst + p * blk, src, blk);
            double t = now() - t0;
            if (it >= 2) {
                total += t;
                if (t < best)
                    best = t;
            }
        }
        for (size_t i = 0; i < blk; i++)
            if (dst[(1 - p) * blk + i] != 2 - p || dst[p * blk + i] != 1 + p) {
                printf("process %d: wrong byte at %zu\n", p, i);
                exit(1);
            }
        barrier(s, &round);
        printf("process %d: %s, block %zu B: best %.1f us, mean %.1f us\n", p, argv[1], blk,
               best * 1e6, total / iters * 1e6);
        exit(0);
    }
    int status, bad = 0;
    while (wait(&status) > 0)
        bad |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    return bad;
}
