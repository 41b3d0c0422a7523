/*
 * cuda_fake.c -- device-buffer collectives against tests/cuda/fake_cuda.c (see tests/cuda.rs).
 *
 * The driver functions come from whatever libcuda.so.1 the loader finds (dlopen, as a CUDA
 * program's runtime would load it): the fake one, whose device memory the CPU cannot touch.
 * Every result is checked on every rank; the last line is "OK rank R opens N".
 *
 *   cuda_fake device   libcuda loaded before MPI_Init: every collective with device buffers,
 *                      mixed host/device ranks, memory without IPC handles, a buffer freed
 *                      and re-allocated at the same address, the caller's context kept,
 *                      refusals (nonblocking, point-to-point, derived types, user ops)
 *   cuda_fake late     libcuda loaded by rank 1 only, after the world's first collective
 *   cuda_fake query    no CUDA: prints MPIX_Query_cuda_support and runs host collectives
 *   cuda_fake loaded   the same after loading libcuda.so.1 (host buffers only)
 */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long dptr;
static int (*MemAlloc)(dptr *, size_t);
static int (*NoIpcAlloc)(dptr *, size_t);
static int (*MemFree)(dptr);
static int (*HtoD)(dptr, const void *, size_t, void *);
static int (*DtoH)(void *, dptr, size_t, void *);
static int (*CtxGet)(void **);
static int (*CtxSet)(void *);
static int (*Opens)(void);
static int (*Loads)(void);
static int (*Retains)(void);

static int rank, size, failures;
/* The caller's current context: a token, or none with FAKECUDA_NO_USER_CTX. */
static void *USER_CTX = (void *)0x1234;

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "rank %d: FAIL line %d: ", rank, __LINE__);    \
            fprintf(stderr, __VA_ARGS__);                                  \
            fprintf(stderr, "\n");                                         \
            failures++;                                                    \
        }                                                                  \
    } while (0)

static void load_cuda(void) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        fprintf(stderr, "rank %d: cannot load libcuda.so.1: %s\n", rank, dlerror());
        exit(2);
    }
    MemAlloc = (int (*)(dptr *, size_t))dlsym(h, "cuMemAlloc_v2");
    NoIpcAlloc = (int (*)(dptr *, size_t))dlsym(h, "fake_alloc_noipc");
    MemFree = (int (*)(dptr))dlsym(h, "cuMemFree_v2");
    HtoD = (int (*)(dptr, const void *, size_t, void *))dlsym(h, "cuMemcpyHtoDAsync_v2");
    DtoH = (int (*)(void *, dptr, size_t, void *))dlsym(h, "cuMemcpyDtoHAsync_v2");
    CtxGet = (int (*)(void **))dlsym(h, "cuCtxGetCurrent");
    CtxSet = (int (*)(void *))dlsym(h, "cuCtxSetCurrent");
    Opens = (int (*)(void))dlsym(h, "fake_ipc_opens");
    Loads = (int (*)(void))dlsym(h, "fake_module_loads");
    Retains = (int (*)(void))dlsym(h, "fake_primary_retains");
    if (!MemAlloc || !NoIpcAlloc || !MemFree || !HtoD || !DtoH || !CtxGet || !CtxSet || !Opens) {
        fprintf(stderr, "rank %d: libcuda.so.1 is not the test's fake\n", rank);
        exit(2);
    }
    if (getenv("FAKECUDA_NO_USER_CTX")) USER_CTX = NULL;
    CtxSet(USER_CTX);
}

static void *dev(size_t n, int ipc) {
    dptr p = 0;
    int rc = ipc ? MemAlloc(&p, n) : NoIpcAlloc(&p, n);
    if (rc) {
        fprintf(stderr, "rank %d: device alloc failed\n", rank);
        exit(2);
    }
    return (void *)p;
}
static void put(void *d, const void *h, size_t n) { HtoD((dptr)d, h, n, NULL); }
static void get(void *h, const void *d, size_t n) { DtoH(h, (dptr)d, n, NULL); }

