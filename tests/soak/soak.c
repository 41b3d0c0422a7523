/*
 * soak.c - the load test: many collectives of random kind, size, datatype, op, root and
 * in-place choice, every result verified exactly, memory use checked to stay flat.
 *
 * Each iteration draws its call from a generator seeded by (seed, iteration), identically on
 * every rank: the collective (Allreduce, Reduce, Bcast, Allgather, Reduce_scatter_block,
 * Reduce_scatter, Barrier, Gather, Scatter, Alltoall, Allgatherv), a message size log-uniform
 * in 1 B .. --max-bytes (and 0 B one time in 32), the datatype (int8..int64, uint8..uint64,
 * float, double), the op (SUM, PROD, MAX, MIN), the root and MPI_IN_PLACE or not.
 * Rank r's input element j is a hash of (iteration, r, j): integers use their whole range
 * (SUM and PROD wrap, predicted in unsigned arithmetic of the same width), floating-point
 * values are integers in [-8, 7], so every sum and product over a few ranks is exact in any
 * order. Every rank recomputes the expected value of every element it
 * receives and compares it; the bytes just past every result (and the gaps of Allgatherv, and
 * a Reduce non-root's receive buffer) must be untouched.
 *
 * Memory: the buffers are allocated and touched once, a warm-up runs every collective at the
 * largest size from every root, then --warmup random iterations; the resident set size
 * (/proc/self/statm) at that point is the baseline, and at the end it must be within
 * --rss-slack percent (default 10) of it on every rank.
 *
 * Usage: hcomm run -n 4 soak [--iters N] [--seed S] [--warmup K] [--max-bytes B]
 *                            [--rss-slack PCT] [--progress N]
 * The seed (default: from the clock, chosen by rank 0) is printed first; rerun with --seed to
 * replay a run, and a failure line names the iteration, the call and its arguments.
 * Exit status 0 only when nothing was wrong and memory stayed flat; "FAIL" lines otherwise.
 * scripts/soak.sh runs the full test (100 000 iterations, 4 ranks) and `--short` the CI one.
 */
#include <mpi.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define GUARD 64
#define SENT 0xA5
#define MAX_REPORTS 10

/* ---------------------------------------------------------------------------------------- */
/* Deterministic randomness                                                                 */

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Element j of rank r's input in the iteration with this salt. */
static inline uint32_t mix(uint32_t salt, uint32_t r, uint64_t j) {
    uint32_t x = (uint32_t)j * 0x9E3779B1u + salt + r * 0x85EBCA77u + (uint32_t)(j >> 32);
    x ^= x >> 15;
    x *= 0x2C1B3C6Du;
    x ^= x >> 12;
    x *= 0x297A2D39u;
    x ^= x >> 15;
    return x;
}

/* ---------------------------------------------------------------------------------------- */
/* Datatypes and ops                                                                        */

enum op { OP_SUM, OP_PROD, OP_MAX, OP_MIN, NOPS };
static const char *op_name[NOPS] = {"SUM", "PROD", "MAX", "MIN"};
static MPI_Op op_handle(int o) {
    switch (o) {
    case OP_SUM: return MPI_SUM;
    case OP_PROD: return MPI_PROD;
    case OP_MAX: return MPI_MAX;
    default: return MPI_MIN;
    }
}

/* Per type: fill a buffer with rank r's elements [j0, j0+cnt); check a buffer against the
 * reduction over ranks 0..n-1 of elements [j0, j0+cnt) (n = 0: against rank `r`'s own
 * elements, a copy). Return the number of wrong elements; the first is described in `why`. */
typedef void (*fill_fn)(void *buf, uint32_t salt, int r, uint64_t j0, size_t cnt);
typedef size_t (*check_fn)(const void *buf, uint32_t salt, int r, int n, int op, uint64_t j0,
                           size_t cnt, char *why, size_t whylen);

#define INT_VAL(T, x) ((T)(sizeof(T) == 8 ? (((uint64_t)(x) << 32) | ((x) * 0x27D4EB2Fu)) : (x)))
#define FLT_VAL(T, x) ((T)((int)((x) >> 28) - 8))

