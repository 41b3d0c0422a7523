/*
 * persistent_p2p.c - persistent point-to-point: MPI_Send_init, MPI_Recv_init, MPI_Rsend_init,
 * MPI_Ssend_init, MPI_Bsend_init,
 * MPI_Start, MPI_Startall, exact results.
 *
 *   1. A ring (send to rank+1, receive from rank-1) set up once and started five times with
 *      new buffer contents each time: MPI_Start + MPI_Wait, then MPI_Startall + MPI_Waitall,
 *      then MPI_Startall + an MPI_Test loop. The receive's status (source, tag, count) is
 *      checked each time; after completion the handles stay valid (not MPI_REQUEST_NULL).
 *   2. Waiting on an inactive persistent request returns at once with an empty status.
 *   3. The receive uses a strided vector datatype: each start unpacks into the gaps' neighbours
 *      and leaves the gaps alone; a persistent send of a vector type packs at each start.
 *   4. MPI_Rsend_init against a receive started before a barrier; persistent operations with
 *      MPI_PROC_NULL; the _c forms when the header has them (MPI 4, nothing printed).
 * Prints implementation-independent lines on rank 0; failures print FAIL.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>

static int rank, size, fails;
static MPI_Status *volatile statuses_ignore;

#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fails++;                                                                           \
            if (fails < 20) {                                                                  \
                printf("FAIL persistent_p2p rank %d: ", rank);                                 \
                printf(__VA_ARGS__);                                                           \
                printf("\n");                                                                  \
            }                                                                                  \
        }                                                                                      \
    } while (0)

static int val(int r, int i, int salt) { return r * 1000 + i + salt; }

static void ring(void)
{
    const int n = 4;
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int sbuf[4], rbuf[4];
    MPI_Request req[2];
    MPI_Status st[2];
    MPI_Recv_init(rbuf, n, MPI_INT, prev, 7, MPI_COMM_WORLD, &req[0]);
    MPI_Send_init(sbuf, n, MPI_INT, next, 7, MPI_COMM_WORLD, &req[1]);
    MPI_Request keep0 = req[0], keep1 = req[1];
    for (int it = 0; it < 5; it++) {
        for (int i = 0; i < n; i++)
            sbuf[i] = val(rank, i, 10 * it), rbuf[i] = -1;
        if (it < 2) {
            MPI_Start(&req[0]);
            MPI_Start(&req[1]);
            MPI_Wait(&req[1], MPI_STATUS_IGNORE);
            MPI_Wait(&req[0], &st[0]);
        } else if (it < 4) {
            MPI_Startall(2, req);
            MPI_Waitall(2, req, st);
        } else {
            int done = 0;
            MPI_Startall(2, req);
            while (!done)
                MPI_Testall(2, req, &done, st);
        }
        CHECK(req[0] == keep0 && req[1] == keep1, "round %d: handles changed", it);
        int cnt = -1;
        MPI_Get_count(&st[0], MPI_INT, &cnt);
        CHECK(st[0].MPI_SOURCE == prev && st[0].MPI_TAG == 7 && cnt == n,
              "round %d: status source %d tag %d count %d", it, st[0].MPI_SOURCE, st[0].MPI_TAG,
              cnt);
        for (int i = 0; i < n; i++)
            CHECK(rbuf[i] == val(prev, i, 10 * it), "round %d: rbuf[%d] = %d", it, i, rbuf[i]);
    }
    /* Inactive: a wait returns at once with an empty status. */
    MPI_Status e;
    e.MPI_SOURCE = e.MPI_TAG = 12345;
    MPI_Wait(&req[0], &e);
    int cnt = -1;
    MPI_Get_count(&e, MPI_INT, &cnt);
    CHECK(e.MPI_SOURCE == MPI_ANY_SOURCE && e.MPI_TAG == MPI_ANY_TAG && cnt == 0,
          "inactive wait: source %d tag %d count %d", e.MPI_SOURCE, e.MPI_TAG, cnt);
    CHECK(req[0] == keep0, "inactive wait changed the handle");
    int flag = 0;
    MPI_Test(&req[1], &flag, MPI_STATUS_IGNORE);
    CHECK(flag == 1, "inactive test: flag %d", flag);
    MPI_Request_free(&req[0]);
    MPI_Request_free(&req[1]);
    CHECK(req[0] == MPI_REQUEST_NULL && req[1] == MPI_REQUEST_NULL, "free: not REQUEST_NULL");
}

