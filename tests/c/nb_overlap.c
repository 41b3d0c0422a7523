/*
 * nb_overlap.c - nonblocking collectives overlapped with computation.
 *
 *   1. Overlap: each round starts MPI_Iallreduce, MPI_Ibcast, MPI_Iallgather,
 *      MPI_Ireduce_scatter_block and MPI_Ibarrier (large enough to take the pipelined
 *      algorithms), computes in slices, polls every request with MPI_Test between slices, and
 *      completes the rest with MPI_Waitall; every result is checked exactly.
 *   2. Progress without MPI calls (two ranks or more): rank 1 starts an 8 MiB Iallreduce and
 *      then computes for 600 ms without calling MPI; rank 0 waits for the same Iallreduce.
 *      Under hcomm with its progress thread (HCOMM_PROGRESS unset or "thread"), rank 0's
 *      MPI_Wait must finish well before rank 1's computation ends (< 400 ms after the start):
 *      the pipelined ring needs rank 1 to forward data, which only its progress thread can do
 *      then. Other MPIs (and HCOMM_PROGRESS=caller) only report the times.
 * Prints "nb_overlap: ok" on rank 0; failures print FAIL.
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
                printf("FAIL nb_overlap rank %d: ", rank);                                     \
                printf(__VA_ARGS__);                                                           \
                printf("\n");                                                                  \
            }                                                                                  \
        }                                                                                      \
    } while (0)

static volatile double sink;

/* About `us` microseconds of arithmetic, no MPI. */
static void compute(double us)
{
    double t0 = MPI_Wtime(), x = 1.0;
    while ((MPI_Wtime() - t0) * 1e6 < us)
        for (int i = 0; i < 1000; i++)
            x = x * 1.0000001 + 1e-9;
    sink = x;
}

static void overlap(int n, int round)
{
    double *ar_s = malloc(sizeof(double) * n), *ar_r = malloc(sizeof(double) * n);
    int *bc = malloc(sizeof(int) * n), *ag_s = malloc(sizeof(int) * n);
    int *ag_r = malloc(sizeof(int) * n * size);
    long long *rs_s = malloc(sizeof(long long) * n * size), *rs_r = malloc(sizeof(long long) * n);
    int root = round % size;
    for (int i = 0; i < n; i++) {
        ar_s[i] = rank + i * 0.5 + round; /* exact in double: small integers and halves */
        bc[i] = rank == root ? i * 3 + round : -1;
        ag_s[i] = rank * 100000 + i;
    }
    for (int i = 0; i < n * size; i++)
        rs_s[i] = (long long)rank * i + round;
    MPI_Request q[5];
    MPI_Iallreduce(ar_s, ar_r, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q[0]);
    MPI_Ibcast(bc, n, MPI_INT, root, MPI_COMM_WORLD, &q[1]);
    MPI_Iallgather(ag_s, n, MPI_INT, ag_r, n, MPI_INT, MPI_COMM_WORLD, &q[2]);
    MPI_Ireduce_scatter_block(rs_s, rs_r, n, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD, &q[3]);
    MPI_Ibarrier(MPI_COMM_WORLD, &q[4]);
    int done[5] = {0}, ndone = 0;
    for (int slice = 0; slice < 20 && ndone < 5; slice++) {
        compute(500);
        for (int k = 0; k < 5; k++) {
            int flag = 0;
            if (!done[k]) {
                MPI_Test(&q[k], &flag, MPI_STATUS_IGNORE);
                if (flag) {
                    done[k] = 1;
                    ndone++;
                    CHECK(q[k] == MPI_REQUEST_NULL, "Test left request %d", k);
                }
            }
        }
    }
    MPI_Waitall(5, q, statuses_ignore);
    double tri = (double)size * (size - 1) / 2;
    long long ltri = (long long)size * (size - 1) / 2;
    for (int i = 0; i < n; i++) {
        double want = tri + size * (i * 0.5 + round);
        CHECK(ar_r[i] == want, "round %d Iallreduce [%d] = %g, want %g", round, i, ar_r[i], want);
        CHECK(bc[i] == i * 3 + round, "round %d Ibcast [%d] = %d", round, i, bc[i]);
        long long j = (long long)rank * n + i;
        CHECK(rs_r[i] == ltri * j + (long long)size * round, "round %d Ireduce_scatter_block [%d] = %lld",
              round, i, rs_r[i]);
    }
    for (int p = 0; p < size; p++)
        for (int i = 0; i < n; i++)
            if (ag_r[p * n + i] != p * 100000 + i) {
                CHECK(0, "round %d Iallgather [%d][%d] = %d", round, p, i, ag_r[p * n + i]);
                break;
            }
    free(ar_s); free(ar_r); free(bc); free(ag_s); free(ag_r); free(rs_s); free(rs_r);
}

static void progress_without_calls(void)
{
    const int n = 1 << 20; /* 8 MiB of doubles: the pipelined ring */
    double *s = malloc(sizeof(double) * n), *r = malloc(sizeof(double) * n);
    for (int i = 0; i < n; i++)
        s[i] = rank + 1;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime(), t_done = 0, t_compute = 0;
    MPI_Request q;
    MPI_Iallreduce(s, r, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q);
    if (rank == 1) {
        compute(600000); /* no MPI calls for 600 ms */
        t_compute = MPI_Wtime() - t0;
    }
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    t_done = MPI_Wtime() - t0;
    double want = (double)size * (size + 1) / 2;
    for (int i = 0; i < n; i++)
        if (r[i] != want) {
            CHECK(0, "progress Iallreduce [%d] = %g, want %g", i, r[i], want);
            break;
        }
    if (rank == 1)
        MPI_Send(&t_compute, 1, MPI_DOUBLE, 0, 5, MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Recv(&t_compute, 1, MPI_DOUBLE, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        int expect_async = 0;
#ifdef HCOMM_MPI_H
        const char *mode = getenv("HCOMM_PROGRESS");
        expect_async = !(mode && strcmp(mode, "caller") == 0);
#endif
        if (getenv("NB_OVERLAP_VERBOSE"))
            printf("nb_overlap: rank 0 Wait done at %.0f ms, rank 1 computed until %.0f ms\n",
                   t_done * 1e3, t_compute * 1e3);
        if (expect_async)
            CHECK(t_done < 0.4 && t_done < t_compute - 0.15,
                  "no progress while rank 1 computed: rank 0's Wait ended at %.0f ms, rank 1's "
                  "computation at %.0f ms", t_done * 1e3, t_compute * 1e3);
    }
    free(s);
    free(r);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    statuses_ignore = MPI_STATUSES_IGNORE;
    for (int round = 0; round < 3; round++)
        overlap(round == 0 ? 100 : 200000, round);
    if (size >= 2)
        progress_without_calls();
    int all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf(all ? "nb_overlap: FAILED\n" : "nb_overlap: ok\n");
    MPI_Finalize();
    return all ? 1 : 0;
}