#define DEFINE_TYPE(NAME, T, VAL, ISFLT, FMT, CAST)                                           \
    static void fill_##NAME(void *buf, uint32_t salt, int r, uint64_t j0, size_t cnt) {       \
        T *b = buf;                                                                           \
        for (size_t k = 0; k < cnt; k++) b[k] = VAL(T, mix(salt, (uint32_t)r, j0 + k));       \
    }                                                                                         \
    static size_t check_##NAME(const void *buf, uint32_t salt, int r, int n, int op,          \
                               uint64_t j0, size_t cnt, char *why, size_t whylen) {           \
        const T *b = buf;                                                                     \
        size_t bad = 0;                                                                       \
        for (size_t k = 0; k < cnt; k++) {                                                    \
            uint64_t j = j0 + k;                                                              \
            T want;                                                                           \
            if (n == 0) {                                                                     \
                want = VAL(T, mix(salt, (uint32_t)r, j));                                     \
            } else {                                                                          \
                want = VAL(T, mix(salt, 0, j));                                               \
                for (int q = 1; q < n; q++) {                                                 \
                    T v = VAL(T, mix(salt, (uint32_t)q, j));                                  \
                    switch (op) {                                                             \
                    case OP_SUM:                                                              \
                        want = ISFLT ? (T)(want + v) : (T)((uint64_t)want + (uint64_t)v);     \
                        break;                                                                \
                    case OP_PROD:                                                             \
                        want = ISFLT ? (T)(want * v) : (T)((uint64_t)want * (uint64_t)v);     \
                        break;                                                                \
                    case OP_MAX: want = v > want ? v : want; break;                           \
                    default: want = v < want ? v : want; break;                               \
                    }                                                                         \
                }                                                                             \
            }                                                                                 \
            if (b[k] != want) {                                                               \
                if (bad == 0)                                                                 \
                    snprintf(why, whylen, "index %zu got " FMT " expected " FMT, (size_t)j,   \
                             (CAST)b[k], (CAST)want);                                         \
                bad++;                                                                        \
            }                                                                                 \
        }                                                                                     \
        return bad;                                                                           \
    }

DEFINE_TYPE(i8, int8_t, INT_VAL, 0, "%lld", long long)
DEFINE_TYPE(i16, int16_t, INT_VAL, 0, "%lld", long long)
DEFINE_TYPE(i32, int32_t, INT_VAL, 0, "%lld", long long)
DEFINE_TYPE(i64, int64_t, INT_VAL, 0, "%lld", long long)
DEFINE_TYPE(u8, uint8_t, INT_VAL, 0, "%llu", unsigned long long)
DEFINE_TYPE(u16, uint16_t, INT_VAL, 0, "%llu", unsigned long long)
DEFINE_TYPE(u32, uint32_t, INT_VAL, 0, "%llu", unsigned long long)
DEFINE_TYPE(u64, uint64_t, INT_VAL, 0, "%llu", unsigned long long)
DEFINE_TYPE(f32, float, FLT_VAL, 1, "%g", double)
DEFINE_TYPE(f64, double, FLT_VAL, 1, "%g", double)

typedef struct {
    const char *name;
    MPI_Datatype dt;
    size_t size;
    fill_fn fill;
    check_fn check;
} tinfo;

#define T(NAME, MPIT, CT) {#MPIT, MPIT, sizeof(CT), fill_##NAME, check_##NAME}
static tinfo types[] = {
    T(i8, MPI_INT8_T, int8_t),     T(i16, MPI_INT16_T, int16_t),   T(i32, MPI_INT32_T, int32_t),
    T(i64, MPI_INT64_T, int64_t),  T(u8, MPI_UINT8_T, uint8_t),    T(u16, MPI_UINT16_T, uint16_t),
    T(u32, MPI_UINT32_T, uint32_t), T(u64, MPI_UINT64_T, uint64_t), T(f32, MPI_FLOAT, float),
    T(f64, MPI_DOUBLE, double),
};
#define NTYPES ((int)(sizeof(types) / sizeof(types[0])))

/* ---------------------------------------------------------------------------------------- */
/* One call                                                                                 */

