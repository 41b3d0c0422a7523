/*
 * preload_overhead.c - what libhcomm_preload.so costs the calls it does not take, and the
 * setup of one it does. Built against the host MPI (MPICH or Open MPI) and run with and
 * without the preload by scripts/preload-overhead.sh, which reports the differences.
 *
 * Usage: preload_overhead CASE ITERS
 *   rank       MPI_Comm_rank (not interposed: the preload defines no MPI_Comm_rank)
 *   send       8-byte MPI_Send/MPI_Recv ping-pong between ranks 0 and 1 (not interposed);
 *              per one-way message
 *   fwd        8-byte MPI_Allreduce with a user-defined op: interposed, then forwarded to the
 *              host's PMPI_Allreduce (the preload's decision is the added cost)
 *   taken      8-byte MPI_Allreduce(MPI_INT, MPI_SUM): taken by hcomm under the preload
 * Each case runs inside measure(), so `valgrind --tool=callgrind --toggle-collect=measure`
 * counts exactly the loop's instructions. Rank 0 prints "preload_overhead CASE ns_per_call".
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

static void add_ints(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    for (int i = 0; i < *len; i++) ((int *)inout)[i] += ((int *)in)[i];
}

/* noinline: callgrind's --toggle-collect=measure needs the function to exist */
__attribute__((noinline)) static int measure(const char *what, long iters, MPI_Op user) {
    int r = 0, a[2] = {rank, 1}, b[2];
    if (strcmp(what, "rank") == 0) {
        int me;
        for (long i = 0; i < iters; i++) MPI_Comm_rank(MPI_COMM_WORLD, &me);
    } else if (strcmp(what, "send") == 0) {
        for (long i = 0; i < iters && size > 1; i++) {
            if (rank == 0) {
                MPI_Send(a, 2, MPI_INT, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(b, 2, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(b, 2, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(a, 2, MPI_INT, 0, 0, MPI_COMM_WORLD);
            }
        }
    } else if (strcmp(what, "fwd") == 0) {
        for (long i = 0; i < iters; i++) MPI_Allreduce(a, b, 2, MPI_INT, user, MPI_COMM_WORLD);
        r = b[1] != size;
    } else if (strcmp(what, "taken") == 0) {
        for (long i = 0; i < iters; i++) MPI_Allreduce(a, b, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        r = b[1] != size;
    } else {
        return -1;
    }
    return r;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *what = argc > 1 ? argv[1] : "rank";
    long iters = argc > 2 ? atol(argv[2]) : 100000;
    MPI_Op user;
    MPI_Op_create(add_ints, 1, &user);
    measure(what, iters / 10 + 1, user); /* warm-up (and the preload's first-use setup) */
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    int bad = measure(what, iters, user);
    double t = MPI_Wtime() - t0, tmax = 0;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (bad < 0) {
        if (rank == 0) fprintf(stderr, "preload_overhead: unknown case %s (rank send fwd taken)\n", what);
        MPI_Finalize();
        return 2;
    }
    if (bad) fprintf(stderr, "preload_overhead: rank %d: wrong result\n", rank);
    /* ping-pong: two messages per iteration */
    double per = tmax / (double)iters / (strcmp(what, "send") == 0 ? 2 : 1);
    if (rank == 0) printf("preload_overhead %s %.1f\n", what, per * 1e9);
    MPI_Op_free(&user);
    MPI_Finalize();
    return bad ? 1 : 0;
}
