/*
 * nb_calls.c - a fixed number of each nonblocking collective (and a few blocking ones) with
 * exact results, for tests/stats.rs to check what HCOMM_STATS and HCOMM_PROFILE count.
 *
 * Per rank, with every result checked:
 *   MPI_Iallreduce          3 x 1000 ints  (the first waited for after 300 ms asleep, the
 *                                           second by MPI_Test polling, the third by Waitall)
 *   MPI_Ibcast              2 x 500 ints, root 0                       (Waitall)
 *   MPI_Iallgather          4 x 250 ints per rank      (Waitany twice, Testsome, Testall)
 *   MPI_Ireduce_scatter_block 1 x 100 ints per rank                   (Wait)
 *   MPI_Ireduce_scatter     2 x 100 ints per rank                     (Waitsome loop)
 *   MPI_Ireduce             5 x 10 ints, root 0                        (Testany loop)
 *   MPI_Ibarrier            6                                          (Waitall)
 *   MPI_Iallgatherv         1 x 1 int per rank                         (Waitall)
 *   MPI_Ialltoall, MPI_Isend/MPI_Irecv once each (not among the counted)
 *   MPI_Allreduce           2 (1000 ints, and the final 1-int failure count)
 *   MPI_Bcast               1 x 1 int
 *   MPI_Allgatherv          3 x (rank + 1) ints from each rank, at gapped displacements
 * Prints "nb_calls: ok" on rank 0; failures print FAIL and exit 1.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int rank, size, fails;
static MPI_Status *volatile statuses_ignore;

#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fails++;                                                                           \
            if (fails < 20) {                                                                  \
                printf("FAIL nb_calls rank %d: ", rank);                                       \
                printf(__VA_ARGS__);                                                           \
                printf("\n");                                                                  \
            }                                                                                  \
        }                                                                                      \
    } while (0)

/* Sum over ranks r of (r + 1) * k + i. */
static int sum_of(int k, int i)
{
    return k * size * (size + 1) / 2 + size * i;
}

static void iallreduces(void)
{
    enum { N = 1000 };
    static int in[3][N], out[3][N];
    MPI_Request q[3];
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < N; i++) {
            in[k][i] = (rank + 1) * (k + 1) + i;
            out[k][i] = -1;
        }
        MPI_Iallreduce(in[k], out[k], N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[k]);
        if (k == 0) {
            struct timespec ts = {0, 300 * 1000 * 1000};
            nanosleep(&ts, NULL);
            MPI_Wait(&q[0], MPI_STATUS_IGNORE);
        } else if (k == 1) {
            int flag = 0;
            while (!flag)
                MPI_Test(&q[1], &flag, MPI_STATUS_IGNORE);
        }
    }
    MPI_Waitall(1, &q[2], statuses_ignore);
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < N; i++)
            if (out[k][i] != sum_of(k + 1, i)) {
                CHECK(0, "iallreduce %d [%d] = %d, want %d", k, i, out[k][i], sum_of(k + 1, i));
                break;
            }
}

static void others(void)
{
    /* Ibcast x2 and Ibarrier x6, completed together. */
    enum { NB = 500, NG = 250, NR = 100, NRED = 10 };
    static int b[2][NB];
    MPI_Request q[8];
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < NB; i++)
            b[k][i] = rank == 0 ? 7 * k + i : -1;
        MPI_Ibcast(b[k], NB, MPI_INT, 0, MPI_COMM_WORLD, &q[k]);
    }
    for (int k = 0; k < 6; k++)
        MPI_Ibarrier(MPI_COMM_WORLD, &q[2 + k]);
    MPI_Waitall(8, q, statuses_ignore);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < NB; i++)
            if (b[k][i] != 7 * k + i) {
                CHECK(0, "ibcast %d [%d] = %d", k, i, b[k][i]);
                break;
            }

    /* Iallgather x4: Waitany twice, then Testsome, then Testall. */
    int *g = malloc(sizeof(int) * 4 * NG * size), gs[4][NG];
    MPI_Request gq[4];
    for (int k = 0; k < 4; k++) {
        for (int i = 0; i < NG; i++)
            gs[k][i] = 1000 * rank + 10 * k + i;
        MPI_Iallgather(gs[k], NG, MPI_INT, g + k * NG * size, NG, MPI_INT, MPI_COMM_WORLD, &gq[k]);
    }
    for (int t = 0; t < 2; t++) {
        int idx = -1;
        MPI_Waitany(4, gq, &idx, MPI_STATUS_IGNORE);
        CHECK(idx >= 0 && idx < 4, "waitany index %d", idx);
    }
    int left = 2;
    while (left > 1) {
        int outcount = 0, idx[4];
        MPI_Testsome(4, gq, &outcount, idx, statuses_ignore);
        if (outcount != MPI_UNDEFINED)
            left -= outcount;
    }
    int flag = 0;
    while (!flag)
        MPI_Testall(4, gq, &flag, statuses_ignore);
    for (int k = 0; k < 4; k++)
        for (int r = 0; r < size; r++)
            for (int i = 0; i < NG; i++)
                if (g[(k * size + r) * NG + i] != 1000 * r + 10 * k + i) {
                    CHECK(0, "iallgather %d from %d [%d] = %d", k, r, i, g[(k * size + r) * NG + i]);
                    r = size;
                    break;
                }
    free(g);

    /* Ireduce_scatter_block x1 (Wait), Ireduce_scatter x2 (Waitsome). */
    int *rs = malloc(sizeof(int) * NR * size), rr[3][NR], *counts = malloc(sizeof(int) * size);
    for (int j = 0; j < NR * size; j++)
        rs[j] = (rank + 1) + j;
    for (int r = 0; r < size; r++)
        counts[r] = NR;
    MPI_Request rq[3];
    MPI_Ireduce_scatter_block(rs, rr[0], NR, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[0]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    MPI_Ireduce_scatter(rs, rr[1], counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[1]);
    MPI_Ireduce_scatter(rs, rr[2], counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[2]);
    for (int done = 0; done < 2;) {
        int outcount = 0, idx[2];
        MPI_Waitsome(2, &rq[1], &outcount, idx, statuses_ignore);
        done += outcount;
    }
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < NR; i++)
            if (rr[k][i] != sum_of(1, rank * NR + i)) {
                CHECK(0, "ireduce_scatter %d [%d] = %d, want %d", k, i, rr[k][i], sum_of(1, rank * NR + i));
                break;
            }
    free(rs);
    free(counts);

    /* Ireduce x5 (Testany loop). */
    int red_in[5][NRED], red_out[5][NRED];
    MPI_Request dq[5];
    for (int k = 0; k < 5; k++) {
        for (int i = 0; i < NRED; i++) {
            red_in[k][i] = (rank + 1) * (k + 1) + i;
            red_out[k][i] = -1;
        }
        MPI_Ireduce(red_in[k], red_out[k], NRED, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, &dq[k]);
    }
    for (int done = 0; done < 5;) {
        int idx = -1, f = 0;
        MPI_Testany(5, dq, &idx, &f, MPI_STATUS_IGNORE);
        if (f && idx != MPI_UNDEFINED)
            done++;
    }
    if (rank == 0)
        for (int k = 0; k < 5; k++)
            for (int i = 0; i < NRED; i++)
                CHECK(red_out[k][i] == sum_of(k + 1, i), "ireduce %d [%d] = %d", k, i, red_out[k][i]);
}

