/*
 * fake_cuda.c -- a stand-in libcuda.so.1 for tests on machines without a GPU.
 *
 * It implements exactly the driver functions hcomm calls (hcomm_core::cuda::SYMBOLS) with
 * the real prototypes, over host memory that the CPU can NOT touch directly:
 *
 *  - "device memory" (cuMemAlloc_v2, fake_alloc_noipc) is a shared-memory file mapped twice:
 *    the address handed out is a PROT_NONE mapping (any host load or store through it
 *    faults, as dereferencing a real device pointer on the host would), and a private
 *    read-write alias that only this library uses to copy and reduce;
 *  - IPC handles name the file; cuIpcOpenMemHandle maps it the same two ways in the peer;
 *    like real drivers (which map an import at the exporter's address), it fails with
 *    CUDA_ERROR_ALREADY_MAPPED while an import of the same exporter overlapping that
 *    allocation's address range is still open in this process;
 *  - streams and events are tokens and every operation is synchronous;
 *  - cuLaunchKernel runs hcomm_reduce_sum_{f32,f64,i32} on the CPU (other kernels fail);
 *  - contexts are tokens; the current one is per thread, so tests can check that hcomm
 *    restores the caller's;
 *  - one device (ordinal 0), named "hcomm fake CUDA device".
 *
 * FAKECUDA_NEED_CTX=1 makes cuPointerGetAttributes fail without a current context.
 * FAKECUDA_FAIL_OPEN=r makes cuIpcOpenMemHandle fail on rank r (HCOMM_RANK).
 * FAKECUDA_NO_IPC=r makes cuIpcGetMemHandle fail on rank r (a platform without CUDA IPC).
 * FAKECUDA_DRIVER=v is what cuDriverGetVersion says (default 13000).
 * FAKECUDA_PTX=code[:r] makes cuModuleLoadData fail with `code` (on rank r only, if given),
 * as an old driver (222, UNSUPPORTED_PTX_VERSION) or an old GPU (209, NO_BINARY_FOR_GPU) does.
 * Test helpers (not CUDA): fake_alloc_noipc (device memory without an IPC handle, like
 * cudaMallocAsync pools), fake_ipc_opens (mappings opened so far), fake_is_device.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef struct { char reserved[64]; } CUipcMemHandle;

enum { OK = 0, INVALID_VALUE = 1, NOT_FOUND = 500 };

struct range {
    uintptr_t dev;   /* PROT_NONE mapping: the "device address" */
    uintptr_t alias; /* read-write mapping for this library */
    size_t size;
    size_t mapped; /* page-rounded */
    unsigned long long id;
    uintptr_t xbase; /* imports: the allocation's address in the exporter */
    int own, ipc;
    char name[48];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct range ranges[4096];
static int nranges;
static unsigned long long next_id = 1;
static int opens;
static int primary_ctx;
/* The primary context becomes active when retained, or when memory is allocated (a CUDA
   runtime program allocates through it). */
static int primary_active, primary_retains;
static __thread void *current;

static struct range *find(uintptr_t p) {
    for (int i = 0; i < nranges; i++)
        if (p >= ranges[i].dev && p < ranges[i].dev + ranges[i].size) return &ranges[i];
    return NULL;
}

/* Host address for a device or host pointer (device ones through the alias). */
static void *host(uintptr_t p) {
    pthread_mutex_lock(&lock);
    struct range *r = find(p);
    void *h = r ? (void *)(r->alias + (p - r->dev)) : (void *)p;
    pthread_mutex_unlock(&lock);
    return h;
}

