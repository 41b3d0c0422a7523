/*
 * coll2_body.h - the body shared by coll2.c (int counts) and coll2_c.c (MPI_Count counts,
 * MPI_Aint displacements, _c functions): MPI_Gather(v), MPI_Scatter(v), MPI_Allgatherv,
 * MPI_Alltoall(v), MPI_Scan, MPI_Exscan.
 *
 * The includer defines GATHER GATHERV SCATTER SCATTERV ALLGATHERV ALLTOALL ALLTOALLV SCAN
 * EXSCAN, COUNT_T (type of counts), DISP_T (type of displacement arrays) and PROG.
 *
 * Data-movement checks are type-agnostic byte images: every element a rank sends is filled
 * from a hash of (source rank, element number, byte, call number); the receive buffer sits
 * between guard bytes, and the whole image (guards, gaps between blocks, blocks) is compared
 * with a model built the same way, so misplaced, missing or stray bytes all show. Covered:
 * int, float, double, uint8, MPI_2INT; counts 0, 1, 7 and ~100k (uneven per rank, zero for
 * some ranks in the v-variants); every root; in place and not; displacements contiguous,
 * reversed with gaps, and negative (the buffer pointer in the middle); a seeded random
 * Alltoallv count matrix (symmetric for in place); and a communicator whose rank order is
 * the reverse of MPI_COMM_WORLD's. Scan/Exscan check exact prefix values for int SUM/MAX,
 * double SUM, float MIN, uint8 SUM (wrapping), MPI_2INT MINLOC, MPI_DOUBLE_INT MAXLOC.
 * Built against hcomm (HCOMM_MPI_H), it also checks argument errors (MPI_ERRORS_RETURN):
 * the error class, and that a rejected call wrote nothing.
 *
 * Output: failures as "FAIL <prog>: ..." lines from the failing rank; rank 0 prints a
 * summary line that depends only on the number of ranks.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define G 64          /* guard bytes on each side of every receive buffer */
#define GUARD 0xA5
#define LARGE 100000L /* elements in the "large" count class */

static int rank, size, fails, checks, salt;
static MPI_Comm comm;
static const char *comm_name = "world";

typedef struct {
    const char *name;
    MPI_Datatype t;
    int ext;
} ty_t;

static ty_t mtypes[] = {
    { "int", MPI_INT, 4 },        { "float", MPI_FLOAT, 4 }, { "double", MPI_DOUBLE, 8 },
    { "uint8", MPI_UINT8_T, 1 }, { "2int", MPI_2INT, 8 },
};
#define NMTYPES (int)(sizeof mtypes / sizeof mtypes[0])
static const long classes[] = { 0, 1, 7, LARGE };
#define NCLASSES 4

static unsigned char pat(int src, long e, int b, int s)
{
    uint32_t x = (uint32_t)src * 0x9E3779B1u ^ (uint32_t)e * 0x85EBCA77u ^ (uint32_t)b * 0xC2B2AE3Du ^
                 (uint32_t)s * 0x27D4EB2Fu;
    x ^= x >> 15;
    x *= 0x2C1B3C6Du;
    x ^= x >> 12;
    return (unsigned char)(x >> 8);
}

/* n elements of `src`'s stream, starting at element `first`. */
static void fill(unsigned char *p, int src, long first, long n, int ext)
{
    for (long e = 0; e < n; e++)
        for (int b = 0; b < ext; b++)
            p[e * ext + b] = pat(src, first + e, b, salt);
}

/* A buffer of n bytes between guards: returns the base; the user part starts at base + G. */
static unsigned char *gbuf(size_t n)
{
    unsigned char *b = malloc(n + 2 * G);
    if (!b) {
        printf("FAIL " PROG ": out of memory\n");
        exit(1);
    }
    memset(b, GUARD, n + 2 * G);
    return b;
}

static void compare(const char *what, int rc, const unsigned char *got, const unsigned char *exp, size_t n)
{
    checks++;
    if (rc != MPI_SUCCESS) {
        printf("FAIL " PROG ": rank %d: %s: rc=%d\n", rank, what, rc);
        fails++;
        return;
    }
    if (got && memcmp(got, exp, n) != 0) {
        size_t i = 0;
        while (got[i] == exp[i])
            i++;
        printf("FAIL " PROG ": rank %d: %s: byte %ld of the buffer (guards %d) is %02x, expected %02x\n", rank,
               what, (long)i - G, G, got[i], exp[i]);
        fails++;
    }
}

