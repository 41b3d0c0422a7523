/*
 * userop.c - user-defined reductions (MPI_Op_create / MPI_Op_free / MPI_Op_commutative):
 *   - a commutative op (integer sum written by hand) on MPI_INT, small and large counts (the
 *     large ones take the bandwidth algorithms), in Allreduce, Reduce at every root and
 *     Reduce_scatter_block;
 *   - a NON-commutative op, 2x2 matrix product on contiguous(4, MPI_DOUBLE), whose result is
 *     the product M_0 M_1 ... M_{n-1} in rank order (exact: small integer entries);
 *   - a non-commutative op on a struct with a gap, {int len; double value}, that concatenates
 *     decimal digit strings: the result spells the ranks in order;
 *   - the function gets the datatype the caller passed; MPI_Op_free sets MPI_OP_NULL.
 */
#include <mpi.h>

#include <stddef.h>
#include <stdio.h>
#include <string.h>

static int rank, size, fails;
static MPI_Datatype mat_type, digits_type;
static int wrong_type;

#define CHECK(cond, ...)                                                                      \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            printf("FAIL userop: rank=%d line %d: ", rank, __LINE__);                         \
            printf(__VA_ARGS__);                                                              \
            printf("\n");                                                                     \
            fails++;                                                                          \
        }                                                                                     \
    } while (0)

static void my_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    if (*dt != MPI_INT)
        wrong_type++;
    const int *a = in;
    int *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] += a[i];
}

/* inout = in x inout (in is the earlier operand) */
static void mat_mul(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    if (*dt != mat_type)
        wrong_type++;
    const double *a = in;
    double *b = inout;
    for (int i = 0; i < *len; i++, a += 4, b += 4) {
        double r[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
                       a[2] * b[1] + a[3] * b[3]};
        memcpy(b, r, sizeof r);
    }
}

struct digits {
    int len;
    double value; /* bytes 4..7 are a gap in the datatype */
};

static void concat(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    if (*dt != digits_type)
        wrong_type++;
    const struct digits *a = in;
    struct digits *b = inout;
    for (int i = 0; i < *len; i++) {
        double p = 1;
        for (int k = 0; k < b[i].len; k++)
            p *= 10;
        b[i].value = a[i].value * p + b[i].value;
        b[i].len += a[i].len;
    }
}

/* M_r for element i: [[r+i%3+1, 1], [1, 0]] (no two commute). */
static void mat_of(double *m, int r, int i)
{
    m[0] = r + i % 3 + 1;
    m[1] = 1;
    m[2] = 1;
    m[3] = 0;
}

static void mat_expected(double *m, int i, int n)
{
    mat_of(m, 0, i);
    for (int r = 1; r < n; r++) {
        double b[4];
        mat_of(b, r, i);
        int one = 1;
        mat_mul(m, b, &one, &mat_type);
        memcpy(m, b, sizeof b);
    }
}

static int digit_of(int r, int i) { return (r + i) % 9 + 1; }

static double digits_expected(int i, int n)
{
    double v = 0;
    for (int r = 0; r < n; r++)
        v = v * 10 + digit_of(r, i);
    return v;
}

static void test_commutative(void)
{
    MPI_Op op;
    MPI_Op_create(my_sum, 1, &op);
    int commute = -1;
    MPI_Op_commutative(op, &commute);
    CHECK(commute == 1, "Op_commutative = %d", commute);
    enum { BIG = 100000 };
    static int in[BIG], out[BIG];
    long tri = (long)size * (size + 1) / 2;
    int counts[2] = {7, BIG};
    for (int c = 0; c < 2; c++) {
        int n = counts[c];
        for (int i = 0; i < n; i++)
            in[i] = (rank + 1) * (i % 1000 + 1);
        MPI_Allreduce(in, out, n, MPI_INT, op, MPI_COMM_WORLD);
        for (int i = 0; i < n; i++)
            if (out[i] != tri * (i % 1000 + 1)) {
                CHECK(0, "Allreduce user sum n=%d: out[%d] = %d", n, i, out[i]);
                break;
            }
        for (int root = 0; root < size; root++) {
            memset(out, 0, sizeof(int) * n);
            MPI_Reduce(in, out, n, MPI_INT, op, root, MPI_COMM_WORLD);
            for (int i = 0; rank == root && i < n; i++)
                if (out[i] != tri * (i % 1000 + 1)) {
                    CHECK(0, "Reduce user sum n=%d root %d: out[%d] = %d", n, root, i, out[i]);
                    break;
                }
        }
        int blk = n / size;
        MPI_Reduce_scatter_block(in, out, blk, MPI_INT, op, MPI_COMM_WORLD);
        for (int i = 0; i < blk; i++)
            if (out[i] != tri * ((blk * rank + i) % 1000 + 1)) {
                CHECK(0, "Reduce_scatter_block user sum n=%d: out[%d] = %d", n, i, out[i]);
                break;
            }
    }
    MPI_Op_free(&op);
    CHECK(op == MPI_OP_NULL, "Op_free did not set MPI_OP_NULL");
}

