/*
 * coll_body.h - the body shared by coll.c (int counts) and coll_c.c (MPI_Count counts, _c
 * functions). The includer defines BCAST, REDUCE, ALLREDUCE, ALLGATHER, REDUCE_SCATTER,
 * REDUCE_SCATTER_BLOCK, COUNT_T and PROG. Helper gathers for printing use plain MPI_Allgather.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, fails;

static void result(const char *what, int rc, int bad)
{
    int b = bad || rc != MPI_SUCCESS, all = 0;
    if (b)
        printf("FAIL " PROG ": rank=%d %s rc=%d\n", rank, what, rc);
    fails += b;
    MPI_Allreduce(&b, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all)
        printf("%s: WRONG on %d rank(s)\n", what, all);
}

static void print_ints(const char *what, const int *v, int n)
{
    if (rank != 0)
        return;
    printf("%s:", what);
    for (int i = 0; i < n; i++)
        printf(" %d", v[i]);
    printf("\n");
}

static void print_dbls(const char *what, const double *v, int n)
{
    if (rank != 0)
        return;
    printf("%s:", what);
    for (int i = 0; i < n; i++)
        printf(" %g", v[i]);
    printf("\n");
}

static int run_all(void)
{
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int n = size, rc, bad;
    if (rank == 0)
        printf("size %d\n", n);

    /* Barrier */
    rc = MPI_Barrier(MPI_COMM_WORLD);
    result("MPI_Barrier", rc, 0);
    rc = MPI_Barrier(MPI_COMM_WORLD);
    result("MPI_Barrier (again)", rc, 0);
    if (rank == 0)
        printf("MPI_Barrier: ok\n");

    /* Bcast: 5 ints from the last rank, 3 doubles from rank 0 */
    {
        int v[5];
        for (int i = 0; i < 5; i++)
            v[i] = rank == n - 1 ? (n - 1) * 10 + i : -1;
        rc = BCAST(v, (COUNT_T)5, MPI_INT, n - 1, MPI_COMM_WORLD);
        bad = 0;
        for (int i = 0; i < 5; i++)
            bad |= v[i] != (n - 1) * 10 + i;
        result("Bcast int root=last", rc, bad);
        print_ints("Bcast int root=last", v, 5);
        double d[3];
        for (int i = 0; i < 3; i++)
            d[i] = rank == 0 ? 0.5 * i - 1.25 : 99;
        rc = BCAST(d, (COUNT_T)3, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        bad = 0;
        for (int i = 0; i < 3; i++)
            bad |= d[i] != 0.5 * i - 1.25;
        result("Bcast double root=0", rc, bad);
        print_dbls("Bcast double root=0", d, 3);
    }

    /* Reduce SUM int to root 0; MAX double to the last rank; in-place PROD at root 0 */
    {
        int in[4], out[4] = { -7, -7, -7, -7 };
        for (int i = 0; i < 4; i++)
            in[i] = (rank + 1) * (i + 1);
        rc = REDUCE(in, out, (COUNT_T)4, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
        bad = 0;
        for (int i = 0; i < 4; i++)
            bad |= rank == 0 ? out[i] != n * (n + 1) / 2 * (i + 1) : out[i] != -7;
        result("Reduce SUM int root=0", rc, bad);
        print_ints("Reduce SUM int root=0", out, 4);

        double din[3], dout[3] = { 0, 0, 0 };
        for (int i = 0; i < 3; i++)
            din[i] = rank * 0.25 - i;
        rc = REDUCE(din, dout, (COUNT_T)3, MPI_DOUBLE, MPI_MAX, n - 1, MPI_COMM_WORLD);
        bad = 0;
        for (int i = 0; i < 3; i++)
            bad |= rank == n - 1 ? dout[i] != (n - 1) * 0.25 - i : dout[i] != 0;
        result("Reduce MAX double root=last", rc, bad);
        MPI_Bcast(dout, 3, MPI_DOUBLE, n - 1, MPI_COMM_WORLD);
        print_dbls("Reduce MAX double root=last", dout, 3);

        int p[3], pexp[3];
        for (int i = 0; i < 3; i++) {
            p[i] = (rank + i) % 3 == 0 ? 2 : (rank + i) % 3 == 1 ? -1 : 1;
            pexp[i] = 1;
            for (int r = 0; r < n && r < 12; r++)
                pexp[i] *= (r + i) % 3 == 0 ? 2 : (r + i) % 3 == 1 ? -1 : 1;
        }
        if (n > 12) /* keep the product small */
            for (int i = 0; i < 3; i++) p[i] = rank >= 12 ? 1 : p[i];
        rc = REDUCE(rank == 0 ? MPI_IN_PLACE : p, rank == 0 ? p : NULL, (COUNT_T)3, MPI_INT, MPI_PROD, 0,
                    MPI_COMM_WORLD);
        bad = 0;
        for (int i = 0; i < 3 && rank == 0; i++)
            bad |= p[i] != pexp[i];
        result("Reduce PROD int in-place root=0", rc, bad);
        print_ints("Reduce PROD int in-place root=0", p, 3);
    }

    /* Allreduce: several types and ops */
    {
        int in[3], out[3];
        for (int i = 0; i < 3; i++)
            in[i] = rank * 3 - i * 5;
        rc = ALLREDUCE(in, out, (COUNT_T)3, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        bad = 0;
        for (int i = 0; i < 3; i++)
            bad |= out[i] != 3 * n * (n - 1) / 2 - 5 * i * n;
        result("Allreduce SUM int", rc, bad);
        print_ints("Allreduce SUM int", out, 3);

        rc = ALLREDUCE(in, out, (COUNT_T)3, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        bad = 0;
        for (int i = 0; i < 3; i++)
            bad |= out[i] != -5 * i;
        result("Allreduce MIN int", rc, bad);
        print_ints("Allreduce MIN int", out, 3);

        for (int i = 0; i < 3; i++)
            out[i] = rank + i;
        rc = ALLREDUCE(MPI_IN_PLACE, out, (COUNT_T)3, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        bad = 0;
        for (int i = 0; i < 3; i++)
            bad |= out[i] != n * (n - 1) / 2 + n * i;
        result("Allreduce SUM int in-place", rc, bad);
        print_ints("Allreduce SUM int in-place", out, 3);

        float f = (float)(rank * 0.5), fo = 0;
        rc = ALLREDUCE(&f, &fo, (COUNT_T)1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        result("Allreduce SUM float", rc, fo != (float)(0.25 * n * (n - 1)));
        double dd = 1.0 / (1 << rank % 8), ddo = 0;
        rc = ALLREDUCE(&dd, &ddo, (COUNT_T)1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        result("Allreduce MAX double", rc, ddo != 1.0);
        if (rank == 0)
            printf("Allreduce SUM float: %g, MAX double: %g\n", fo, ddo);

        int l = rank == n - 1, lo = -1;
        rc = ALLREDUCE(&l, &lo, (COUNT_T)1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
        result("Allreduce LOR int", rc, lo != 1);
        int la = rank != 0 || n == 1, lao = -1;
        rc = ALLREDUCE(&la, &lao, (COUNT_T)1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
        result("Allreduce LAND int", rc, lao != (n == 1));
        unsigned x = 1u << rank % 32, xo = 0, xexp = 0;
        for (int r = 0; r < n; r++)
            xexp ^= 1u << r % 32;
        rc = ALLREDUCE(&x, &xo, (COUNT_T)1, MPI_UNSIGNED, MPI_BXOR, MPI_COMM_WORLD);
        result("Allreduce BXOR unsigned", rc, xo != xexp);
        if (rank == 0)
            printf("Allreduce LOR: %d, LAND: %d, BXOR: 0x%x\n", lo, lao, xo);

        /* MINLOC / MAXLOC: ties go to the lowest index */
        struct { double v; int i; } dv = { (double)(rank % 2), 100 - rank }, dvo = { -1, -1 };
        rc = ALLREDUCE(&dv, &dvo, (COUNT_T)1, MPI_DOUBLE_INT, MPI_MINLOC, MPI_COMM_WORLD);
        int mi = 100 - (n % 2 ? n - 1 : n - 2);
        result("Allreduce MINLOC DOUBLE_INT", rc, dvo.v != 0.0 || dvo.i != mi);
        struct { int v; int i; } iv = { rank / 2, rank }, ivo = { -1, -1 };
        rc = ALLREDUCE(&iv, &ivo, (COUNT_T)1, MPI_2INT, MPI_MAXLOC, MPI_COMM_WORLD);
        result("Allreduce MAXLOC 2INT", rc, ivo.v != (n - 1) / 2 || ivo.i != ((n - 1) / 2) * 2);
        if (rank == 0)
            printf("Allreduce MINLOC DOUBLE_INT: (%g, %d), MAXLOC 2INT: (%d, %d)\n", dvo.v, dvo.i, ivo.v, ivo.i);
    }

    /* Allgather: two ints per rank, out-of-place and in-place */
    {
        int s[2] = { rank * rank, -rank };
        int *r = malloc(sizeof(int) * 2 * (size_t)n);
        rc = ALLGATHER(s, (COUNT_T)2, MPI_INT, r, (COUNT_T)2, MPI_INT, MPI_COMM_WORLD);
        bad = 0;
        for (int q = 0; q < n; q++)
            bad |= r[2 * q] != q * q || r[2 * q + 1] != -q;
        result("Allgather int", rc, bad);
        print_ints("Allgather int", r, 2 * n);
        for (int q = 0; q < n; q++)
            r[2 * q] = r[2 * q + 1] = q == rank ? 7 * q : -1;
        rc = ALLGATHER(MPI_IN_PLACE, (COUNT_T)0, MPI_DATATYPE_NULL, r, (COUNT_T)2, MPI_INT, MPI_COMM_WORLD);
        bad = 0;
        for (int q = 0; q < n; q++)
            bad |= r[2 * q] != 7 * q || r[2 * q + 1] != 7 * q;
        result("Allgather int in-place", rc, bad);
        print_ints("Allgather int in-place", r, 2 * n);
        free(r);
    }

    /* Reduce_scatter: rank q gets q % 3 elements (so some get none); Reduce_scatter_block: 2 */
    {
        COUNT_T *rc_counts = malloc(sizeof(COUNT_T) * (size_t)n);
        int total = 0, first = 0;
        for (int q = 0; q < n; q++) {
            rc_counts[q] = (COUNT_T)(q % 3);
            if (q == rank)
                first = total;
            total += q % 3;
        }
        int *in = malloc(sizeof(int) * (size_t)(total + 2 * n + 1)), out[4] = { -9, -9, -9, -9 };
        for (int j = 0; j < total; j++)
            in[j] = rank + j;
        rc = REDUCE_SCATTER(in, out, rc_counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        bad = out[rank % 3] != -9;
        for (int j = 0; j < rank % 3; j++)
            bad |= out[j] != n * (n - 1) / 2 + n * (first + j);
        result("Reduce_scatter SUM int", rc, bad);
        int mine[2] = { rank % 3 > 0 ? out[0] : 0, rank % 3 > 1 ? out[1] : 0 }, *all = malloc(sizeof(int) * 2 * (size_t)n);
        MPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, MPI_COMM_WORLD);
        print_ints("Reduce_scatter SUM int (2 slots per rank, 0 = none)", all, 2 * n);

        for (int j = 0; j < 2 * n; j++)
            in[j] = (rank * 7 + j) % 5 - 2;
        rc = REDUCE_SCATTER_BLOCK(in, out, (COUNT_T)2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        bad = 0;
        for (int j = 0; j < 2; j++) {
            int e = -100;
            for (int r = 0; r < n; r++) {
                int v = (r * 7 + 2 * rank + j) % 5 - 2;
                e = v > e ? v : e;
            }
            bad |= out[j] != e;
        }
        result("Reduce_scatter_block MAX int", rc, bad);
        MPI_Allgather(out, 2, MPI_INT, all, 2, MPI_INT, MPI_COMM_WORLD);
        print_ints("Reduce_scatter_block MAX int", all, 2 * n);

        for (int j = 0; j < total; j++)
            in[j] = rank * 2 + j;
        rc = REDUCE_SCATTER(MPI_IN_PLACE, in, rc_counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        bad = 0;
        for (int j = 0; j < rank % 3; j++)
            bad |= in[j] != n * (n - 1) + n * (first + j);
        result("Reduce_scatter SUM int in-place", rc, bad);
        free(rc_counts);
        free(in);
        free(all);
    }

    int all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("failures on all ranks: %d\n", all);
    return all != 0;
}
