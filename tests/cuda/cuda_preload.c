/*
 * cuda_preload.c -- device buffers under libhcomm_preload.so with a host MPI that is not
 * CUDA-aware (Debian's MPICH), against tests/cuda/fake_cuda.c (see tests/cuda.rs).
 *
 * A device-buffer allreduce with a predefined datatype is taken by hcomm (result checked);
 * one with a derived datatype is not, and must fail with MPI_ERR_BUFFER instead of reaching
 * the host MPI with a device pointer. MPIX_Query_cuda_support is the host's answer.
 * Prints "OK rank R host-cuda-support Q".
 */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

typedef unsigned long long dptr;

int main(int argc, char **argv) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h) { fprintf(stderr, "no libcuda.so.1: %s\n", dlerror()); return 2; }
    int (*alloc)(dptr *, size_t) = (int (*)(dptr *, size_t))dlsym(h, "cuMemAlloc_v2");
    int (*htod)(dptr, const void *, size_t, void *) =
        (int (*)(dptr, const void *, size_t, void *))dlsym(h, "cuMemcpyHtoDAsync_v2");
    int (*dtoh)(void *, dptr, size_t, void *) =
        (int (*)(void *, dptr, size_t, void *))dlsym(h, "cuMemcpyDtoHAsync_v2");
    if (!alloc || !htod || !dtoh) { fprintf(stderr, "not the fake driver\n"); return 2; }
    MPI_Init(&argc, &argv);
    int rank, size, fails = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    enum { N = 100000 };
    float *x = malloc(N * sizeof(float));
    for (int i = 0; i < N; i++) x[i] = (float)(i % 100 + rank);
    dptr d;
    alloc(&d, N * sizeof(float));
    htod(d, x, N * sizeof(float), NULL);
    int rc = MPI_Allreduce(MPI_IN_PLACE, (void *)d, N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    dtoh(x, d, N * sizeof(float), NULL);
    int bad = rc != MPI_SUCCESS;
    for (int i = 0; i < N; i++) bad += x[i] != (float)(size * (i % 100) + size * (size - 1) / 2);
    if (bad) { fprintf(stderr, "FAIL rank %d: device allreduce rc %d, %d wrong\n", rank, rc, bad); fails++; }
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_FLOAT, &pair);
    MPI_Type_commit(&pair);
    rc = MPI_Allreduce(MPI_IN_PLACE, (void *)d, N / 2, pair, MPI_SUM, MPI_COMM_WORLD);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    if (cls != MPI_ERR_BUFFER) { fprintf(stderr, "FAIL rank %d: derived type on device: class %d\n", rank, cls); fails++; }
    MPI_Type_free(&pair);
    int q = MPIX_Query_cuda_support();
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    if (!fails) printf("OK rank %d host-cuda-support %d\n", rank, q);
    return fails ? 1 : 0;
}
