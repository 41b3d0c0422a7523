/* nb_p2p_window.c - windows of nonblocking messages, as the OSU bandwidth benchmarks and halo
 * exchanges send them.
 *
 * Checked here, every byte against its expected value:
 * - pairs of ranks (0-1, 2-3, ...) exchange windows of 64 MPI_Isend/MPI_Irecv each way at
 *   once, all posted before one MPI_Waitall, at 8 bytes, 1000 bytes, 70000 bytes (several
 *   fragments each) and 1 MiB; windows repeat, so receives are posted while the peer's
 *   messages of the same window are already arriving;
 * - a window whose receives are posted only after the messages arrived (unexpected), with
 *   tags in reverse order;
 * - MPI's matching order through queued messages: a receive posted earlier keeps its claim on
 *   a message that arrived (and was read and queued by a barrier's receive) before a later
 *   MPI_ANY_TAG receive was posted;
 * - rank 0 receives a window from every other rank with MPI_ANY_SOURCE: each source's
 *   messages arrive in the order it sent them. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define W 64

static int rank, size, fails;
static MPI_Status *volatile statuses_ignore;

#define CHECK(cond, ...)                                                                   \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            printf("FAIL (rank %d, line %d): ", rank, __LINE__);                           \
            printf(__VA_ARGS__);                                                           \
            printf("\n");                                                                  \
            fails++;                                                                       \
        }                                                                                  \
    } while (0)

static unsigned char pattern(int from, int msg, size_t i, int round) {
    return (unsigned char)(from * 31 + msg * 7 + i * 13 + round * 5 + (i >> 8));
}

static void fill(unsigned char *b, size_t n, int from, int msg, int round) {
    for (size_t i = 0; i < n; i++)
        b[i] = pattern(from, msg, i, round);
}

/* First byte that differs from the expected pattern, or -1. */
static long first_bad(const unsigned char *b, size_t n, int from, int msg, int round) {
    for (size_t i = 0; i < n; i++)
        if (b[i] != pattern(from, msg, i, round))
            return (long)i;
    return -1;
}

static void exchange_windows(int peer, size_t n, int rounds) {
    unsigned char *sb = malloc(W * n), *rb = malloc(W * n);
    MPI_Request rq[2 * W];
    for (int round = 0; round < rounds; round++) {
        for (int j = 0; j < W; j++)
            fill(sb + j * n, n, rank, j, round);
        memset(rb, 0xee, W * n);
        for (int j = 0; j < W; j++)
            MPI_Irecv(rb + j * n, (int)n, MPI_BYTE, peer, 10, MPI_COMM_WORLD, &rq[j]);
        for (int j = 0; j < W; j++)
            MPI_Isend(sb + j * n, (int)n, MPI_BYTE, peer, 10, MPI_COMM_WORLD, &rq[W + j]);
        MPI_Waitall(2 * W, rq, statuses_ignore);
        for (int j = 0; j < W; j++) {
            long bad = first_bad(rb + j * n, n, peer, j, round);
            CHECK(bad < 0, "%zu-byte window, round %d, message %d from %d: byte %ld wrong", n,
                  round, j, peer, bad);
        }
    }
    free(sb);
    free(rb);
}

/* The receives are posted after every message has arrived, in reverse tag order. */
static void unexpected_window(int peer) {
    const size_t n = 3000;
    unsigned char *sb = malloc(W * n), *rb = malloc(W * n);
    MPI_Request rq[2 * W];
    for (int j = 0; j < W; j++)
        fill(sb + j * n, n, rank, j, 99);
    for (int j = 0; j < W; j++)
        MPI_Isend(sb + j * n, (int)n, MPI_BYTE, peer, 100 + j, MPI_COMM_WORLD, &rq[W + j]);
    /* The peer's messages are all here once a probe of its last one succeeds. */
    MPI_Probe(peer, 100 + W - 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int j = W - 1; j >= 0; j--)
        MPI_Irecv(rb + j * n, (int)n, MPI_BYTE, peer, 100 + j, MPI_COMM_WORLD, &rq[j]);
    MPI_Waitall(2 * W, rq, statuses_ignore);
    for (int j = 0; j < W; j++) {
        long bad = first_bad(rb + j * n, n, peer, j, 99);
        CHECK(bad < 0, "unexpected window, message %d from %d: byte %ld wrong", j, peer, bad);
    }
    free(sb);
    free(rb);
}

