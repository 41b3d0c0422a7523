/*
 * gpu_coll.c - correctness of the MPI collectives on CUDA device buffers.
 *
 * MPI_Allreduce, MPI_Reduce, MPI_Bcast, MPI_Allgather, MPI_Reduce_scatter_block and
 * MPI_Reduce_scatter, for every predefined type a GPU program reduces (float, double,
 * MPIX_C_FLOAT16, MPIX_BFLOAT16, int8..int64, uint8..uint64) and op (sum, prod, min, max;
 * band, bor, bxor on integers), in place and not, for counts 0, 1, odd (4099) and large
 * (--large, default 1 Mi elements), over these memory mixes:
 *   device      every buffer from cuMemAlloc
 *   dev-host    send buffers on the device, receive buffers in host memory
 *   split       even ranks use device buffers, odd ranks host buffers
 *   managed     cuMemAllocManaged
 *   sub         send and receive buffers at odd offsets inside one cuMemAlloc (a caching
 *               allocator's blocks, a tensor view)
 *   realloc     each case twice, freeing and reallocating the buffers in between (the driver
 *               usually returns the same addresses: a stale cached IPC mapping of the old
 *               allocation gives the first call's data back)
 *   pool        cuMemAllocAsync from the device's default pool (cannot be exported with
 *               cuIpcGetMemHandle); "unsupported" where the driver or device lacks pools
 * The device mix runs the whole type x op matrix; the others a cross-section (float, double,
 * f16, int8, uint64 with sum; max on float; bxor on uint64).
 *
 * Values are small integers (sum: [-2, 2] or [1, 5]; prod: +-1 and +-2, few 2s; min/max:
 * [-50, 49] or [0, 99]) or raw bit patterns (bitwise ops, bcast, allgather), periodic in the
 * index with a prime period (1021), so every result is exact in every type and any reduction
 * order for up to 16 ranks; each is checked element by
 * element after copying it back, as are the 64 guard bytes after every receive buffer and the
 * send buffer (which must be unchanged). Results every rank must share (allreduce, bcast,
 * allgather) must also be bitwise identical across ranks (hashes gathered on the host).
 *
 * Usage: gpu_coll [--host] [--large N] [--quick] [--mix a,b] [--coll a,b] [--device K] [-v]
 *   --host   host memory stands in for device memory (checks this program's own logic against
 *            any MPI, no GPU needed)
 *   --quick  the device mix only
 * Output (rank 0): a line per (collective, mix), then "gpu_coll: PASS p FAIL f ...".
 * Exit 0: no failure; 1: failures; 77: no CUDA driver or device (skipped); 2: usage.
 */
#include <mpi.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_driver.h"

#define GUARD 64
#define MAX_RANKS 16
#define MAX_PRINTED 10

enum kind { K_F32, K_F64, K_F16, K_BF16, K_SINT, K_UINT };

struct type {
    const char *name;
    MPI_Datatype dt;
    size_t size;
    enum kind kind;
    int quick; /* in the cross-section of the non-device mixes */
};

static const struct type types[] = {
    {"float", MPI_FLOAT, 4, K_F32, 1},
    {"double", MPI_DOUBLE, 8, K_F64, 1},
    {"f16", MPIX_C_FLOAT16, 2, K_F16, 1},
    {"bf16", MPIX_BFLOAT16, 2, K_BF16, 0},
    {"int8", MPI_INT8_T, 1, K_SINT, 1},
    {"int16", MPI_INT16_T, 2, K_SINT, 0},
    {"int32", MPI_INT32_T, 4, K_SINT, 0},
    {"int64", MPI_INT64_T, 8, K_SINT, 0},
    {"uint8", MPI_UINT8_T, 1, K_UINT, 0},
    {"uint16", MPI_UINT16_T, 2, K_UINT, 0},
    {"uint32", MPI_UINT32_T, 4, K_UINT, 0},
    {"uint64", MPI_UINT64_T, 8, K_UINT, 1},
};
#define NTYPES (int)(sizeof types / sizeof types[0])