static void test_matrices(void)
{
    MPI_Op op;
    MPI_Op_create(mat_mul, 0, &op);
    int commute = -1;
    MPI_Op_commutative(op, &commute);
    CHECK(commute == 0, "Op_commutative = %d", commute);
    enum { BIG = 20000 }; /* 640 KB: several fragments */
    static double in[4 * BIG], out[4 * BIG];
    int counts[3] = {1, 5, BIG};
    for (int c = 0; c < 3; c++) {
        int n = counts[c];
        for (int i = 0; i < n; i++)
            mat_of(in + 4 * i, rank, i);
        MPI_Allreduce(in, out, n, mat_type, op, MPI_COMM_WORLD);
        for (int i = 0; i < n; i++) {
            double m[4];
            mat_expected(m, i, size);
            if (memcmp(m, out + 4 * i, sizeof m)) {
                CHECK(0, "Allreduce matmul n=%d: element %d = [%g %g %g %g], expected [%g %g %g %g]", n, i,
                      out[4 * i], out[4 * i + 1], out[4 * i + 2], out[4 * i + 3], m[0], m[1], m[2], m[3]);
                break;
            }
        }
        memcpy(out, in, sizeof(double) * 4 * n);
        MPI_Allreduce(MPI_IN_PLACE, out, n, mat_type, op, MPI_COMM_WORLD);
        for (int i = 0; i < n; i++) {
            double m[4];
            mat_expected(m, i, size);
            if (memcmp(m, out + 4 * i, sizeof m)) {
                CHECK(0, "Allreduce in place matmul n=%d: element %d wrong", n, i);
                break;
            }
        }
        for (int root = 0; root < size; root++) {
            memset(out, 0, sizeof(double) * 4 * n);
            MPI_Reduce(in, out, n, mat_type, op, root, MPI_COMM_WORLD);
            for (int i = 0; rank == root && i < n; i++) {
                double m[4];
                mat_expected(m, i, size);
                if (memcmp(m, out + 4 * i, sizeof m)) {
                    CHECK(0, "Reduce matmul n=%d root %d: element %d wrong", n, root, i);
                    break;
                }
            }
        }
        int blk = n / size;
        MPI_Reduce_scatter_block(in, out, blk, mat_type, op, MPI_COMM_WORLD);
        for (int i = 0; i < blk; i++) {
            double m[4];
            mat_expected(m, blk * rank + i, size);
            if (memcmp(m, out + 4 * i, sizeof m)) {
                CHECK(0, "Reduce_scatter_block matmul n=%d: element %d wrong", n, i);
                break;
            }
        }
    }
    MPI_Op_free(&op);
}

static void test_digits(void)
{
    MPI_Op op;
    MPI_Op_create(concat, 0, &op);
    enum { N = 6 };
    struct digits in[N * 8], out[N * 8];
    for (int i = 0; i < N * size; i++) {
        in[i].len = 1;
        in[i].value = digit_of(rank, i);
    }
    MPI_Allreduce(in, out, N, digits_type, op, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++)
        CHECK(out[i].len == size && out[i].value == digits_expected(i, size),
              "Allreduce concat: element %d = {%d, %.0f}, expected {%d, %.0f}", i, out[i].len, out[i].value, size,
              digits_expected(i, size));
    for (int root = 0; root < size; root++) {
        memset(out, 0, sizeof out);
        MPI_Reduce(in, out, N, digits_type, op, root, MPI_COMM_WORLD);
        for (int i = 0; rank == root && i < N; i++)
            CHECK(out[i].len == size && out[i].value == digits_expected(i, size),
                  "Reduce concat root %d: element %d = {%d, %.0f}", root, i, out[i].len, out[i].value);
    }
    MPI_Reduce_scatter_block(in, out, 2, digits_type, op, MPI_COMM_WORLD);
    for (int i = 0; i < 2; i++)
        CHECK(out[i].len == size && out[i].value == digits_expected(2 * rank + i, size),
              "Reduce_scatter_block concat: element %d = {%d, %.0f}", i, out[i].len, out[i].value);
    MPI_Op_free(&op);
    CHECK(op == MPI_OP_NULL, "Op_free did not set MPI_OP_NULL");
}

static void test_errors(void)
{
#ifdef HCOMM_MPI_H /* Debian's MPICH 4.0.2 checks no arguments */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int a = 1, b = 0, cls = -1, rc;
    MPI_Op op = MPI_SUM, saved;
    rc = MPI_Op_free(&op);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_OP && op == MPI_SUM, "Op_free(MPI_SUM): class %d", cls);
    MPI_Op_create(my_sum, 1, &op);
    saved = op;
    MPI_Op_free(&op);
    rc = MPI_Allreduce(&a, &b, 1, MPI_INT, saved, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_OP && b == 0, "Allreduce with a freed op: class %d", cls);
    rc = MPI_Reduce(&a, &b, 1, MPI_INT, MPI_OP_NULL, 0, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_OP, "Reduce with MPI_OP_NULL: class %d", cls);
    rc = MPI_Op_create(NULL, 1, &op);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_ARG, "Op_create(NULL): class %d", cls);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
#endif
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 8) {
        MPI_Finalize();
        return 77;
    }
    MPI_Type_contiguous(4, MPI_DOUBLE, &mat_type);
    MPI_Type_commit(&mat_type);
    int bl[2] = {1, 1};
    MPI_Aint d[2] = {offsetof(struct digits, len), offsetof(struct digits, value)};
    MPI_Datatype ty[2] = {MPI_INT, MPI_DOUBLE};
    MPI_Type_create_struct(2, bl, d, ty, &digits_type);
    MPI_Type_commit(&digits_type);

    test_commutative();
    test_matrices();
    test_digits();
    test_errors();
    CHECK(wrong_type == 0, "the user function got a different datatype %d times", wrong_type);

    MPI_Type_free(&mat_type);
    MPI_Type_free(&digits_type);
    int all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("userop: %s (%d failures)\n", all ? "FAILED" : "ok", all);
    MPI_Finalize();
    return all ? 1 : 0;
}
