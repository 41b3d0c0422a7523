/*
 * local_ext.c - the MPI part of the RTLD_LOCAL test (see local_main.c): built as a shared
 * object linked with the host MPI, like a Python extension module. Runs an exact Allreduce,
 * Bcast and Barrier on MPI_COMM_WORLD; returns 0 on success.
 */
#include <mpi.h>
#include <stdio.h>

int local_ext_run(void)
{
    int rank, size, bad = 0;
    if (MPI_Init(NULL, NULL) != MPI_SUCCESS)
        return 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long v = rank + 1, sum = 0;
    MPI_Allreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (sum != (long)size * (size + 1) / 2) {
        printf("FAIL local_ext: allreduce rank=%d got=%ld expected=%ld\n", rank, sum,
               (long)size * (size + 1) / 2);
        bad = 1;
    }
    int b = rank == 0 ? 42 : -1;
    MPI_Bcast(&b, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (b != 42) {
        printf("FAIL local_ext: bcast rank=%d got=%d expected=42\n", rank, b);
        bad = 1;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return bad;
}
