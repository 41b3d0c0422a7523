/*
 * cuda_driver.h - the few CUDA driver API calls the GPU check programs use, loaded at run time
 * with dlopen("libcuda.so.1") so that the programs build on a machine without CUDA, and a
 * small buffer layer over host, device, managed, pool and sub-allocated memory.
 *
 * The prototypes and constants below are transcribed from the driver API reference (cuda.h):
 * only what is used here is declared. The functions whose size_t / pointer arguments changed
 * in CUDA 3.2 are taken under their "_v2" names, which are what cuda.h maps the plain names to
 * on every 64-bit build (the plain-named exports take 32-bit sizes). cuIpcOpenMemHandle_v2
 * appeared in CUDA 11 with the same signature as cuIpcOpenMemHandle; the older name is the
 * fallback. cuMemAllocAsync / cuMemFreeAsync (CUDA 11.2) are optional.
 *
 * With gpu_host_mode set (the programs' --host flag) every "device" buffer is host memory and
 * the copies are memcpy: the programs' own logic (values, checks, tables) can then be exercised
 * against an MPI that has no GPU support, on a machine without a GPU.
 */
#ifndef HCOMM_TESTS_GPU_CUDA_DRIVER_H
#define HCOMM_TESTS_GPU_CUDA_DRIVER_H

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Exit status of a check that could not run here (no driver, no device): "skipped". */
#define GPU_EXIT_SKIP 77

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUdeviceptr;
typedef struct {
    char reserved[64];
} CUipcMemHandle;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_NO_DEVICE 100
#define CUDA_ERROR_NOT_SUPPORTED 801
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS 0x1
#define CU_MEM_ATTACH_GLOBAL 0x1

struct cuda_api {
    void *lib;
    CUresult (*Init)(unsigned int flags);
    CUresult (*DriverGetVersion)(int *version);
    CUresult (*DeviceGetCount)(int *count);
    CUresult (*DeviceGet)(CUdevice *dev, int ordinal);
    CUresult (*DeviceGetName)(char *name, int len, CUdevice dev);
    CUresult (*DeviceGetAttribute)(int *value, int attrib, CUdevice dev);
    CUresult (*DeviceTotalMem)(size_t *bytes, CUdevice dev);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice dev);
    CUresult (*CtxSetCurrent)(CUcontext ctx);
    CUresult (*CtxSynchronize)(void);
    CUresult (*MemAlloc)(CUdeviceptr *dptr, size_t bytes);
    CUresult (*MemFree)(CUdeviceptr dptr);
    CUresult (*MemAllocManaged)(CUdeviceptr *dptr, size_t bytes, unsigned int flags);
    CUresult (*MemAllocHost)(void **pp, size_t bytes);
    CUresult (*MemFreeHost)(void *p);
    CUresult (*MemcpyHtoD)(CUdeviceptr dst, const void *src, size_t bytes);
    CUresult (*MemcpyDtoH)(void *dst, CUdeviceptr src, size_t bytes);
    CUresult (*MemcpyDtoD)(CUdeviceptr dst, CUdeviceptr src, size_t bytes);
    CUresult (*MemsetD32)(CUdeviceptr dst, unsigned int value, size_t n);
    CUresult (*IpcGetMemHandle)(CUipcMemHandle *handle, CUdeviceptr dptr);
    CUresult (*IpcOpenMemHandle)(CUdeviceptr *dptr, CUipcMemHandle handle, unsigned int flags);
    CUresult (*IpcCloseMemHandle)(CUdeviceptr dptr);
    CUresult (*GetErrorName)(CUresult error, const char **name);
    /* Optional: NULL when this driver predates stream-ordered allocation. */
    CUresult (*MemAllocAsync)(CUdeviceptr *dptr, size_t bytes, CUstream stream);
    CUresult (*MemFreeAsync)(CUdeviceptr dptr, CUstream stream);
    CUresult (*StreamSynchronize)(CUstream stream);
};

static struct cuda_api cu;
static int gpu_host_mode;
static CUdevice gpu_dev;
static char gpu_name[256] = "host memory (--host)";

static inline const char *cu_err(CUresult rc)
{
    static char buf[64];
    const char *name = NULL;
    if (cu.GetErrorName && cu.GetErrorName(rc, &name) == CUDA_SUCCESS && name)
        return name;
    snprintf(buf, sizeof buf, "CUresult %d", rc);
    return buf;
}

/* The first of the names that the driver exports. */
static inline void *cu_sym(const char *name, const char *fallback)
{
    void *p = dlsym(cu.lib, name);
    if (!p && fallback)
        p = dlsym(cu.lib, fallback);
    return p;
}

