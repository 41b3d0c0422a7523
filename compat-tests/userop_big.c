/* userop_big: a user-defined op on a datatype whose items are larger than a transport
 * fragment (contiguous 40000 doubles = 320000 bytes): every item must reach the user function
 * whole. Allreduce, Reduce at every root, and Reduce_scatter_block, exact values. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define ITEM 40000

static void add(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    double *a = in, *b = inout;
    for (long i = 0; i < (long)*len * ITEM; i++)
        b[i] += a[i];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, fails = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Datatype big;
    MPI_Type_contiguous(ITEM, MPI_DOUBLE, &big);
    MPI_Type_commit(&big);
    for (int commute = 0; commute <= 1; commute++) {
        MPI_Op op;
        MPI_Op_create(add, commute, &op);
        int items = 2;
        long n = (long)items * ITEM * size;
        double *s = malloc(n * sizeof(double)), *o = malloc(n * sizeof(double));
        for (long i = 0; i < n; i++)
            s[i] = rank + 1 + (double)(i % 5);
        double want_base = size * (size + 1) / 2.0;
        MPI_Allreduce(s, o, items, big, op, MPI_COMM_WORLD);
        for (long i = 0; i < (long)items * ITEM; i++)
            if (o[i] != want_base + size * (double)(i % 5) && fails++ < 3)
                printf("FAIL userop_big Allreduce commute=%d rank=%d i=%ld got=%g\n", commute, rank, i, o[i]);
        for (int root = 0; root < size; root++) {
            for (long i = 0; i < (long)items * ITEM; i++)
                o[i] = -1;
            MPI_Reduce(s, o, items, big, op, root, MPI_COMM_WORLD);
            if (rank == root)
                for (long i = 0; i < (long)items * ITEM; i++)
                    if (o[i] != want_base + size * (double)(i % 5) && fails++ < 3)
                        printf("FAIL userop_big Reduce commute=%d root=%d i=%ld got=%g\n", commute, root, i, o[i]);
        }
        MPI_Reduce_scatter_block(s, o, items, big, op, MPI_COMM_WORLD);
        for (long i = 0; i < (long)items * ITEM; i++) {
            long gi = (long)rank * items * ITEM + i;
            if (o[i] != want_base + size * (double)(gi % 5) && fails++ < 3)
                printf("FAIL userop_big Reduce_scatter_block commute=%d rank=%d i=%ld got=%g\n", commute, rank, i,
                       o[i]);
        }
        free(s);
        free(o);
        MPI_Op_free(&op);
    }
    MPI_Type_free(&big);
    int all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("userop_big: %s\n", all ? "FAILED" : "ok");
    MPI_Finalize();
    return all != 0;
}