static void ctx_kept(const char *what) {
    void *c = NULL;
    CtxGet(&c);
    CHECK(c == USER_CTX, "%s: current context %p, the caller's was %p", what, c, USER_CTX);
}

/* The value rank r contributes at element i (sums of these stay exact in float). */
static float val(int r, size_t i) { return (float)((i % 1000) + 3 * r); }
static float total(size_t i) {
    float s = 0;
    for (int r = 0; r < size; r++) s += val(r, i);
    return s;
}

/* Allreduce of n floats; each side host or device (in place: send is NULL). */
static void allreduce_case(size_t n, int send_dev, int recv_dev, int in_place, int ipc) {
    float *h = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) h[i] = val(rank, i);
    void *recv = recv_dev ? dev(n * 4, ipc) : malloc(n * 4);
    void *send = NULL;
    if (in_place) {
        if (recv_dev) put(recv, h, n * 4); else memcpy(recv, h, n * 4);
        send = MPI_IN_PLACE;
    } else {
        send = send_dev ? dev(n * 4, ipc) : malloc(n * 4);
        if (send_dev) put(send, h, n * 4); else memcpy(send, h, n * 4);
    }
    int rc = MPI_Allreduce(send, recv, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS, "allreduce rc %d", rc);
    ctx_kept("MPI_Allreduce");
    if (recv_dev) get(h, recv, n * 4); else memcpy(h, recv, n * 4);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += h[i] != total(i);
    CHECK(bad == 0, "allreduce n=%zu send_dev=%d recv_dev=%d in_place=%d: %zu wrong (h[0]=%g want %g)",
          n, send_dev, recv_dev, in_place, bad, h[0], total(0));
    if (recv_dev) MemFree((dptr)recv); else free(recv);
    if (!in_place) { if (send_dev) MemFree((dptr)send); else free(send); }
    free(h);
}

static void allgather_case(size_t n, int in_place, int ipc) {
    int *h = malloc(n * size * sizeof(int));
    int *mine = malloc(n * sizeof(int));
    for (size_t i = 0; i < n; i++) mine[i] = rank * 1000000 + (int)i;
    int *recv = dev(n * size * 4, ipc);
    void *send = MPI_IN_PLACE;
    if (in_place) {
        put(recv + n * rank, mine, n * 4);
    } else {
        send = dev(n * 4, ipc);
        put(send, mine, n * 4);
    }
    int rc = MPI_Allgather(send, (int)n, MPI_INT, recv, (int)n, MPI_INT, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS, "allgather rc %d", rc);
    ctx_kept("MPI_Allgather");
    get(h, recv, n * size * 4);
    size_t bad = 0;
    for (int r = 0; r < size; r++)
        for (size_t i = 0; i < n; i++) bad += h[r * n + i] != r * 1000000 + (int)i;
    CHECK(bad == 0, "allgather n=%zu in_place=%d ipc=%d: %zu wrong", n, in_place, ipc, bad);
    MemFree((dptr)recv);
    if (!in_place) MemFree((dptr)send);
    free(h);
    free(mine);
}

static void bcast_case(size_t n, int root, int ipc) {
    double *h = malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) h[i] = rank == root ? (double)i * 0.5 : -1.0;
    double *d = dev(n * 8, ipc);
    put(d, h, n * 8);
    int rc = MPI_Bcast(d, (int)n, MPI_DOUBLE, root, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS, "bcast rc %d", rc);
    ctx_kept("MPI_Bcast");
    get(h, d, n * 8);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += h[i] != (double)i * 0.5;
    CHECK(bad == 0, "bcast n=%zu root=%d: %zu wrong", n, root, bad);
    MemFree((dptr)d);
    free(h);
}