static int map_file(int fd, size_t size, struct range *r) {
    size_t m = (size + 4095) & ~(size_t)4095;
    void *d = mmap(NULL, m, PROT_NONE, MAP_SHARED, fd, 0);
    void *a = mmap(NULL, m, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (d == MAP_FAILED || a == MAP_FAILED) return -1;
    r->dev = (uintptr_t)d;
    r->alias = (uintptr_t)a;
    r->size = size;
    r->mapped = m;
    return 0;
}

static CUresult alloc(CUdeviceptr *p, size_t n, int ipc) {
    if (!n || !p) return INVALID_VALUE;
    pthread_mutex_lock(&lock);
    struct range r = {0};
    r.id = next_id++;
    r.own = 1;
    primary_active = 1;
    r.ipc = ipc;
    /* FAKECUDA_TAG names the test run, so that it can remove what this run leaves behind
       (hcomm keeps its staging buffers until the process exits). */
    const char *tag = getenv("FAKECUDA_TAG");
    snprintf(r.name, sizeof r.name, "/fakecuda-%s-%d-%llu", tag ? tag : "x", (int)getpid(), r.id);
    int fd = shm_open(r.name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)n) != 0 || map_file(fd, n, &r) != 0) {
        if (fd >= 0) close(fd);
        shm_unlink(r.name);
        pthread_mutex_unlock(&lock);
        return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
    }
    close(fd);
    ranges[nranges++] = r;
    *p = r.dev;
    pthread_mutex_unlock(&lock);
    return OK;
}

static void drop_range(struct range *r) {
    munmap((void *)r->dev, r->mapped);
    munmap((void *)r->alias, r->mapped);
    if (r->own) shm_unlink(r->name);
    *r = ranges[--nranges];
}

CUresult cuInit(unsigned flags) { (void)flags; return OK; }
CUresult cuDriverGetVersion(int *v) {
    const char *d = getenv("FAKECUDA_DRIVER");
    *v = d ? atoi(d) : 13000;
    return OK;
}
CUresult cuGetErrorName(CUresult e, const char **s) {
    switch (e) {
    case INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; break;
    case 208: *s = "CUDA_ERROR_ALREADY_MAPPED"; break;
    case 209: *s = "CUDA_ERROR_NO_BINARY_FOR_GPU"; break;
    case 222: *s = "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"; break;
    default: *s = "CUDA_ERROR_FAKE";
    }
    return OK;
}

CUresult cuPointerGetAttributes(unsigned n, unsigned *attrs, void **data, CUdeviceptr p) {
    /* FAKECUDA_NEED_CTX: like drivers that want a current context for this call. */
    if (getenv("FAKECUDA_NEED_CTX") && !current) return 201; /* CUDA_ERROR_INVALID_CONTEXT */
    pthread_mutex_lock(&lock);
    struct range *r = find((uintptr_t)p);
    for (unsigned i = 0; i < n; i++) {
        switch (attrs[i]) {
        case 1: *(void **)data[i] = r ? (void *)&primary_ctx : NULL; break; /* CONTEXT */
        case 2: *(unsigned *)data[i] = r ? 2 : 0; break;                    /* MEMORY_TYPE */
        case 7: *(unsigned long long *)data[i] = r ? r->id : 0; break;      /* BUFFER_ID */
        case 8: *(unsigned *)data[i] = 0; break;                            /* IS_MANAGED */
        case 9: *(int *)data[i] = r ? 0 : -2; break;                        /* DEVICE_ORDINAL */
        default: pthread_mutex_unlock(&lock); return INVALID_VALUE;
        }
    }
    pthread_mutex_unlock(&lock);
    return OK;
}

CUresult cuCtxGetCurrent(void **c) { *c = current; return OK; }
CUresult cuCtxSetCurrent(void *c) { current = c; return OK; }
#ifndef FAKECUDA_NO_CTX_ID /* built without: a driver older than 525 */
CUresult cuCtxGetId(void *c, unsigned long long *id) { *id = (uintptr_t)c; return OK; }
#endif
CUresult cuDeviceGet(int *d, int ordinal) { *d = ordinal; return ordinal == 0 ? OK : INVALID_VALUE; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return OK; }
CUresult cuDeviceGetName(char *name, int len, int d) {
    if (d != 0 || len < 1) return INVALID_VALUE;
    snprintf(name, (size_t)len, "hcomm fake CUDA device");
    return OK;
}
CUresult cuDevicePrimaryCtxRetain(void **c, int d) {
    (void)d;
    *c = &primary_ctx;
    primary_active = 1;
    primary_retains++;
    return OK;
}
CUresult cuDevicePrimaryCtxGetState(int d, unsigned *flags, int *active) {
    if (d != 0) return INVALID_VALUE;
    *flags = 0;
    *active = primary_active;
    return OK;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr p) {
    pthread_mutex_lock(&lock);
    struct range *r = find((uintptr_t)p);
    if (r) {
        if (base) *base = r->dev;
        if (size) *size = r->size;
    }
    pthread_mutex_unlock(&lock);
    return r ? OK : NOT_FOUND;
}

