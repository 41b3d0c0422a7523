/*
 * compat-tests/preload/allgatherv.c - MPI_Allgatherv and MPI_Allgatherv_c under the preload.
 *
 * Uneven blocks at gapped displacements, in place, and with a derived datatype (which hcomm
 * leaves to the host), each through the int and the large-count entry points. On a host
 * whose header has no MPI_Allgatherv_c (Open MPI 4.1, MPI 3.1) the program declares it: the
 * preload exports it, and when it does not take a call it makes it with the host's int
 * version (narrowed counts). Every rank checks every element; a mismatch prints FAIL.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#if MPI_VERSION < 4
/* Weak: the host's libmpi has no such symbol; the preload (loaded first) provides it. */
typedef long long MPI_Count;
int MPI_Allgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                     void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                     MPI_Datatype recvtype, MPI_Comm comm) __attribute__((weak));
#define HAVE_LARGE (MPI_Allgatherv_c != NULL)
#else
#define HAVE_LARGE 1
#endif

static int rank, size, failures;

/* Rank r contributes r + 1 items of `width` ints, item i of rank r holding 1000 r + 10 i + k
 * in its k-th int; block r starts at item displ[r] = r (r + 1) / 2 + 2 r (gaps of two items,
 * which must stay untouched at -1). */
static void check(const char *what, const int *buf, int width) {
    for (int r = 0; r < size; r++) {
        int displ = r * (r + 1) / 2 + 2 * r;
        for (int i = 0; i < r + 1; i++)
            for (int k = 0; k < width; k++) {
                int got = buf[(displ + i) * width + k], want = 1000 * r + 10 * i + k;
                if (got != want) {
                    printf("FAIL %s: rank %d, block %d item %d int %d: %d, expected %d\n", what, rank,
                           r, i, k, got, want);
                    failures++;
                    return;
                }
            }
        if (r + 1 < size)
            for (int g = 0; g < 2 * width; g++)
                if (buf[(displ + r + 1) * width + g] != -1) {
                    printf("FAIL %s: rank %d, gap after block %d written\n", what, rank, r);
                    failures++;
                    return;
                }
    }
}

static void run(const char *what, int width, MPI_Datatype type, int in_place, int large) {
    int total = 0;
    int *counts = malloc(size * sizeof(int)), *displs = malloc(size * sizeof(int));
    MPI_Count *counts_c = malloc(size * sizeof(MPI_Count));
    MPI_Aint *displs_c = malloc(size * sizeof(MPI_Aint));
    for (int r = 0; r < size; r++) {
        counts[r] = r + 1;
        displs[r] = r * (r + 1) / 2 + 2 * r;
        counts_c[r] = counts[r];
        displs_c[r] = displs[r];
        total = displs[r] + counts[r] + 2;
    }
    int *recv = malloc((size_t)total * width * sizeof(int));
    int *send = malloc((size_t)(rank + 1) * width * sizeof(int));
    for (int i = 0; i < total * width; i++) recv[i] = -1;
    for (int i = 0; i < rank + 1; i++)
        for (int k = 0; k < width; k++) {
            send[i * width + k] = 1000 * rank + 10 * i + k;
            if (in_place) recv[(displs[rank] + i) * width + k] = send[i * width + k];
        }
    const void *s = in_place ? MPI_IN_PLACE : (const void *)send;
    int rc = large ? MPI_Allgatherv_c(s, rank + 1, type, recv, counts_c, displs_c, type, MPI_COMM_WORLD)
                   : MPI_Allgatherv(s, rank + 1, type, recv, counts, displs, type, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
        printf("FAIL %s: rank %d: rc %d\n", what, rank, rc);
        failures++;
    } else {
        check(what, recv, width);
    }
    free(counts), free(displs), free(counts_c), free(displs_c), free(recv), free(send);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    if (!HAVE_LARGE) {
        if (rank == 0) printf("FAIL: MPI_Allgatherv_c does not resolve (is the preload loaded?)\n");
        failures++;
    }
    for (int large = 0; large <= HAVE_LARGE; large++) {
        const char *name = large ? "MPI_Allgatherv_c" : "MPI_Allgatherv";
        char what[96];
        snprintf(what, sizeof what, "%s MPI_INT", name);
        run(what, 1, MPI_INT, 0, large);
        snprintf(what, sizeof what, "%s MPI_INT in place", name);
        run(what, 1, MPI_INT, 1, large);
        snprintf(what, sizeof what, "%s contiguous(2, MPI_INT)", name);
        run(what, 2, pair, 0, large);
    }
    MPI_Type_free(&pair);
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("allgatherv: %s (%d ranks)\n", all ? "FAILED" : "ok", size);
    MPI_Finalize();
    return all ? 1 : 0;
}