enum coll {
    C_ALLREDUCE, C_REDUCE, C_BCAST, C_ALLGATHER, C_RSB, C_RS, C_BARRIER,
    C_GATHER, C_SCATTER, C_ALLTOALL, C_ALLGATHERV, NCOLLS
};
static const char *coll_name[NCOLLS] = {
    "MPI_Allreduce", "MPI_Reduce", "MPI_Bcast", "MPI_Allgather", "MPI_Reduce_scatter_block",
    "MPI_Reduce_scatter", "MPI_Barrier", "MPI_Gather", "MPI_Scatter", "MPI_Alltoall",
    "MPI_Allgatherv"};

typedef struct {
    int coll, type, op, root, inplace;
    size_t bytes, count; /* the drawn size; count = its element count */
    uint32_t salt;
} call_t;

static int rank, nranks;
static unsigned char *sbuf, *rbuf;
static size_t cap; /* bytes of each buffer, guard excluded */
static int *counts, *displs;
static long long wrong_calls, wrong_elems, calls_done;
static int reports;

static void describe(const call_t *c, long long it, char *out, size_t len) {
    snprintf(out, len, "iteration %lld: %s(type=%s, op=%s, count=%zu, bytes=%zu, root=%d, inplace=%d)",
             it, coll_name[c->coll], types[c->type].name, op_name[c->op], c->count, c->bytes,
             c->root, c->inplace);
}

static void fail(const call_t *c, long long it, size_t bad, const char *what) {
    wrong_calls++;
    wrong_elems += (long long)bad;
    if (reports++ < MAX_REPORTS) {
        char d[256];
        describe(c, it, d, sizeof d);
        printf("FAIL soak rank %d %s: %zu wrong; %s\n", rank, d, bad, what);
        fflush(stdout);
    }
}

static size_t guard_check(const unsigned char *p, size_t len) {
    size_t bad = 0;
    for (size_t k = 0; k < len; k++) bad += p[k] != SENT;
    return bad;
}

/* Draws iteration `it`'s call; `maxb` is the largest message. */
static call_t draw(uint64_t seed, long long it, size_t maxb) {
    uint64_t s = seed ^ ((uint64_t)it * 0xD1B54A32D192ED03ull);
    call_t c;
    c.coll = (int)(splitmix(&s) % NCOLLS);
    c.type = (int)(splitmix(&s) % NTYPES);
    c.op = (int)(splitmix(&s) % NOPS);
    c.root = (int)(splitmix(&s) % (uint64_t)nranks);
    c.inplace = (int)(splitmix(&s) & 1);
    uint64_t u = splitmix(&s);
    if (u % 32 == 0) {
        c.bytes = 0;
    } else {
        double x = (double)(u >> 11) / 9007199254740992.0; /* [0, 1) */
        c.bytes = (size_t)exp2(x * log2((double)maxb + 1.0));
        if (c.bytes > maxb) c.bytes = maxb;
    }
    c.count = c.bytes / types[c.type].size;
    c.salt = (uint32_t)splitmix(&s);
    /* Uneven counts for Reduce_scatter / Allgatherv: a random split of count, gaps of 0..3
     * elements between Allgatherv's blocks. */
    size_t left = c.count, at = 0;
    for (int r = 0; r < nranks; r++) {
        size_t k = r == nranks - 1 ? left : (size_t)(splitmix(&s) % (left + 1));
        if (c.coll == C_ALLGATHERV && r == nranks - 1) k = left;
        counts[r] = (int)k;
        left -= k;
    }
    for (int r = 0; r < nranks; r++) {
        size_t gap = c.coll == C_ALLGATHERV ? (size_t)(splitmix(&s) % 4) : 0;
        displs[r] = (int)at;
        at += (size_t)counts[r] + gap;
    }
    /* Allgatherv's gaps must fit: shrink the last block if needed. */
    if (c.coll == C_ALLGATHERV) {
        size_t total = (size_t)displs[nranks - 1] + (size_t)counts[nranks - 1];
        size_t maxc = cap / types[c.type].size;
        if (total > maxc) counts[nranks - 1] -= (int)(total - maxc);
        if (counts[nranks - 1] < 0) counts[nranks - 1] = 0;
    }
    return c;
}