static void reduce_case(size_t n, int root, int in_place) {
    int *h = malloc(n * sizeof(int));
    for (size_t i = 0; i < n; i++) h[i] = (int)i + rank;
    int *recv = dev(n * 4, 1), *send = NULL;
    if (in_place && rank == root) {
        put(recv, h, n * 4);
    } else {
        send = dev(n * 4, 1);
        put(send, h, n * 4);
    }
    int rc = MPI_Reduce(send ? (void *)send : MPI_IN_PLACE, recv, (int)n, MPI_INT, MPI_SUM, root,
                        MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS, "reduce rc %d", rc);
    if (rank == root) {
        get(h, recv, n * 4);
        size_t bad = 0;
        for (size_t i = 0; i < n; i++) bad += h[i] != size * (int)i + size * (size - 1) / 2;
        CHECK(bad == 0, "reduce n=%zu root=%d in_place=%d: %zu wrong", n, root, in_place, bad);
    }
    MemFree((dptr)recv);
    if (send) MemFree((dptr)send);
    free(h);
}

/* Reduce_scatter with counts 1, 2, ... (in place: the input is recvbuf). */
static void reduce_scatter_case(size_t base, int in_place) {
    int counts[64];
    size_t all = 0, off = 0;
    for (int r = 0; r < size; r++) {
        counts[r] = (int)base + r;
        if (r < rank) off += counts[r];
        all += counts[r];
    }
    float *h = malloc(all * sizeof(float));
    for (size_t i = 0; i < all; i++) h[i] = val(rank, i);
    float *recv = dev(all * 4, 1), *send = NULL;
    if (in_place) {
        put(recv, h, all * 4);
    } else {
        send = dev(all * 4, 1);
        put(send, h, all * 4);
    }
    int rc = MPI_Reduce_scatter(send ? (void *)send : MPI_IN_PLACE, recv, counts, MPI_FLOAT, MPI_SUM,
                                MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS, "reduce_scatter rc %d", rc);
    get(h, recv, counts[rank] * 4);
    size_t bad = 0;
    for (int i = 0; i < counts[rank]; i++) bad += h[i] != total(off + i);
    CHECK(bad == 0, "reduce_scatter base=%zu in_place=%d: %zu wrong", base, in_place, bad);
    MemFree((dptr)recv);
    if (send) MemFree((dptr)send);
    free(h);
}

/* A buffer freed and re-allocated (often at the same address) must not be read stale. */
static void realloc_case(void) {
    size_t n = 4096;
    int *mine = malloc(n * 4), *h = malloc(n * size * 4);
    int same = 1;
    void *prev = NULL;
    for (int round = 0; round < 3; round++) {
        for (size_t i = 0; i < n; i++) mine[i] = round * 100000 + rank * 1000 + (int)(i % 1000);
        int *send = dev(n * 4, 1), *recv = dev(n * size * 4, 1);
        if (prev && (void *)send != prev) same = 0;
        prev = send;
        put(send, mine, n * 4);
        MPI_Allgather(send, (int)n, MPI_INT, recv, (int)n, MPI_INT, MPI_COMM_WORLD);
        get(h, recv, n * size * 4);
        size_t bad = 0;
        for (int r = 0; r < size; r++)
            for (size_t i = 0; i < n; i++)
                bad += h[r * n + i] != round * 100000 + r * 1000 + (int)(i % 1000);
        CHECK(bad == 0, "re-allocated buffer, round %d: %zu stale or wrong", round, bad);
        MemFree((dptr)recv);
        MemFree((dptr)send);
    }
    printf("rank %d: realloc at the same address: %s\n", rank, same ? "yes" : "no");
    free(mine);
    free(h);
}

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *t) {
    (void)t;
    for (int i = 0; i < *len; i++) ((int *)inout)[i] += ((int *)in)[i];
}