enum op { OP_SUM, OP_PROD, OP_MIN, OP_MAX, OP_BAND, OP_BOR, OP_BXOR, NOPS, OP_NONE = NOPS };
static const char *op_names[] = {"sum", "prod", "min", "max", "band", "bor", "bxor"};
static MPI_Op op_handle(int op)
{
    switch (op) {
    case OP_SUM: return MPI_SUM;
    case OP_PROD: return MPI_PROD;
    case OP_MIN: return MPI_MIN;
    case OP_MAX: return MPI_MAX;
    case OP_BAND: return MPI_BAND;
    case OP_BOR: return MPI_BOR;
    default: return MPI_BXOR;
    }
}

enum coll { C_ALLREDUCE, C_REDUCE, C_BCAST, C_ALLGATHER, C_RSB, C_RS, NCOLLS };
static const char *coll_names[] = {"allreduce", "reduce", "bcast", "allgather",
                                   "reduce_scatter_block", "reduce_scatter"};

enum mix { M_DEVICE, M_DEVHOST, M_SPLIT, M_MANAGED, M_SUB, M_REALLOC, M_POOL, NMIXES };
static const char *mix_names[] = {"device", "dev-host", "split", "managed", "sub", "realloc", "pool"};

static int rank, nranks;
static int verbose;
static long printed;
static long reallocs, same_address;

/* ---- values ---------------------------------------------------------------------------- */

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int is_bitwise(int op)
{
    return op == OP_BAND || op == OP_BOR || op == OP_BXOR || op == OP_NONE;
}

/*
 * Rank r's input at index i depends on i only through k = i mod PERIOD (a prime, so that no
 * natural chunk or block boundary is a multiple of it and a misplaced piece still shows):
 * inputs and results are made for one period and tiled, which keeps the host side fast for
 * 1 Mi-element buffers. A small integer for arithmetic ops, random bits otherwise.
 */
#define PERIOD 1021

static int64_t input(int op, const struct type *t, int seed, int r, size_t i)
{
    int sgn = t->kind != K_UINT;
    uint64_t k = (uint64_t)i % PERIOD, s = (uint64_t)seed, rr = (uint64_t)r;
    uint64_t h = mix64((s << 32) ^ (rr << 16) ^ k ^ ((uint64_t)op << 56));
    int64_t v;
    switch (op) {
    case OP_SUM:
        v = (int64_t)(h % 5) + 1;
        return sgn ? v - 3 : v;
    case OP_PROD: /* a 2 on at most ceil(n/3) ranks: |product| <= 64 for 16 ranks */
        v = (k + rr + s) % 3 == 0 ? 2 : 1;
        return sgn && (h >> 8) % 4 == 0 ? -v : v;
    case OP_MIN:
    case OP_MAX:
        v = (int64_t)(h % 100);
        return sgn ? v - 50 : v;
    default:
        return (int64_t)mix64(h);
    }
}

static int64_t combine(int op, int64_t a, int64_t b)
{
    switch (op) {
    case OP_SUM: return (int64_t)((uint64_t)a + (uint64_t)b);
    case OP_PROD: return a * b; /* |a|, |b| <= 2^6: no overflow */
    case OP_MIN: return a < b ? a : b;
    case OP_MAX: return a > b ? a : b;
    case OP_BAND: return (int64_t)((uint64_t)a & (uint64_t)b);
    case OP_BOR: return (int64_t)((uint64_t)a | (uint64_t)b);
    default: return (int64_t)((uint64_t)a ^ (uint64_t)b);
    }
}

/* IEEE binary16 of an integer with |v| < 2048 (exact). */
static uint16_t f16_of_int(int64_t v)
{
    if (v == 0)
        return 0;
    uint16_t sign = v < 0 ? 0x8000 : 0;
    uint64_t a = (uint64_t)(v < 0 ? -v : v);
    int e = 63 - __builtin_clzll(a);
    return (uint16_t)(sign | (uint16_t)((e + 15) << 10) | (uint16_t)((a << (10 - e)) & 0x3ff));
}