/* Per-rank counts of class `cls`: uneven, zero for some ranks. */
static long vcount(long cls, int p)
{
    switch (cls) {
    case 0: return 0;
    case 1: return p % 2 == 0;
    case 7: return (p * 5 + 3) % 8;
    default: return p % 3 == 1 ? 0 : LARGE - p * 1000;
    }
}

/* Displacements for counts c[]: mode 0 contiguous in rank order, 1 reversed with gaps, 2 in
 * rank order with gaps. Returns the elements the layout spans. */
static long layout(const long *c, int mode, long *d)
{
    long at = mode ? 2 : 0;
    for (int k = 0; k < size; k++) {
        int p = mode == 1 ? size - 1 - k : k;
        d[p] = at;
        at += c[p] + (mode ? 3 : 0);
    }
    return at;
}

static const char *mode_name[] = { "contiguous", "reversed+gaps", "gaps" };

/* The arrays as the function under test takes them; `shift` is subtracted from every
 * displacement (negative displacements). */
static void to_arrays(const long *c, const long *d, long shift, COUNT_T *cc, DISP_T *dd)
{
    for (int p = 0; p < size; p++) {
        cc[p] = (COUNT_T)c[p];
        dd[p] = (DISP_T)(d[p] - shift);
    }
}

/* ------------------------------------------------------------------------------------------ */

static void t_gather(const ty_t *t, long cnt, int root, int inplace)
{
    char what[200];
    snprintf(what, sizeof what, "Gather %s count=%ld root=%d%s comm=%s", t->name, cnt, root,
             inplace ? " in-place" : "", comm_name);
    salt++;
    size_t blk = (size_t)cnt * t->ext, n = blk * size;
    unsigned char *sb = malloc(blk + 1), *rb = NULL, *ex = NULL;
    fill(sb, rank, 0, cnt, t->ext);
    int me = rank == root;
    if (me) {
        rb = gbuf(n);
        ex = gbuf(n);
        for (int p = 0; p < size; p++)
            fill(ex + G + p * blk, p, 0, cnt, t->ext);
        if (inplace)
            fill(rb + G + root * blk, root, 0, cnt, t->ext);
    }
    int rc = GATHER(me && inplace ? MPI_IN_PLACE : sb, (COUNT_T)cnt, t->t, me ? rb + G : NULL, (COUNT_T)cnt,
                    t->t, root, comm);
    compare(what, rc, rb, ex, n + 2 * G);
    free(sb);
    free(rb);
    free(ex);
}

static void t_gatherv(const ty_t *t, long cls, int root, int inplace, int mode, int negative)
{
    char what[200];
    snprintf(what, sizeof what, "Gatherv %s class=%ld root=%d%s %s%s comm=%s", t->name, cls, root,
             inplace ? " in-place" : "", mode_name[mode], negative ? " negative-displs" : "", comm_name);
    salt++;
    long c[64], d[64];
    COUNT_T cc[64];
    DISP_T dd[64];
    for (int p = 0; p < size; p++)
        c[p] = vcount(cls, p);
    long span = layout(c, mode, d);
    size_t n = (size_t)span * t->ext;
    unsigned char *sb = malloc((size_t)c[rank] * t->ext + 1), *rb = NULL, *ex = NULL;
    fill(sb, rank, 0, c[rank], t->ext);
    int me = rank == root;
    long shift = negative ? span : 0;
    to_arrays(c, d, shift, cc, dd);
    if (me) {
        rb = gbuf(n);
        ex = gbuf(n);
        for (int p = 0; p < size; p++)
            fill(ex + G + d[p] * t->ext, p, 0, c[p], t->ext);
        if (inplace)
            fill(rb + G + d[root] * t->ext, root, 0, c[root], t->ext);
    }
    int rc = GATHERV(me && inplace ? MPI_IN_PLACE : sb, (COUNT_T)c[rank], t->t,
                     me ? rb + G + shift * t->ext : NULL, cc, dd, t->t, root, comm);
    compare(what, rc, rb, ex, n + 2 * G);
    free(sb);
    free(rb);
    free(ex);
}