static void derived(void)
{
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    MPI_Datatype vec;
    MPI_Type_vector(3, 1, 2, MPI_INT, &vec); /* ints 0, 2, 4 */
    MPI_Type_commit(&vec);
    int sbuf[5], rbuf[5];
    MPI_Request req[2];
    MPI_Send_init(sbuf, 1, vec, next, 8, MPI_COMM_WORLD, &req[0]);
    MPI_Recv_init(rbuf, 1, vec, prev, 8, MPI_COMM_WORLD, &req[1]);
    MPI_Type_free(&vec); /* the requests keep using it */
    for (int it = 0; it < 3; it++) {
        for (int i = 0; i < 5; i++)
            sbuf[i] = val(rank, i, 100 * it), rbuf[i] = -1;
        MPI_Startall(2, req);
        MPI_Waitall(2, req, statuses_ignore);
        for (int i = 0; i < 5; i++) {
            int want = i % 2 ? -1 : val(prev, i, 100 * it);
            CHECK(rbuf[i] == want, "vector round %d: rbuf[%d] = %d, want %d", it, i, rbuf[i],
                  want);
        }
    }
    MPI_Request_free(&req[0]);
    MPI_Request_free(&req[1]);
}

static void ready_and_null(void)
{
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int s = 0, r = -1, x = 5;
    MPI_Request rq, sq, nq[2];
    MPI_Recv_init(&r, 1, MPI_INT, prev, 9, MPI_COMM_WORLD, &rq);
    MPI_Rsend_init(&s, 1, MPI_INT, next, 9, MPI_COMM_WORLD, &sq);
    MPI_Recv_init(&x, 1, MPI_INT, MPI_PROC_NULL, 9, MPI_COMM_WORLD, &nq[0]);
    MPI_Send_init(&x, 1, MPI_INT, MPI_PROC_NULL, 9, MPI_COMM_WORLD, &nq[1]);
    for (int it = 0; it < 3; it++) {
        s = val(rank, it, 0);
        r = -1;
        MPI_Start(&rq);
        MPI_Barrier(MPI_COMM_WORLD); /* every receive is posted before any ready send */
        MPI_Start(&sq);
        MPI_Wait(&sq, MPI_STATUS_IGNORE);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        CHECK(r == val(prev, it, 0), "rsend round %d: %d", it, r);
        MPI_Status st[2];
        MPI_Startall(2, nq);
        MPI_Waitall(2, nq, st);
        int cnt = -1;
        MPI_Get_count(&st[0], MPI_INT, &cnt);
        int src_ok = st[0].MPI_SOURCE == MPI_PROC_NULL;
#ifdef MPICH_VERSION
        /* MPICH 4.0.2 reports MPI_ANY_SOURCE here (an empty status), not MPI_PROC_NULL. */
        src_ok |= st[0].MPI_SOURCE == MPI_ANY_SOURCE;
#endif
        CHECK(src_ok && st[0].MPI_TAG == MPI_ANY_TAG && cnt == 0,
              "PROC_NULL receive: source %d tag %d count %d", st[0].MPI_SOURCE, st[0].MPI_TAG,
              cnt);
        CHECK(x == 5, "PROC_NULL receive wrote its buffer");
    }
    MPI_Request_free(&rq);
    MPI_Request_free(&sq);
    MPI_Request_free(&nq[0]);
    MPI_Request_free(&nq[1]);
#if MPI_VERSION >= 4
    int cs[3] = {val(rank, 0, 7), val(rank, 1, 7), val(rank, 2, 7)}, cr[3] = {-1, -1, -1};
    MPI_Request cq[2];
    MPI_Recv_init_c(cr, 3, MPI_INT, prev, 10, MPI_COMM_WORLD, &cq[0]);
    MPI_Send_init_c(cs, 3, MPI_INT, next, 10, MPI_COMM_WORLD, &cq[1]);
    MPI_Startall(2, cq);
    MPI_Waitall(2, cq, statuses_ignore);
    for (int i = 0; i < 3; i++)
        CHECK(cr[i] == val(prev, i, 7), "Send_init_c/Recv_init_c [%d] = %d", i, cr[i]);
    MPI_Request_free(&cq[0]);
    MPI_Request_free(&cq[1]);
    MPI_Request rc;
    MPI_Rsend_init_c(cs, 3, MPI_INT, MPI_PROC_NULL, 10, MPI_COMM_WORLD, &rc);
    MPI_Start(&rc);
    MPI_Wait(&rc, MPI_STATUS_IGNORE);
    MPI_Request_free(&rc);
#endif
}