/* Rank `lo` posts a receive for tag 9 before `hi` sends tag 9 then tag 7; a broadcast from
 * `hi` to the two makes both arrive (hcomm reads them off the link there and queues them,
 * unmatched);
 * then a receive for any tag is posted. MPI: the tag-9 receive, posted first, gets the tag-9
 * message; the any-tag receive gets the tag-7 one. */
static void earlier_receive_keeps_its_message(int lo, int hi) {
    int a = -1, b = -1;
    char bulk[256];
    MPI_Comm pair;
    MPI_Comm_split(MPI_COMM_WORLD, rank == lo || rank == hi ? 0 : MPI_UNDEFINED, rank, &pair);
    if (rank == lo) {
        MPI_Request r[2];
        MPI_Status st;
        MPI_Irecv(&a, 1, MPI_INT, hi, 9, MPI_COMM_WORLD, &r[0]);
        MPI_Send(&a, 0, MPI_INT, hi, 1, MPI_COMM_WORLD); /* go */
        MPI_Bcast(bulk, sizeof bulk, MPI_CHAR, 1, pair);
        MPI_Irecv(&b, 1, MPI_INT, hi, MPI_ANY_TAG, MPI_COMM_WORLD, &r[1]);
        MPI_Wait(&r[1], &st);
        MPI_Wait(&r[0], MPI_STATUS_IGNORE);
        CHECK(a == 900 && b == 700 && st.MPI_TAG == 7,
              "tag-9 receive got %d (expected 900), any-tag receive got %d with tag %d "
              "(expected 700, tag 7)",
              a, b, st.MPI_TAG);
    } else if (rank == hi) {
        int v9 = 900, v7 = 700;
        MPI_Recv(NULL, 0, MPI_INT, lo, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&v9, 1, MPI_INT, lo, 9, MPI_COMM_WORLD);
        MPI_Send(&v7, 1, MPI_INT, lo, 7, MPI_COMM_WORLD);
        memset(bulk, 1, sizeof bulk);
        MPI_Bcast(bulk, sizeof bulk, MPI_CHAR, 1, pair);
    }
    if (pair != MPI_COMM_NULL)
        MPI_Comm_free(&pair);
}

/* Every rank but 0 sends W numbered messages to rank 0, which receives them all with
 * MPI_ANY_SOURCE from one window: per source, the numbers arrive in order. */
static void any_source_window(void) {
    const int k = W;
    if (rank == 0) {
        int total = k * (size - 1);
        long *vals = malloc(sizeof(long) * total);
        MPI_Request *rq = malloc(sizeof(MPI_Request) * total);
        MPI_Status *st = malloc(sizeof(MPI_Status) * total);
        int *next = calloc(size, sizeof(int));
        for (int i = 0; i < total; i++)
            MPI_Irecv(&vals[i], 1, MPI_LONG, MPI_ANY_SOURCE, 20, MPI_COMM_WORLD, &rq[i]);
        MPI_Waitall(total, rq, st);
        for (int i = 0; i < total; i++) {
            int s = st[i].MPI_SOURCE;
            CHECK(s > 0 && s < size && vals[i] == (long)s * 1000 + next[s],
                  "receive %d: %ld from %d, expected %ld", i, vals[i], s,
                  (long)s * 1000 + (s > 0 && s < size ? next[s] : 0));
            if (s > 0 && s < size)
                next[s]++;
        }
        free(vals);
        free(rq);
        free(st);
        free(next);
    } else {
        long v[W];
        MPI_Request rq[W];
        for (int j = 0; j < k; j++) {
            v[j] = (long)rank * 1000 + j;
            MPI_Isend(&v[j], 1, MPI_LONG, 0, 20, MPI_COMM_WORLD, &rq[j]);
        }
        MPI_Waitall(k, rq, statuses_ignore);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    statuses_ignore = MPI_STATUSES_IGNORE;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    int peer = rank ^ 1;
    if (peer < size) {
        exchange_windows(peer, 8, 50);
        exchange_windows(peer, 1000, 20);
        exchange_windows(peer, 70000, 4);
        exchange_windows(peer, 1 << 20, 2);
        unexpected_window(peer);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (size > 1)
        earlier_receive_keeps_its_message(0, size - 1);
    MPI_Barrier(MPI_COMM_WORLD);
    if (size > 1)
        any_source_window();

    int total = 0;
    MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf(total ? "nb_p2p_window: %d check(s) FAILED\n" : "nb_p2p_window: all checks passed\n",
               total);
    MPI_Finalize();
    return total != 0;
}