static void t_scatter(const ty_t *t, long cnt, int root, int inplace)
{
    char what[200];
    snprintf(what, sizeof what, "Scatter %s count=%ld root=%d%s comm=%s", t->name, cnt, root,
             inplace ? " in-place" : "", comm_name);
    salt++;
    size_t blk = (size_t)cnt * t->ext, n = blk * size;
    int me = rank == root;
    unsigned char *sb = NULL, *sx = NULL, *rb = gbuf(blk), *ex = gbuf(blk);
    if (me) {
        sb = gbuf(n);
        sx = gbuf(n);
        for (int p = 0; p < size; p++) {
            fill(sb + G + p * blk, p, 0, cnt, t->ext);
            fill(sx + G + p * blk, p, 0, cnt, t->ext);
        }
    }
    if (!(me && inplace))
        fill(ex + G, rank, 0, cnt, t->ext);
    int rc = SCATTER(me ? sb + G : NULL, (COUNT_T)cnt, t->t, me && inplace ? MPI_IN_PLACE : rb + G, (COUNT_T)cnt,
                     t->t, root, comm);
    compare(what, rc, rb, ex, blk + 2 * G);
    if (me)
        compare(what, MPI_SUCCESS, sb, sx, n + 2 * G); /* the send buffer is unchanged */
    free(sb);
    free(sx);
    free(rb);
    free(ex);
}

static void t_scatterv(const ty_t *t, long cls, int root, int inplace, int mode, int negative)
{
    char what[200];
    snprintf(what, sizeof what, "Scatterv %s class=%ld root=%d%s %s%s comm=%s", t->name, cls, root,
             inplace ? " in-place" : "", mode_name[mode], negative ? " negative-displs" : "", comm_name);
    salt++;
    long c[64], d[64];
    COUNT_T cc[64];
    DISP_T dd[64];
    for (int p = 0; p < size; p++)
        c[p] = vcount(cls, p);
    long span = layout(c, mode, d);
    long shift = negative ? span : 0;
    to_arrays(c, d, shift, cc, dd);
    size_t n = (size_t)span * t->ext, mine = (size_t)c[rank] * t->ext;
    int me = rank == root;
    unsigned char *sb = NULL, *sx = NULL, *rb = gbuf(mine), *ex = gbuf(mine);
    if (me) {
        sb = gbuf(n);
        sx = gbuf(n);
        for (int p = 0; p < size; p++) {
            fill(sb + G + d[p] * t->ext, p, 0, c[p], t->ext);
            fill(sx + G + d[p] * t->ext, p, 0, c[p], t->ext);
        }
    }
    if (!(me && inplace))
        fill(ex + G, rank, 0, c[rank], t->ext);
    int rc = SCATTERV(me ? sb + G + shift * t->ext : NULL, cc, dd, t->t, me && inplace ? MPI_IN_PLACE : rb + G,
                      (COUNT_T)c[rank], t->t, root, comm);
    compare(what, rc, rb, ex, mine + 2 * G);
    if (me)
        compare(what, MPI_SUCCESS, sb, sx, n + 2 * G);
    free(sb);
    free(sx);
    free(rb);
    free(ex);
}

static void t_allgatherv(const ty_t *t, long cls, int inplace, int mode, int negative)
{
    char what[200];
    snprintf(what, sizeof what, "Allgatherv %s class=%ld%s %s%s comm=%s", t->name, cls, inplace ? " in-place" : "",
             mode_name[mode], negative ? " negative-displs" : "", comm_name);
    salt++;
    long c[64], d[64];
    COUNT_T cc[64];
    DISP_T dd[64];
    for (int p = 0; p < size; p++)
        c[p] = vcount(cls, p);
    long span = layout(c, mode, d);
    long shift = negative ? span : 0;
    to_arrays(c, d, shift, cc, dd);
    size_t n = (size_t)span * t->ext;
    unsigned char *sb = malloc((size_t)c[rank] * t->ext + 1), *rb = gbuf(n), *ex = gbuf(n);
    fill(sb, rank, 0, c[rank], t->ext);
    for (int p = 0; p < size; p++)
        fill(ex + G + d[p] * t->ext, p, 0, c[p], t->ext);
    if (inplace)
        fill(rb + G + d[rank] * t->ext, rank, 0, c[rank], t->ext);
    int rc = ALLGATHERV(inplace ? MPI_IN_PLACE : sb, (COUNT_T)c[rank], t->t, rb + G + shift * t->ext, cc, dd,
                        t->t, comm);
    compare(what, rc, rb, ex, n + 2 * G);
    free(sb);
    free(rb);
    free(ex);
}