CUresult cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr base) {
    const char *no = getenv("FAKECUDA_NO_IPC"), *me = getenv("HCOMM_RANK");
    if (no && me && !strcmp(no, me)) return 801; /* CUDA_ERROR_NOT_SUPPORTED */
    pthread_mutex_lock(&lock);
    struct range *r = find((uintptr_t)base);
    CUresult rc = INVALID_VALUE;
    if (r && r->own && r->ipc && r->dev == (uintptr_t)base) {
        memset(h, 0, sizeof *h);
        memcpy(h->reserved, &r->id, 8);
        memcpy(h->reserved + 8, &r->dev, 8);
        strncpy(h->reserved + 16, r->name, 47);
        rc = OK;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *p, CUipcMemHandle h, unsigned flags) {
    (void)flags;
    /* FAKECUDA_FAIL_OPEN=r: rank r cannot map peers' memory (no peer access, say). */
    const char *fail = getenv("FAKECUDA_FAIL_OPEN"), *me = getenv("HCOMM_RANK");
    if (fail && me && !strcmp(fail, me)) return 217; /* CUDA_ERROR_PEER_ACCESS_UNSUPPORTED */
    struct range r = {0};
    memcpy(&r.id, h.reserved, 8);
    memcpy(&r.xbase, h.reserved + 8, 8);
    memcpy(r.name, h.reserved + 16, 47);
    int fd = shm_open(r.name, O_RDWR, 0);
    if (fd < 0) return INVALID_VALUE; /* freed by its owner: a stale handle */
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return INVALID_VALUE;
    }
    r.size = (size_t)st.st_size;
    /* The exporter: the name up to its last '-' ("/fakecuda-TAG-PID-"). */
    size_t who = (size_t)(strrchr(r.name, '-') - r.name);
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nranges; i++) {
        struct range *o = &ranges[i];
        if (!o->own && !strncmp(o->name, r.name, who) && o->xbase < r.xbase + r.size &&
            r.xbase < o->xbase + o->size) {
            pthread_mutex_unlock(&lock);
            close(fd);
            return 208; /* CUDA_ERROR_ALREADY_MAPPED */
        }
    }
    pthread_mutex_unlock(&lock);
    int bad = map_file(fd, r.size, &r);
    close(fd);
    if (bad) return INVALID_VALUE;
    pthread_mutex_lock(&lock);
    /* Peers' buffer ids live in another process: keep them apart from ours. */
    r.id |= 1ull << 63;
    ranges[nranges++] = r;
    opens++;
    pthread_mutex_unlock(&lock);
    *p = r.dev;
    return OK;
}