/* Runs and checks one call. */
static void run_call(const call_t *c, long long it) {
    const tinfo *t = &types[c->type];
    const size_t es = t->size, n = (size_t)nranks, me = (size_t)rank;
    const size_t blk = c->count / n; /* per-rank block of the block collectives */
    MPI_Op op = op_handle(c->op);
    MPI_Comm w = MPI_COMM_WORLD;
    char why[200] = "";
    size_t bad = 0, rlen = 0; /* rlen: bytes of the result region (guard follows) */
    int rc = MPI_SUCCESS;
    int in = c->inplace;

    switch (c->coll) {
    case C_ALLREDUCE:
        rlen = c->count * es;
        memset(rbuf, SENT, rlen + GUARD);
        t->fill(in ? rbuf : sbuf, c->salt, rank, 0, c->count);
        rc = MPI_Allreduce(in ? MPI_IN_PLACE : sbuf, rbuf, (int)c->count, t->dt, op, w);
        bad = t->check(rbuf, c->salt, rank, nranks, c->op, 0, c->count, why, sizeof why);
        break;
    case C_REDUCE: {
        int root = rank == c->root;
        rlen = c->count * es;
        memset(rbuf, SENT, rlen + GUARD);
        t->fill(in && root ? rbuf : sbuf, c->salt, rank, 0, c->count);
        rc = MPI_Reduce(in && root ? MPI_IN_PLACE : sbuf, rbuf, (int)c->count, t->dt, op, c->root, w);
        if (root)
            bad = t->check(rbuf, c->salt, rank, nranks, c->op, 0, c->count, why, sizeof why);
        else if ((bad = guard_check(rbuf, rlen)) != 0)
            snprintf(why, sizeof why, "a non-root's receive buffer was written");
        break;
    }
    case C_BCAST:
        rlen = c->count * es;
        memset(rbuf, SENT, rlen + GUARD);
        if (rank == c->root) t->fill(rbuf, c->salt, rank, 0, c->count);
        rc = MPI_Bcast(rbuf, (int)c->count, t->dt, c->root, w);
        bad = t->check(rbuf, c->salt, c->root, 0, 0, 0, c->count, why, sizeof why);
        break;
    case C_ALLGATHER:
        rlen = blk * n * es;
        memset(rbuf, SENT, rlen + GUARD);
        t->fill(in ? rbuf + me * blk * es : sbuf, c->salt, rank, 0, blk);
        rc = MPI_Allgather(in ? MPI_IN_PLACE : sbuf, (int)blk, t->dt, rbuf, (int)blk, t->dt, w);
        for (size_t r = 0; r < n && !bad; r++)
            bad = t->check(rbuf + r * blk * es, c->salt, (int)r, 0, 0, 0, blk, why, sizeof why);
        break;
    case C_RSB:
        rlen = (in ? blk * n : blk) * es;
        memset(rbuf, SENT, rlen + GUARD);
        t->fill(in ? rbuf : sbuf, c->salt, rank, 0, blk * n);
        rc = MPI_Reduce_scatter_block(in ? MPI_IN_PLACE : sbuf, rbuf, (int)blk, t->dt, op, w);
        bad = t->check(rbuf, c->salt, rank, nranks, c->op, me * blk, blk, why, sizeof why);
        break;
    case C_RS:
        rlen = (in ? c->count : (size_t)counts[me]) * es;
        memset(rbuf, SENT, rlen + GUARD);
        t->fill(in ? rbuf : sbuf, c->salt, rank, 0, c->count);
        rc = MPI_Reduce_scatter(in ? MPI_IN_PLACE : sbuf, rbuf, counts, t->dt, op, w);
        {
            size_t j0 = 0;
            for (size_t r = 0; r < me; r++) j0 += (size_t)counts[r];
            bad = t->check(rbuf, c->salt, rank, nranks, c->op, j0, (size_t)counts[me], why, sizeof why);
        }
        break;
    case C_BARRIER:
        memset(rbuf, SENT, GUARD);
        rc = MPI_Barrier(w);
        break;
    case C_GATHER: {
        int root = rank == c->root;
        rlen = root ? blk * n * es : 0;
        memset(rbuf, SENT, rlen + GUARD);
        t->fill(in && root ? rbuf + me * blk * es : sbuf, c->salt, rank, 0, blk);
        rc = MPI_Gather(in && root ? MPI_IN_PLACE : sbuf, (int)blk, t->dt, rbuf, (int)blk, t->dt,
                        c->root, w);
        for (size_t r = 0; root && r < n && !bad; r++)
            bad = t->check(rbuf + r * blk * es, c->salt, (int)r, 0, 0, 0, blk, why, sizeof why);
        break;
    }
    case C_SCATTER: {
        int root = rank == c->root;
        /* In place, the root's own block stays where it is in the send buffer. */
        rlen = in && root ? 0 : blk * es;
        memset(rbuf, SENT, rlen + GUARD);
        if (root) t->fill(sbuf, c->salt, rank, 0, blk * n);
        rc = MPI_Scatter(sbuf, (int)blk, t->dt, in && root ? MPI_IN_PLACE : rbuf, (int)blk, t->dt,
                         c->root, w);
        if (in && root)
            bad = t->check(sbuf + me * blk * es, c->salt, c->root, 0, 0, me * blk, blk, why, sizeof why);
        else
            bad = t->check(rbuf, c->salt, c->root, 0, 0, me * blk, blk, why, sizeof why);
        break;
    }
    case C_ALLTOALL:
        rlen = blk * n * es;
        memset(rbuf, SENT, rlen + GUARD);
        t->fill(in ? rbuf : sbuf, c->salt, rank, 0, blk * n);
        rc = MPI_Alltoall(in ? MPI_IN_PLACE : sbuf, (int)blk, t->dt, rbuf, (int)blk, t->dt, w);
        for (size_t r = 0; r < n && !bad; r++)
            bad = t->check(rbuf + r * blk * es, c->salt, (int)r, 0, 0, me * blk, blk, why, sizeof why);
        break;
    case C_ALLGATHERV: {
        rlen = ((size_t)displs[n - 1] + (size_t)counts[n - 1]) * es;
        memset(rbuf, SENT, rlen + GUARD);
        t->fill(in ? rbuf + (size_t)displs[me] * es : sbuf, c->salt, rank, 0, (size_t)counts[me]);
        rc = MPI_Allgatherv(in ? MPI_IN_PLACE : sbuf, counts[me], t->dt, rbuf, counts, displs, t->dt, w);
        for (size_t r = 0; r < n && !bad; r++) {
            bad = t->check(rbuf + (size_t)displs[r] * es, c->salt, (int)r, 0, 0, 0, (size_t)counts[r],
                           why, sizeof why);
            size_t end = ((size_t)displs[r] + (size_t)counts[r]) * es;
            size_t next = r + 1 < n ? (size_t)displs[r + 1] * es : end;
            if (!bad && (bad = guard_check(rbuf + end, next - end)) != 0)
                snprintf(why, sizeof why, "the gap after block %zu was written", r);
        }
        break;
    }
    }
    calls_done++;
    if (rc != MPI_SUCCESS) {
        fail(c, it, 1, "the call returned an error");
        return;
    }
    if (bad) {
        fail(c, it, bad, why);
        return;
    }
    if ((bad = guard_check(rbuf + rlen, GUARD)) != 0)
        fail(c, it, bad, "bytes past the result were written");
}

