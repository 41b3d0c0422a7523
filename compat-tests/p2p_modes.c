/*
 * p2p_modes.c - synchronous and buffered send modes, exact results.
 *
 *   1. Synchronous mode: rank 0's MPI_Issend to rank 1 stays incomplete (MPI_Test false, 20
 *      tests 1 ms apart) while rank 1 waits in a barrier on another communicator without
 *      having posted its receive; after rank 1 received it (a second barrier), MPI_Wait
 *      completes it and the data arrived. At 1 rank the same with a message to oneself: the
 *      Issend is incomplete until the Irecv is posted.
 *   2. MPI_Ssend blocks until the receive: rank 1 sleeps 200 ms before MPI_Recv, rank 0's
 *      MPI_Ssend must take at least 100 ms. (Self at 1 rank: Issend/Recv/Wait.)
 *   3. Every rank Ssends to rank 0 (1 MiB and small, alternating); rank 0 receives with
 *      MPI_ANY_SOURCE and checks source, tag, count and data. Issend to MPI_PROC_NULL
 *      completes at once.
 *   4. Buffered mode: MPI_Buffer_attach of room for two messages (+ MPI_BSEND_OVERHEAD each);
 *      MPI_Bsend two messages to the right neighbour and overwrite the send buffer at once
 *      (the copies go out), MPI_Ibsend a third after the receiver took the first (the
 *      request may be waited at once); the left neighbour's data checked.
 *      MPI_Buffer_detach returns the attached address and size.
 * (Too little attached space is MPI_ERR_BUFFER in hcomm and MPICH, while Open MPI 4.1 sends
 * such a message anyway: that case is in tests/c/errors.c.)
 * Prints implementation-independent lines on rank 0; failures print FAIL.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size, fails;

#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fails++;                                                                           \
            if (fails < 20) {                                                                  \
                printf("FAIL p2p_modes rank %d: ", rank);                                      \
                printf(__VA_ARGS__);                                                           \
                printf("\n");                                                                  \
            }                                                                                  \
        }                                                                                      \
    } while (0)

/* MPI_Test `times` times, `gap_us` apart: whether any said complete. */
static int completes_within(MPI_Request *q, int times, int gap_us)
{
    for (int i = 0; i < times; i++) {
        int flag = 0;
        MPI_Test(q, &flag, MPI_STATUS_IGNORE);
        if (flag)
            return 1;
        usleep(gap_us);
    }
    return 0;
}