CUresult cuIpcCloseMemHandle(CUdeviceptr p) {
    pthread_mutex_lock(&lock);
    struct range *r = find((uintptr_t)p);
    CUresult rc = INVALID_VALUE;
    if (r && !r->own && r->dev == (uintptr_t)p) {
        drop_range(r);
        rc = OK;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

static int module_loads;
CUresult cuModuleLoadData(void **m, const void *image) {
    (void)image;
    __sync_fetch_and_add(&module_loads, 1);
    const char *f = getenv("FAKECUDA_PTX"), *me = getenv("HCOMM_RANK");
    if (f) {
        const char *at = strchr(f, ':');
        if (!at || (me && atoi(at + 1) == atoi(me))) return atoi(f);
    }
    *m = (void *)1;
    return OK;
}
CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
    (void)m;
    *f = strdup(name);
    return OK;
}

struct srcs { const void *p[8]; };

/* Each source is resolved once per launch, not once per element: the lookup takes the lock. */
#define FOLD(T)                                                                      \
    {                                                                                \
        const T *src[8];                                                             \
        for (int k = 0; k < nsrc; k++) src[k] = host((uintptr_t)s->p[k]);            \
        for (unsigned long long i = 0; i < count; i++) {                             \
            T acc = src[0][i];                                                       \
            for (int k = 1; k < nsrc; k++) acc += src[k][i];                         \
            ((T *)dst)[i] = acc;                                                     \
        }                                                                            \
    }

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shmem, void *stream, void **params, void **extra) {
    (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)shmem; (void)stream;
    (void)extra;
    const char *name = f;
    const struct srcs *s = params[0];
    int nsrc = *(int *)params[1];
    void *dst = host(*(uintptr_t *)params[2]);
    unsigned long long count = *(unsigned long long *)params[3];
    if (nsrc < 1 || nsrc > 8) return INVALID_VALUE;
    if (!strcmp(name, "hcomm_reduce_sum_f32")) { FOLD(float) }
    else if (!strcmp(name, "hcomm_reduce_sum_f64")) { FOLD(double) }
    else if (!strcmp(name, "hcomm_reduce_sum_i32")) { FOLD(int) }
    else return NOT_FOUND;
    return OK;
}

static int token;
CUresult cuStreamCreate(void **s, unsigned flags) { (void)flags; *s = &token; return OK; }
CUresult cuEventCreate(void **e, unsigned flags) { (void)flags; *e = &token; return OK; }
CUresult cuEventRecord(void *e, void *s) { (void)e; (void)s; return OK; }
CUresult cuEventSynchronize(void *e) { (void)e; return OK; }
/* Work is done when it is queued; every other query says "not ready" (CUDA_ERROR_NOT_READY)
 * all the same, so that hcomm's poll loop sees both answers. */
CUresult cuEventQuery(void *e) {
    static int queries;
    (void)e;
    return (queries++ & 1) ? OK : 600;
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, void *st) {
    (void)st;
    memmove(host((uintptr_t)d), host((uintptr_t)s), n);
    return OK;
}
CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, void *st) {
    (void)st;
    memcpy(d, host((uintptr_t)s), n);
    return OK;
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n, void *st) {
    (void)st;
    memcpy(host((uintptr_t)d), s, n);
    return OK;
}

/* Device memory only, inside one allocation: a host pointer or an overrun is an error, as on
   a real device (where it would be an invalid address), not a silent host write. */
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, void *st) {
    (void)st;
    pthread_mutex_lock(&lock);
    struct range *r = find((uintptr_t)d);
    int ok = r && n <= r->size - ((uintptr_t)d - r->dev);
    void *h = ok ? (void *)(r->alias + ((uintptr_t)d - r->dev)) : NULL;
    pthread_mutex_unlock(&lock);
    if (!ok) return INVALID_VALUE;
    memset(h, v, n);
    return OK;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) { return alloc(p, n, 1); }
CUresult cuMemFree_v2(CUdeviceptr p) {
    pthread_mutex_lock(&lock);
    struct range *r = find((uintptr_t)p);
    CUresult rc = INVALID_VALUE;
    if (r && r->own && r->dev == (uintptr_t)p) {
        drop_range(r);
        rc = OK;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}
CUresult cuMemHostAlloc(void **p, size_t n, unsigned flags) {
    (void)flags;
    *p = malloc(n);
    return *p ? OK : 2;
}
CUresult cuMemFreeHost(void *p) { free(p); return OK; }

/* Test helpers. */
CUresult fake_alloc_noipc(CUdeviceptr *p, size_t n) { return alloc(p, n, 0); }
int fake_ipc_opens(void) { return opens; }
int fake_module_loads(void) { return module_loads; }
int fake_primary_retains(void) { return primary_retains; }
int fake_is_device(const void *p) {
    pthread_mutex_lock(&lock);
    int d = find((uintptr_t)p) != NULL;
    pthread_mutex_unlock(&lock);
    return d;
}