/* ---------------------------------------------------------------------------------------- */

/* Resident set size in KiB (/proc/self/statm); `shared` gets its file-backed and shared-memory
 * part, which tells a heap leak (the rest) from pages of shared-memory slots touched late. */
static long rss_kib_split(long *shared) {
    long pages = 0, res = -1, shr = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return -1;
    if (fscanf(f, "%ld %ld %ld", &pages, &res, &shr) != 3) res = -1;
    fclose(f);
    long kib = sysconf(_SC_PAGESIZE) / 1024;
    if (shared) *shared = shr * kib;
    return res < 0 ? -1 : res * kib;
}

static long rss_kib(void) { return rss_kib_split(NULL); }

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    long long iters = 100000, warmup = -1, progress = 0;
    unsigned long long seed = 0;
    int have_seed = 0;
    size_t maxb = 4u << 20;
    double slack = 10.0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--iters")) iters = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--seed")) { seed = strtoull(argv[i + 1], NULL, 0); have_seed = 1; }
        else if (!strcmp(argv[i], "--warmup")) warmup = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--max-bytes")) maxb = (size_t)atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--rss-slack")) slack = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--progress")) progress = atoll(argv[i + 1]);
        else {
            if (rank == 0) fprintf(stderr, "soak: unknown option %s\n", argv[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (warmup < 0) warmup = iters / 10 < 1000 ? iters / 10 : 1000;
    if (!have_seed) seed = (unsigned long long)time(NULL) ^ ((unsigned long long)getpid() << 32);
    MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD); /* rank 0's choice */
    if (rank == 0) {
        printf("soak: %d ranks, %lld iterations, seed %llu (rerun with --seed %llu), max %zu bytes, warm-up %lld\n",
               nranks, iters, seed, seed, maxb, warmup);
        fflush(stdout);
    }

    cap = maxb;
    sbuf = malloc(cap + GUARD);
    rbuf = malloc(cap + GUARD);
    counts = calloc((size_t)nranks, sizeof(int));
    displs = calloc((size_t)nranks, sizeof(int));
    if (!sbuf || !rbuf || !counts || !displs) {
        printf("FAIL soak rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(sbuf, 0, cap + GUARD);
    memset(rbuf, 0, cap + GUARD);

    /* Warm-up: every collective at the largest size from every root, in and out of place. */
    double t0 = now();
    for (int k = 0; k < NCOLLS; k++)
        for (int root = 0; root < nranks; root++)
            for (int in = 0; in < 2; in++) {
                call_t c = draw(seed, -1, maxb);
                c.coll = k;
                c.type = NTYPES - 1;
                c.op = OP_SUM;
                c.root = root;
                c.inplace = in;
                c.bytes = maxb;
                c.count = maxb / types[c.type].size;
                for (int r = 0; r < nranks; r++) {
                    counts[r] = (int)(c.count / (size_t)nranks);
                    displs[r] = r * counts[r];
                }
                run_call(&c, -1);
            }
    long rss_warm = -1, shr_warm = 0, shr_end = 0;
    double t_warm = 0;
    for (long long it = 0; it < iters; it++) {
        if (it == warmup) {
            rss_warm = rss_kib_split(&shr_warm);
            t_warm = now();
        }
        call_t c = draw(seed, it, maxb);
        run_call(&c, it);
        if (progress > 0 && rank == 0 && (it + 1) % progress == 0) {
            printf("soak: %lld iterations, %.1f s, RSS %ld KiB\n", it + 1, now() - t0, rss_kib());
            fflush(stdout);
        }
    }
    if (rss_warm < 0) rss_warm = rss_kib_split(&shr_warm);
    long rss_end = rss_kib_split(&shr_end);
    double t_end = now();

    /* Summary: wrong results and RSS of every rank. */
    long long mine[3] = {wrong_calls, wrong_elems, calls_done}, tot[3];
    MPI_Allreduce(mine, tot, 3, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    long rss[4] = {rss_warm, rss_end, shr_warm, shr_end};
    long *all = malloc(sizeof(long) * 4 * (size_t)nranks);
    MPI_Gather(rss, 4, MPI_LONG, all, 4, MPI_LONG, 0, MPI_COMM_WORLD);
    int rss_bad = rss_end > rss_warm + (long)(rss_warm * slack / 100.0);
    int any_rss_bad = 0;
    MPI_Allreduce(&rss_bad, &any_rss_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int r = 0; r < nranks; r++)
            printf("soak: rank %d RSS %ld KiB after warm-up, %ld KiB at the end (%+.1f%%; "
                   "shared part %ld -> %ld KiB)\n",
                   r, all[4 * r], all[4 * r + 1],
                   100.0 * (double)(all[4 * r + 1] - all[4 * r]) / (double)all[4 * r],
                   all[4 * r + 2], all[4 * r + 3]);
        printf("soak: %lld iterations (%lld calls over all ranks) in %.1f s (%.1f s after warm-up), "
               "%lld wrong results (%lld elements), seed %llu\n",
               iters, tot[2], t_end - t0, t_end - t_warm, tot[0], tot[1], seed);
        if (any_rss_bad)
            printf("FAIL soak: RSS grew by more than %.0f%% after warm-up\n", slack);
        if (tot[0])
            printf("FAIL soak: %lld wrong results (seed %llu)\n", tot[0], seed);
        if (!tot[0] && !any_rss_bad) printf("soak: PASS\n");
        fflush(stdout);
    }
    free(all);
    int ok = !tot[0] && !any_rss_bad;
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return ok ? 0 : 1;
}
