/*
 * types_p2p.c - derived datatypes in point-to-point: each rank sends to its right neighbour
 * and receives from its left one (MPI_Sendrecv, and MPI_Send/MPI_Recv by parity) with vector,
 * indexed and struct types on either side, checking every int of the receive buffer (gaps keep
 * their sentinel), MPI_Get_count with a derived type, a short message into a larger derived
 * receive (only the received items change), two interleaved vectors in ONE array (send the
 * even ints, receive into the odd ones) and MPI_Sendrecv_replace with a vector. 1 rank: the
 * neighbour is itself.
 */
#include <mpi.h>

#include <stdio.h>
#include <string.h>

static int rank, size, fails;

#define CHECK(cond, ...)                                                                      \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            printf("FAIL types_p2p: rank=%d line %d: ", rank, __LINE__);                      \
            printf(__VA_ARGS__);                                                              \
            printf("\n");                                                                     \
            fails++;                                                                          \
        }                                                                                     \
    } while (0)

#define NI 64

/* Sends `scount` of `st` from a buffer holding tag*1000+i, receives `rcount` of `rt` into a
   buffer of -1; `want[i]` is the source index expected at receive int i (-1: untouched). */
static void exchange(const char *what, MPI_Datatype st, int scount, MPI_Datatype rt, int rcount, const int *want,
                     int expect_count)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int sbuf[NI], rbuf[NI];
    for (int i = 0; i < NI; i++) {
        sbuf[i] = (rank + 1) * 1000 + i;
        rbuf[i] = -1;
    }
    MPI_Status status;
    for (int mode = 0; mode < 2; mode++) {
        for (int i = 0; i < NI; i++)
            rbuf[i] = -1;
        if (mode == 0 || size == 1) {
            MPI_Sendrecv(sbuf, scount, st, right, 7, rbuf, rcount, rt, left, 7, MPI_COMM_WORLD, &status);
        } else if (rank % 2 == 0) {
            MPI_Send(sbuf, scount, st, right, 8, MPI_COMM_WORLD);
            MPI_Recv(rbuf, rcount, rt, left, 8, MPI_COMM_WORLD, &status);
        } else {
            MPI_Recv(rbuf, rcount, rt, left, 8, MPI_COMM_WORLD, &status);
            MPI_Send(sbuf, scount, st, right, 8, MPI_COMM_WORLD);
        }
        for (int i = 0; i < NI; i++) {
            int w = want[i] < 0 ? -1 : (left + 1) * 1000 + want[i];
            CHECK(rbuf[i] == w, "%s (mode %d): recv int %d = %d, expected %d", what, mode, i, rbuf[i], w);
        }
        int n = -5;
        MPI_Get_count(&status, rt, &n);
        CHECK(n == expect_count, "%s (mode %d): Get_count = %d, expected %d", what, mode, n, expect_count);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int want[NI];
    MPI_Datatype vec, idx, st, c4;

    /* vector(3,2,4) (ints 0,1,4,5,8,9) -> 6 INTs, and back */
    MPI_Type_vector(3, 2, 4, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    for (int i = 0; i < NI; i++)
        want[i] = -1;
    int vpos[6] = {0, 1, 4, 5, 8, 9};
    for (int k = 0; k < 6; k++)
        want[k] = vpos[k];
    exchange("vector -> INT", vec, 1, MPI_INT, 6, want, 6);
    for (int i = 0; i < NI; i++)
        want[i] = -1;
    for (int k = 0; k < 6; k++)
        want[vpos[k]] = k;
    exchange("INT -> vector", MPI_INT, 6, vec, 1, want, 1);
    /* two items of the vector on both sides (extent 10 ints) */
    for (int i = 0; i < NI; i++)
        want[i] = -1;
    for (int it = 0; it < 2; it++)
        for (int k = 0; k < 6; k++)
            want[10 * it + vpos[k]] = 10 * it + vpos[k];
    exchange("vector x2 -> vector x2", vec, 2, vec, 2, want, 2);
    /* short message: 1 item into a receive of 3 items: only the first item changes */
    for (int i = 0; i < NI; i++)
        want[i] = -1;
    for (int k = 0; k < 6; k++)
        want[vpos[k]] = vpos[k];
    exchange("vector x1 -> vector x3", vec, 1, vec, 3, want, 1);

    /* indexed out of order -> contiguous(4, INT) */
    int bl[3] = {2, 1, 1}, d[3] = {6, 0, 3};
    MPI_Type_indexed(3, bl, d, MPI_INT, &idx);
    MPI_Type_commit(&idx);
    MPI_Type_contiguous(4, MPI_INT, &c4);
    MPI_Type_commit(&c4);
    for (int i = 0; i < NI; i++)
        want[i] = -1;
    int ipos[4] = {6, 7, 0, 3};
    for (int k = 0; k < 4; k++)
        want[k] = ipos[k];
    exchange("indexed -> contiguous(4)", idx, 1, c4, 1, want, 1);

    /* struct {int@0, int@12, 2 int@20} (ints 0, 3, 5, 6; extent 28 bytes = 7 ints) x 2 */
    int sbl[3] = {1, 1, 2};
    MPI_Aint sd[3] = {0, 12, 20};
    MPI_Datatype sty[3] = {MPI_INT, MPI_INT, MPI_INT};
    MPI_Type_create_struct(3, sbl, sd, sty, &st);
    MPI_Type_commit(&st);
    for (int i = 0; i < NI; i++)
        want[i] = -1;
    int spos[4] = {0, 3, 5, 6};
    for (int it = 0; it < 2; it++)
        for (int k = 0; k < 4; k++)
            want[7 * it + spos[k]] = 7 * it + spos[k];
    exchange("struct x2 -> struct x2", st, 2, st, 2, want, 2);
    for (int i = 0; i < NI; i++)
        want[i] = -1;
    for (int it = 0; it < 2; it++)
        for (int k = 0; k < 4; k++)
            want[7 * it + spos[k]] = 4 * it + k;
    exchange("INT x8 -> struct x2", MPI_INT, 8, st, 2, want, 2);

    /* Interleaved in one array: send the even ints, receive into the odd ones. */
    {
        MPI_Datatype even;
        MPI_Type_vector(8, 1, 2, MPI_INT, &even);
        MPI_Type_commit(&even);
        int a[16];
        for (int i = 0; i < 16; i++)
            a[i] = (i % 2 == 0) ? rank * 100 + i : -1;
        int right = (rank + 1) % size, left = (rank + size - 1) % size;
        MPI_Sendrecv(a, 1, even, right, 9, a + 1, 1, even, left, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < 16; i++) {
            int w = (i % 2 == 0) ? rank * 100 + i : left * 100 + i - 1;
            CHECK(a[i] == w, "interleaved Sendrecv: a[%d] = %d, expected %d", i, a[i], w);
        }
        /* Sendrecv_replace with the vector: the odd ints stay as they are. */
        for (int i = 0; i < 16; i++)
            a[i] = (i % 2 == 0) ? rank * 100 + i : -7;
        MPI_Sendrecv_replace(a, 1, even, right, 10, left, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < 16; i++) {
            int w = (i % 2 == 0) ? left * 100 + i : -7;
            CHECK(a[i] == w, "Sendrecv_replace vector: a[%d] = %d, expected %d", i, a[i], w);
        }
        MPI_Type_free(&even);
    }

    MPI_Type_free(&vec);
    MPI_Type_free(&idx);
    MPI_Type_free(&c4);
    MPI_Type_free(&st);
    int all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("types_p2p: %s (%d failures)\n", all ? "FAILED" : "ok", all);
    MPI_Finalize();
    return all ? 1 : 0;
}