static void t_alltoall(const ty_t *t, long cnt, int inplace)
{
    char what[200];
    snprintf(what, sizeof what, "Alltoall %s count=%ld%s comm=%s", t->name, cnt, inplace ? " in-place" : "",
             comm_name);
    salt++;
    size_t blk = (size_t)cnt * t->ext, n = blk * size;
    /* Block for rank p from rank s: s's stream from element p*cnt. */
    unsigned char *sb = malloc(n + 1), *rb = gbuf(n), *ex = gbuf(n);
    for (int p = 0; p < size; p++) {
        fill(sb + p * blk, rank, p * cnt, cnt, t->ext);
        if (inplace)
            fill(rb + G + p * blk, rank, p * cnt, cnt, t->ext);
        fill(ex + G + p * blk, p, rank * cnt, cnt, t->ext);
    }
    int rc = ALLTOALL(inplace ? MPI_IN_PLACE : sb, (COUNT_T)cnt, t->t, rb + G, (COUNT_T)cnt, t->t, comm);
    compare(what, rc, rb, ex, n + 2 * G);
    free(sb);
    free(rb);
    free(ex);
}

/* Seeded count matrix m[s][d] in [0, maxc], about one entry in five zero; symmetric if asked. */
static void matrix(long m[64][64], long maxc, int symmetric, unsigned seed)
{
    uint64_t x = 0x243F6A8885A308D3ull ^ seed;
    for (int s = 0; s < size; s++)
        for (int d = 0; d < size; d++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            long v = (long)((x >> 33) % (uint64_t)(maxc + 1));
            m[s][d] = (x >> 20) % 5 == 0 ? 0 : v;
        }
    if (symmetric)
        for (int s = 0; s < size; s++)
            for (int d = 0; d < s; d++)
                m[s][d] = m[d][s];
}

#define BIG (1L << 24) /* stream offset per destination in Alltoallv */

static void t_alltoallv(const ty_t *t, long maxc, int inplace, unsigned seed)
{
    char what[200];
    snprintf(what, sizeof what, "Alltoallv %s maxcount=%ld seed=%u%s comm=%s", t->name, maxc, seed,
             inplace ? " in-place" : "", comm_name);
    salt++;
    static long m[64][64];
    matrix(m, maxc, inplace, seed);
    long sc[64] = { 0 }, sd[64], rc_[64] = { 0 }, rd[64];
    COUNT_T scc[64], rcc[64];
    DISP_T sdd[64], rdd[64];
    for (int p = 0; p < size; p++) {
        sc[p] = m[rank][p];
        rc_[p] = m[p][rank];
    }
    long sspan = layout(sc, 1, sd), rspan = layout(rc_, 2, rd);
    if (inplace) {
        rspan = layout(rc_, 1, rd);
    }
    to_arrays(sc, sd, 0, scc, sdd);
    to_arrays(rc_, rd, 0, rcc, rdd);
    size_t sn = (size_t)sspan * t->ext, rn = (size_t)rspan * t->ext;
    unsigned char *sb = malloc(sn + 1), *rb = gbuf(rn), *ex = gbuf(rn);
    for (int p = 0; p < size; p++) {
        fill(sb + sd[p] * t->ext, rank, p * BIG, sc[p], t->ext);
        if (inplace)
            fill(rb + G + rd[p] * t->ext, rank, p * BIG, rc_[p], t->ext);
        fill(ex + G + rd[p] * t->ext, p, rank * BIG, rc_[p], t->ext);
    }
    int rc = ALLTOALLV(inplace ? MPI_IN_PLACE : sb, scc, sdd, t->t, rb + G, rcc, rdd, t->t, comm);
    compare(what, rc, rb, ex, rn + 2 * G);
    free(sb);
    free(rb);
    free(ex);
}