/*
 * Loads the driver, initialises it, makes device `ordinal`'s primary context current (the
 * context the CUDA runtime and PyTorch use). Returns 0 on success; otherwise writes why into
 * `why` and returns GPU_EXIT_SKIP when there is no driver or no device, 1 on other failures.
 * Must not be called in a process that will fork afterwards and use CUDA in the child.
 */
static inline int cuda_open(int ordinal, char *why, size_t whylen)
{
    if (gpu_host_mode)
        return 0;
    cu.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cu.lib) {
        snprintf(why, whylen, "libcuda.so.1 not found (%s)", dlerror());
        return GPU_EXIT_SKIP;
    }
    struct {
        void **slot;
        const char *name, *fallback;
        int optional;
    } syms[] = {
        {(void **)&cu.Init, "cuInit", NULL, 0},
        {(void **)&cu.DriverGetVersion, "cuDriverGetVersion", NULL, 0},
        {(void **)&cu.DeviceGetCount, "cuDeviceGetCount", NULL, 0},
        {(void **)&cu.DeviceGet, "cuDeviceGet", NULL, 0},
        {(void **)&cu.DeviceGetName, "cuDeviceGetName", NULL, 0},
        {(void **)&cu.DeviceGetAttribute, "cuDeviceGetAttribute", NULL, 0},
        {(void **)&cu.DeviceTotalMem, "cuDeviceTotalMem_v2", NULL, 0},
        {(void **)&cu.DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL, 0},
        {(void **)&cu.CtxSetCurrent, "cuCtxSetCurrent", NULL, 0},
        {(void **)&cu.CtxSynchronize, "cuCtxSynchronize", NULL, 0},
        {(void **)&cu.MemAlloc, "cuMemAlloc_v2", NULL, 0},
        {(void **)&cu.MemFree, "cuMemFree_v2", NULL, 0},
        {(void **)&cu.MemAllocManaged, "cuMemAllocManaged", NULL, 0},
        {(void **)&cu.MemAllocHost, "cuMemAllocHost_v2", NULL, 0},
        {(void **)&cu.MemFreeHost, "cuMemFreeHost", NULL, 0},
        {(void **)&cu.MemcpyHtoD, "cuMemcpyHtoD_v2", NULL, 0},
        {(void **)&cu.MemcpyDtoH, "cuMemcpyDtoH_v2", NULL, 0},
        {(void **)&cu.MemcpyDtoD, "cuMemcpyDtoD_v2", NULL, 0},
        {(void **)&cu.MemsetD32, "cuMemsetD32_v2", NULL, 0},
        {(void **)&cu.IpcGetMemHandle, "cuIpcGetMemHandle", NULL, 0},
        {(void **)&cu.IpcOpenMemHandle, "cuIpcOpenMemHandle_v2", "cuIpcOpenMemHandle", 0},
        {(void **)&cu.IpcCloseMemHandle, "cuIpcCloseMemHandle", NULL, 0},
        {(void **)&cu.GetErrorName, "cuGetErrorName", NULL, 0},
        {(void **)&cu.MemAllocAsync, "cuMemAllocAsync", NULL, 1},
        {(void **)&cu.MemFreeAsync, "cuMemFreeAsync", NULL, 1},
        {(void **)&cu.StreamSynchronize, "cuStreamSynchronize", NULL, 1},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        *syms[i].slot = cu_sym(syms[i].name, syms[i].fallback);
        if (!*syms[i].slot && !syms[i].optional) {
            snprintf(why, whylen, "libcuda.so.1 lacks %s (driver too old?)", syms[i].name);
            return 1;
        }
    }
    if (!cu.MemAllocAsync || !cu.MemFreeAsync || !cu.StreamSynchronize)
        cu.MemAllocAsync = NULL;
    CUresult rc = cu.Init(0);
    if (rc != CUDA_SUCCESS) {
        snprintf(why, whylen, "cuInit: %s", cu_err(rc));
        return rc == CUDA_ERROR_NO_DEVICE ? GPU_EXIT_SKIP : 1;
    }
    int count = 0;
    rc = cu.DeviceGetCount(&count);
    if (rc != CUDA_SUCCESS || count == 0) {
        snprintf(why, whylen, "no CUDA device visible");
        return GPU_EXIT_SKIP;
    }
    if (ordinal >= count) {
        snprintf(why, whylen, "device %d asked for, %d visible", ordinal, count);
        return 1;
    }
    CUcontext ctx;
    if ((rc = cu.DeviceGet(&gpu_dev, ordinal)) != CUDA_SUCCESS ||
        (rc = cu.DevicePrimaryCtxRetain(&ctx, gpu_dev)) != CUDA_SUCCESS ||
        (rc = cu.CtxSetCurrent(ctx)) != CUDA_SUCCESS) {
        snprintf(why, whylen, "cannot make device %d's context current: %s", ordinal, cu_err(rc));
        return 1;
    }
    cu.DeviceGetName(gpu_name, (int)sizeof gpu_name, gpu_dev);
    return 0;
}

