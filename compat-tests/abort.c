/*
 * abort.c - MPI_Abort ends the whole job.
 * compat-expect: nonzero-exit
 *
 * The last rank calls MPI_Abort(MPI_COMM_WORLD, 7) while the others wait in MPI_Barrier.
 * The runner expects the job to end quickly with a non-zero status and the line
 * "abort: FAIL" never to appear.
 */
#include <mpi.h>

#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == size - 1) {
        printf("abort: rank %d calls MPI_Abort(MPI_COMM_WORLD, 7)\n", rank);
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 7);
        printf("abort: FAIL: MPI_Abort returned\n");
        return 0;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    printf("abort: FAIL: rank %d passed a barrier that an aborted rank never entered\n", rank);
    MPI_Finalize();
    return 0;
}