/* ------------------------------------------------------------------------------------------ */
/* Scan / Exscan: exact prefix values. */

typedef struct {
    double v;
    int i;
} dbl_int;
typedef struct {
    int v, i;
} int2;

enum { K_INT_SUM, K_INT_MAX, K_DBL_SUM, K_FLT_MIN, K_U8_SUM, K_2INT_MINLOC, K_DBLINT_MAXLOC, NKINDS };
static const struct {
    const char *name;
    int ext;
} kinds[NKINDS] = {
    { "int SUM", 4 },   { "int MAX", 4 },         { "double SUM", 8 },           { "float MIN", 4 },
    { "uint8 SUM", 1 }, { "2int MINLOC", 8 },     { "double_int MAXLOC", sizeof(dbl_int) },
};

static MPI_Datatype kind_type(int k)
{
    switch (k) {
    case K_INT_SUM:
    case K_INT_MAX: return MPI_INT;
    case K_DBL_SUM: return MPI_DOUBLE;
    case K_FLT_MIN: return MPI_FLOAT;
    case K_U8_SUM: return MPI_UINT8_T;
    case K_2INT_MINLOC: return MPI_2INT;
    default: return MPI_DOUBLE_INT;
    }
}

static MPI_Op kind_op(int k)
{
    switch (k) {
    case K_INT_SUM:
    case K_DBL_SUM:
    case K_U8_SUM: return MPI_SUM;
    case K_INT_MAX: return MPI_MAX;
    case K_FLT_MIN: return MPI_MIN;
    case K_2INT_MINLOC: return MPI_MINLOC;
    default: return MPI_MAXLOC;
    }
}

/* x_s[i] into p. */
static void gen(int k, int s, long i, void *p)
{
    switch (k) {
    case K_INT_SUM: *(int *)p = (int)((s * 7 + i * 3) % 23) - 11; break;
    case K_INT_MAX: *(int *)p = (int)((s * 11 + i * 5) % 31) - 15; break;
    case K_DBL_SUM: *(double *)p = (double)((s * 5 + i) % 17) * 0.5 - 3; break;
    case K_FLT_MIN: *(float *)p = (float)((s * 13 + i * 7) % 29) - 14.0f; break;
    case K_U8_SUM: *(uint8_t *)p = (uint8_t)((s * 97 + i * 31 + 200) & 0xff); break;
    case K_2INT_MINLOC: {
        int2 v = { (int)((s * 7 + i) % 5) - 2, s };
        memcpy(p, &v, sizeof v);
        break;
    }
    default: {
        dbl_int v;
        memset(&v, 0, sizeof v);
        v.v = (double)((s * 3 + i) % 4) * 0.25;
        v.i = s * 10 + (int)(i % 3);
        memcpy(p, &v, sizeof v);
    }
    }
}

/* acc = acc op x (acc the lower ranks' prefix). */
static void comb(int k, void *acc, const void *x)
{
    switch (k) {
    case K_INT_SUM: *(int *)acc += *(const int *)x; break;
    case K_INT_MAX:
        if (*(const int *)x > *(int *)acc)
            *(int *)acc = *(const int *)x;
        break;
    case K_DBL_SUM: *(double *)acc += *(const double *)x; break;
    case K_FLT_MIN:
        if (*(const float *)x < *(float *)acc)
            *(float *)acc = *(const float *)x;
        break;
    case K_U8_SUM: *(uint8_t *)acc = (uint8_t)(*(uint8_t *)acc + *(const uint8_t *)x); break;
    case K_2INT_MINLOC: {
        int2 a, b;
        memcpy(&a, acc, sizeof a);
        memcpy(&b, x, sizeof b);
        if (b.v < a.v || (b.v == a.v && b.i < a.i))
            a = b;
        memcpy(acc, &a, sizeof a);
        break;
    }
    default: {
        dbl_int a, b;
        memcpy(&a, acc, sizeof a);
        memcpy(&b, x, sizeof b);
        if (b.v > a.v || (b.v == a.v && b.i < a.i)) {
            a.v = b.v;
            a.i = b.i;
        }
        memcpy(acc, &a, sizeof a);
    }
    }
}