static void iallgatherv_and_uncounted(void)
{
    int mine = 10 + rank, *all = malloc(sizeof(int) * size), *counts = malloc(sizeof(int) * size);
    int *displs = malloc(sizeof(int) * size), *a2a_in = malloc(sizeof(int) * size);
    int *a2a_out = malloc(sizeof(int) * size);
    for (int r = 0; r < size; r++) {
        counts[r] = 1;
        displs[r] = r;
        a2a_in[r] = 100 * rank + r;
    }
    MPI_Request q[4];
    MPI_Iallgatherv(&mine, 1, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD, &q[0]);
    MPI_Ialltoall(a2a_in, 1, MPI_INT, a2a_out, 1, MPI_INT, MPI_COMM_WORLD, &q[1]);
    int right = (rank + 1) % size, left = (rank + size - 1) % size, got = -1;
    MPI_Irecv(&got, 1, MPI_INT, left, 5, MPI_COMM_WORLD, &q[2]);
    MPI_Isend(&mine, 1, MPI_INT, right, 5, MPI_COMM_WORLD, &q[3]);
    MPI_Waitall(4, q, statuses_ignore);
    for (int r = 0; r < size; r++) {
        CHECK(all[r] == 10 + r, "iallgatherv [%d] = %d", r, all[r]);
        CHECK(a2a_out[r] == 100 * r + rank, "ialltoall [%d] = %d", r, a2a_out[r]);
    }
    CHECK(got == 10 + left, "irecv got %d", got);
    free(all);
    free(counts);
    free(displs);
    free(a2a_in);
    free(a2a_out);
}

/* Blocking MPI_Allgatherv, 3 calls: rank r gives r + 1 ints, placed 2 apart. */
static void allgathervs(void)
{
    int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size), at = 0;
    for (int r = 0; r < size; r++) {
        counts[r] = r + 1;
        displs[r] = at;
        at += r + 1 + 2;
    }
    int *mine = malloc(sizeof(int) * (rank + 1)), *all = malloc(sizeof(int) * at);
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i <= rank; i++)
            mine[i] = 1000 * k + 10 * rank + i;
        for (int i = 0; i < at; i++)
            all[i] = -1;
        MPI_Allgatherv(mine, rank + 1, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD);
        for (int r = 0; r < size; r++) {
            for (int i = 0; i <= r; i++)
                CHECK(all[displs[r] + i] == 1000 * k + 10 * r + i, "allgatherv %d [%d][%d] = %d", k, r, i,
                      all[displs[r] + i]);
            CHECK(all[displs[r] + r + 1] == -1, "allgatherv %d wrote past block %d", k, r);
        }
    }
    free(counts);
    free(displs);
    free(mine);
    free(all);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    statuses_ignore = MPI_STATUSES_IGNORE;

    iallreduces();
    others();
    iallgatherv_and_uncounted();

    static int v[1000], w[1000];
    for (int i = 0; i < 1000; i++)
        v[i] = rank + i;
    MPI_Allreduce(v, w, 1000, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < 1000; i++)
        if (w[i] != size * (size - 1) / 2 + size * i) {
            CHECK(0, "allreduce [%d] = %d", i, w[i]);
            break;
        }
    int x = rank == 0 ? 42 : -1;
    MPI_Bcast(&x, 1, MPI_INT, 0, MPI_COMM_WORLD);
    CHECK(x == 42, "bcast %d", x);

    allgathervs();

    int all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf(all ? "nb_calls: FAILED\n" : "nb_calls: ok\n");
    MPI_Finalize();
    return all ? 1 : 0;
}
