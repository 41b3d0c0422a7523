/*
 * benches/rank_timeline.c - where each rank's timed batch of small bcasts begins and ends.
 *
 * coll_bench reports the slowest rank's batch time / iterations. With more ranks than cores
 * that figure depends on how the processes share the cores, which coll_bench does not show.
 * This program runs the same kind of batch (200 warm-up calls, a barrier, then `iters`
 * 8-byte MPI_Bcast from rank 0) and prints, for every rank, when its batch began and ended
 * (relative to the earliest start, MPI_Wtime) and how often the kernel switched it out
 * during the batch (getrusage: voluntary and involuntary context switches).
 *
 * Standard MPI only, so one source builds against any implementation:
 *   cc -O2 -I include -o rank_timeline.hcomm benches/rank_timeline.c -L target/release -lhcomm
 *   mpicc.openmpi -O2 -o rank_timeline.openmpi benches/rank_timeline.c
 *   hcomm run -n 3 ./rank_timeline.hcomm 2000
 *   mpirun.openmpi --oversubscribe -n 3 ./rank_timeline.openmpi 2000
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#define MAX_RANKS 64

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > MAX_RANKS) {
        if (rank == 0) fprintf(stderr, "rank_timeline: at most %d ranks\n", MAX_RANKS);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int iters = argc > 1 ? atoi(argv[1]) : 2000;
    if (iters < 1) iters = 1;
    float *buf = malloc(2 * sizeof(float));
    buf[0] = buf[1] = (float)rank;
    for (int i = 0; i < 200; i++) MPI_Bcast(buf, 2, MPI_FLOAT, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    struct rusage before, after;
    getrusage(RUSAGE_SELF, &before);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) MPI_Bcast(buf, 2, MPI_FLOAT, 0, MPI_COMM_WORLD);
    double t1 = MPI_Wtime();
    getrusage(RUSAGE_SELF, &after);
    double mine[4] = {t0, t1, (double)(after.ru_nvcsw - before.ru_nvcsw),
                      (double)(after.ru_nivcsw - before.ru_nivcsw)};
    double all[4 * MAX_RANKS];
    MPI_Gather(mine, 4, MPI_DOUBLE, all, 4, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        double base = all[0];
        for (int i = 1; i < size; i++)
            if (all[4 * i] < base) base = all[4 * i];
        printf("# rank  start(us)  end(us)  batch(us)  us/call  voluntary  involuntary\n");
        for (int i = 0; i < size; i++) {
            const double *r = &all[4 * i];
            printf("%6d %10.1f %8.1f %10.1f %8.3f %10.0f %12.0f\n", i, (r[0] - base) * 1e6,
                   (r[1] - base) * 1e6, (r[1] - r[0]) * 1e6, (r[1] - r[0]) * 1e6 / iters, r[2],
                   r[3]);
        }
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