static inline int cuda_sync(void)
{
    return gpu_host_mode ? 0 : cu.CtxSynchronize();
}

/* ---- buffers ------------------------------------------------------------------------------ */

enum mem_kind { MEM_HOST, MEM_DEVICE, MEM_MANAGED, MEM_POOL, MEM_SUB };

static inline const char *mem_kind_name(enum mem_kind k)
{
    switch (k) {
    case MEM_HOST: return "host";
    case MEM_DEVICE: return "device";
    case MEM_MANAGED: return "managed";
    case MEM_POOL: return "pool";
    case MEM_SUB: return "sub-allocation";
    }
    return "?";
}

/* A buffer handed to MPI: `ptr`, `bytes` long. MEM_SUB buffers are carved out of another
 * buffer and own nothing. */
struct gbuf {
    enum mem_kind kind;
    void *ptr;
    size_t bytes;
};

static inline int is_device_kind(enum mem_kind k)
{
    return k != MEM_HOST && !gpu_host_mode;
}

/* Allocates; returns 0 or a CUresult (CUDA_ERROR_NOT_SUPPORTED when the kind is unavailable). */
static inline CUresult gbuf_alloc(struct gbuf *b, enum mem_kind kind, size_t bytes)
{
    b->kind = kind;
    b->bytes = bytes;
    b->ptr = NULL;
    if (bytes == 0)
        bytes = 1;
    if (kind == MEM_HOST || gpu_host_mode) {
        b->ptr = malloc(bytes);
        return b->ptr ? CUDA_SUCCESS : 2;
    }
    CUdeviceptr d = 0;
    CUresult rc;
    switch (kind) {
    case MEM_DEVICE:
        rc = cu.MemAlloc(&d, bytes);
        break;
    case MEM_MANAGED:
        rc = cu.MemAllocManaged(&d, bytes, CU_MEM_ATTACH_GLOBAL);
        break;
    case MEM_POOL:
        if (!cu.MemAllocAsync)
            return CUDA_ERROR_NOT_SUPPORTED;
        rc = cu.MemAllocAsync(&d, bytes, NULL);
        if (rc == CUDA_SUCCESS)
            rc = cu.StreamSynchronize(NULL);
        break;
    default:
        return 1;
    }
    b->ptr = (void *)(uintptr_t)d;
    return rc;
}

static inline void gbuf_free(struct gbuf *b)
{
    if (!b->ptr || b->kind == MEM_SUB)
        return;
    if (b->kind == MEM_HOST || gpu_host_mode)
        free(b->ptr);
    else if (b->kind == MEM_POOL) {
        cu.MemFreeAsync((CUdeviceptr)(uintptr_t)b->ptr, NULL);
        cu.StreamSynchronize(NULL);
    } else
        cu.MemFree((CUdeviceptr)(uintptr_t)b->ptr);
    b->ptr = NULL;
}

/* A view of `bytes` bytes at `offset` into `parent` (a pointer into the middle of one
 * allocation, as a framework's tensor views and caching allocators hand out). */
static inline struct gbuf gbuf_sub(const struct gbuf *parent, size_t offset, size_t bytes)
{
    struct gbuf b = {MEM_SUB, (char *)parent->ptr + offset, bytes};
    if (parent->kind == MEM_HOST)
        b.kind = MEM_HOST;
    return b;
}

static inline CUresult gbuf_upload(struct gbuf *b, const void *src, size_t bytes)
{
    if (!is_device_kind(b->kind)) {
        memcpy(b->ptr, src, bytes);
        return CUDA_SUCCESS;
    }
    return bytes ? cu.MemcpyHtoD((CUdeviceptr)(uintptr_t)b->ptr, src, bytes) : CUDA_SUCCESS;
}

static inline CUresult gbuf_download(void *dst, const struct gbuf *b, size_t bytes)
{
    if (!is_device_kind(b->kind)) {
        memcpy(dst, b->ptr, bytes);
        return CUDA_SUCCESS;
    }
    return bytes ? cu.MemcpyDtoH(dst, (CUdeviceptr)(uintptr_t)b->ptr, bytes) : CUDA_SUCCESS;
}

#endif
