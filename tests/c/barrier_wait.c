/*
 * barrier_wait.c - MPI_Barrier holds every rank until the last one arrives.
 *
 * Each rank in turn sleeps 200 ms before the barrier; every other rank must spend at least
 * 100 ms in it (not 200: a loaded machine delays some ranks' exit from the previous
 * barrier). Run on one host and across hosts (scripts/host-layouts-test.sh), where hcomm
 * takes the two-level barrier.
 */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r, n, bad = 0; MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &n);
    for (int sleeper = 0; sleeper < n; sleeper++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (r == sleeper) usleep(200000);
        MPI_Barrier(MPI_COMM_WORLD);
        double dt = MPI_Wtime() - t0;
        if (dt < 0.1) { printf("FAIL rank %d left the barrier after %.3f s (sleeper %d)\n", r, dt, sleeper); bad = 1; }
    }
    if (!bad && r == 0) printf("barrier_wait: passed (%d ranks)\n", n);
    MPI_Finalize();
    return bad;
}
