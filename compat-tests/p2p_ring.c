/*
 * p2p_ring.c - large point-to-point exchanges around a ring, every byte checked.
 *
 *   1. MPI_Sendrecv of 64 MiB to the right neighbour while receiving 64 MiB from the left one
 *      (the classic exchange that deadlocks with naive blocking sends), ITERS times (default 2,
 *      env P2P_RING_ITERS), with a different pattern each time.
 *   2. A MPI_Send/MPI_Recv ring where even ranks send first and odd ranks receive first, for
 *      1 MiB + 1 and 64 MiB (two ranks or more: at one rank this would be a blocking send to
 *      oneself of a large message, which MPI lets block forever).
 * Every received byte is compared with the sender's pattern. Prints "p2p_ring: ok" on rank 0;
 * any failure prints a line starting with FAIL.
 */
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIG ((size_t)64 << 20)

static int rank, size, fails;

/* 8-byte words of a pattern depending on (sender, round, index): a shifted or mixed-up
   message cannot match. */
static uint64_t word(int sender, int round, size_t i)
{
    uint64_t z = ((uint64_t)sender << 56) ^ ((uint64_t)round << 48) ^ (uint64_t)i;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    return z ^ (z >> 27);
}

static void fill(unsigned char *b, size_t n, int sender, int round)
{
    size_t w = n / 8;
    uint64_t *p = (uint64_t *)b;
    for (size_t i = 0; i < w; i++)
        p[i] = word(sender, round, i);
    for (size_t i = w * 8; i < n; i++)
        b[i] = (unsigned char)(word(sender, round, i) >> 8);
}

static void check(const char *what, const unsigned char *b, size_t n, int sender, int round)
{
    size_t w = n / 8;
    const uint64_t *p = (const uint64_t *)b;
    for (size_t i = 0; i < w; i++)
        if (p[i] != word(sender, round, i)) {
            fails++;
            printf("FAIL p2p_ring: rank=%d %s (round %d, %zu bytes from rank %d): word %zu differs\n", rank, what,
                   round, n, sender, i);
            return;
        }
    for (size_t i = w * 8; i < n; i++)
        if (b[i] != (unsigned char)(word(sender, round, i) >> 8)) {
            fails++;
            printf("FAIL p2p_ring: rank=%d %s (round %d): byte %zu differs\n", rank, what, round, i);
            return;
        }
}

static void status_ok(const char *what, const MPI_Status *st, int source, int tag, size_t n)
{
    int c = -1;
    MPI_Get_count(st, MPI_BYTE, &c);
    if (st->MPI_SOURCE != source || st->MPI_TAG != tag || c != (int)n) {
        fails++;
        printf("FAIL p2p_ring: rank=%d %s: status source %d tag %d count %d, expected %d %d %zu\n", rank, what,
               st->MPI_SOURCE, st->MPI_TAG, c, source, tag, n);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iters = getenv("P2P_RING_ITERS") ? atoi(getenv("P2P_RING_ITERS")) : 2;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    unsigned char *s = malloc(BIG), *r = malloc(BIG);
    if (!s || !r) {
        printf("FAIL p2p_ring: rank=%d cannot allocate 2 x 64 MiB\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Status st;

    /* 1. Sendrecv ring. */
    for (int it = 0; it < iters; it++) {
        fill(s, BIG, rank, it);
        memset(r, 0, BIG);
        MPI_Sendrecv(s, (int)BIG, MPI_BYTE, right, it, r, (int)BIG, MPI_BYTE, left, it, MPI_COMM_WORLD, &st);
        status_ok("Sendrecv", &st, left, it, BIG);
        check("Sendrecv", r, BIG, left, it);
    }

    /* 2. Send/Recv ring: even ranks send first, odd ranks receive first. */
    if (size > 1) {
        static const size_t sizes[] = { (1 << 20) + 1, BIG };
        for (int k = 0; k < 2; k++) {
            size_t n = sizes[k];
            int round = 100 + k;
            fill(s, n, rank, round);
            memset(r, 0, n);
            if (rank % 2 == 0) {
                MPI_Send(s, (int)n, MPI_BYTE, right, round, MPI_COMM_WORLD);
                MPI_Recv(r, (int)n, MPI_BYTE, left, round, MPI_COMM_WORLD, &st);
            } else {
                MPI_Recv(r, (int)n, MPI_BYTE, left, round, MPI_COMM_WORLD, &st);
                MPI_Send(s, (int)n, MPI_BYTE, right, round, MPI_COMM_WORLD);
            }
            status_ok("Send/Recv ring", &st, left, round, n);
            check("Send/Recv ring", r, n, left, round);
        }
    }

    free(s);
    free(r);
    int all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0)
        printf("p2p_ring: ok\n");
    MPI_Finalize();
    return 0;
}
