/*
 * nb_coll.c - nonblocking collectives, several outstanding at once, exact results.
 *
 *   1. One of each (Iallreduce, Ibcast, Ireduce, Iallgather, Iallgatherv, Ireduce_scatter,
 *      Ireduce_scatter_block, Ialltoall, Ibarrier) outstanding together on one communicator,
 *      completed with MPI_Waitall; small (latency algorithms) and large (ring/pipeline) sizes.
 *   2. Two communicators (dups of world): requests on both, a blocking MPI_Allreduce on each
 *      between them, completed in reverse order (Wait on B, MPI_Test polling on A).
 *   3. Waitany and Waitsome loops, then Testall / Testany / Testsome polling loops.
 *   4. In-place Iallreduce and Ireduce_scatter_block; the _c variants when the header has them.
 * Rank r contributes r*1000 + i at index i (plus a per-call salt), so every result is an exact
 * integer. Prints a few implementation-independent lines on rank 0; failures print FAIL.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, fails;
/* MPI_STATUSES_IGNORE through a volatile pointer: gcc's -Wstringop-overflow otherwise flags
   the constant (MPI_Status *)1 passed as an array parameter. */
static MPI_Status *volatile statuses_ignore;

#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fails++;                                                                           \
            if (fails < 20) {                                                                  \
                printf("FAIL nb_coll rank %d: ", rank);                                        \
                printf(__VA_ARGS__);                                                           \
                printf("\n");                                                                  \
            }                                                                                  \
        }                                                                                      \
    } while (0)

static int val(int r, int i, int salt) { return r * 1000 + i + salt; }
/* Sum over all ranks of val(r, i, salt). */
static int sum(int i, int salt) { return 1000 * size * (size - 1) / 2 + size * (i + salt); }

