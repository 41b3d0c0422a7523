/*
 * threads.c - MPI_THREAD_MULTIPLE: concurrent collectives on two communicators.
 *
 * MPI_Init_thread(MPI_THREAD_MULTIPLE) must provide MPI_THREAD_MULTIPLE (hcomm must; another
 * implementation that does not is skipped with exit code 77). Two communicators are dup'd
 * from MPI_COMM_WORLD; two pthreads per rank then run ITERS (default 200, env THREADS_ITERS)
 * iterations each, concurrently, on their own communicator: Allreduce (int64 SUM, varying
 * sizes up to ~64K elements, in-place every third time), Bcast from a rotating root, Allgather,
 * and every 16th iteration Reduce_scatter_block and Barrier. Every result is checked exactly.
 * Query_thread and Is_thread_main are checked from the main and the other threads.
 */
#include <mpi.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NTHREADS 2

static int rank, size, iters = 200;

typedef struct {
    int id;
    MPI_Comm comm;
    long fails;
    long calls;
    int not_main; /* MPI_Is_thread_main said "not main" on this thread */
} targ;

static void tfail(targ *a, const char *what, int it, long idx, long long got, long long exp)
{
    if (a->fails++ < 10)
        printf("FAIL threads: thread=%d rank=%d iter=%d %s index=%ld got=%lld expected=%lld\n", a->id, rank, it, what,
               idx, got, exp);
}

static int64_t val(int t, int r, int it, long i)
{
    return ((int64_t)(t + 1) << 40) + ((int64_t)r << 24) + (int64_t)it * 1000 + i;
}

static long count_for(int t, int it)
{
    long c = (it * 37 + t * 11) % 1000;
    if (it % 10 == 3)
        c += 65536; /* a large one now and then */
    if (it % 50 == 7)
        c = 0;
    return c;
}

