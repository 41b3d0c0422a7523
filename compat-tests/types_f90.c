/*
 * types_f90.c - MPI_Type_create_f90_integer/real/complex: the size of the type each (p, r)
 * gives, an MPI_SUM allreduce through it (exact), and the errors for (p, r) no type has
 * (MPI_ERR_ARG under MPI_ERRORS_RETURN). hcomm only (MPI 4.1): MPI_Type_get_value_index.
 * Prints implementation-independent lines on rank 0; failures print FAIL.
 */
#include <mpi.h>

#include <stdio.h>
#include <string.h>

static int rank, size, fails;

#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fails++;                                                                           \
            printf("FAIL types_f90 rank %d: ", rank);                                          \
            printf(__VA_ARGS__);                                                               \
            printf("\n");                                                                      \
        }                                                                                      \
    } while (0)

/* An allreduce of 3 elements of t, each rank contributing rank + k + 1 (exact in any type). */
static void sum_through(MPI_Datatype t, const char *what)
{
    int sz;
    MPI_Type_size(t, &sz);
    unsigned char in[3 * 32], outb[3 * 32];
    memset(in, 0, sizeof in);
    for (int k = 0; k < 3; k++) {
        double v = rank + k + 1;
        unsigned char *p = in + k * sz;
        if (strstr(what, "integer")) {
            long long x = (long long)v;
            memcpy(p, &x, sz < 8 ? sz : 8); /* little-endian: the low bytes */
        } else if (sz == 4 || (sz == 8 && strstr(what, "complex"))) {
            float f = (float)v;
            memcpy(p, &f, 4);
        } else if (sz == 8 || (sz == 16 && strstr(what, "complex"))) {
            memcpy(p, &v, 8);
        } else {
            long double l = v;
            memcpy(p, &l, sizeof l);
        }
    }
    MPI_Allreduce(in, outb, 3, t, MPI_SUM, MPI_COMM_WORLD);
    for (int k = 0; k < 3; k++) {
        double want = size * (size + 1) / 2.0 + (double)k * size, got;
        unsigned char *p = outb + k * sz;
        if (strstr(what, "integer")) {
            long long x = 0;
            memcpy(&x, p, sz < 8 ? sz : 8);
            if (sz == 1) x = (signed char)x;
            if (sz == 2) x = (short)x;
            if (sz == 4) x = (int)x;
            got = (double)x;
        } else if (sz == 4 || (sz == 8 && strstr(what, "complex"))) {
            float f;
            memcpy(&f, p, 4);
            got = f;
        } else if (sz == 8 || (sz == 16 && strstr(what, "complex"))) {
            memcpy(&got, p, 8);
        } else {
            long double l;
            memcpy(&l, p, sizeof l);
            got = (double)l;
        }
        CHECK(got == want, "%s: allreduce element %d = %g, expected %g", what, k, got, want);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    const int rs[] = { 1, 2, 3, 4, 8, 9, 12, 18 };
    for (unsigned i = 0; i < sizeof rs / sizeof rs[0]; i++) {
        MPI_Datatype t;
        int sz = -1;
        int rc = MPI_Type_create_f90_integer(rs[i], &t);
        CHECK(rc == MPI_SUCCESS, "MPI_Type_create_f90_integer(%d) = %d", rs[i], rc);
        if (rc != MPI_SUCCESS)
            continue;
        MPI_Type_size(t, &sz);
        if (rank == 0)
            printf("f90_integer(r=%d): size %d\n", rs[i], sz);
        sum_through(t, "f90 integer");
    }
    const int pr[][2] = { { 6, MPI_UNDEFINED }, { MPI_UNDEFINED, 37 }, { 5, 30 }, { 7, MPI_UNDEFINED },
                          { 15, 307 }, { MPI_UNDEFINED, 300 } };
    for (unsigned i = 0; i < sizeof pr / sizeof pr[0]; i++) {
        for (int cx = 0; cx < 2; cx++) {
            MPI_Datatype t;
            int sz = -1;
            int rc = cx ? MPI_Type_create_f90_complex(pr[i][0], pr[i][1], &t)
                        : MPI_Type_create_f90_real(pr[i][0], pr[i][1], &t);
            const char *what = cx ? "f90 complex" : "f90 real";
            CHECK(rc == MPI_SUCCESS, "%s(%d, %d) = %d", what, pr[i][0], pr[i][1], rc);
            if (rc != MPI_SUCCESS)
                continue;
            MPI_Type_size(t, &sz);
            if (rank == 0)
                printf("%s(p=%d, r=%d): size %d\n", what, pr[i][0] == MPI_UNDEFINED ? -1 : pr[i][0],
                       pr[i][1] == MPI_UNDEFINED ? -1 : pr[i][1], sz);
            sum_through(t, what);
            /* The envelope of a parameterized type names its constructor and (p, r). */
            int ni = -1, na = -1, nd = -1, comb = -1, args[2] = {-1, -1};
            MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
            CHECK(ni == 2 && na == 0 && nd == 0 && comb == (cx ? MPI_COMBINER_F90_COMPLEX : MPI_COMBINER_F90_REAL),
                  "%s envelope: %d %d %d combiner %d", what, ni, na, nd, comb);
            if (ni == 2) {
                MPI_Type_get_contents(t, 2, 0, 0, args, NULL, NULL);
                CHECK(args[0] == pr[i][0] && args[1] == pr[i][1], "%s contents: %d %d", what, args[0], args[1]);
            }
        }
    }
    /* No type has these. */
    MPI_Datatype t;
    int rc = MPI_Type_create_f90_integer(40, &t), cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(rc != MPI_SUCCESS, "f90_integer(40) succeeded");
    rc = MPI_Type_create_f90_real(60, MPI_UNDEFINED, &t);
    CHECK(rc != MPI_SUCCESS, "f90_real(60, MPI_UNDEFINED) succeeded");
#ifdef HCOMM_MPI_H
    CHECK(cls == MPI_ERR_ARG, "f90_integer(40): class %d, expected MPI_ERR_ARG", cls);
    MPI_Datatype pair;
    MPI_Type_get_value_index(MPI_DOUBLE, MPI_INT, &pair);
    CHECK(pair == MPI_DOUBLE_INT, "Type_get_value_index(DOUBLE, INT) is not MPI_DOUBLE_INT");
    MPI_Type_get_value_index(MPI_INT, MPI_INT, &pair);
    CHECK(pair == MPI_2INT, "Type_get_value_index(INT, INT) is not MPI_2INT");
    MPI_Type_get_value_index(MPI_FLOAT, MPI_DOUBLE, &pair);
    CHECK(pair == MPI_DATATYPE_NULL, "Type_get_value_index(FLOAT, DOUBLE) is not MPI_DATATYPE_NULL");
    rc = MPI_Type_get_value_index(12345, MPI_INT, &pair);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TYPE, "Type_get_value_index(bad handle): class %d, expected MPI_ERR_TYPE", cls);
#endif
    int all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf(all ? "types_f90: FAILED\n" : "types_f90: ok\n");
    MPI_Finalize();
    return 0;
}