/* One round of every nonblocking collective at `n` elements, all outstanding at once. */
static void all_at_once(MPI_Comm comm, int n, int salt)
{
    int *ar_s = malloc(sizeof(int) * n), *ar_r = malloc(sizeof(int) * n);
    int *bc = malloc(sizeof(int) * n);
    int *rd_s = malloc(sizeof(int) * n), *rd_r = malloc(sizeof(int) * n);
    int *ag_s = malloc(sizeof(int) * (n + size)), *ag_r = malloc(sizeof(int) * n * size);
    int *agv_r = malloc(sizeof(int) * (n + size) * size);
    int *rsb_s = malloc(sizeof(int) * n * size), *rsb_r = malloc(sizeof(int) * n);
    int *rs_s = malloc(sizeof(int) * (n + size) * size), *rs_r = malloc(sizeof(int) * (n + size));
    int *a2a_s = malloc(sizeof(int) * n * size), *a2a_r = malloc(sizeof(int) * n * size);
    int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size);
    int root = size - 1, total = 0;
    for (int p = 0; p < size; p++) {
        counts[p] = n / 2 + p;
        displs[p] = total;
        total += counts[p];
    }
    for (int i = 0; i < n; i++) {
        ar_s[i] = val(rank, i, salt);
        bc[i] = rank == root ? val(root, i, salt + 1) : -1;
        rd_s[i] = val(rank, i, salt + 2);
        ar_r[i] = rd_r[i] = rsb_r[i] = -1;
    }
    for (int i = 0; i < n + size; i++)
        ag_s[i] = val(rank, i, salt + 3);
    for (int i = 0; i < n * size; i++) {
        rsb_s[i] = val(rank, i, salt + 4);
        a2a_s[i] = val(rank, i, salt + 5);
        ag_r[i] = a2a_r[i] = -1;
    }
    for (int i = 0; i < total; i++)
        rs_s[i] = val(rank, i, salt + 6);
    for (int i = 0; i < (n + size) * size; i++)
        agv_r[i] = -1;
    for (int i = 0; i < n + size; i++)
        rs_r[i] = -1;

    MPI_Request req[9];
    MPI_Iallreduce(ar_s, ar_r, n, MPI_INT, MPI_SUM, comm, &req[0]);
    MPI_Ibcast(bc, n, MPI_INT, root, comm, &req[1]);
    MPI_Ireduce(rd_s, rd_r, n, MPI_INT, MPI_SUM, 0, comm, &req[2]);
    MPI_Iallgather(ag_s, n, MPI_INT, ag_r, n, MPI_INT, comm, &req[3]);
    MPI_Iallgatherv(ag_s, counts[rank], MPI_INT, agv_r, counts, displs, MPI_INT, comm, &req[4]);
    MPI_Ireduce_scatter_block(rsb_s, rsb_r, n, MPI_INT, MPI_SUM, comm, &req[5]);
    MPI_Ireduce_scatter(rs_s, rs_r, counts, MPI_INT, MPI_SUM, comm, &req[6]);
    MPI_Ialltoall(a2a_s, n, MPI_INT, a2a_r, n, MPI_INT, comm, &req[7]);
    MPI_Ibarrier(comm, &req[8]);
    MPI_Status st[9];
    int rc = MPI_Waitall(9, req, st);
    CHECK(rc == MPI_SUCCESS, "Waitall returned %d", rc);
    for (int k = 0; k < 9; k++)
        CHECK(req[k] == MPI_REQUEST_NULL, "request %d not MPI_REQUEST_NULL after Waitall", k);

    for (int i = 0; i < n; i++) {
        CHECK(ar_r[i] == sum(i, salt), "Iallreduce n=%d [%d] = %d, want %d", n, i, ar_r[i], sum(i, salt));
        CHECK(bc[i] == val(root, i, salt + 1), "Ibcast n=%d [%d] = %d", n, i, bc[i]);
        if (rank == 0)
            CHECK(rd_r[i] == sum(i, salt + 2), "Ireduce n=%d [%d] = %d", n, i, rd_r[i]);
        CHECK(rsb_r[i] == sum(rank * n + i, salt + 4), "Ireduce_scatter_block n=%d [%d] = %d", n, i, rsb_r[i]);
    }
    for (int p = 0; p < size; p++)
        for (int i = 0; i < n; i++) {
            CHECK(ag_r[p * n + i] == val(p, i, salt + 3), "Iallgather n=%d [%d][%d] = %d", n, p, i, ag_r[p * n + i]);
            CHECK(a2a_r[p * n + i] == val(p, rank * n + i, salt + 5), "Ialltoall n=%d [%d][%d] = %d", n, p, i, a2a_r[p * n + i]);
        }
    for (int p = 0; p < size; p++)
        for (int i = 0; i < counts[p]; i++)
            CHECK(agv_r[displs[p] + i] == val(p, i, salt + 3), "Iallgatherv n=%d [%d][%d] = %d", n, p, i, agv_r[displs[p] + i]);
    for (int i = 0; i < counts[rank]; i++)
        CHECK(rs_r[i] == sum(displs[rank] + i, salt + 6), "Ireduce_scatter n=%d [%d] = %d", n, i, rs_r[i]);
    CHECK(rs_r[counts[rank]] == -1, "Ireduce_scatter wrote past its block");

    free(ar_s); free(ar_r); free(bc); free(rd_s); free(rd_r); free(ag_s); free(ag_r);
    free(agv_r); free(rsb_s); free(rsb_r); free(rs_s); free(rs_r); free(a2a_s); free(a2a_r);
    free(counts); free(displs);
}

