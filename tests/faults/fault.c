/*
 * fault.c - the rank program of the fault-injection tests (tests/faults.rs).
 *
 *   fault loop BYTES      allreduce BYTES of floats in a loop for $FAULT_SECS seconds (default
 *                         60); the test kills or stops a rank from outside ("pid job-id" in
 *                         $FAULT_DIR/pid.<rank>)
 *   fault fanloop BYTES   as loop, with MPI_Bcast from rank 0 and MPI_Allgather of BYTES per
 *                         rank (the one-host fan-outs at 3+ ranks), results checked
 *   fault mismatch KIND R rank R makes a different call from the others, once, then all call
 *                         MPI_Barrier; KIND: count, dtype, op, root, coll, large,
 *                         bcastsize, reducesize, gathersize (small on one rank, large on the rest)
 *   fault exit R          rank R exits with status 5 right after MPI_Init; the others wait
 *                         in MPI_Recv from their right neighbour (which never sends)
 *   fault init            MPI_Init and MPI_Finalize only (rendezvous tests)
 *
 * FAULT_ERRH=return sets MPI_ERRORS_RETURN on MPI_COMM_WORLD: a failing call then makes the
 * rank print "rank R: <call> returned class C" and exit 3. Otherwise MPI_ERRORS_ARE_FATAL
 * (the default) ends the rank with hcomm's message. A rank whose calls all succeed prints
 * "rank R: done" and exits 0.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int rank, size, use_return;

static void check(int rc, const char *call) {
    if (rc == MPI_SUCCESS)
        return;
    int cls = -1;
    MPI_Error_class(rc, &cls);
    printf("rank %d: %s returned class %d\n", rank, call, cls);
    fflush(stdout);
    exit(3);
}

static void write_pid(void) {
    const char *dir = getenv("FAULT_DIR");
    if (!dir)
        return;
    char path[4096], tmp[4096];
    snprintf(path, sizeof path, "%s/pid.%d", dir, rank);
    snprintf(tmp, sizeof tmp, "%s/.pid.%d", dir, rank);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    const char *job = getenv("HCOMM_JOB_ID");
    fprintf(f, "%d %s\n", (int)getpid(), job ? job : "-");
    fclose(f);
    rename(tmp, path);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void loop(long bytes) {
    long n = bytes / 4;
    float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
    for (long i = 0; i < n; i++)
        a[i] = 1.0f;
    const char *secs = getenv("FAULT_SECS");
    double end = now() + (secs ? atof(secs) : 60);
    /* Rank 0 alone decides when to stop (clocks differ): it adds 1000 to the last element,
     * and every rank sees that in the same iteration's result. */
    for (long it = 0;; it++) {
        if (rank == 0 && now() >= end)
            a[n - 1] = 1001.0f;
        check(MPI_Allreduce(a, b, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
        int stop = b[n - 1] > 1000.0f;
        if (b[0] != (float)size || b[n - 1] != (float)size + (stop ? 1000.0f : 0.0f)) {
            printf("FAIL rank %d: iteration %ld: got %g\n", rank, it, b[0]);
            exit(4);
        }
        if (stop)
            break;
    }
    free(a);
    free(b);
}

/* As loop, with the collectives that fan out on one host (3+ ranks): a bcast from rank 0 and
 * an allgather of `bytes` per call, results checked. */
static void fanloop(long bytes) {
    long n = bytes / 4;
    float *a = malloc(n * sizeof(float)), *b = malloc(n * size * sizeof(float));
    const char *secs = getenv("FAULT_SECS");
    double end = now() + (secs ? atof(secs) : 60);
    for (long it = 0;; it++) {
        for (long i = 0; i < n; i++)
            a[i] = rank == 0 ? (float)(it % 1000) : -1.0f;
        if (rank == 0 && now() >= end)
            a[n - 1] = 5000.0f;
        check(MPI_Bcast(a, (int)n, MPI_FLOAT, 0, MPI_COMM_WORLD), "MPI_Bcast");
        int stop = a[n - 1] == 5000.0f;
        if (a[0] != (float)(it % 1000)) {
            printf("FAIL rank %d: iteration %ld: bcast got %g\n", rank, it, a[0]);
            exit(4);
        }
        a[0] = (float)rank;
        check(MPI_Allgather(a, (int)n, MPI_FLOAT, b, (int)n, MPI_FLOAT, MPI_COMM_WORLD),
              "MPI_Allgather");
        for (int r = 0; r < size; r++)
            if (b[r * n] != (float)r) {
                printf("FAIL rank %d: iteration %ld: allgather block %d got %g\n", rank, it, r,
                       b[r * n]);
                exit(4);
            }
        if (stop)
            break;
    }
    free(a);
    free(b);
}

static void mismatch(const char *kind, int odd) {
    int me = rank == odd;
    static float f[1 << 21], g[1 << 21];
    int *ints = (int *)f;
    if (!strcmp(kind, "count"))
        check(MPI_Allreduce(f, g, me ? 10 : 20, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
    else if (!strcmp(kind, "dtype"))
        check(MPI_Allreduce(f, g, 10, me ? MPI_INT : MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
              "MPI_Allreduce");
    else if (!strcmp(kind, "op"))
        check(MPI_Allreduce(f, g, 10, MPI_FLOAT, me ? MPI_MAX : MPI_SUM, MPI_COMM_WORLD),
              "MPI_Allreduce");
    else if (!strcmp(kind, "root"))
        check(MPI_Bcast(ints, 20, MPI_INT, me ? 1 : 0, MPI_COMM_WORLD), "MPI_Bcast");
    else if (!strcmp(kind, "coll")) {
        if (me)
            check(MPI_Bcast(ints, 20, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
        else
            check(MPI_Allreduce(f, g, 10, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
    } else if (!strcmp(kind, "bcastsize"))
        /* One rank on the small-message path (no schedule), the others on the pipeline. */
        check(MPI_Bcast(ints, me ? 20 : 1 << 20, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
    else if (!strcmp(kind, "reducesize"))
        check(MPI_Reduce(f, g, me ? 10 : 1 << 20, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD),
              "MPI_Reduce");
    else if (!strcmp(kind, "gathersize"))
        check(MPI_Allgather(f, me ? 10 : 1 << 18, MPI_FLOAT, g, me ? 10 : 1 << 18, MPI_FLOAT,
                            MPI_COMM_WORLD),
              "MPI_Allgather");
    else if (!strcmp(kind, "large"))
        check(MPI_Allreduce(f, g, me ? 1 << 20 : 1 << 21, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
              "MPI_Allreduce");
    else {
        fprintf(stderr, "unknown mismatch kind %s\n", kind);
        exit(2);
    }
    check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: fault loop BYTES | mismatch KIND RANK | exit RANK | init\n");
        return 2;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *errh = getenv("FAULT_ERRH");
    use_return = errh && !strcmp(errh, "return");
    if (use_return)
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    write_pid();
    if (!strcmp(argv[1], "loop") && argc > 2)
        loop(atol(argv[2]));
    else if (!strcmp(argv[1], "fanloop") && argc > 2)
        fanloop(atol(argv[2]));
    else if (!strcmp(argv[1], "mismatch") && argc > 3)
        mismatch(argv[2], atoi(argv[3]));
    else if (!strcmp(argv[1], "exit") && argc > 2) {
        if (rank == atoi(argv[2]))
            _exit(5);
        int x;
        check(MPI_Recv(&x, 1, MPI_INT, (rank + 1) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
              "MPI_Recv");
    } else if (strcmp(argv[1], "init")) {
        fprintf(stderr, "bad arguments\n");
        return 2;
    }
    printf("rank %d: done\n", rank);
    fflush(stdout);
    check(MPI_Finalize(), "MPI_Finalize");
    return 0;
}
