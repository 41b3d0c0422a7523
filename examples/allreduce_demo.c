/* allreduce_demo: the quick-start job. Every rank contributes a vector; MPI_Allreduce sums it;
 * every rank checks the exact result and rank 0 prints a small bandwidth table (nccl-tests
 * definitions: algbw = bytes / time, busbw = algbw * 2(n-1)/n) and a checksum that is the same
 * on every rank.
 *
 * Build against hcomm (no MPI installation needed):
 *   cc -O2 -I include examples/allreduce_demo.c -L target/release -lhcomm \
 *      -Wl,-rpath,$PWD/target/release -o build/allreduce_demo
 *   target/release/hcomm run -n 4 build/allreduce_demo
 * It is plain MPI: mpicc + mpirun of any MPI build and run it too. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(lib, &len);
    if (rank == 0)
        printf("allreduce_demo: %d ranks, %s\n%12s %10s %10s %10s\n", size, lib, "bytes", "time(us)",
               "algbw(GB/s)", "busbw(GB/s)");

    int failures = 0;
    uint64_t checksum = 0;
    for (size_t count = 1; count <= ((size_t)1 << 22); count *= 16) {
        float *buf = malloc(count * sizeof(float));
        int iters = count < 4096 ? 200 : 20;
        double total = 0;
        for (int it = 0; it <= iters; it++) {
            for (size_t i = 0; i < count; i++)
                buf[i] = (float)(rank + (i % 13));
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            if (it > 0) /* the first call is warm-up */
                total += MPI_Wtime() - t0;
        }
        for (size_t i = 0; i < count; i++) {
            float want = (float)(size * (size - 1) / 2) + (float)(size * (i % 13));
            if (buf[i] != want && failures++ < 5)
                fprintf(stderr, "rank %d: count %zu index %zu: got %g, want %g\n", rank, count, i, buf[i], want);
            checksum = checksum * 31 + (uint64_t)buf[i];
        }
        double t = total / iters, bytes = (double)(count * sizeof(float));
        double algbw = bytes / t / 1e9, busbw = algbw * 2.0 * (size - 1) / size;
        if (rank == 0)
            printf("%12zu %10.2f %10.3f %10.3f\n", count * sizeof(float), t * 1e6, algbw, busbw);
        free(buf);
    }
    /* Every rank must hold the same bits: compare checksums. */
    uint64_t lo = checksum, hi = checksum;
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("checksum %016llx on every rank: %s; %s\n", (unsigned long long)lo, lo == hi ? "yes" : "NO",
               failures ? "FAILED" : "all results exact");
    MPI_Finalize();
    return failures || lo != hi;
}
