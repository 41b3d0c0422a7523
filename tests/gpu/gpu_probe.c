/*
 * gpu_probe.c - what this machine allows the GPU paths to use. One probe per run:
 *
 *   gpu_probe ipc    CUDA IPC between two processes: one allocates device memory, writes a
 *                    pattern, exports it (cuIpcGetMemHandle) and sends the handle through a
 *                    pipe; the other opens it (cuIpcOpenMemHandle), checks the pattern and
 *                    writes its own, which the first then checks. The processes are forked
 *                    before either touches CUDA (a child of a process that called cuInit may
 *                    not use CUDA).
 *   gpu_probe cma    process_vm_readv from a child into its parent: the situation of two
 *                    sibling ranks under Yama's ptrace restrictions.
 *   gpu_probe mpix   under an MPI launcher: MPI_Init, then MPIX_Query_cuda_support() on every
 *                    rank ("not exported" when the MPI library has no such function).
 *
 * Prints one line "<probe>: supported ...", "<probe>: unsupported: <why>" or (mpix)
 * "mpix: MPIX_Query_cuda_support() = v on all n ranks". Exit 0: supported; 3: unsupported;
 * 77: no CUDA driver or device (ipc); 1: the probe itself failed; 2: usage.
 */
#define _GNU_SOURCE /* process_vm_readv */
#include <mpi.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cuda_driver.h"

#define UNSUPPORTED 3
#define PROBE_INTS 4096

/* Resolved at run time: NULL when the MPI library does not export it. */
extern int MPIX_Query_cuda_support(void) __attribute__((weak));