/* Equal in the bytes that carry data (not the padding of MPI_DOUBLE_INT). */
static int same(int k, const void *a, const void *b)
{
    if (k == K_DBLINT_MAXLOC) {
        dbl_int x, y;
        memcpy(&x, a, sizeof x);
        memcpy(&y, b, sizeof y);
        return x.v == y.v && x.i == y.i;
    }
    return memcmp(a, b, kinds[k].ext) == 0;
}

static void t_scan(int k, long cnt, int exclusive, int inplace)
{
    char what[200];
    snprintf(what, sizeof what, "%s %s count=%ld%s comm=%s", exclusive ? "Exscan" : "Scan", kinds[k].name, cnt,
             inplace ? " in-place" : "", comm_name);
    int ext = kinds[k].ext;
    size_t n = (size_t)cnt * ext;
    unsigned char *sb = malloc(n + 1), *rb = gbuf(n), *want = malloc(n + 1), *x = malloc(ext);
    for (long i = 0; i < cnt; i++) {
        gen(k, rank, i, sb + i * ext);
        if (inplace)
            gen(k, rank, i, rb + G + i * ext);
    }
    int last = exclusive ? rank - 1 : rank; /* the prefix covers ranks 0..last */
    for (long i = 0; i < cnt && last >= 0; i++) {
        gen(k, 0, i, want + i * ext);
        for (int s = 1; s <= last; s++) {
            gen(k, s, i, x);
            comb(k, want + i * ext, x);
        }
    }
    int rc = (exclusive ? EXSCAN : SCAN)(inplace ? MPI_IN_PLACE : sb, rb + G, (COUNT_T)cnt, kind_type(k),
                                        kind_op(k), comm);
    checks++;
    int bad = rc != MPI_SUCCESS;
    for (int b = 0; b < G && !bad; b++)
        bad = rb[b] != GUARD || rb[G + n + b] != GUARD;
    if (last >= 0) {
        for (long i = 0; i < cnt && !bad; i++)
            if (!same(k, rb + G + i * ext, want + i * ext)) {
                printf("FAIL " PROG ": rank %d: %s: element %ld wrong\n", rank, what, i);
                bad = 1;
            }
    } else {
#ifdef HCOMM_MPI_H
        /* MPI leaves rank 0's Exscan result undefined; hcomm does not touch it. */
        for (long i = 0; i < cnt && !bad; i++)
            if (inplace ? memcmp(rb + G + i * ext, sb + i * ext, ext) : rb[G + i * ext] != GUARD)
                bad = 1;
#endif
    }
    if (bad) {
        printf("FAIL " PROG ": rank %d: %s: rc=%d, wrong result or guard bytes\n", rank, what, rc);
        fails++;
    }
    free(sb);
    free(rb);
    free(want);
    free(x);
}

/* ------------------------------------------------------------------------------------------ */
/* Argument errors (hcomm only: MPICH 4.0.2 checks no arguments). Each error is made on every
 * rank, so all ranks reject the call and stay in step. */

#ifdef HCOMM_MPI_H
static void expect_err(const char *what, int rc, int cls, const unsigned char *buf, size_t n)
{
    int got = -1;
    checks++;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &got);
    int bad = got != cls;
    for (size_t i = 0; i < n && !bad; i++)
        bad = buf[i] != GUARD;
    if (bad) {
        printf("FAIL " PROG ": rank %d: %s: rc=%d class=%d, expected class %d and an untouched buffer\n", rank,
               what, rc, got, cls);
        fails++;
    }
}