/* A non-contiguous type: 2 ints with a gap (committed once, freed at MPI_Finalize). */
static MPI_Datatype vec2(void) {
    static MPI_Datatype v = MPI_DATATYPE_NULL;
    if (v == MPI_DATATYPE_NULL) {
        MPI_Type_vector(2, 1, 2, MPI_INT, &v);
        MPI_Type_commit(&v);
    }
    return v;
}

static void refusals(void) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int *d = dev(64, 1), cls = 0;
    char msg[MPI_MAX_ERROR_STRING];
    MPI_Request req;
    int rc = MPI_Isend(d, 4, MPI_INT, (rank + 1) % size, 0, MPI_COMM_WORLD, &req);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_BUFFER, "MPI_Isend on a device buffer: class %d", cls);
    rc = MPI_Send(d, 4, MPI_INT, (rank + 1) % size, 0, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_BUFFER, "MPI_Send on a device buffer: class %d", cls);
    rc = MPI_Iallreduce(MPI_IN_PLACE, d, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_BUFFER, "MPI_Iallreduce on a device buffer: class %d", cls);
    int *g = malloc(64 * size);
    rc = MPI_Gather(d, 4, MPI_INT, g, 4, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_BUFFER, "MPI_Gather on a device buffer: class %d", cls);
    MPI_Datatype vec;
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    rc = MPI_Allreduce(MPI_IN_PLACE, d, 2, vec, MPI_SUM, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_BUFFER, "MPI_Allreduce, device buffer, vector type: class %d", cls);
    MPI_Type_free(&vec);
    /* Only rank 0 refuses (its device buffer with a user op; the others pass host buffers):
       every rank's call fails with the same class instead of the others waiting for rank 0,
       and the communicator goes on working. */
    MPI_Op user;
    MPI_Op_create(user_sum, 1, &user);
    int hbuf[4] = {1, 1, 1, 1};
    rc = MPI_Allreduce(MPI_IN_PLACE, rank == 0 ? (void *)d : (void *)hbuf, 4, MPI_INT, user,
                       MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_BUFFER, "MPI_Allreduce refused on rank 0 only: class %d", cls);
    rc = MPI_Bcast(rank == 1 ? (void *)d : (void *)hbuf, 1, vec2(), 0, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_BUFFER, "MPI_Bcast refused on rank 1 only: class %d", cls);
    MPI_Op_free(&user);
    rc = MPI_Allreduce(MPI_IN_PLACE, hbuf, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS && hbuf[3] == size, "allreduce after the refusals: rc %d", rc);
    ctx_kept("refusals");
    MemFree((dptr)d);
    free(g);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* Gather and scatter ignore recvbuf (gather) and sendbuf (scatter) at non-roots: a device
   pointer there is not a device buffer of the call. */
static void ignored_args(void) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int *d = dev(64 * size, 1), mine[4], all[64];
    for (int i = 0; i < 4; i++) mine[i] = rank * 10 + i;
    int *g = rank == 0 ? all : d;
    int rc = MPI_Gather(mine, 4, MPI_INT, g, 4, MPI_INT, 0, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS, "MPI_Gather, device recvbuf ignored at a non-root: rc %d", rc);
    for (int r = 0; rank == 0 && r < size; r++)
        CHECK(all[4 * r + 3] == r * 10 + 3, "MPI_Gather result from rank %d", r);
    int counts[64], displs[64];
    for (int r = 0; r < size; r++) counts[r] = 4, displs[r] = 4 * r;
    rc = MPI_Gatherv(mine, 4, MPI_INT, g, counts, displs, MPI_INT, 0, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS, "MPI_Gatherv, device recvbuf ignored at a non-root: rc %d", rc);
    for (int r = 0; rank == 0 && r < size; r++) all[4 * r] = 100 + r;
    int got[4] = {0};
    rc = MPI_Scatter(g, 4, MPI_INT, got, 4, MPI_INT, 0, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS && got[0] == 100 + rank, "MPI_Scatter, device sendbuf ignored: rc %d", rc);
    rc = MPI_Scatterv(g, counts, displs, MPI_INT, got, 4, MPI_INT, 0, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS && got[0] == 100 + rank, "MPI_Scatterv, device sendbuf ignored: rc %d", rc);
    MemFree((dptr)d);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

