/*
 * types_coll2.c - derived datatypes in Gather, Scatter, Alltoall, Allgatherv and Scan/Exscan:
 *   - contiguous(2, MPI_INT) on one side and 2 MPI_INT on the other (type signatures match);
 *   - Scan and Exscan with a NON-commutative user op (2x2 matrix product on
 *     contiguous(4, MPI_DOUBLE)): rank r gets M_0 ... M_r (Exscan: M_0 ... M_{r-1});
 *   - Scan with a user op on a strided type, vector(2, 1, 2, MPI_INT): gaps untouched;
 *   - hcomm only: Scan with contiguous(3, MPI_INT) and MPI_SUM (MPICH and Open MPI reject
 *     predefined ops on derived types).
 */
#include <mpi.h>

#include <stdio.h>
#include <string.h>

static int rank, size, fails;
static MPI_Datatype mat;

#define CHECK(cond, ...)                                                                      \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            printf("FAIL types_coll2: rank=%d line %d: ", rank, __LINE__);                    \
            printf(__VA_ARGS__);                                                              \
            printf("\n");                                                                     \
            fails++;                                                                          \
        }                                                                                     \
    } while (0)

static void mat_mul(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const double *a = in;
    double *b = inout;
    for (int i = 0; i < *len; i++, a += 4, b += 4) {
        double r[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
                       a[2] * b[1] + a[3] * b[3]};
        memcpy(b, r, sizeof r);
    }
}

static void mat_of(double *m, int r)
{
    m[0] = r + 1;
    m[1] = 1;
    m[2] = 1;
    m[3] = 0;
}

/* M_0 ... M_{upto-1} */
static void prefix(double *m, int upto)
{
    m[0] = 1, m[1] = 0, m[2] = 0, m[3] = 1;
    for (int r = 0; r < upto; r++) {
        double b[4];
        mat_of(b, r);
        int one = 1;
        mat_mul(m, b, &one, &mat);
        memcpy(m, b, sizeof b);
    }
}

