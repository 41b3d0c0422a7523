/* ring_stats: pass a token around the ring (each rank adds its rank), broadcast a seed, and
 * compute global statistics with collectives. Every rank checks the exact results; rank 0
 * prints one summary line, then "ring_stats: OK". Plain MPI, built by a plain Makefile. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "stats.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, failures = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* Token ring: rank 0 starts with 0, each rank adds its own rank, rank 0 gets it back. */
    long token = 0;
    if (size > 1) {
        int next = (rank + 1) % size, prev = (rank + size - 1) % size;
        if (rank == 0) {
            MPI_Send(&token, 1, MPI_LONG, next, 7, MPI_COMM_WORLD);
            MPI_Recv(&token, 1, MPI_LONG, prev, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&token, 1, MPI_LONG, prev, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            token += rank;
            MPI_Send(&token, 1, MPI_LONG, next, 7, MPI_COMM_WORLD);
        }
    }
    long want_token = (long)size * (size - 1) / 2;
    if (rank == 0 && token != want_token) {
        fprintf(stderr, "FAIL rank 0: token %ld, want %ld\n", token, want_token);
        failures++;
    }

    int seed = rank == 0 ? 12345 : -1;
    MPI_Bcast(&seed, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (seed != 12345) {
        fprintf(stderr, "FAIL rank %d: seed %d\n", rank, seed);
        failures++;
    }

    struct stats st;
    if (global_stats((double)(rank + 1), MPI_COMM_WORLD, &st) != MPI_SUCCESS) {
        fprintf(stderr, "FAIL rank %d: global_stats\n", rank);
        failures++;
    }
    double n = size, want_rms = sqrt((n + 1) * (2 * n + 1) / 6);
    if (st.sum != n * (n + 1) / 2 || st.min != 1 || st.max != n || fabs(st.rms - want_rms) > 1e-12) {
        fprintf(stderr, "FAIL rank %d: sum %g min %g max %g rms %g\n", rank, st.sum, st.min, st.max, st.rms);
        failures++;
    }

    int all_failures = 0;
    MPI_Reduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        char lib[MPI_MAX_LIBRARY_VERSION_STRING];
        int len;
        MPI_Get_library_version(lib, &len);
        lib[strcspn(lib, "\n")] = '\0'; /* first line only (MPICH's is long) */
        printf("ring_stats: %d ranks, token %ld, sum %g, min %g, max %g, rms %.6f (%s)\n", size, token, st.sum,
               st.min, st.max, st.rms, lib);
        printf(all_failures == 0 ? "ring_stats: OK\n" : "ring_stats: FAILED\n");
    }
    MPI_Finalize();
    return failures == 0 ? 0 : 1;
}