static int read_full(int fd, void *p, size_t n)
{
    char *c = p;
    while (n) {
        ssize_t k = read(fd, c, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

static int write_full(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t k = write(fd, c, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

/* What the exporter tells the importer: a status, a message and the handle. */
struct ipc_msg {
    int status; /* 0, or the exit status the probe should end with */
    char why[200];
    CUipcMemHandle handle;
};

static void fill_pattern(unsigned *v, unsigned salt)
{
    for (unsigned i = 0; i < PROBE_INTS; i++)
        v[i] = (i * 2654435761u) ^ salt;
}

/* The exporting child: its exit status is 0 when the importer's pattern came back. */
static int ipc_exporter(int to_parent, int from_parent)
{
    struct ipc_msg m;
    memset(&m, 0, sizeof m);
    m.status = cuda_open(0, m.why, sizeof m.why);
    CUdeviceptr d = 0;
    unsigned host[PROBE_INTS];
    CUresult rc = CUDA_SUCCESS;
    if (m.status == 0) {
        fill_pattern(host, 0x1234u);
        if ((rc = cu.MemAlloc(&d, sizeof host)) != CUDA_SUCCESS ||
            (rc = cu.MemcpyHtoD(d, host, sizeof host)) != CUDA_SUCCESS ||
            (rc = cu.CtxSynchronize()) != CUDA_SUCCESS) {
            snprintf(m.why, sizeof m.why, "allocating device memory: %s", cu_err(rc));
            m.status = 1;
        } else if ((rc = cu.IpcGetMemHandle(&m.handle, d)) != CUDA_SUCCESS) {
            snprintf(m.why, sizeof m.why, "cuIpcGetMemHandle: %s", cu_err(rc));
            m.status = UNSUPPORTED;
        }
    }
    if (write_full(to_parent, &m, sizeof m) != 0 || m.status != 0)
        return m.status ? m.status : 1;
    char done;
    if (read_full(from_parent, &done, 1) != 0 || done != 'w')
        return 4; /* the importer could not write: it says why */
    unsigned want[PROBE_INTS];
    fill_pattern(want, 0xabcdu);
    if (cu.MemcpyDtoH(host, d, sizeof host) != CUDA_SUCCESS || memcmp(host, want, sizeof host))
        return 5;
    cu.MemFree(d);
    return 0;
}

static int probe_ipc(void)
{
    int down[2], up[2];
    if (pipe(down) || pipe(up)) {
        perror("gpu_probe: pipe");
        return 1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("gpu_probe: fork");
        return 1;
    }
    if (pid == 0) {
        close(up[0]);
        close(down[1]);
        _exit(ipc_exporter(up[1], down[0]));
    }
    close(up[1]);
    close(down[0]);
    struct ipc_msg m;
    int result = 1;
    char why[256] = "";
    if (read_full(up[0], &m, sizeof m) != 0) {
        snprintf(why, sizeof why, "the exporting process died before sending a handle");
    } else if (m.status != 0) {
        snprintf(why, sizeof why, "%s", m.why);
        result = m.status;
    } else if ((result = cuda_open(0, why, sizeof why)) == 0) {
        CUdeviceptr d = 0;
        CUresult rc = cu.IpcOpenMemHandle(&d, m.handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
        unsigned got[PROBE_INTS], want[PROBE_INTS];
        if (rc != CUDA_SUCCESS) {
            snprintf(why, sizeof why, "cuIpcOpenMemHandle: %s", cu_err(rc));
            result = UNSUPPORTED;
        } else if ((rc = cu.MemcpyDtoH(got, d, sizeof got)) != CUDA_SUCCESS) {
            snprintf(why, sizeof why, "reading the peer's memory: %s", cu_err(rc));
            result = UNSUPPORTED;
        } else {
            fill_pattern(want, 0x1234u);
            if (memcmp(got, want, sizeof got)) {
                snprintf(why, sizeof why, "the peer's memory read back wrong");
                result = 1;
            } else {
                fill_pattern(want, 0xabcdu);
                rc = cu.MemcpyHtoD(d, want, sizeof want);
                if (rc == CUDA_SUCCESS)
                    rc = cu.CtxSynchronize();
                if (rc != CUDA_SUCCESS) {
                    snprintf(why, sizeof why, "writing the peer's memory: %s", cu_err(rc));
                    result = UNSUPPORTED;
                }
            }
            cu.IpcCloseMemHandle(d);
        }
        if (result == 0 && write_full(down[1], "w", 1) != 0)
            result = 1;
    }
    close(down[1]); /* an exporter still waiting sees EOF */
    int st = 0;
    waitpid(pid, &st, 0);
    int child = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (result == 0 && child != 0) {
        snprintf(why, sizeof why, "the exporter did not see the importer's writes (status %d)", child);
        result = 1;
    }
    if (result == 0)
        printf("ipc: supported (cuIpcGetMemHandle / cuIpcOpenMemHandle, read and write, %s)\n",
               gpu_name);
    else if (result == GPU_EXIT_SKIP)
        printf("ipc: no CUDA device: skipped (%s)\n", why);
    else
        printf("ipc: %s: %s\n", result == UNSUPPORTED ? "unsupported" : "FAIL", why);
    return result;
}

static int probe_cma(void)
{
    static const char secret[16] = "hcomm-gpu-probe";
    char scope[32] = "no Yama";
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
    if (f) {
        int v;
        if (fscanf(f, "%d", &v) == 1)
            snprintf(scope, sizeof scope, "Yama ptrace_scope=%d", v);
        fclose(f);
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        perror("gpu_probe: fork");
        return 1;
    }
    if (pid == 0) {
        char buf[16] = {0};
        struct iovec local = {buf, sizeof buf}, remote = {(void *)secret, sizeof secret};
        ssize_t n = process_vm_readv(parent, &local, 1, &remote, 1, 0);
        _exit(n == (ssize_t)sizeof buf && !memcmp(buf, secret, sizeof buf) ? 0
              : n < 0 ? (errno == EPERM ? 10 : errno == ENOSYS ? 11 : 12)
                      : 13);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (code == 0) {
        printf("cma: supported (process_vm_readv between processes, %s)\n", scope);
        return 0;
    }
    printf("cma: unsupported: process_vm_readv %s (%s)\n",
           code == 10 ? "not permitted (EPERM)" : code == 11 ? "not implemented (ENOSYS)"
           : code == 13 ? "read wrong data" : "failed",
           scope);
    return UNSUPPORTED;
}

static int probe_mpix(int *argc, char ***argv)
{
    int rank, size;
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int v = MPIX_Query_cuda_support ? MPIX_Query_cuda_support() : -1;
    int lo = 0, hi = 0;
    MPI_Allreduce(&v, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&v, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) {
        if (hi < 0)
            printf("mpix: unsupported: the MPI library does not export MPIX_Query_cuda_support\n");
        else if (lo != hi)
            printf("mpix: FAIL: MPIX_Query_cuda_support() differs between ranks (%d..%d)\n", lo, hi);
        else
            printf("mpix: MPIX_Query_cuda_support() = %d on all %d ranks\n", lo, size);
    }
    MPI_Finalize();
    return hi < 0 ? UNSUPPORTED : lo != hi ? 1 : 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 2 && !strcmp(argv[1], "ipc"))
        return probe_ipc();
    if (argc == 2 && !strcmp(argv[1], "cma"))
        return probe_cma();
    if (argc == 2 && !strcmp(argv[1], "mpix"))
        return probe_mpix(&argc, &argv);
    fprintf(stderr, "usage: gpu_probe ipc|cma|mpix\n");
    return 2;
}