/* Requests on two communicators, blocking collectives in between, completed out of order. */
static void two_comms(int n)
{
    MPI_Comm a, b;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_dup(MPI_COMM_WORLD, &b);
    int *sa = malloc(sizeof(int) * n), *ra = malloc(sizeof(int) * n);
    int *sb = malloc(sizeof(int) * n), *rb = malloc(sizeof(int) * n);
    int *sa2 = malloc(sizeof(int) * n), *ra2 = malloc(sizeof(int) * n);
    for (int i = 0; i < n; i++) {
        sa[i] = val(rank, i, 10);
        sb[i] = val(rank, i, 20);
        sa2[i] = val(rank, i, 30);
    }
    MPI_Request qa, qb, qa2;
    MPI_Iallreduce(sa, ra, n, MPI_INT, MPI_SUM, a, &qa);
    MPI_Iallreduce(sb, rb, n, MPI_INT, MPI_SUM, b, &qb);
    int x = rank + 1, y = 0;
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, a); /* blocking, between nonblocking ones */
    CHECK(y == size * (size + 1) / 2, "blocking Allreduce on a = %d", y);
    MPI_Iallreduce(sa2, ra2, n, MPI_INT, MPI_MAX, a, &qa2);
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_MAX, b);
    CHECK(y == size, "blocking Allreduce on b = %d", y);
    MPI_Wait(&qb, MPI_STATUS_IGNORE);
    CHECK(qb == MPI_REQUEST_NULL, "Wait did not reset the request");
    int flag = 0, polls = 0;
    while (!flag) {
        MPI_Test(&qa2, &flag, MPI_STATUS_IGNORE);
        polls++;
    }
    CHECK(qa2 == MPI_REQUEST_NULL, "Test did not reset the request");
    MPI_Wait(&qa, MPI_STATUS_IGNORE);
    for (int i = 0; i < n; i++) {
        CHECK(ra[i] == sum(i, 10), "two comms: a [%d] = %d", i, ra[i]);
        CHECK(rb[i] == sum(i, 20), "two comms: b [%d] = %d", i, rb[i]);
        CHECK(ra2[i] == val(size - 1, i, 30), "two comms: a MAX [%d] = %d", i, ra2[i]);
    }
    free(sa); free(ra); free(sb); free(rb); free(sa2); free(ra2);
    MPI_Comm_free(&a);
    MPI_Comm_free(&b);
}

/* K outstanding Iallreduces completed with Waitany, Waitsome, Testall, Testany, Testsome. */
#define K 6
static void completion_calls(int n)
{
    int *s = malloc(sizeof(int) * n * K), *r = malloc(sizeof(int) * n * K);
    MPI_Request req[K];
    for (int mode = 0; mode < 5; mode++) {
        for (int k = 0; k < K; k++)
            for (int i = 0; i < n; i++) {
                s[k * n + i] = val(rank, i, 100 * mode + k);
                r[k * n + i] = -1;
            }
        for (int k = 0; k < K; k++)
            MPI_Iallreduce(s + k * n, r + k * n, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req[k]);
        int seen[K] = {0}, done = 0;
        while (done < K) {
            int idx, flag, out, ind[K];
            switch (mode) {
            case 0:
                MPI_Waitany(K, req, &idx, MPI_STATUS_IGNORE);
                CHECK(idx >= 0 && idx < K && !seen[idx], "Waitany index %d", idx);
                if (idx >= 0 && idx < K) { seen[idx] = 1; done++; }
                break;
            case 1:
                MPI_Waitsome(K, req, &out, ind, statuses_ignore);
                CHECK(out >= 1 && out <= K, "Waitsome outcount %d", out);
                for (int j = 0; j < out; j++) {
                    CHECK(!seen[ind[j]], "Waitsome index %d twice", ind[j]);
                    seen[ind[j]] = 1;
                    done++;
                }
                break;
            case 2:
                MPI_Testall(K, req, &flag, statuses_ignore);
                if (flag) done = K;
                break;
            case 3:
                MPI_Testany(K, req, &idx, &flag, MPI_STATUS_IGNORE);
                if (flag) {
                    CHECK(idx >= 0 && idx < K && !seen[idx], "Testany index %d", idx);
                    if (idx >= 0 && idx < K) { seen[idx] = 1; done++; }
                }
                break;
            default:
                MPI_Testsome(K, req, &out, ind, statuses_ignore);
                CHECK(out >= 0 && out <= K, "Testsome outcount %d", out);
                for (int j = 0; j < out; j++) {
                    CHECK(!seen[ind[j]], "Testsome index %d twice", ind[j]);
                    seen[ind[j]] = 1;
                    done++;
                }
            }
        }
        for (int k = 0; k < K; k++)
            CHECK(req[k] == MPI_REQUEST_NULL, "mode %d: request %d not reset", mode, k);
        /* All requests are now null: Waitany says MPI_UNDEFINED, Testall says done. */
        int idx = 0, flag = 0, out = 0, ind[K];
        MPI_Waitany(K, req, &idx, MPI_STATUS_IGNORE);
        CHECK(idx == MPI_UNDEFINED, "Waitany on null requests: %d", idx);
        MPI_Testall(K, req, &flag, statuses_ignore);
        CHECK(flag, "Testall on null requests: flag 0");
        MPI_Waitsome(K, req, &out, ind, statuses_ignore);
        CHECK(out == MPI_UNDEFINED, "Waitsome on null requests: %d", out);
        for (int k = 0; k < K; k++)
            for (int i = 0; i < n; i++)
                CHECK(r[k * n + i] == sum(i, 100 * mode + k), "mode %d request %d [%d] = %d", mode, k, i, r[k * n + i]);
    }
    free(s);
    free(r);
}

