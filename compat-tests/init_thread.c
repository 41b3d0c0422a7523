/*
 * init_thread.c - MPI_Init_thread, MPI_Query_thread, MPI_Is_thread_main.
 *
 * Requests MPI_THREAD_SERIALIZED; provided must be a valid level, MPI_Query_thread must
 * return it, MPI_Is_thread_main is true on the main thread and (when the level allows another
 * thread to call MPI) false on a second thread. MPI_Initialized / MPI_Finalized around it.
 */
#include <mpi.h>

#include <pthread.h>
#include <stdio.h>

static int other_flag = -1;

static void *other(void *arg)
{
    (void)arg;
    MPI_Is_thread_main(&other_flag);
    return NULL;
}

int main(int argc, char **argv)
{
    int fails = 0, flag = -1, provided = -1, q = -1, ismain = -1;
    MPI_Initialized(&flag);
    fails += flag != 0;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
        fails++;
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Initialized(&flag);
    fails += flag != 1;
    int valid = provided >= MPI_THREAD_SINGLE && provided <= MPI_THREAD_MULTIPLE;
    fails += !valid;
    MPI_Query_thread(&q);
    fails += q != provided;
    MPI_Is_thread_main(&ismain);
    fails += ismain != 1;
    int tested_other = provided >= MPI_THREAD_SERIALIZED;
    if (tested_other) {
        pthread_t th;
        pthread_create(&th, NULL, other, NULL);
        pthread_join(th, NULL);
        fails += other_flag != 0;
    }
    int all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("MPI_Init_thread(MPI_THREAD_SERIALIZED): provided a valid level: %s\n", valid ? "yes" : "no");
        printf("provided >= MPI_THREAD_SERIALIZED: %s\n", tested_other ? "yes" : "no");
        printf("MPI_Query_thread == provided: %s\n", q == provided ? "yes" : "no");
        printf("MPI_Is_thread_main: main thread %d, other thread %d\n", ismain, tested_other ? other_flag : 0);
        printf("failures on all ranks: %d\n", all);
    }
    MPI_Finalize();
    MPI_Finalized(&flag);
    if (rank == 0)
        printf("MPI_Finalized after finalize: %d\n", flag);
    return all != 0 || flag != 1;
}
