/*
 * nb_latency.c - time per MPI_Iallreduce + MPI_Wait (and per blocking MPI_Allreduce) of COUNT
 * floats, MPI_SUM, MPI_COMM_WORLD: the cost of a nonblocking collective that its caller waits
 * for at once (the progress engine's wake-ups and waits, not overlap).
 *
 * Usage: nb_latency ITERS COUNT
 * Best of 3 repetitions of ITERS calls each, after a barrier; rank 0 prints
 *   nb_latency COUNT floats: iallreduce+wait T us, allreduce T us
 * Standard MPI only: build it with hcomm (cc -I include ... -lhcomm), mpicc.mpich or
 * mpicc.openmpi and run it the same way under each (docs/PERFORMANCE.md, "Small nonblocking
 * collectives"). The results are checked (exact: small integers in float).
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 3 || atol(argv[1]) <= 0 || atol(argv[2]) <= 0) {
        if (rank == 0)
            fprintf(stderr, "usage: nb_latency ITERS COUNT\n");
        MPI_Finalize();
        return 2;
    }
    long iters = atol(argv[1]);
    int n = atoi(argv[2]);
    float *s = malloc(sizeof(float) * n), *d = malloc(sizeof(float) * n);
    for (int i = 0; i < n; i++)
        s[i] = (float)(rank + i % 7);
    double best_nb = 1e30, best_b = 1e30;
    long wrong = 0;
    for (int rep = 0; rep < 3; rep++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t = MPI_Wtime();
        for (long i = 0; i < iters; i++) {
            MPI_Request q;
            MPI_Iallreduce(s, d, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &q);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
        }
        t = (MPI_Wtime() - t) / (double)iters * 1e6;
        if (t < best_nb)
            best_nb = t;
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
        for (long i = 0; i < iters; i++)
            MPI_Allreduce(s, d, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        t = (MPI_Wtime() - t) / (double)iters * 1e6;
        if (t < best_b)
            best_b = t;
        for (int i = 0; i < n; i++)
            if (d[i] != (float)(size * (size - 1) / 2 + size * (i % 7)))
                wrong++;
    }
    long all_wrong = 0;
    MPI_Reduce(&wrong, &all_wrong, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("nb_latency %d floats: iallreduce+wait %.2f us, allreduce %.2f us%s\n", n, best_nb,
               best_b, all_wrong ? " WRONG RESULTS" : "");
    free(s);
    free(d);
    MPI_Finalize();
    return all_wrong != 0;
}
