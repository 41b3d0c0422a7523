/* compat-tests/preload/errors.c - errors hcomm raises under the preload go through the host
 * MPI's error handler on MPI_COMM_WORLD and come back as the host's error classes:
 *   MPI_ERRORS_RETURN: MPI_Allreduce with count -1 returns a code of class MPI_ERR_COUNT;
 *   a user handler (MPI_Comm_create_errhandler): MPI_Bcast with root = size calls it once with
 *   the returned code, of class MPI_ERR_ROOT;
 *   a valid call afterwards still works.
 * Run only with the preload (Debian MPICH alone does not check arguments and crashes).
 * Prints "FAIL ..." on a mismatch, "errors: ok" on rank 0. */
#include <mpi.h>
#include <stdio.h>

static int called, called_code;

static void handler(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    called++;
    called_code = *code;
}

int main(int argc, char **argv)
{
    int rank, size, fails = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int a = 1, b = 0, cls = -1;
    int rc = MPI_Allreduce(&a, &b, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    if (rc == MPI_SUCCESS || cls != MPI_ERR_COUNT) {
        printf("FAIL rank %d: Allreduce count=-1: rc=%d class=%d, expected class MPI_ERR_COUNT=%d\n", rank, rc,
               cls, MPI_ERR_COUNT);
        fails++;
    }

    MPI_Errhandler eh;
    MPI_Comm_create_errhandler(handler, &eh);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh);
    rc = MPI_Bcast(&a, 1, MPI_INT, size, MPI_COMM_WORLD);
    cls = -1;
    MPI_Error_class(rc, &cls);
    if (rc == MPI_SUCCESS || cls != MPI_ERR_ROOT || called != 1 || called_code != rc) {
        printf("FAIL rank %d: Bcast root=size: rc=%d class=%d (expected MPI_ERR_ROOT=%d), handler called %d "
               "time(s) with %d\n",
               rank, rc, cls, MPI_ERR_ROOT, called, called_code);
        fails++;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&eh);

    rc = MPI_Allreduce(&a, &b, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS || b != size) {
        printf("FAIL rank %d: Allreduce after the errors: rc=%d sum=%d, expected %d\n", rank, rc, b, size);
        fails++;
    }
    if (rank == 0 && fails == 0)
        printf("errors: ok\n");
    MPI_Finalize();
    return fails ? 1 : 0;
}