/* Element i of a `t` array: the value v (small integers, exact in every type) or, for
 * bit-pattern data, the low bytes of v. */
static void store(const struct type *t, int bits, void *base, size_t i, int64_t v)
{
    unsigned char *p = (unsigned char *)base + i * t->size;
    if (bits || t->kind == K_SINT || t->kind == K_UINT) {
        uint64_t u = (uint64_t)v;
        memcpy(p, &u, t->size); /* little-endian: the low bytes */
        return;
    }
    switch (t->kind) {
    case K_F32: {
        float f = (float)v;
        memcpy(p, &f, 4);
        break;
    }
    case K_F64: {
        double d = (double)v;
        memcpy(p, &d, 8);
        break;
    }
    case K_F16: {
        uint16_t h = f16_of_int(v);
        memcpy(p, &h, 2);
        break;
    }
    default: {
        float f = (float)v;
        uint32_t b;
        memcpy(&b, &f, 4);
        uint16_t h = (uint16_t)(b >> 16); /* exact: |v| <= 256 */
        memcpy(p, &h, 2);
        break;
    }
    }
}

static uint64_t fnv(const void *p, size_t n)
{
    const unsigned char *c = p;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 0x100000001b3ULL;
    return h;
}

/* ---- one case -------------------------------------------------------------------------- */

struct ccase {
    int coll, type, op, inplace, mix, seed, root;
    size_t count; /* allreduce/reduce/bcast: elements; the others: elements per rank */
};

static enum mem_kind send_kind(int mix, int r)
{
    switch (mix) {
    case M_SPLIT: return r % 2 ? MEM_HOST : MEM_DEVICE;
    case M_MANAGED: return MEM_MANAGED;
    case M_POOL: return MEM_POOL;
    default: return MEM_DEVICE;
    }
}

static enum mem_kind recv_kind(int mix, int r)
{
    return mix == M_DEVHOST ? MEM_HOST : send_kind(mix, r);
}