static void *worker(void *p)
{
    targ *a = p;
    int flag = -1;
    MPI_Is_thread_main(&flag);
    a->not_main = flag == 0;
    MPI_Comm comm = a->comm;
    int64_t *s = malloc(sizeof(int64_t) * (65536 + 1000) * (size_t)(size + 1));
    int64_t *r = malloc(sizeof(int64_t) * (65536 + 1000) * (size_t)(size + 1));
    for (int it = 0; it < iters; it++) {
        long n = count_for(a->id, it);
        int rc;
        /* Allreduce SUM */
        int inplace = it % 3 == 2;
        for (long i = 0; i < n; i++)
            (inplace ? r : s)[i] = val(a->id, rank, it, i);
        rc = MPI_Allreduce(inplace ? MPI_IN_PLACE : s, r, (int)n, MPI_INT64_T, MPI_SUM, comm);
        a->calls++;
        if (rc != MPI_SUCCESS)
            tfail(a, "Allreduce-rc", it, -1, rc, 0);
        for (long i = 0; i < n; i++) {
            int64_t e = 0;
            for (int q = 0; q < size; q++)
                e += val(a->id, q, it, i);
            if (r[i] != e) {
                tfail(a, "Allreduce", it, i, (long long)r[i], (long long)e);
                break;
            }
        }
        /* Bcast from a rotating root */
        int root = (it + a->id) % size;
        long nb = n / 2 + 1;
        for (long i = 0; i < nb; i++)
            r[i] = rank == root ? val(a->id, root, it, i) : -1;
        rc = MPI_Bcast(r, (int)nb, MPI_INT64_T, root, comm);
        a->calls++;
        if (rc != MPI_SUCCESS)
            tfail(a, "Bcast-rc", it, -1, rc, 0);
        for (long i = 0; i < nb; i++) {
            if (r[i] != val(a->id, root, it, i)) {
                tfail(a, "Bcast", it, i, (long long)r[i], (long long)val(a->id, root, it, i));
                break;
            }
        }
        /* Allgather */
        long ng = (n % 97) + (it % 2);
        for (long i = 0; i < ng; i++)
            s[i] = val(a->id, rank, it, i) ^ 0x5555;
        rc = MPI_Allgather(s, (int)ng, MPI_INT64_T, r, (int)ng, MPI_INT64_T, comm);
        a->calls++;
        if (rc != MPI_SUCCESS)
            tfail(a, "Allgather-rc", it, -1, rc, 0);
        for (int q = 0; q < size; q++) {
            for (long i = 0; i < ng; i++) {
                int64_t e = val(a->id, q, it, i) ^ 0x5555;
                if (r[q * ng + i] != e) {
                    tfail(a, "Allgather", it, q * ng + i, (long long)r[q * ng + i], (long long)e);
                    q = size;
                    break;
                }
            }
        }
        if (it % 16 == 5) {
            long nr = n % 300;
            for (long i = 0; i < nr * size; i++)
                s[i] = val(a->id, rank, it, i);
            rc = MPI_Reduce_scatter_block(s, r, (int)nr, MPI_INT64_T, MPI_SUM, comm);
            a->calls++;
            if (rc != MPI_SUCCESS)
                tfail(a, "Reduce_scatter_block-rc", it, -1, rc, 0);
            for (long i = 0; i < nr; i++) {
                int64_t e = 0;
                for (int q = 0; q < size; q++)
                    e += val(a->id, q, it, rank * nr + i);
                if (r[i] != e) {
                    tfail(a, "Reduce_scatter_block", it, i, (long long)r[i], (long long)e);
                    break;
                }
            }
            rc = MPI_Barrier(comm);
            a->calls++;
            if (rc != MPI_SUCCESS)
                tfail(a, "Barrier-rc", it, -1, rc, 0);
        }
    }
    free(s);
    free(r);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided = -1;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *e = getenv("THREADS_ITERS");
    if (e && atoi(e) > 0)
        iters = atoi(e);
    if (provided != MPI_THREAD_MULTIPLE) {
#ifdef HCOMM_MPI_H
        if (rank == 0)
            printf("FAIL threads: MPI_Init_thread(MPI_THREAD_MULTIPLE) provided %d\n", provided);
        MPI_Finalize();
        return 1;
#else
        if (rank == 0)
            printf("SKIP threads: this MPI provides thread level %d, not MPI_THREAD_MULTIPLE\n", provided);
        MPI_Finalize();
        return 77;
#endif
    }
    long fails = 0;
    int q = -1, main_flag = -1;
    MPI_Query_thread(&q);
    MPI_Is_thread_main(&main_flag);
    if (q != MPI_THREAD_MULTIPLE || main_flag != 1) {
        printf("FAIL threads: rank=%d MPI_Query_thread=%d MPI_Is_thread_main(main)=%d\n", rank, q, main_flag);
        fails++;
    }

    targ args[NTHREADS];
    pthread_t th[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        memset(&args[t], 0, sizeof args[t]);
        args[t].id = t;
        MPI_Comm_dup(MPI_COMM_WORLD, &args[t].comm);
        MPI_Comm_set_errhandler(args[t].comm, MPI_ERRORS_RETURN);
    }
    double t0 = MPI_Wtime();
    for (int t = 0; t < NTHREADS; t++)
        pthread_create(&th[t], NULL, worker, &args[t]);
    long calls = 0;
    for (int t = 0; t < NTHREADS; t++) {
        pthread_join(th[t], NULL);
        fails += args[t].fails;
        calls += args[t].calls;
        if (!args[t].not_main) {
            printf("FAIL threads: rank=%d MPI_Is_thread_main on thread %d did not return false\n", rank, t);
            fails++;
        }
        MPI_Comm_free(&args[t].comm);
    }
    double dt = MPI_Wtime() - t0;
    long all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all)
            printf("threads: FAILED (%ld failures)\n", all);
        else
            printf("threads: OK (%d threads x %d iterations, %ld collectives per rank, %.2fs)\n", NTHREADS, iters,
                   calls, dt);
    }
    MPI_Finalize();
    return all != 0;
}