/* 5. MPI_Ssend_init and MPI_Bsend_init around the ring, each started three times with new
 * contents. A synchronous start cannot complete before its receive is posted: every rank tests
 * its send before the barrier that precedes all receives. A buffered start completes at once
 * (the message is in the attached buffer), so its buffer may be overwritten before the
 * receive runs. */
static void sync_and_buffered(void)
{
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int s[2], r[2];
    MPI_Request sq, bq, rq;
    int bsize = 4 * (2 * (int)sizeof(int) + MPI_BSEND_OVERHEAD);
    char *attached = malloc(bsize);
    MPI_Buffer_attach(attached, bsize);
    MPI_Ssend_init(s, 2, MPI_INT, next, 11, MPI_COMM_WORLD, &sq);
    MPI_Bsend_init(s, 2, MPI_INT, next, 12, MPI_COMM_WORLD, &bq);
    for (int it = 0; it < 3; it++) {
        s[0] = val(rank, 0, 20 + it), s[1] = val(rank, 1, 20 + it), r[0] = r[1] = -1;
        int flag = 1;
        MPI_Start(&sq);
        MPI_Test(&sq, &flag, MPI_STATUS_IGNORE);
        CHECK(!flag, "MPI_Ssend_init start %d completed before its receive was posted", it);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Recv_init(r, 2, MPI_INT, prev, 11, MPI_COMM_WORLD, &rq);
        MPI_Start(&rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        MPI_Wait(&sq, MPI_STATUS_IGNORE);
        MPI_Request_free(&rq);
        CHECK(r[0] == val(prev, 0, 20 + it) && r[1] == val(prev, 1, 20 + it), "Ssend_init start %d: got %d %d", it,
              r[0], r[1]);

        s[0] = val(rank, 0, 30 + it), s[1] = val(rank, 1, 30 + it), r[0] = r[1] = -1;
        MPI_Start(&bq);
        MPI_Wait(&bq, MPI_STATUS_IGNORE);
        s[0] = s[1] = -5; /* buffered: the message was copied at the start */
        MPI_Recv(r, 2, MPI_INT, prev, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(r[0] == val(prev, 0, 30 + it) && r[1] == val(prev, 1, 30 + it), "Bsend_init start %d: got %d %d", it,
              r[0], r[1]);
    }
    MPI_Request_free(&sq);
    MPI_Request_free(&bq);
    void *back;
    int bback;
    MPI_Buffer_detach(&back, &bback);
    free(attached);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    statuses_ignore = MPI_STATUSES_IGNORE;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    ring();
    if (rank == 0) printf("persistent_p2p: ring started five times: done\n");
    derived();
    if (rank == 0) printf("persistent_p2p: vector datatype: done\n");
    ready_and_null();
    if (rank == 0) printf("persistent_p2p: ready mode, MPI_PROC_NULL: done\n");
    sync_and_buffered();
    if (rank == 0) printf("persistent_p2p: synchronous and buffered: done\n");
    int all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf(all ? "persistent_p2p: FAILED\n" : "persistent_p2p: ok\n");
    MPI_Finalize();
    return 0;
}