static void t_errors(void)
{
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int s[64] = { 0 };
    unsigned char *rb = gbuf(64 * 64 * 8);
    size_t rn = 64 * 64 * 8 + 2 * G;
    COUNT_T cc[64], neg[64];
    DISP_T dd[64];
    for (int p = 0; p < size; p++) {
        cc[p] = 1;
        neg[p] = p == size - 1 ? -1 : 1;
        dd[p] = p;
    }
    expect_err("Gather negative sendcount", GATHER(s, -1, MPI_INT, rb + G, 1, MPI_INT, 0, comm), MPI_ERR_COUNT,
               rb, rn);
    expect_err("Gather root=size", GATHER(s, 1, MPI_INT, rb + G, 1, MPI_INT, size, comm), MPI_ERR_ROOT, rb, rn);
    expect_err("Gather root=-1", GATHER(s, 1, MPI_INT, rb + G, 1, MPI_INT, -1, comm), MPI_ERR_ROOT, rb, rn);
    expect_err("Gather NULL sendbuf", GATHER(NULL, 1, MPI_INT, rb + G, 1, MPI_INT, 0, comm), MPI_ERR_BUFFER, rb,
               rn);
    expect_err("Gather datatype null", GATHER(s, 1, MPI_DATATYPE_NULL, rb + G, 1, MPI_INT, 0, comm), MPI_ERR_TYPE,
               rb, rn);
    expect_err("Scatter negative recvcount", SCATTER(rb + G, 1, MPI_INT, s, -2, MPI_INT, 0, comm), MPI_ERR_COUNT,
               rb, rn);
    expect_err("Scatter root=size", SCATTER(rb + G, 1, MPI_INT, s, 1, MPI_INT, size, comm), MPI_ERR_ROOT, rb, rn);
    expect_err("Gatherv root=size", GATHERV(s, 1, MPI_INT, rb + G, cc, dd, MPI_INT, size, comm), MPI_ERR_ROOT, rb,
               rn);
    expect_err("Allgatherv negative recvcounts",
               ALLGATHERV(s, 1, MPI_INT, rb + G, neg, dd, MPI_INT, comm), MPI_ERR_COUNT, rb, rn);
    expect_err("Allgatherv NULL recvcounts", ALLGATHERV(s, 1, MPI_INT, rb + G, NULL, dd, MPI_INT, comm),
               MPI_ERR_ARG, rb, rn);
    expect_err("Allgatherv NULL displs", ALLGATHERV(s, 1, MPI_INT, rb + G, cc, NULL, MPI_INT, comm), MPI_ERR_ARG,
               rb, rn);
    expect_err("Allgatherv NULL recvbuf", ALLGATHERV(s, 1, MPI_INT, NULL, cc, dd, MPI_INT, comm), MPI_ERR_BUFFER,
               rb, rn);
    expect_err("Allgatherv sendcount mismatch", ALLGATHERV(s, 2, MPI_INT, rb + G, cc, dd, MPI_INT, comm),
               MPI_ERR_TRUNCATE, rb, rn);
    expect_err("Allgatherv sendtype mismatch", ALLGATHERV(s, 1, MPI_DOUBLE, rb + G, cc, dd, MPI_INT, comm),
               MPI_ERR_TRUNCATE, rb, rn);
    expect_err("Alltoall count mismatch", ALLTOALL(s, 1, MPI_INT, rb + G, 2, MPI_INT, comm), MPI_ERR_TRUNCATE, rb,
               rn);
    expect_err("Alltoall sendbuf==recvbuf", ALLTOALL(rb + G, 1, MPI_INT, rb + G, 1, MPI_INT, comm), MPI_ERR_BUFFER,
               rb, rn);
    expect_err("Alltoall recvbuf MPI_IN_PLACE", ALLTOALL(s, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, comm),
               MPI_ERR_BUFFER, rb, rn);
    expect_err("Alltoallv negative sendcounts", ALLTOALLV(s, neg, dd, MPI_INT, rb + G, cc, dd, MPI_INT, comm),
               MPI_ERR_COUNT, rb, rn);
    expect_err("Scan MINLOC on int", SCAN(s, rb + G, 1, MPI_INT, MPI_MINLOC, comm), MPI_ERR_OP, rb, rn);
    expect_err("Exscan op null", EXSCAN(s, rb + G, 1, MPI_INT, MPI_OP_NULL, comm), MPI_ERR_OP, rb, rn);
    expect_err("Scan negative count", SCAN(s, rb + G, -1, MPI_INT, MPI_SUM, comm), MPI_ERR_COUNT, rb, rn);
    expect_err("Scan NULL recvbuf", SCAN(s, NULL, 1, MPI_INT, MPI_SUM, comm), MPI_ERR_BUFFER, rb, rn);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_ARE_FATAL);
    free(rb);
}
#endif

