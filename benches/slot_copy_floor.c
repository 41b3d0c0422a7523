/* The floor of a 2-rank allgather through shared-memory slots, without any library.
 *
 * Two processes each own a ring of 8 slots in shared memory that the other reads. Each copies
 * its block into its ring slot by slot (and into its own place in its result, as hcomm does
 * while it sends), and copies the other's block out of the other ring into its result: the
 * three copies per block an allgather through slots needs, with nothing else — no headers,
 * no matching, one flag per slot. hcomm's own allgather is compared against this (see
 * docs/PERFORMANCE.md, "Allgather: what the slots allow").
 *
 *   cc -O2 -o slot_copy_floor benches/slot_copy_floor.c
 *   ./slot_copy_floor BLOCK_BYTES [SLOT_BYTES=131072] [ITERS=50]
 *
 * Prints per process the best and the mean time (µs) of one exchange of BLOCK_BYTES each way
 * (an allgather of 2 × BLOCK_BYTES), after two warm-up rounds; checks the bytes received.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SLOTS 8

struct ring {
    _Alignas(64) atomic_long head; /* slots published by the writer */
    _Alignas(64) atomic_long tail; /* slots freed by the reader */
};

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s BLOCK_BYTES [SLOT_BYTES] [ITERS]\n", argv[0]);
        return 2;
    }
    size_t blk = strtoul(argv[1], NULL, 0);
    size_t sb = argc > 2 ? strtoul(argv[2], NULL, 0) : 131072;
    int iters = argc > 3 ? atoi(argv[3]) : 50;
    size_t ringsz = 4096 + SLOTS * sb;
    char *shm = mmap(NULL, 2 * ringsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shm == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    memset(shm, 0, 2 * ringsz);
    for (int p = 0; p < 2; p++) {
        if (fork() != 0)
            continue;
        struct ring *tx = (struct ring *)(shm + p * ringsz);
        struct ring *rx = (struct ring *)(shm + (1 - p) * ringsz);
        char *tslots = (char *)tx + 4096, *rslots = (char *)rx + 4096;
        char *src = aligned_alloc(4096, blk), *dst = aligned_alloc(4096, 2 * blk);
        memset(src, 1 + p, blk);
        memset(dst, 0, 2 * blk);
        double best = 1e9, total = 0;
        long pos = 0, rpos = 0;
        for (int it = 0; it < iters + 2; it++) {
            double t0 = now();
            size_t so = 0, ro = 0;
            while (so < blk || ro < blk) {
                if (so < blk && pos - atomic_load_explicit(&tx->tail, memory_order_acquire) < SLOTS) {
                    size_t n = blk - so < sb ? blk - so : sb;
                    memcpy(tslots + (pos % SLOTS) * sb, src + so, n);
                    memcpy(dst + p * blk + so, src + so, n);
                    so += n;
                    atomic_store_explicit(&tx->head, ++pos, memory_order_release);
                }
                if (ro < blk && rpos < atomic_load_explicit(&rx->head, memory_order_acquire)) {
                    size_t n = blk - ro < sb ? blk - ro : sb;
                    memcpy(dst + (1 - p) * blk + ro, rslots + (rpos % SLOTS) * sb, n);
                    ro += n;
                    atomic_store_explicit(&rx->tail, ++rpos, memory_order_release);
                }
            }
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
        printf("process %d: block %zu B, slot %zu B: best %.1f us, mean %.1f us\n", p, blk, sb,
               best * 1e6, total / iters * 1e6);
        exit(0);
    }
    int status, bad = 0;
    while (wait(&status) > 0)
        bad |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    return bad;
}