static void in_place(int n)
{
    int *b = malloc(sizeof(int) * n * size);
    for (int i = 0; i < n; i++)
        b[i] = val(rank, i, 7);
    MPI_Request q;
    MPI_Iallreduce(MPI_IN_PLACE, b, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    for (int i = 0; i < n; i++)
        CHECK(b[i] == sum(i, 7), "in-place Iallreduce [%d] = %d", i, b[i]);
    for (int i = 0; i < n * size; i++)
        b[i] = val(rank, i, 8);
    MPI_Ireduce_scatter_block(MPI_IN_PLACE, b, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    for (int i = 0; i < n; i++)
        CHECK(b[i] == sum(rank * n + i, 8), "in-place Ireduce_scatter_block [%d] = %d", i, b[i]);
#if MPI_VERSION >= 4
    long long d[3] = {rank, 2 * rank, 3}, e[3];
    MPI_Iallreduce_c(d, e, (MPI_Count)3, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    long long t = (long long)size * (size - 1) / 2;
    CHECK(e[0] == t && e[1] == 2 * t && e[2] == 3LL * size, "Iallreduce_c = %lld %lld %lld", e[0], e[1], e[2]);
#endif
    free(b);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    statuses_ignore = MPI_STATUSES_IGNORE;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    int sizes[] = {1, 10, 3000, 70000};
    for (int k = 0; k < 4; k++)
        all_at_once(MPI_COMM_WORLD, sizes[k], k * 10);
    if (rank == 0) printf("nb_coll: all nine outstanding at once: done\n");
    two_comms(10);
    two_comms(50000);
    if (rank == 0) printf("nb_coll: two communicators, blocking in between: done\n");
    completion_calls(16);
    completion_calls(20000);
    if (rank == 0) printf("nb_coll: Waitany/Waitsome/Testall/Testany/Testsome: done\n");
    in_place(10);
    in_place(40000);
    if (rank == 0) printf("nb_coll: in place: done\n");

    MPI_Request nul = MPI_REQUEST_NULL;
    MPI_Status st;
    int rc = MPI_Wait(&nul, &st);
    CHECK(rc == MPI_SUCCESS && st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG,
          "Wait(MPI_REQUEST_NULL): rc %d source %d tag %d", rc, st.MPI_SOURCE, st.MPI_TAG);

    int all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf(all ? "nb_coll: FAILED\n" : "nb_coll: ok\n");
    MPI_Finalize();
    return all ? 1 : 0;
}