/* a[2k] += b[2k] on vector(2,1,2,INT) items (extent 3 ints): the function sees the user layout */
static void strided_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const int *a = in;
    int *b = inout;
    for (int i = 0; i < *len; i++) {
        b[3 * i] += a[3 * i];
        b[3 * i + 2] += a[3 * i + 2];
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 16) {
        MPI_Finalize();
        return 77;
    }
    MPI_Datatype c2;
    MPI_Type_contiguous(2, MPI_INT, &c2);
    MPI_Type_commit(&c2);
    int s[64], r[64];

    /* Gather: send 1 x contiguous(2), receive 2 INT per rank; every root. */
    for (int root = 0; root < size; root++) {
        s[0] = rank * 10, s[1] = rank * 10 + 1;
        for (int i = 0; i < 2 * size; i++)
            r[i] = -1;
        MPI_Gather(s, 1, c2, r, 2, MPI_INT, root, MPI_COMM_WORLD);
        for (int i = 0; rank == root && i < 2 * size; i++)
            CHECK(r[i] == (i / 2) * 10 + i % 2, "Gather contiguous root %d: r[%d] = %d", root, i, r[i]);
        /* Scatter: send 2 INT per rank, receive 1 x contiguous(2). */
        for (int i = 0; i < 2 * size; i++)
            s[i] = root * 100 + i;
        r[0] = r[1] = -1;
        MPI_Scatter(s, 2, MPI_INT, r, 1, c2, root, MPI_COMM_WORLD);
        CHECK(r[0] == root * 100 + 2 * rank && r[1] == root * 100 + 2 * rank + 1, "Scatter contiguous root %d: %d %d",
              root, r[0], r[1]);
    }
    /* Alltoall with contiguous(2) on both sides. */
    for (int i = 0; i < 2 * size; i++) {
        s[i] = rank * 100 + i;
        r[i] = -1;
    }
    MPI_Alltoall(s, 1, c2, r, 1, c2, MPI_COMM_WORLD);
    for (int i = 0; i < 2 * size; i++)
        CHECK(r[i] == (i / 2) * 100 + 2 * rank + i % 2, "Alltoall contiguous: r[%d] = %d", i, r[i]);
    /* Allgatherv: rank j sends j%2+1 items of contiguous(2), placed at displacement 2j items. */
    {
        int counts[16], displs[16];
        for (int j = 0; j < size; j++) {
            counts[j] = j % 2 + 1;
            displs[j] = 2 * j;
        }
        for (int i = 0; i < 4; i++)
            s[i] = rank * 100 + i;
        for (int i = 0; i < 4 * size; i++)
            r[i] = -1;
        MPI_Allgatherv(s, rank % 2 + 1, c2, r, counts, displs, c2, MPI_COMM_WORLD);
        for (int i = 0; i < 4 * size; i++) {
            int j = i / 4, k = i % 4;
            int want = k < 2 * counts[j] ? j * 100 + k : -1;
            CHECK(r[i] == want, "Allgatherv contiguous: r[%d] = %d, expected %d", i, r[i], want);
        }
    }

    /* Scan / Exscan with the non-commutative matrix product. */
    MPI_Type_contiguous(4, MPI_DOUBLE, &mat);
    MPI_Type_commit(&mat);
    MPI_Op mul;
    MPI_Op_create(mat_mul, 0, &mul);
    double m[4], out[4], want[4];
    mat_of(m, rank);
    MPI_Scan(m, out, 1, mat, mul, MPI_COMM_WORLD);
    prefix(want, rank + 1);
    CHECK(!memcmp(out, want, sizeof want), "Scan matmul: [%g %g %g %g], expected [%g %g %g %g]", out[0], out[1],
          out[2], out[3], want[0], want[1], want[2], want[3]);
    MPI_Exscan(m, out, 1, mat, mul, MPI_COMM_WORLD);
    prefix(want, rank);
    CHECK(rank == 0 || !memcmp(out, want, sizeof want), "Exscan matmul: [%g %g %g %g], expected [%g %g %g %g]",
          out[0], out[1], out[2], out[3], want[0], want[1], want[2], want[3]);
    MPI_Op_free(&mul);

    /* Scan with a user op on vector(2,1,2,INT), 2 items: ints 0,2,3,5 carry data. */
    {
        MPI_Datatype v;
        MPI_Type_vector(2, 1, 2, MPI_INT, &v);
        MPI_Type_commit(&v);
        MPI_Op op;
        MPI_Op_create(strided_sum, 1, &op);
        int a[6], b[6];
        for (int i = 0; i < 6; i++) {
            a[i] = (rank + 1) * (i + 1);
            b[i] = -1;
        }
        MPI_Scan(a, b, 2, v, op, MPI_COMM_WORLD);
        int tri = (rank + 1) * (rank + 2) / 2;
        for (int i = 0; i < 6; i++) {
            int data = i != 1 && i != 4;
            CHECK(b[i] == (data ? tri * (i + 1) : -1), "Scan vector user op: b[%d] = %d", i, b[i]);
        }
        MPI_Op_free(&op);
        MPI_Type_free(&v);
    }

#ifdef HCOMM_MPI_H /* MPICH and Open MPI reject predefined ops on derived types */
    {
        MPI_Datatype c3;
        MPI_Type_contiguous(3, MPI_INT, &c3);
        MPI_Type_commit(&c3);
        int a[6], b[6];
        for (int i = 0; i < 6; i++)
            a[i] = (rank + 1) * (i + 1);
        MPI_Scan(a, b, 2, c3, MPI_SUM, MPI_COMM_WORLD);
        int tri = (rank + 1) * (rank + 2) / 2;
        for (int i = 0; i < 6; i++)
            CHECK(b[i] == tri * (i + 1), "Scan contiguous SUM: b[%d] = %d", i, b[i]);
        MPI_Type_free(&c3);
    }
#endif
    MPI_Type_free(&mat);
    MPI_Type_free(&c2);
    int all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("types_coll2: %s (%d failures)\n", all ? "FAILED" : "ok", all);
    MPI_Finalize();
    return all ? 1 : 0;
}