static void issend_waits_for_match(MPI_Comm side)
{
    int v[4] = {11, 22, 33, 44}, r[4] = {0, 0, 0, 0};
    MPI_Request q;
    if (size == 1) {
        MPI_Issend(v, 4, MPI_INT, 0, 5, MPI_COMM_WORLD, &q);
        CHECK(!completes_within(&q, 20, 1000), "Issend to self complete before the receive");
        MPI_Request rq;
        MPI_Irecv(r, 4, MPI_INT, 0, 5, MPI_COMM_WORLD, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        int rc = MPI_Wait(&q, MPI_STATUS_IGNORE);
        CHECK(rc == MPI_SUCCESS && q == MPI_REQUEST_NULL, "Issend to self Wait rc %d", rc);
        CHECK(r[0] == 11 && r[3] == 44, "Issend to self data %d %d", r[0], r[3]);
        return;
    }
    if (rank == 0) {
        MPI_Issend(v, 4, MPI_INT, 1, 5, MPI_COMM_WORLD, &q);
        CHECK(!completes_within(&q, 20, 1000), "Issend complete before rank 1 posted its receive");
        MPI_Barrier(side); /* rank 1 has not received before this */
        MPI_Barrier(side); /* rank 1 has received before this */
        int rc = MPI_Wait(&q, MPI_STATUS_IGNORE);
        CHECK(rc == MPI_SUCCESS && q == MPI_REQUEST_NULL, "Issend Wait rc %d", rc);
    } else if (rank == 1) {
        MPI_Barrier(side);
        MPI_Status st;
        MPI_Recv(r, 4, MPI_INT, 0, 5, MPI_COMM_WORLD, &st);
        CHECK(r[0] == 11 && r[1] == 22 && r[2] == 33 && r[3] == 44, "Issend data %d %d %d %d",
              r[0], r[1], r[2], r[3]);
        MPI_Barrier(side);
    } else {
        MPI_Barrier(side);
        MPI_Barrier(side);
    }
}

static void ssend_blocks(void)
{
    int v = 7, r = 0;
    if (size == 1) {
        MPI_Request q;
        MPI_Issend(&v, 1, MPI_INT, 0, 6, MPI_COMM_WORLD, &q);
        MPI_Recv(&r, 1, MPI_INT, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        CHECK(r == 7, "Ssend to self data %d", r);
        return;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        double t0 = MPI_Wtime();
        int rc = MPI_Ssend(&v, 1, MPI_INT, 1, 6, MPI_COMM_WORLD);
        double dt = MPI_Wtime() - t0;
        CHECK(rc == MPI_SUCCESS, "Ssend rc %d", rc);
        CHECK(dt >= 0.1, "Ssend returned after %.3f s, before the receive (posted after 0.2 s)",
              dt);
    } else if (rank == 1) {
        usleep(200000);
        MPI_Recv(&r, 1, MPI_INT, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(r == 7, "Ssend data %d", r);
    }
}

static void ssend_to_root(void)
{
    enum { BIG = 1 << 18 };
    int *buf = malloc(sizeof(int) * BIG);
    if (rank != 0) {
        int n = rank % 2 ? BIG : 3;
        for (int i = 0; i < n; i++)
            buf[i] = rank * 1000 + i;
        int rc = MPI_Ssend(buf, n, MPI_INT, 0, 100 + rank, MPI_COMM_WORLD);
        CHECK(rc == MPI_SUCCESS, "Ssend to root rc %d", rc);
    } else {
        int seen = 0;
        for (int k = 1; k < size; k++) {
            MPI_Status st;
            MPI_Recv(buf, BIG, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            int s = st.MPI_SOURCE, n = -1;
            MPI_Get_count(&st, MPI_INT, &n);
            CHECK(s > 0 && s < size && !(seen >> s & 1), "Ssend to root source %d", s);
            seen |= 1 << s;
            CHECK(st.MPI_TAG == 100 + s, "Ssend to root tag %d from %d", st.MPI_TAG, s);
            CHECK(n == (s % 2 ? BIG : 3), "Ssend to root count %d from %d", n, s);
            for (int i = 0; i < n; i++)
                if (buf[i] != s * 1000 + i) {
                    CHECK(0, "Ssend to root [%d] = %d from %d", i, buf[i], s);
                    break;
                }
        }
    }
    MPI_Request q;
    MPI_Issend(buf, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &q);
    int flag = 0;
    MPI_Test(&q, &flag, MPI_STATUS_IGNORE);
    CHECK(flag, "Issend to MPI_PROC_NULL not complete at once");
    free(buf);
    /* Rank 0 receives ANY_TAG: the next section's messages must not reach it before. */
    MPI_Barrier(MPI_COMM_WORLD);
}

static void buffered(void)
{
    enum { N = 64 };
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int attached = 2 * (N * (int)sizeof(int) + MPI_BSEND_OVERHEAD);
    char *mem = malloc(attached);
    int rc = MPI_Buffer_attach(mem, attached);
    CHECK(rc == MPI_SUCCESS, "Buffer_attach rc %d", rc);
    int s[N], r[N];
    for (int m = 0; m < 2; m++) {
        for (int i = 0; i < N; i++)
            s[i] = rank * 100 + m * 10 + i;
        rc = MPI_Bsend(s, N, MPI_INT, right, 30 + m, MPI_COMM_WORLD);
        CHECK(rc == MPI_SUCCESS, "Bsend %d rc %d", m, rc);
        memset(s, 0xff, sizeof s); /* the buffered copy is what goes out */
    }
    for (int m = 0; m < 2; m++) {
        MPI_Status st;
        MPI_Recv(r, N, MPI_INT, left, 30 + m, MPI_COMM_WORLD, &st);
        int bad = 0;
        for (int i = 0; i < N; i++)
            bad += r[i] != left * 100 + m * 10 + i;
        CHECK(!bad, "Bsend %d from %d: %d wrong elements (r[0] = %d)", m, left, bad, r[0]);
        if (m == 0) {
            for (int i = 0; i < N; i++)
                s[i] = rank * 100 + 20 + i;
            MPI_Request q;
            rc = MPI_Ibsend(s, N, MPI_INT, right, 32, MPI_COMM_WORLD, &q);
            CHECK(rc == MPI_SUCCESS, "Ibsend rc %d", rc);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
            memset(s, 0xff, sizeof s);
        }
    }
    MPI_Recv(r, N, MPI_INT, left, 32, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(r[0] == left * 100 + 20 && r[N - 1] == left * 100 + 20 + N - 1, "Ibsend data %d %d",
          r[0], r[N - 1]);

    void *addr = NULL;
    int n = -1;
    rc = MPI_Buffer_detach(&addr, &n);
    CHECK(rc == MPI_SUCCESS && addr == mem && n == attached,
          "Buffer_detach rc %d, %p (attached %p), size %d (attached %d)", rc, addr, (void *)mem, n,
          attached);
    free(mem);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm side;
    MPI_Comm_dup(MPI_COMM_WORLD, &side);

    issend_waits_for_match(side);
    ssend_blocks();
    ssend_to_root();
    buffered();

    MPI_Comm_free(&side);
    int total = 0;
    MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("p2p_modes: Issend completes only after the match\n");
        printf("p2p_modes: Ssend to rank 0 from every rank, any source\n");
        printf("p2p_modes: Bsend, Ibsend, Buffer_attach/detach\n");
        printf("p2p_modes: %s\n", total ? "FAIL" : "ok");
    }
    MPI_Finalize();
    return total != 0;
}