/* ------------------------------------------------------------------------------------------ */

static void movement(int full)
{
    for (int ti = 0; ti < NMTYPES; ti++) {
        const ty_t *t = &mtypes[ti];
        for (int ci = 0; ci < NCLASSES; ci++) {
            long cls = classes[ci];
            /* Large counts: two types, two roots, one layout, to keep the run short. */
            int large = cls == LARGE;
            if (large && (ti != 0 && ti != 2))
                continue;
            if (!full && (large || ti > 1))
                continue;
            /* Every root for int, double and uint8; the first and last for the others. */
            int every_root = !large && (ti == 0 || ti == 2 || ti == 3);
            for (int root = 0; root < size; root++) {
                if (!every_root && root != 0 && root != size - 1)
                    continue;
                for (int ip = 0; ip < 2; ip++) {
                    t_gather(t, cls, root, ip);
                    t_scatter(t, cls, root, ip);
                    for (int mode = 0; mode < 3; mode++) {
                        if ((large || cls < 7) && mode != 1)
                            continue;
                        t_gatherv(t, cls, root, ip, mode, 0);
                        t_scatterv(t, cls, root, ip, mode, 0);
                    }
                    if (cls == 7 && !large) {
                        t_gatherv(t, cls, root, ip, 1, 1);
                        t_scatterv(t, cls, root, ip, 1, 1);
                    }
                }
            }
            for (int ip = 0; ip < 2; ip++) {
                for (int mode = 0; mode < 3; mode++) {
                    if ((large || cls < 7) && mode != 1)
                        continue;
#if !defined(HCOMM_MPI_H) && defined(MPICH)
                    /* MPICH 4.0.2: single-rank MPI_Allgatherv ignores the displacement. */
                    if (size == 1 && mode != 0)
                        continue;
#endif
                    t_allgatherv(t, cls, ip, mode, 0);
                }
#if !defined(HCOMM_MPI_H) && defined(MPICH)
                if (size > 1)
#endif
                    if (cls == 7)
                        t_allgatherv(t, cls, ip, 1, 1);
                t_alltoall(t, large ? LARGE / 4 : cls, ip);
            }
        }
        long maxcs[] = { 0, 1, 9, 30000 };
        for (int mi = 0; mi < 4; mi++) {
            if (maxcs[mi] > 100 && ti != 0 && ti != 2)
                continue;
            if (!full && (maxcs[mi] > 100 || ti > 1))
                continue;
            for (int ip = 0; ip < 2; ip++)
                t_alltoallv(t, maxcs[mi], ip, 17u * (unsigned)mi + (unsigned)ti);
        }
    }
}

static void scans(int full)
{
    for (int k = 0; k < NKINDS; k++)
        for (int ci = 0; ci < NCLASSES; ci++) {
            if (!full && (classes[ci] == LARGE || k > 2))
                continue;
            /* Count 0 once; the large count for a few kinds (time on oversubscribed MPICH). */
            if (classes[ci] == 0 && k != K_INT_SUM)
                continue;
            if (classes[ci] == LARGE && k != K_INT_SUM && k != K_DBL_SUM && k != K_U8_SUM && k != K_2INT_MINLOC)
                continue;
            for (int ex = 0; ex < 2; ex++)
                for (int ip = 0; ip < 2; ip++)
                    t_scan(k, classes[ci], ex, ip);
        }
}

static int run_all(void)
{
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 64) {
        if (rank == 0)
            printf("SKIP " PROG ": more than 64 ranks\n");
        return 77;
    }
    comm = MPI_COMM_WORLD;
    movement(1);
    scans(1);
    /* Ranks in reverse order: comm ranks differ from world ranks. */
    MPI_Comm rev;
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev);
    comm = rev;
    comm_name = "reversed";
    MPI_Comm_rank(rev, &rank);
    movement(0);
    scans(0);
#ifdef HCOMM_MPI_H
    t_errors();
#endif
    MPI_Comm_free(&rev);
    comm = MPI_COMM_WORLD;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int total = 0;
    MPI_Allreduce(&checks, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all)
            printf("FAIL " PROG ": %d failed checks\n", all);
        else
            printf(PROG ": all checks passed on %d ranks\n", size);
    }
    return all != 0;
}