/* Reports a local problem of this rank (printed by this rank, a few per rank). */
static void complain(const struct ccase *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void complain(const struct ccase *c, const char *fmt, ...)
{
    if (printed++ >= MAX_PRINTED)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char root[32] = "";
    if (c->coll == C_REDUCE || c->coll == C_BCAST)
        snprintf(root, sizeof root, " root=%d", c->root);
    printf("FAIL %s %s%s%s%s count=%zu mix=%s%s rank %d: %s\n", coll_names[c->coll],
           types[c->type].name, c->op == OP_NONE ? "" : " ", c->op == OP_NONE ? "" : op_names[c->op],
           c->inplace ? " in-place" : "", c->count, mix_names[c->mix], root, rank, msg);
    fflush(stdout);
}

static void hex(char *out, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", p[n - 1 - i]);
}

/* Compares `n` elements; returns 0 when equal, else reports the first difference. */
static int compare(const struct ccase *c, const char *what, const unsigned char *got,
                   const unsigned char *want, size_t n, size_t esize)
{
    if (memcmp(got, want, n * esize) == 0)
        return 0;
    size_t i = 0, bad = 0;
    while (memcmp(got + i * esize, want + i * esize, esize) == 0)
        i++;
    for (size_t k = i; k < n; k++)
        bad += memcmp(got + k * esize, want + k * esize, esize) != 0;
    char g[20], w[20];
    hex(g, got + i * esize, esize);
    hex(w, want + i * esize, esize);
    complain(c, "%s: %zu of %zu elements wrong, first at %zu: got 0x%s, want 0x%s", what, bad, n,
             i, g, w);
    return 1;
}

struct layout {
    size_t send_elems, recv_elems; /* buffer sizes (in place: recv holds the input) */
    size_t result_at, result_elems; /* where in recv the result is checked */
    int check_recv;                 /* this rank's recv holds a result */
    int identical;                  /* every rank's result must be the same bits */
    int counts[MAX_RANKS], displs[MAX_RANKS];
};

static struct layout plan(const struct ccase *c)
{
    struct layout l;
    memset(&l, 0, sizeof l);
    size_t n = (size_t)nranks, k = c->count;
    size_t total = 0;
    switch (c->coll) {
    case C_ALLREDUCE:
    case C_REDUCE:
        l.send_elems = l.recv_elems = l.result_elems = k;
        l.check_recv = c->coll == C_ALLREDUCE || rank == c->root;
        l.identical = c->coll == C_ALLREDUCE;
        break;
    case C_BCAST:
        l.send_elems = 0;
        l.recv_elems = l.result_elems = k;
        l.check_recv = l.identical = 1;
        break;
    case C_ALLGATHER:
        l.send_elems = k;
        l.recv_elems = l.result_elems = n * k;
        l.check_recv = l.identical = 1;
        break;
    case C_RSB:
        l.send_elems = n * k;
        l.recv_elems = c->inplace ? n * k : k;
        l.result_elems = k;
        l.check_recv = 1;
        break;
    case C_RS:
        for (int r = 0; r < nranks; r++) {
            l.counts[r] = k == 0 || r == 1 ? 0 : (int)k + r;
            l.displs[r] = (int)total;
            total += (size_t)l.counts[r];
        }
        l.send_elems = total;
        l.recv_elems = c->inplace ? total : (size_t)l.counts[rank];
        l.result_elems = (size_t)l.counts[rank];
        l.check_recv = 1;
        break;
    }
    if (c->inplace) /* the input is in recv; at a reduce, only the root passes MPI_IN_PLACE */
        l.send_elems = c->coll == C_REDUCE && rank != c->root ? k : 0;
    return l;
}

/* dst[j] = pat[(start + j) mod PERIOD] for j < n (elements of esize bytes). */
static void tile(void *dst, size_t n, const unsigned char *pat, size_t esize, size_t start)
{
    unsigned char *d = dst;
    size_t k = start % PERIOD;
    while (n) {
        size_t m = PERIOD - k < n ? PERIOD - k : n;
        memcpy(d, pat + k * esize, m * esize);
        d += m * esize;
        n -= m;
        k = 0;
    }
}

/* One period of rank r's input, as stored in memory (pat: PERIOD elements). */
static void input_period(const struct ccase *c, int seed, int r, unsigned char *pat)
{
    const struct type *t = &types[c->type];
    for (size_t k = 0; k < PERIOD; k++)
        store(t, is_bitwise(c->op), pat, k, input(c->op, t, seed, r, k));
}

/* Rank r's input elements [start, start + n) in `dst`. */
static void make_input(const struct ccase *c, int seed, int r, void *dst, size_t n, size_t start)
{
    unsigned char pat[PERIOD * 8];
    input_period(c, seed, r, pat);
    tile(dst, n, pat, types[c->type].size, start);
}

/* The expected result of this rank, `l->result_elems` elements. */
static void make_expected(const struct ccase *c, const struct layout *l, int seed, void *dst)
{
    const struct type *t = &types[c->type];
    size_t k = c->count, es = t->size;
    unsigned char pat[PERIOD * 8];
    if (c->coll == C_BCAST) {
        make_input(c, seed, c->root, dst, l->result_elems, 0);
    } else if (c->coll == C_ALLGATHER) {
        for (int r = 0; r < nranks; r++)
            make_input(c, seed, r, (unsigned char *)dst + (size_t)r * k * es, k, 0);
    } else {
        for (size_t i = 0; i < PERIOD; i++) {
            int64_t v = input(c->op, t, seed, 0, i);
            for (int r = 1; r < nranks; r++)
                v = combine(c->op, v, input(c->op, t, seed, r, i));
            store(t, is_bitwise(c->op), pat, i, v);
        }
        size_t at = 0;
        if (c->coll == C_RSB)
            at = (size_t)rank * k;
        else if (c->coll == C_RS)
            at = (size_t)l->displs[rank];
        tile(dst, l->result_elems, pat, es, at);
    }
}

struct bufs {
    struct gbuf send, recv, arena;
    int have_arena;
};

static CUresult alloc_bufs(const struct ccase *c, const struct layout *l, struct bufs *b)
{
    size_t es = types[c->type].size;
    size_t sb = l->send_elems * es + GUARD, rb = l->recv_elems * es + GUARD;
    memset(b, 0, sizeof *b);
    if (c->mix == M_SUB) {
        /* Odd element offsets, a page apart, in one allocation. */
        size_t soff = 4096 + 3 * es, roff = soff + sb + 4096 + 5 * es;
        CUresult rc = gbuf_alloc(&b->arena, MEM_DEVICE, roff + rb + 64);
        if (rc != CUDA_SUCCESS)
            return rc;
        b->have_arena = 1;
        b->send = gbuf_sub(&b->arena, soff, sb);
        b->recv = gbuf_sub(&b->arena, roff, rb);
        return CUDA_SUCCESS;
    }
    enum mem_kind sk = send_kind(c->mix, rank), rk = recv_kind(c->mix, rank);
    if (c->coll == C_BCAST && rank == c->root)
        rk = sk;
    CUresult rc = gbuf_alloc(&b->send, sk, sb);
    if (rc == CUDA_SUCCESS)
        rc = gbuf_alloc(&b->recv, rk, rb);
    return rc;
}

static void free_bufs(struct bufs *b)
{
    if (b->have_arena) {
        gbuf_free(&b->arena);
    } else {
        gbuf_free(&b->send);
        gbuf_free(&b->recv);
    }
}

static int call(const struct ccase *c, const struct layout *l, struct bufs *b)
{
    MPI_Datatype dt = types[c->type].dt;
    MPI_Op op = c->op == OP_NONE ? MPI_OP_NULL : op_handle(c->op);
    void *s = c->inplace ? MPI_IN_PLACE : b->send.ptr, *r = b->recv.ptr;
    int k = (int)c->count;
    switch (c->coll) {
    case C_ALLREDUCE: return MPI_Allreduce(s, r, k, dt, op, MPI_COMM_WORLD);
    case C_REDUCE:
        if (c->inplace && rank != c->root)
            s = b->send.ptr;
        return MPI_Reduce(s, r, k, dt, op, c->root, MPI_COMM_WORLD);
    case C_BCAST: return MPI_Bcast(r, k, dt, c->root, MPI_COMM_WORLD);
    case C_ALLGATHER: return MPI_Allgather(s, k, dt, r, k, dt, MPI_COMM_WORLD);
    case C_RSB: return MPI_Reduce_scatter_block(s, r, k, dt, op, MPI_COMM_WORLD);
    default: return MPI_Reduce_scatter(s, r, l->counts, dt, op, MPI_COMM_WORLD);
    }
}

/*
 * One round: fill the buffers with seed's inputs, run the collective, check. Returns 0 or 1
 * (this rank saw something wrong); *hash = the result's hash.
 */
static int round_once(const struct ccase *c, const struct layout *l, struct bufs *b, int seed,
                      uint64_t *hash)
{
    size_t es = types[c->type].size;
    size_t sbytes = l->send_elems * es, rbytes = l->recv_elems * es;
    unsigned char *sh = malloc(sbytes + GUARD), *rh = malloc(rbytes + GUARD);
    unsigned char *got = malloc(rbytes + GUARD), *sgot = malloc(sbytes + GUARD);
    unsigned char *want = malloc(l->result_elems * es + 1);
    int bad = 0;
    *hash = 0;
    if (!sh || !rh || !got || !sgot || !want) {
        complain(c, "out of host memory");
        bad = 1;
        goto out;
    }
    memset(sh + sbytes, 0xa5, GUARD);
    memset(rh, 0x5a, rbytes);
    memset(rh + rbytes, 0xa5, GUARD);
    int input_in_recv = c->inplace && !(c->coll == C_REDUCE && rank != c->root);
    if (c->coll == C_BCAST) {
        if (rank == c->root)
            make_input(c, seed, rank, rh, l->recv_elems, 0);
    } else if (input_in_recv && c->coll == C_ALLGATHER) {
        make_input(c, seed, rank, rh + (size_t)rank * c->count * es, c->count, 0);
    } else if (input_in_recv) {
        make_input(c, seed, rank, rh, l->recv_elems, 0);
    } else {
        make_input(c, seed, rank, sh, l->send_elems, 0);
    }
    CUresult cr;
    if ((cr = gbuf_upload(&b->send, sh, sbytes + GUARD)) != CUDA_SUCCESS ||
        (cr = gbuf_upload(&b->recv, rh, rbytes + GUARD)) != CUDA_SUCCESS ||
        (cr = cuda_sync()) != CUDA_SUCCESS) {
        complain(c, "filling the buffers: %s", cu_err(cr));
        bad = 1;
        goto out;
    }
    int rc = call(c, l, b);
    if (rc != MPI_SUCCESS) {
        char es_[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, es_, &len);
        complain(c, "returned %d (%s)", rc, es_);
        bad = 1;
        goto out;
    }
    if ((cr = gbuf_download(got, &b->recv, rbytes + GUARD)) != CUDA_SUCCESS ||
        (cr = gbuf_download(sgot, &b->send, sbytes + GUARD)) != CUDA_SUCCESS) {
        complain(c, "copying the result back: %s", cu_err(cr));
        bad = 1;
        goto out;
    }
    if (l->check_recv) {
        make_expected(c, l, seed, want);
        bad |= compare(c, "result", got + l->result_at * es, want, l->result_elems, es);
        *hash = fnv(got + l->result_at * es, l->result_elems * es);
    }
    if (!(c->coll == C_REDUCE && rank != c->root)) /* a non-root's recvbuf is not MPI's */
        bad |= compare(c, "guard bytes after the receive buffer", got + rbytes, rh + rbytes,
                       GUARD, 1);
    bad |= compare(c, "send buffer (must be unchanged)", sgot, sh, sbytes + GUARD, 1);
out:
    free(sh);
    free(rh);
    free(got);
    free(sgot);
    free(want);
    return bad;
}

/* Runs a case on every rank; returns 1 on rank 0 when it failed anywhere (0 elsewhere). */
static int run_case(const struct ccase *c)
{
    struct layout l = plan(c);
    struct bufs b;
    int bad = 0;
    uint64_t h = 0;
    CUresult cr = alloc_bufs(c, &l, &b);
    if (cr != CUDA_SUCCESS) {
        complain(c, "allocating %s buffers: %s", mix_names[c->mix], cu_err(cr));
        bad = 1;
    } else {
        bad = round_once(c, &l, &b, c->seed, &h);
        if (c->mix == M_REALLOC) {
            void *old_s = b.send.ptr, *old_r = b.recv.ptr;
            free_bufs(&b);
            cr = alloc_bufs(c, &l, &b);
            if (cr != CUDA_SUCCESS) {
                complain(c, "reallocating: %s", cu_err(cr));
                bad = 1;
            } else {
                reallocs += 2;
                same_address += (b.send.ptr == old_s) + (b.recv.ptr == old_r);
                uint64_t h2 = 0;
                bad |= round_once(c, &l, &b, c->seed + 1000, &h2);
                h ^= h2 * 3;
            }
        }
        if (cr == CUDA_SUCCESS)
            free_bufs(&b);
    }
    /* Agree on the outcome: every rank's verdict and result hash. */
    uint64_t mine[2] = {(uint64_t)bad, h}, all[2 * MAX_RANKS];
    MPI_Allgather(mine, 2, MPI_UINT64_T, all, 2, MPI_UINT64_T, MPI_COMM_WORLD);
    int failed = 0;
    for (int r = 0; r < nranks; r++) {
        failed |= all[2 * r] != 0;
        if (l.identical && all[2 * r + 1] != all[1]) {
            if (rank == 0 && !failed)
                complain(c, "rank %d's result differs bitwise from rank 0's", r);
            failed = 1;
        }
    }
    if (verbose && rank == 0)
        printf("%s %s %s %s %s%s count=%zu root=%d\n", failed ? "FAIL" : "ok  ",
               coll_names[c->coll], mix_names[c->mix], types[c->type].name,
               c->op == OP_NONE ? "-" : op_names[c->op], c->inplace ? " in-place" : "", c->count,
               c->root);
    return rank == 0 && failed;
}

/* ---- the matrix ------------------------------------------------------------------------ */

static int in_list(const char *list, const char *name)
{
    if (!list)
        return 1;
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return 1;
        if (!e)
            break;
        p = e + 1;
    }
    return 0;
}

