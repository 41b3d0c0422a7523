/* tests/launcher/fault.c - a job that loses a rank, for scripts/launcher-test.sh.
 *
 *   fault world   every rank prints "fault: rank R of N (pid P)" and finalizes (exit 0)
 *   fault abort   rank 1 calls MPI_Abort(MPI_COMM_WORLD, 7) after a barrier; the others wait
 *                 in an Allreduce that rank 1 never joins
 *   fault kill    rank 1 kills itself with SIGKILL after a barrier; the others wait in an
 *                 Allreduce that rank 1 never joins
 *
 * Every rank prints its rank, the world size and its pid first, so a run that fell apart into
 * worlds of one shows it ("of 1"), and a launcher's line about a pid names a rank. A rank that gets past the Allreduce prints "fault: survived" and
 * exits 3: the launcher or hcomm should have ended it. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "world";
    int rank = -1, size = -1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    printf("fault: rank %d of %d (pid %ld)\n", rank, size, (long)getpid());
    fflush(stdout);
    if (strcmp(mode, "world") == 0) {
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Finalize();
        return 0;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        if (strcmp(mode, "abort") == 0)
            MPI_Abort(MPI_COMM_WORLD, 7);
        else
            raise(SIGKILL);
        sleep(60);
        return 4;
    }
    int one = 1, sum = 0;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("fault: survived (rank %d, sum %d)\n", rank, sum);
    fflush(stdout);
    MPI_Finalize();
    return 3;
}