static void host_collectives(void) {
    float x[5] = {1, 2, 3, 4, 5}, y[5];
    int rc = MPI_Allreduce(x, y, 5, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS && y[4] == 5.0f * size, "host allreduce");
    int b = rank == 0 ? 42 : 0;
    MPI_Bcast(&b, 1, MPI_INT, 0, MPI_COMM_WORLD);
    CHECK(b == 42, "host bcast");
    int *all = malloc(sizeof(int) * size);
    MPI_Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++) CHECK(all[r] == r, "host allgather");
    free(all);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "query";
    int device = !strcmp(mode, "device");
    if (device) load_cuda();
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (!strcmp(mode, "loaded")) load_cuda();
    if (!strcmp(mode, "query") || !strcmp(mode, "loaded")) {
        host_collectives();
        printf("rank %d: MPIX_Query_cuda_support=%d\n", rank, MPIX_Query_cuda_support());
        host_collectives();
    } else if (device) {
        CHECK(MPIX_Query_cuda_support() == 1, "MPIX_Query_cuda_support");
        allgather_case(1000, 0, 1);
        allgather_case(1000, 1, 1);
        allgather_case(777, 0, 0);
        allgather_case(777, 1, 0);
        bcast_case(100000, 0, 1);
        bcast_case(3000, size - 1, 0);
        size_t big = 3 * (1 << 20) + 3; /* 12 MiB + 12 bytes of float: several segments */
        allreduce_case(big, 1, 1, 0, 1);
        allreduce_case(1001, 1, 1, 1, 1);
        allreduce_case(1001, 1, 1, 0, 0);
        allreduce_case(1001, 1, 1, 1, 0);
        allreduce_case(big, rank == 0, rank == 0, 0, 1); /* mixed kinds across ranks */
        allreduce_case(5000, 1, 0, 0, 1);                /* device send, host recv */
        allreduce_case(5000, 0, 1, 0, 1);                /* host send, device recv */
        reduce_case(100003, size - 1, 0);
        reduce_case(100003, 0, 1);
        reduce_scatter_case(1000, 0);
        reduce_scatter_case(1000, 1);
        reduce_scatter_case(0, 1);
        realloc_case();
        if (size <= 16) ignored_args();
        refusals();
        host_collectives();
    } else if (!strcmp(mode, "late")) {
        host_collectives(); /* the world agrees: not CUDA-aware */
        if (rank == 1) load_cuda();
        size_t n = (1 << 20) + 5;
        float *h = malloc(n * 4);
        for (size_t i = 0; i < n; i++) h[i] = val(rank, i);
        void *buf = h;
        if (rank == 1) {
            buf = dev(n * 4, 1);
            put(buf, h, n * 4);
        }
        MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        if (rank == 1) get(h, buf, n * 4);
        size_t bad = 0;
        for (size_t i = 0; i < n; i++) bad += h[i] != total(i);
        CHECK(bad == 0, "late allreduce: %zu wrong", bad);
        MPI_Bcast(buf, (int)n, MPI_FLOAT, 1, MPI_COMM_WORLD);
        if (rank == 1) ctx_kept("late bcast");
        host_collectives();
    }
    int opens = Opens ? Opens() : 0;
    if (Loads) printf("rank %d: module loads %d\n", rank, Loads());
    if (Retains) printf("rank %d: primary retains %d\n", rank, Retains());
    MPI_Finalize();
    if (failures) {
        fprintf(stderr, "rank %d: %d failures\n", rank, failures);
        return 1;
    }
    printf("OK rank %d opens %d\n", rank, opens);
    return 0;
}