static int op_applies(int op, const struct type *t)
{
    int is_int = t->kind == K_SINT || t->kind == K_UINT;
    return op <= OP_MAX || is_int;
}

/* Whether (type, op) is in the cross-section run for the non-device mixes. */
static int in_cross_section(int ti, int op)
{
    const struct type *t = &types[ti];
    if (!t->quick)
        return 0;
    if (op == OP_SUM || op == OP_NONE)
        return 1;
    return (op == OP_MAX && t->kind == K_F32) || (op == OP_BXOR && t->kind == K_UINT);
}

static double now(void)
{
    return MPI_Wtime();
}

/* Whether every rank can allocate this kind of memory; `why` = the first failure. */
static int kind_available(enum mem_kind k, char *why, size_t len)
{
    struct gbuf g;
    CUresult rc = gbuf_alloc(&g, k, 4096);
    int ok = rc == CUDA_SUCCESS, all = 0;
    if (ok)
        gbuf_free(&g);
    else
        snprintf(why, len, "%s allocation: %s", mem_kind_name(k), cu_err(rc));
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

int main(int argc, char **argv)
{
    size_t large = 1 << 20;
    int quick = 0, ordinal = 0;
    const char *mixes = NULL, *colls = NULL, *env = getenv("HCOMM_GPU_CHECK_DEVICE");
    if (env)
        ordinal = atoi(env);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--host"))
            gpu_host_mode = 1;
        else if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "-v"))
            verbose = 1;
        else if (!strcmp(argv[i], "--large") && i + 1 < argc)
            large = (size_t)strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--mix") && i + 1 < argc)
            mixes = argv[++i];
        else if (!strcmp(argv[i], "--coll") && i + 1 < argc)
            colls = argv[++i];
        else if (!strcmp(argv[i], "--device") && i + 1 < argc)
            ordinal = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: gpu_coll [--host] [--large N] [--quick] [--mix a,b] "
                            "[--coll a,b] [--device K] [-v]\n");
            return 2;
        }
    }
    if (large < 2 || large > (1u << 28)) {
        fprintf(stderr, "gpu_coll: --large must be in [2, 2^28]\n");
        return 2;
    }
    /* CUDA before MPI_Init: no fork may follow a cuInit, and a launcher's MPI_Init may. */
    char why[256] = "";
    int cuda_rc = cuda_open(ordinal, why, sizeof why);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int worst = 0;
    MPI_Allreduce(&cuda_rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (worst != 0) {
        if (cuda_rc != 0 && (worst != GPU_EXIT_SKIP || rank == 0))
            printf("gpu_coll: rank %d: %s\n", rank, why);
        if (rank == 0)
            printf(worst == GPU_EXIT_SKIP ? "no CUDA device: skipped\n"
                                          : "gpu_coll: CUDA unusable on some rank: FAIL\n");
        MPI_Finalize();
        return worst == GPU_EXIT_SKIP ? GPU_EXIT_SKIP : 1;
    }
    if (nranks > MAX_RANKS) {
        if (rank == 0)
            printf("gpu_coll: at most %d ranks (the values are exact up to there)\n", MAX_RANKS);
        MPI_Finalize();
        return 2;
    }
    if (large > (size_t)INT32_MAX / (size_t)nranks)
        large = (size_t)INT32_MAX / (size_t)nranks;

    int avail[NMIXES];
    char unsupported[NMIXES][256];
    for (int m = 0; m < NMIXES; m++) {
        avail[m] = 1;
        unsupported[m][0] = 0;
    }
    avail[M_MANAGED] = kind_available(MEM_MANAGED, unsupported[M_MANAGED], 256);
    avail[M_POOL] = kind_available(MEM_POOL, unsupported[M_POOL], 256);
    if (rank == 0) {
        printf("gpu_coll: %d ranks, %s, large count %zu%s\n", nranks, gpu_name, large,
               quick ? ", --quick (device mix only)" : "");
        fflush(stdout);
    }

    long pass = 0, fail = 0, seed = 1;
    for (int coll = 0; coll < NCOLLS; coll++) {
        if (!in_list(colls, coll_names[coll]))
            continue;
        for (int mix = 0; mix < NMIXES; mix++) {
            if (!in_list(mixes, mix_names[mix]) || (quick && mix != M_DEVICE))
                continue;
            if (!avail[mix]) {
                if (rank == 0)
                    printf("  %-20s %-8s unsupported (%s)\n", coll_names[coll], mix_names[mix],
                           unsupported[mix][0] ? unsupported[mix] : "on some rank");
                continue;
            }
            long p0 = pass, f0 = fail;
            double t0 = now();
            for (int ti = 0; ti < NTYPES; ti++) {
                int nop = coll == C_BCAST || coll == C_ALLGATHER;
                for (int op = nop ? OP_NONE : 0; op <= (nop ? OP_NONE : NOPS - 1); op++) {
                    if (!nop && !op_applies(op, &types[ti]))
                        continue;
                    if (mix != M_DEVICE && !in_cross_section(ti, op))
                        continue;
                    for (int inplace = 0; inplace <= (coll == C_BCAST ? 0 : 1); inplace++) {
                        size_t counts[4] = {0, 1, 4099, large};
                        for (int ci = 0; ci < 4; ci++) {
                            struct ccase c = {coll, ti, op, inplace, mix, (int)(seed % 100000),
                                              (int)(seed % 2) ? nranks - 1 : 0, counts[ci]};
                            if (coll == C_ALLGATHER || coll == C_RSB || coll == C_RS)
                                c.count = ci == 3 ? large / (size_t)nranks + 1 : counts[ci];
                            seed++;
                            int f = run_case(&c);
                            fail += f;
                            pass += rank == 0 && !f;
                        }
                    }
                }
            }
            if (rank == 0) {
                printf("  %-20s %-8s %5ld cases  PASS %5ld  FAIL %ld  (%.1f s)\n",
                       coll_names[coll], mix_names[mix], pass - p0 + fail - f0, pass - p0,
                       fail - f0, now() - t0);
                fflush(stdout);
            }
        }
    }
    long r_all = 0, s_all = 0;
    MPI_Reduce(&reallocs, &r_all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&same_address, &s_all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (r_all)
            printf("  realloc: the freed address came back in %ld of %ld reallocations\n", s_all,
                   r_all);
        printf("gpu_coll: PASS %ld FAIL %ld", pass, fail);
        int any = 0;
        for (int m = 0; m < NMIXES; m++)
            if (!avail[m] && in_list(mixes, mix_names[m]) && !quick)
                printf("%s%s", any++ ? "," : " (unsupported: ", mix_names[m]);
        printf("%s\n", any ? ")" : "");
        fflush(stdout);
    }
    int failed = fail > 0;
    MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return failed;
}
