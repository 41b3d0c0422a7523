/*
 * coll_check.c - the thorough, exact checker for the collectives hcomm implements.
 *
 * In one launch it loops over every collective (Allreduce, Reduce at every root, Bcast at
 * every root, Allgather, Reduce_scatter with uneven counts including zeros,
 * Reduce_scatter_block, Barrier) x every predefined datatype hcomm supports x every op the MPI
 * standard allows for that type (plus SUM/PROD/MIN/MAX on MPI_CHAR) x counts {0, 1, 7, large}
 * x in-place / out-of-place, on MPI_COMM_WORLD and on Comm_dup / Comm_split communicators.
 *
 * Inputs are a function of (rank, index), chosen so that every result is exact whatever the
 * reduction order: integer SUM wraps on purpose (expected value computed with the same
 * wrapping in C unsigned arithmetic), PROD uses factors in {1, -1, 2} (and 0.5 for floats)
 * with a bounded number of 2s, floating-point values are small multiples of 0.25, fp16/bf16
 * stay in their exactly representable range. The expected value of every element is
 * recomputed locally (a fold over all ranks' inputs in exact arithmetic) and compared
 * bitwise. Also checked: guard bytes around every buffer, send buffers unchanged, a Reduce
 * non-root's recvbuf untouched, all ranks bitwise identical (hash compared via Allgather),
 * Barrier really waits (shared CLOCK_MONOTONIC when all ranks share a host).
 *
 * Env: CHECK_LARGE (default 100003, 0 disables) is the element count of the large checks,
 * which run for a representative subset of (type, op) pairs and for every collective once.
 * Output: "FAIL <coll> type=.. op=.. count=N root=R inplace=B rank=r index=i got=..
 * expected=.. comm=.." lines (limited), and "coll_check: N checks passed" on rank 0.
 * Exit status non-zero if anything failed anywhere.
 */
#include <mpi.h>

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(MPICH_VERSION) && !defined(HCOMM_MPI_H)
#define REF_MPICH 1 /* Debian's MPICH 4.0.2 (a reference implementation, not hcomm) */
#endif
#if defined(OPEN_MPI) && !defined(HCOMM_MPI_H)
#define REF_OMPI 1 /* Debian's Open MPI 4.1.4. Its AVX op component saturates signed 8-bit sums
                    * instead of wrapping: the runner passes --mca op ^avx rather than skipping. */
#endif

/* ------------------------------------------------------------------------------------------ */
/* Datatypes                                                                                  */

enum kclass { KC_INT, KC_CHAR, KC_BYTE, KC_BOOL, KC_FLT, KC_F16, KC_BF16, KC_PAIR };

typedef struct {
    const char *name;
    MPI_Datatype dt;
    enum kclass kc;
    int vsize;  /* bytes of the value (the whole element except for pairs) */
    int sgn;    /* integer value is signed */
    int vflt;   /* pair: value is floating point */
    int ioff;   /* pair: offset of the int index */
    int extent; /* stride of one element in a buffer */
} tinfo;

struct p_int { int v; int i; };
struct p_flt { float v; int i; };
struct p_dbl { double v; int i; };
struct p_long { long v; int i; };
struct p_short { short v; int i; };

#define TI(n, dt, kc, ct, sg) { n, dt, kc, (int)sizeof(ct), sg, 0, 0, (int)sizeof(ct) }
#define TP(n, dt, st, vt, isf) \
    { n, dt, KC_PAIR, (int)sizeof(vt), 1, isf, (int)offsetof(st, i), (int)sizeof(st) }

static const tinfo types[] = {
    TI("MPI_CHAR", MPI_CHAR, KC_CHAR, char, CHAR_MIN < 0),
    TI("MPI_SIGNED_CHAR", MPI_SIGNED_CHAR, KC_INT, signed char, 1),
    TI("MPI_UNSIGNED_CHAR", MPI_UNSIGNED_CHAR, KC_INT, unsigned char, 0),
    TI("MPI_BYTE", MPI_BYTE, KC_BYTE, unsigned char, 0),
    TI("MPI_SHORT", MPI_SHORT, KC_INT, short, 1),
    TI("MPI_UNSIGNED_SHORT", MPI_UNSIGNED_SHORT, KC_INT, unsigned short, 0),
    TI("MPI_INT", MPI_INT, KC_INT, int, 1),
    TI("MPI_UNSIGNED", MPI_UNSIGNED, KC_INT, unsigned, 0),
    TI("MPI_LONG", MPI_LONG, KC_INT, long, 1),
    TI("MPI_UNSIGNED_LONG", MPI_UNSIGNED_LONG, KC_INT, unsigned long, 0),
    TI("MPI_LONG_LONG", MPI_LONG_LONG, KC_INT, long long, 1),
    TI("MPI_UNSIGNED_LONG_LONG", MPI_UNSIGNED_LONG_LONG, KC_INT, unsigned long long, 0),
    TI("MPI_INT8_T", MPI_INT8_T, KC_INT, int8_t, 1),
    TI("MPI_INT16_T", MPI_INT16_T, KC_INT, int16_t, 1),
    TI("MPI_INT32_T", MPI_INT32_T, KC_INT, int32_t, 1),
    TI("MPI_INT64_T", MPI_INT64_T, KC_INT, int64_t, 1),
    TI("MPI_UINT8_T", MPI_UINT8_T, KC_INT, uint8_t, 0),
    TI("MPI_UINT16_T", MPI_UINT16_T, KC_INT, uint16_t, 0),
    TI("MPI_UINT32_T", MPI_UINT32_T, KC_INT, uint32_t, 0),
    TI("MPI_UINT64_T", MPI_UINT64_T, KC_INT, uint64_t, 0),
    TI("MPI_FLOAT", MPI_FLOAT, KC_FLT, float, 1),
    TI("MPI_DOUBLE", MPI_DOUBLE, KC_FLT, double, 1),
    TI("MPI_C_BOOL", MPI_C_BOOL, KC_BOOL, unsigned char, 0),
#ifdef MPIX_C_FLOAT16
    TI("MPIX_C_FLOAT16", MPIX_C_FLOAT16, KC_F16, uint16_t, 0),
#endif
#ifdef MPIX_BFLOAT16
    TI("MPIX_BFLOAT16", MPIX_BFLOAT16, KC_BF16, uint16_t, 0),
#endif
    TP("MPI_2INT", MPI_2INT, struct p_int, int, 0),
    TP("MPI_FLOAT_INT", MPI_FLOAT_INT, struct p_flt, float, 1),
    TP("MPI_DOUBLE_INT", MPI_DOUBLE_INT, struct p_dbl, double, 1),
    TP("MPI_LONG_INT", MPI_LONG_INT, struct p_long, long, 0),
    TP("MPI_SHORT_INT", MPI_SHORT_INT, struct p_short, short, 0),
};
#define NTYPES ((int)(sizeof types / sizeof types[0]))

static const tinfo *type_by_name(const char *name)
{
    for (int i = 0; i < NTYPES; i++)
        if (strcmp(types[i].name, name) == 0)
            return &types[i];
    return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Operations                                                                                 */

enum opid {
    OP_SUM, OP_PROD, OP_MAX, OP_MIN, OP_LAND, OP_LOR, OP_LXOR, OP_BAND, OP_BOR, OP_BXOR,
    OP_MINLOC, OP_MAXLOC, OP_MOVE /* not an op: data for Bcast / Allgather */
};

typedef struct {
    const char *name;
    MPI_Op op;
    enum opid id;
} opinfo;

static const opinfo ops[] = {
    { "MPI_SUM", MPI_SUM, OP_SUM },       { "MPI_PROD", MPI_PROD, OP_PROD },
    { "MPI_MAX", MPI_MAX, OP_MAX },       { "MPI_MIN", MPI_MIN, OP_MIN },
    { "MPI_LAND", MPI_LAND, OP_LAND },    { "MPI_LOR", MPI_LOR, OP_LOR },
    { "MPI_LXOR", MPI_LXOR, OP_LXOR },    { "MPI_BAND", MPI_BAND, OP_BAND },
    { "MPI_BOR", MPI_BOR, OP_BOR },       { "MPI_BXOR", MPI_BXOR, OP_BXOR },
    { "MPI_MINLOC", MPI_MINLOC, OP_MINLOC }, { "MPI_MAXLOC", MPI_MAXLOC, OP_MAXLOC },
};
#define NOPS ((int)(sizeof ops / sizeof ops[0]))

static const opinfo *op_by_id(enum opid id)
{
    for (int i = 0; i < NOPS; i++)
        if (ops[i].id == id)
            return &ops[i];
    return NULL;
}

/* The MPI standard's type groups (MPI-4.0 section 6.9.2), plus SUM/PROD/MIN/MAX on MPI_CHAR,
 * which MPICH, Open MPI and hcomm accept. */
static int op_valid(const tinfo *t, enum opid op)
{
    switch (t->kc) {
    case KC_INT: return op <= OP_BXOR;
    case KC_CHAR: return op <= OP_MIN;
    case KC_BYTE: return op == OP_BAND || op == OP_BOR || op == OP_BXOR;
    case KC_BOOL: return op == OP_LAND || op == OP_LOR || op == OP_LXOR;
    case KC_FLT: case KC_F16: case KC_BF16: return op <= OP_MIN;
    case KC_PAIR: return op == OP_MINLOC || op == OP_MAXLOC;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Values: encode / decode / generate / combine                                               */

typedef struct {
    uint64_t u;  /* integer bits, truncated to the width */
    double d;    /* floating-point value */
    int32_t idx; /* pair index */
} val_t;

static uint64_t wmask(int bytes) { return bytes >= 8 ? ~(uint64_t)0 : (((uint64_t)1 << (bytes * 8)) - 1); }

static int64_t sext(uint64_t u, int bytes)
{
    if (bytes >= 8)
        return (int64_t)u;
    int sh = 64 - bytes * 8;
    return (int64_t)(u << sh) >> sh;
}

static double pow2(int e)
{
    double v = 1.0;
    for (; e > 0; e--) v *= 2.0;
    for (; e < 0; e++) v *= 0.5;
    return v;
}

static uint16_t f16_from_float(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t e8 = (x >> 23) & 0xffu, mant = x & 0x7fffffu;
    int32_t exp = (int32_t)e8 - 127 + 15;
    if (e8 == 0xff)
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
    if (exp >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (exp <= 0) {
        if (exp < -10)
            return (uint16_t)sign;
        mant |= 0x800000u;
        int shift = 14 - exp;
        uint32_t m = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (m & 1)))
            m++;
        return (uint16_t)(sign | m);
    }
    uint32_t m = mant >> 13, rem = mant & 0x1fffu;
    uint32_t h = sign | ((uint32_t)exp << 10) | m;
    if (rem > 0x1000u || (rem == 0x1000u && (m & 1)))
        h++;
    return (uint16_t)h;
}

static double f16_to_double(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v;
    if (e == 0)
        v = m * pow2(-24);
    else if (e == 31)
        v = m ? 0.0 / 0.0 : 1.0 / 0.0;
    else
        v = (m + 1024) * pow2(e - 25);
    return (h & 0x8000) ? -v : v;
}

static uint16_t bf16_from_float(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}

static double bf16_to_double(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

static void store_uint(unsigned char *p, uint64_t u, int n)
{
    switch (n) {
    case 1: { uint8_t v = (uint8_t)u; memcpy(p, &v, 1); break; }
    case 2: { uint16_t v = (uint16_t)u; memcpy(p, &v, 2); break; }
    case 4: { uint32_t v = (uint32_t)u; memcpy(p, &v, 4); break; }
    default: memcpy(p, &u, 8); break;
    }
}

static uint64_t load_uint(const unsigned char *p, int n)
{
    switch (n) {
    case 1: { uint8_t v; memcpy(&v, p, 1); return v; }
    case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
    case 4: { uint32_t v; memcpy(&v, p, 4); return v; }
    default: { uint64_t v; memcpy(&v, p, 8); return v; }
    }
}

static void store_flt(unsigned char *p, double d, int n)
{
    if (n == 4) {
        float f = (float)d;
        memcpy(p, &f, 4);
    } else {
        memcpy(p, &d, 8);
    }
}

static double load_flt(const unsigned char *p, int n)
{
    if (n == 4) {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    double d;
    memcpy(&d, p, 8);
    return d;
}

static void encode(const tinfo *t, val_t v, unsigned char *p)
{
    switch (t->kc) {
    case KC_INT: case KC_CHAR: case KC_BYTE: case KC_BOOL: store_uint(p, v.u, t->vsize); break;
    case KC_FLT: store_flt(p, v.d, t->vsize); break;
    case KC_F16: store_uint(p, f16_from_float((float)v.d), 2); break;
    case KC_BF16: store_uint(p, bf16_from_float((float)v.d), 2); break;
    case KC_PAIR:
        if (t->vflt)
            store_flt(p, v.d, t->vsize);
        else
            store_uint(p, v.u, t->vsize);
        memcpy(p + t->ioff, &v.idx, 4);
        break;
    }
}

static val_t decode(const tinfo *t, const unsigned char *p)
{
    val_t v = { 0, 0.0, 0 };
    switch (t->kc) {
    case KC_INT: case KC_CHAR: case KC_BYTE: case KC_BOOL: v.u = load_uint(p, t->vsize); break;
    case KC_FLT: v.d = load_flt(p, t->vsize); break;
    case KC_F16: v.d = f16_to_double((uint16_t)load_uint(p, 2)); break;
    case KC_BF16: v.d = bf16_to_double((uint16_t)load_uint(p, 2)); break;
    case KC_PAIR:
        if (t->vflt)
            v.d = load_flt(p, t->vsize);
        else
            v.u = load_uint(p, t->vsize);
        memcpy(&v.idx, p + t->ioff, 4);
        break;
    }
    return v;
}

/* The data bytes of two elements are equal (pair padding is not data). */
static int elem_eq(const tinfo *t, const unsigned char *a, const unsigned char *b)
{
    if (memcmp(a, b, (size_t)t->vsize) != 0)
        return 0;
    return t->kc != KC_PAIR || memcmp(a + t->ioff, b + t->ioff, 4) == 0;
}

static void fmt_val(const tinfo *t, const unsigned char *p, char *out, size_t n)
{
    val_t v = decode(t, p);
    switch (t->kc) {
    case KC_INT: case KC_CHAR: case KC_BYTE: case KC_BOOL:
        if (t->sgn)
            snprintf(out, n, "%lld(0x%llx)", (long long)sext(v.u, t->vsize), (unsigned long long)v.u);
        else
            snprintf(out, n, "%llu(0x%llx)", (unsigned long long)v.u, (unsigned long long)v.u);
        break;
    case KC_FLT: case KC_F16: case KC_BF16:
        snprintf(out, n, "%.17g(0x%llx)", v.d, (unsigned long long)load_uint(p, t->vsize));
        break;
    case KC_PAIR:
        if (t->vflt)
            snprintf(out, n, "(%.17g,%d)", v.d, (int)v.idx);
        else
            snprintf(out, n, "(%lld,%d)", (long long)sext(v.u, t->vsize), (int)v.idx);
        break;
    }
}

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t hval(int op, int r, long i)
{
    return mix64(((uint64_t)(op + 1) * 0x9fb21c651e98df25ull) ^ ((uint64_t)(unsigned)r * 0xd6e8feb86659fd93ull) ^
                 ((uint64_t)i * 0xc2b2ae3d27d4eb4full));
}

/* Which ranks contribute zero to a logical op at element i: none, one, all, or every other. */
static int lzero(int r, long i, int n)
{
    switch (i % 4) {
    case 0: return 0;
    case 1: return r == (int)((i / 4) % n);
    case 2: return 1;
    default: return ((r + i / 4) % 2) == 1;
    }
}

/* Input of rank r at index i for op (OP_MOVE: arbitrary finite data). */
static val_t gen(const tinfo *t, enum opid op, int r, long i, int n)
{
    val_t v = { 0, 0.0, 0 };
    uint64_t h = hval((int)op, r, i);
    int bits = t->vsize * 8;
    uint64_t m = wmask(t->vsize);
    switch (t->kc) {
    case KC_INT: case KC_CHAR: case KC_BYTE:
        switch (op) {
        case OP_PROD: {
            /* factors 1, -1 (signed types) and 2 (only from the first lim ranks): no overflow */
            int lim = bits == 8 ? 6 : bits == 16 ? 12 : bits == 32 ? 28 : 60;
            uint64_t x = 1;
            if (h % 4 == 1 && t->sgn)
                x = ~(uint64_t)0;
            else if (h % 4 == 2 && r < lim)
                x = 2;
            v.u = x & m;
            break;
        }
        case OP_LAND: case OP_LOR: case OP_LXOR:
            /* nonzero values are a single bit anywhere, the sign bit included */
            v.u = lzero(r, i, n) ? 0 : ((uint64_t)1 << ((r * 5 + i) % bits)) & m;
            break;
        case OP_BAND: v.u = ~(((uint64_t)1 << (h % bits)) | ((uint64_t)1 << ((h >> 8) % bits))) & m; break;
        case OP_BOR: v.u = ((uint64_t)1 << (h % bits)) & m; break;
        default: v.u = h & m; break; /* SUM wraps, MAX/MIN see both signs, BXOR, MOVE */
        }
        break;
    case KC_BOOL:
        v.u = op == OP_MOVE ? (h & 1) : (uint64_t)!lzero(r, i, n);
        break;
    case KC_FLT: case KC_F16: case KC_BF16: {
        int small = t->kc != KC_FLT;
        switch (op) {
        case OP_SUM: v.d = (small ? (long)(h % 17) - 8 : (long)(h % 33) - 16) * 0.25; break;
        case OP_PROD: {
            int lim = small ? 8 : 30;
            int s = (int)(h % 4);
            v.d = s == 1 ? -1.0 : (s == 2 && r < lim) ? 2.0 : (s == 3 && r < lim) ? 0.5 : 1.0;
            break;
        }
        case OP_MAX: case OP_MIN: v.d = (small ? (long)(h % 65) - 32 : (long)(h % 2001) - 1000) * 0.25; break;
        default: /* MOVE: arbitrary finite bit patterns (top exponent bit cleared) */
            if (t->kc == KC_F16)
                v.d = f16_to_double((uint16_t)(h & 0xbfffu));
            else if (t->kc == KC_BF16)
                v.d = bf16_to_double((uint16_t)(h & 0xbfffu));
            else if (t->vsize == 4) {
                uint32_t x = (uint32_t)h & 0xbfffffffu;
                float f;
                memcpy(&f, &x, 4);
                v.d = f;
            } else {
                uint64_t x = h & ~((uint64_t)1 << 62);
                memcpy(&v.d, &x, 8);
            }
            break;
        }
        break;
    }
    case KC_PAIR:
        if (op == OP_MOVE) {
            if (t->vflt && t->vsize == 4) {
                uint32_t x = (uint32_t)h & 0xbfffffffu;
                float f;
                memcpy(&f, &x, 4);
                v.d = f;
            } else if (t->vflt) {
                uint64_t x = h & ~((uint64_t)1 << 62);
                memcpy(&v.d, &x, 8);
            } else {
                v.u = h & m;
            }
            v.idx = (int32_t)(uint32_t)mix64(h);
        } else {
            /* few distinct values (ties!) and indices that repeat and go negative */
            long k = (long)(h % 3) - 1;
            if (t->vflt)
                v.d = (double)k * 0.75;
            else
                v.u = (uint64_t)(k * (t->vsize == 2 ? 1000L : t->vsize == 4 ? 100000L : 0x100000001L)) & m;
            v.idx = (int32_t)((h >> 20) % 7) - 2;
        }
        break;
    }
    return v;
}

static int val_cmp(const tinfo *t, val_t a, val_t b) /* for MIN/MAX and pairs */
{
    if (t->kc == KC_FLT || t->kc == KC_F16 || t->kc == KC_BF16 || (t->kc == KC_PAIR && t->vflt))
        return a.d < b.d ? -1 : a.d > b.d ? 1 : 0;
    if (t->sgn) {
        int64_t x = sext(a.u, t->vsize), y = sext(b.u, t->vsize);
        return x < y ? -1 : x > y ? 1 : 0;
    }
    return a.u < b.u ? -1 : a.u > b.u ? 1 : 0;
}

static val_t combine(const tinfo *t, enum opid op, val_t a, val_t b)
{
    val_t r = a;
    uint64_t m = wmask(t->vsize);
    int isf = t->kc == KC_FLT || t->kc == KC_F16 || t->kc == KC_BF16;
    switch (op) {
    case OP_SUM: if (isf) r.d = a.d + b.d; else r.u = (a.u + b.u) & m; break;
    case OP_PROD: if (isf) r.d = a.d * b.d; else r.u = (a.u * b.u) & m; break;
    case OP_MAX: r = val_cmp(t, a, b) >= 0 ? a : b; break;
    case OP_MIN: r = val_cmp(t, a, b) <= 0 ? a : b; break;
    case OP_LAND: r.u = (a.u != 0) && (b.u != 0); break;
    case OP_LOR: r.u = (a.u != 0) || (b.u != 0); break;
    case OP_LXOR: r.u = (a.u != 0) != (b.u != 0); break;
    case OP_BAND: r.u = a.u & b.u; break;
    case OP_BOR: r.u = a.u | b.u; break;
    case OP_BXOR: r.u = a.u ^ b.u; break;
    case OP_MINLOC: case OP_MAXLOC: {
        int c = val_cmp(t, a, b);
        if (op == OP_MAXLOC)
            c = -c;
        if (c > 0)
            r = b;
        else if (c == 0 && b.idx < a.idx)
            r.idx = b.idx; /* ties -> lowest index */
        break;
    }
    case OP_MOVE: break;
    }
    return r;
}

/* Expected reduction result at index i over ranks 0..n-1, encoded into out. The fold costs
 * n input generations per element, so results are memoised per (type, op, n): the large
 * checks of several collectives then share one computation. */
static struct {
    const tinfo *t;
    enum opid op;
    int n;
    long cap;
    uint32_t stamp;
    unsigned char *val; /* 16 bytes (the largest extent) per element */
    uint32_t *have;     /* have[i] == stamp: val[i] is valid */
} ecache;

static void expect_red(const tinfo *t, enum opid op, int n, long i, unsigned char *out)
{
    if (ecache.t != t || ecache.op != op || ecache.n != n) {
        ecache.t = t;
        ecache.op = op;
        ecache.n = n;
        ecache.stamp++;
    }
    if (i >= ecache.cap) {
        long cap = ecache.cap ? ecache.cap : 1024;
        while (cap <= i)
            cap *= 2;
        unsigned char *v = realloc(ecache.val, (size_t)cap * 16);
        uint32_t *h = realloc(ecache.have, (size_t)cap * sizeof(uint32_t));
        if (!v || !h) {
            fprintf(stderr, "coll_check: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        memset(h + ecache.cap, 0, (size_t)(cap - ecache.cap) * sizeof(uint32_t));
        ecache.val = v;
        ecache.have = h;
        ecache.cap = cap;
    }
    unsigned char *slot = ecache.val + (size_t)i * 16;
    if (ecache.have[i] != ecache.stamp) {
        val_t acc = gen(t, op, 0, i, n);
        for (int r = 1; r < n; r++)
            acc = combine(t, op, acc, gen(t, op, r, i, n));
        memset(slot, 0, 16);
        encode(t, acc, slot);
        ecache.have[i] = ecache.stamp;
    }
    memcpy(out, slot, (size_t)t->extent);
}

static void fill_input(const tinfo *t, enum opid op, int rank, int n, long first, long count, unsigned char *dst)
{
    for (long j = 0; j < count; j++)
        encode(t, gen(t, op, rank, first + j, n), dst + (size_t)j * (size_t)t->extent);
}

/* ------------------------------------------------------------------------------------------ */
/* Bookkeeping                                                                                */

typedef struct {
    MPI_Comm comm;
    const char *name;
    int rank, size;
} cctx;

static int world_rank, world_size;
static long n_checks, n_fail;
static int fail_lines;
static const int max_fail_lines = 40;
static uint64_t xhash = 1469598103934665603ull; /* results that must agree on all ranks */
static int same_host = 1;
static int trace;

typedef struct {
    const char *coll;
    const cctx *c;
    const tinfo *t;
    const char *op;
    long count;
    int root;
    int inplace;
    int failed;    /* failures in this check */
    long elem_bad; /* mismatching elements in this check */
} ck_t;

static void ck_init(ck_t *k, const char *coll, const cctx *c, const tinfo *t, const char *op, long count,
                    int root, int inplace)
{
    k->coll = coll;
    k->c = c;
    k->t = t;
    k->op = op;
    k->count = count;
    k->root = root;
    k->inplace = inplace;
    k->failed = 0;
    k->elem_bad = 0;
    if (trace) /* CHECK_TRACE=1: name every check before it runs (to find a crash or a hang) */
        fprintf(stderr, "TRACE rank=%d %s type=%s op=%s count=%ld root=%d inplace=%d comm=%s\n", world_rank, coll,
                t ? t->name : "-", op ? op : "-", count, root, inplace, c->name);
}

static void ck_fail(ck_t *k, long index, const char *got, const char *exp)
{
    k->failed++;
    n_fail++;
    if (fail_lines >= max_fail_lines) {
        if (fail_lines++ == max_fail_lines)
            printf("FAIL ... (rank %d: further failure lines suppressed)\n", world_rank);
        return;
    }
    fail_lines++;
    printf("FAIL %s type=%s op=%s count=%ld root=%d inplace=%d rank=%d index=%ld got=%s expected=%s comm=%s\n",
           k->coll, k->t ? k->t->name : "-", k->op ? k->op : "-", k->count, k->root, k->inplace, world_rank,
           index, got, exp, k->c->name);
    fflush(stdout);
}

static void ck_elem(ck_t *k, long index, const unsigned char *got, const unsigned char *exp)
{
    if (elem_eq(k->t, got, exp))
        return;
    if (k->elem_bad++ >= 3)
        return; /* the first three per check are enough */
    char g[96], e[96];
    fmt_val(k->t, got, g, sizeof g);
    fmt_val(k->t, exp, e, sizeof e);
    ck_fail(k, index, g, e);
}

static void ck_rc(ck_t *k, int rc)
{
    if (rc == MPI_SUCCESS)
        return;
    char s[MPI_MAX_ERROR_STRING + 16];
    int len = 0;
    snprintf(s, sizeof s, "rc=%d:", rc);
    size_t off = strlen(s);
    if (MPI_Error_string(rc, s + off, &len) != MPI_SUCCESS)
        s[off] = 0;
    ck_fail(k, -1, s, "MPI_SUCCESS");
}

static void ck_done(ck_t *k)
{
    if (k->elem_bad > 3) {
        char g[64];
        snprintf(g, sizeof g, "%ld-mismatching-elements", k->elem_bad);
        ck_fail(k, -1, g, "0");
    }
    if (!k->failed)
        n_checks++;
}

static void hash_bytes(const tinfo *t, const unsigned char *p, long count)
{
    for (long j = 0; j < count; j++) {
        const unsigned char *e = p + (size_t)j * (size_t)t->extent;
        for (int b = 0; b < t->vsize; b++)
            xhash = (xhash ^ e[b]) * 1099511628211ull;
        if (t->kc == KC_PAIR)
            for (int b = 0; b < 4; b++)
                xhash = (xhash ^ e[t->ioff + b]) * 1099511628211ull;
    }
}

/* Guarded buffers: GUARD bytes of a known pattern on both sides. */
#define GUARD 64
#define FILL_RECV 0xEE
typedef struct {
    unsigned char *base, *p;
    size_t n;
} gbuf;

static void gb_alloc(gbuf *b, size_t n, int fill)
{
    b->base = malloc(n + 2 * GUARD);
    if (!b->base) {
        fprintf(stderr, "coll_check: out of memory (%zu bytes)\n", n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    b->p = b->base + GUARD;
    b->n = n;
    memset(b->base, 0xA5, GUARD);
    memset(b->p, fill, n);
    memset(b->p + n, 0x5A, GUARD);
}

static void gb_free(gbuf *b)
{
    free(b->base);
    b->base = b->p = NULL;
}

static void gb_check_guard(ck_t *k, const gbuf *b, const char *what)
{
    for (int i = 0; i < GUARD; i++) {
        if (b->base[i] != 0xA5 || b->p[b->n + (size_t)i] != 0x5A) {
            char g[96];
            snprintf(g, sizeof g, "%s-guard-overwritten-at-%s%d", what, b->base[i] != 0xA5 ? "-" : "+",
                     b->base[i] != 0xA5 ? GUARD - i : i);
            ck_fail(k, -1, g, "untouched");
            return;
        }
    }
}

static void gb_check_same(ck_t *k, const gbuf *b, const unsigned char *ref, const char *what)
{
    if (memcmp(b->p, ref, b->n) != 0) {
        size_t off = 0;
        while (off < b->n && b->p[off] == ref[off])
            off++;
        char g[96];
        snprintf(g, sizeof g, "%s-modified-at-byte-%zu", what, off);
        ck_fail(k, (long)(off / (size_t)k->t->extent), g, "unchanged");
    }
}

static unsigned char *dupmem(const unsigned char *p, size_t n)
{
    unsigned char *q = malloc(n ? n : 1);
    if (!q)
        MPI_Abort(MPI_COMM_WORLD, 2);
    memcpy(q, p, n);
    return q;
}

static size_t nbytes(const tinfo *t, long count) { return (size_t)count * (size_t)t->extent; }

/* ------------------------------------------------------------------------------------------ */
/* The checks                                                                                 */

/* Known bugs of the reference MPIs (measured here): such checks are skipped for that MPI only,
 * counted, and listed at the end. Never skipped for hcomm. */
enum { SKIP_MPICH_REDUCE_INPLACE, SKIP_MPICH_UNSIGNED_MINMAX, SKIP_MPICH_FLOAT16, SKIP_MPICH_RS_INPLACE, SKIP_OMPI_ULONG_MINMAX, NSKIP };
static long skipped[NSKIP];
static const char *const skip_why[NSKIP] = {
    "in-place MPI_Reduce at a non-zero root (Debian MPICH 4.0.2 segfaults)",
    "MPI_MAX/MPI_MIN on unsigned integer types (Debian MPICH 4.0.2 compares them as signed)",
    "reductions on MPIX_C_FLOAT16 (Debian MPICH 4.0.2 fails an assertion in yaksa pack)",
    "in-place MPI_Reduce_scatter, unequal recvcounts, >= 512 KiB in total (Debian MPICH 4.0.2: "
    "assertion in yaksa pack, overlapping memcpy)",
    "MPI_MAX/MPI_MIN on MPI_UNSIGNED_LONG (Debian Open MPI 4.1.4 compares it as signed)",
};

/* HCOMM_PRELOADED=1 (set by compat-tests/preload.sh): libhcomm_preload.so takes the
 * collectives on every intracommunicator with predefined types and ops — every call this
 * program skips for a reference MPI's bug — so the reference MPI's bugs do not apply and
 * nothing is skipped. */
static int hcomm_preloaded;

static int ref_skip(const cctx *c, const tinfo *t, enum opid op, int inplace_reduce_nonzero_root, int inplace_rs_uneven_large)
{
    (void)c; /* the communicator no longer matters: the preload takes every one */
    if (hcomm_preloaded)
        return 0;
#ifdef REF_MPICH
    int why = -1;
    if (inplace_reduce_nonzero_root)
        why = SKIP_MPICH_REDUCE_INPLACE;
    else if (inplace_rs_uneven_large)
        why = SKIP_MPICH_RS_INPLACE;
    else if (t->kc == KC_INT && !t->sgn && (op == OP_MAX || op == OP_MIN))
        why = SKIP_MPICH_UNSIGNED_MINMAX;
    else if (t->kc == KC_F16)
        why = SKIP_MPICH_FLOAT16;
    if (why >= 0) {
        skipped[why]++;
        return 1;
    }
#elif defined(REF_OMPI)
    (void)inplace_reduce_nonzero_root;
    (void)inplace_rs_uneven_large;
    if (t->dt == MPI_UNSIGNED_LONG && (op == OP_MAX || op == OP_MIN)) {
        skipped[SKIP_OMPI_ULONG_MINMAX]++;
        return 1;
    }
#else
    (void)t;
    (void)op;
    (void)inplace_reduce_nonzero_root;
    (void)inplace_rs_uneven_large;
#endif
    return 0;
}

static void check_allreduce(const cctx *c, const tinfo *t, const opinfo *o, long count, int inplace, int nullbufs)
{
    if (ref_skip(c, t, o->id, 0, 0))
        return;
    ck_t k;
    ck_init(&k, "Allreduce", c, t, o->name, count, -1, inplace);
    gbuf s = { 0, 0, 0 }, r;
    unsigned char *sref = NULL, exp[32];
    gb_alloc(&r, nbytes(t, count), FILL_RECV);
    if (inplace) {
        fill_input(t, o->id, c->rank, c->size, 0, count, r.p);
    } else {
        gb_alloc(&s, nbytes(t, count), 0);
        fill_input(t, o->id, c->rank, c->size, 0, count, s.p);
        sref = dupmem(s.p, s.n);
    }
    void *sb = inplace ? MPI_IN_PLACE : (void *)s.p, *rb = r.p;
    if (nullbufs && count == 0) {
        sb = inplace ? MPI_IN_PLACE : NULL;
        rb = NULL;
    }
    int rc = MPI_Allreduce(sb, rb, (int)count, t->dt, o->op, c->comm);
    ck_rc(&k, rc);
    if (rc == MPI_SUCCESS) {
        for (long i = 0; i < count; i++) {
            expect_red(t, o->id, c->size, i, exp);
            ck_elem(&k, i, r.p + nbytes(t, i), exp);
        }
        hash_bytes(t, r.p, count);
    }
    gb_check_guard(&k, &r, "recvbuf");
    if (!inplace) {
        gb_check_guard(&k, &s, "sendbuf");
        gb_check_same(&k, &s, sref, "sendbuf");
        gb_free(&s);
        free(sref);
    }
    gb_free(&r);
    ck_done(&k);
}

static void check_reduce(const cctx *c, const tinfo *t, const opinfo *o, long count, int root, int inplace)
{
    if (ref_skip(c, t, o->id, inplace && root != 0, 0))
        return;
    ck_t k;
    ck_init(&k, "Reduce", c, t, o->name, count, root, inplace);
    int is_root = c->rank == root;
    gbuf s = { 0, 0, 0 }, r = { 0, 0, 0 };
    unsigned char *sref = NULL, exp[32];
    int have_r = is_root || !inplace; /* in-place mode: non-roots pass recvbuf = NULL */
    if (have_r)
        gb_alloc(&r, nbytes(t, count), FILL_RECV);
    int sendfromrecv = is_root && inplace;
    if (sendfromrecv) {
        fill_input(t, o->id, c->rank, c->size, 0, count, r.p);
    } else {
        gb_alloc(&s, nbytes(t, count), 0);
        fill_input(t, o->id, c->rank, c->size, 0, count, s.p);
        sref = dupmem(s.p, s.n);
    }
    int rc = MPI_Reduce(sendfromrecv ? MPI_IN_PLACE : (void *)s.p, have_r ? (void *)r.p : NULL, (int)count, t->dt,
                        o->op, root, c->comm);
    ck_rc(&k, rc);
    if (rc == MPI_SUCCESS && is_root) {
        for (long i = 0; i < count; i++) {
            expect_red(t, o->id, c->size, i, exp);
            ck_elem(&k, i, r.p + nbytes(t, i), exp);
        }
    }
    if (have_r) {
        gb_check_guard(&k, &r, "recvbuf");
        if (!is_root) {
            for (size_t b = 0; b < r.n; b++) {
                if (r.p[b] != FILL_RECV) {
                    ck_fail(&k, (long)(b / (size_t)t->extent), "non-root-recvbuf-written", "untouched");
                    break;
                }
            }
        }
        gb_free(&r);
    }
    if (!sendfromrecv) {
        gb_check_guard(&k, &s, "sendbuf");
        gb_check_same(&k, &s, sref, "sendbuf");
        gb_free(&s);
        free(sref);
    }
    ck_done(&k);
}

static void check_bcast(const cctx *c, const tinfo *t, long count, int root, int nullbufs)
{
    ck_t k;
    ck_init(&k, "Bcast", c, t, "-", count, root, 0);
    gbuf b;
    unsigned char exp[32];
    gb_alloc(&b, nbytes(t, count), FILL_RECV);
    if (c->rank == root)
        fill_input(t, OP_MOVE, root, c->size, 0, count, b.p);
    int rc = MPI_Bcast(nullbufs && count == 0 ? NULL : (void *)b.p, (int)count, t->dt, root, c->comm);
    ck_rc(&k, rc);
    if (rc == MPI_SUCCESS) {
        for (long i = 0; i < count; i++) {
            memset(exp, 0, sizeof exp);
            encode(t, gen(t, OP_MOVE, root, i, c->size), exp);
            ck_elem(&k, i, b.p + nbytes(t, i), exp);
        }
        hash_bytes(t, b.p, count);
    }
    gb_check_guard(&k, &b, "buffer");
    gb_free(&b);
    ck_done(&k);
}

static void check_allgather(const cctx *c, const tinfo *t, long count, int inplace)
{
    ck_t k;
    ck_init(&k, "Allgather", c, t, "-", count, -1, inplace);
    int n = c->size;
    gbuf s = { 0, 0, 0 }, r;
    unsigned char *sref = NULL, exp[32];
    gb_alloc(&r, nbytes(t, count * n), FILL_RECV);
    if (inplace) {
        fill_input(t, OP_MOVE, c->rank, n, 0, count, r.p + nbytes(t, count * c->rank));
    } else {
        gb_alloc(&s, nbytes(t, count), 0);
        fill_input(t, OP_MOVE, c->rank, n, 0, count, s.p);
        sref = dupmem(s.p, s.n);
    }
    int rc;
    if (inplace) /* sendcount and sendtype are ignored with MPI_IN_PLACE */
        rc = MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r.p, (int)count, t->dt, c->comm);
    else
        rc = MPI_Allgather(s.p, (int)count, t->dt, r.p, (int)count, t->dt, c->comm);
    ck_rc(&k, rc);
    if (rc == MPI_SUCCESS) {
        for (int q = 0; q < n; q++) {
            for (long i = 0; i < count; i++) {
                memset(exp, 0, sizeof exp);
                encode(t, gen(t, OP_MOVE, q, i, n), exp);
                ck_elem(&k, q * count + i, r.p + nbytes(t, q * count + i), exp);
            }
        }
        hash_bytes(t, r.p, count * n);
    }
    gb_check_guard(&k, &r, "recvbuf");
    if (!inplace) {
        gb_check_guard(&k, &s, "sendbuf");
        gb_check_same(&k, &s, sref, "sendbuf");
        gb_free(&s);
        free(sref);
    }
    gb_free(&r);
    ck_done(&k);
}

/* Reduce_scatter recvcounts: pattern 0 = uneven with zeros (every third rank gets nothing),
 * pattern 1 = only the last rank gets anything. count 0 gives all zeros. */
static void rs_counts(int n, long count, int pattern, int *rcounts)
{
    for (int q = 0; q < n; q++) {
        if (count == 0)
            rcounts[q] = 0;
        else if (pattern == 0)
            rcounts[q] = q % 3 == 1 ? 0 : (int)(count * (1 + q % 2) + (q % 4 == 2 ? 1 : 0));
        else
            rcounts[q] = q == n - 1 ? (int)count : 0;
    }
}

/* block = 1: Reduce_scatter_block with recvcount = count; else Reduce_scatter with rs_counts. */
static void check_rs(const cctx *c, const tinfo *t, const opinfo *o, long count, int block, int pattern, int inplace)
{
    ck_t k;
    ck_init(&k, block ? "Reduce_scatter_block" : pattern ? "Reduce_scatter(lastonly)" : "Reduce_scatter", c, t,
            o->name, count, -1, inplace);
    int n = c->size;
    int *rcounts = malloc(sizeof(int) * (size_t)n);
    if (block)
        for (int q = 0; q < n; q++) rcounts[q] = (int)count;
    else
        rs_counts(n, count, pattern, rcounts);
    long total = 0, first = 0;
    for (int q = 0; q < n; q++) {
        if (q == c->rank)
            first = total;
        total += rcounts[q];
    }
    long mine = rcounts[c->rank];
    int uneven = 0;
    for (int q = 1; q < n; q++)
        uneven |= rcounts[q] != rcounts[0];
    if (ref_skip(c, t, o->id, 0, inplace && uneven && nbytes(t, total) >= 524288)) {
        free(rcounts);
        return;
    }
    gbuf s = { 0, 0, 0 }, r;
    unsigned char *sref = NULL, exp[32];
    if (inplace) {
        gb_alloc(&r, nbytes(t, total), FILL_RECV);
        fill_input(t, o->id, c->rank, n, 0, total, r.p);
    } else {
        gb_alloc(&r, nbytes(t, mine), FILL_RECV);
        gb_alloc(&s, nbytes(t, total), 0);
        fill_input(t, o->id, c->rank, n, 0, total, s.p);
        sref = dupmem(s.p, s.n);
    }
    void *sb = inplace ? MPI_IN_PLACE : (void *)s.p;
    int rc = block ? MPI_Reduce_scatter_block(sb, r.p, (int)count, t->dt, o->op, c->comm)
                   : MPI_Reduce_scatter(sb, r.p, rcounts, t->dt, o->op, c->comm);
    ck_rc(&k, rc);
    if (rc == MPI_SUCCESS) {
        for (long j = 0; j < mine; j++) {
            expect_red(t, o->id, n, first + j, exp);
            ck_elem(&k, j, r.p + nbytes(t, j), exp);
        }
    }
    gb_check_guard(&k, &r, "recvbuf");
    if (!inplace) {
        gb_check_guard(&k, &s, "sendbuf");
        gb_check_same(&k, &s, sref, "sendbuf");
        gb_free(&s);
        free(sref);
    }
    gb_free(&r);
    free(rcounts);
    ck_done(&k);
}

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Barrier returns success, and nobody leaves it before the last rank has entered it. */
static void check_barrier(const cctx *c)
{
    ck_t k;
    ck_init(&k, "Barrier", c, NULL, NULL, 0, -1, 0);
    for (int rep = 0; rep < 3; rep++)
        ck_rc(&k, MPI_Barrier(c->comm));
    int lates[2] = { 0, c->size - 1 };
    for (int li = 0; li < 2; li++) {
        int late = lates[li];
        k.root = late;
        long long t_enter = 0;
        ck_rc(&k, MPI_Barrier(c->comm));
        if (c->rank == late) {
            struct timespec d = { 0, 20 * 1000 * 1000 };
            nanosleep(&d, NULL);
            t_enter = now_ns();
        }
        ck_rc(&k, MPI_Barrier(c->comm));
        long long t_exit = now_ns();
        ck_rc(&k, MPI_Bcast(&t_enter, 1, MPI_LONG_LONG, late, c->comm));
        if (same_host && t_exit < t_enter) {
            char g[96];
            snprintf(g, sizeof g, "left-%lldus-before-rank-%d-entered", (t_enter - t_exit) / 1000, late);
            ck_fail(&k, -1, g, "waits");
        }
    }
    ck_done(&k);
}

/* All ranks of c saw bitwise identical results in the identical-result collectives since the
 * previous checkpoint. */
static void checkpoint(const cctx *c, const tinfo *t, const char *what)
{
    ck_t k;
    ck_init(&k, "crossrank-identical", c, t, what, 0, -1, 0);
    unsigned long long mine = xhash, *all = malloc(sizeof(unsigned long long) * (size_t)c->size);
    int rc = MPI_Allgather(&mine, 1, MPI_UNSIGNED_LONG_LONG, all, 1, MPI_UNSIGNED_LONG_LONG, c->comm);
    ck_rc(&k, rc);
    if (rc == MPI_SUCCESS) {
        for (int q = 0; q < c->size; q++) {
            if (all[q] != all[0]) {
                char g[64], e[64];
                snprintf(g, sizeof g, "rank%d:%016llx", q, all[q]);
                snprintf(e, sizeof e, "rank0:%016llx", all[0]);
                ck_fail(&k, -1, g, e);
                break;
            }
        }
    }
    free(all);
    xhash = 1469598103934665603ull;
    ck_done(&k);
}

/* Every reducing collective for one (type, op, count). all_roots: Reduce at every root. */
static void reductions(const cctx *c, const tinfo *t, const opinfo *o, long count, int all_roots, int salt)
{
    for (int ip = 0; ip < 2; ip++)
        check_allreduce(c, t, o, count, ip, count == 0 && salt == 0);
    if (all_roots) {
        for (int root = 0; root < c->size; root++)
            for (int ip = 0; ip < 2; ip++)
                check_reduce(c, t, o, count, root, ip);
    } else {
        int root = (int)((salt + count) % c->size);
        for (int ip = 0; ip < 2; ip++)
            check_reduce(c, t, o, count, root, ip);
    }
    for (int ip = 0; ip < 2; ip++) {
        check_rs(c, t, o, count, 0, 0, ip);
        check_rs(c, t, o, count, 1, 0, ip);
    }
    if (count == 7)
        check_rs(c, t, o, count, 0, 1, 0);
}

static void movement(const cctx *c, const tinfo *t, long count, int all_roots, int salt)
{
    if (all_roots)
        for (int root = 0; root < c->size; root++)
            check_bcast(c, t, count, root, 0);
    else
        check_bcast(c, t, count, (int)((salt + count) % c->size), count == 0);
    for (int ip = 0; ip < 2; ip++)
        check_allgather(c, t, count, ip);
}

static const long small_counts[] = { 0, 1, 7 };

/* The full matrix on one communicator. */
static void full_matrix(const cctx *c)
{
    for (int ti = 0; ti < NTYPES; ti++) {
        const tinfo *t = &types[ti];
        int oi_used = 0;
        for (int oi = 0; oi < NOPS; oi++) {
            if (!op_valid(t, ops[oi].id))
                continue;
            for (int ci = 0; ci < 3; ci++) {
                if (small_counts[ci] == 0 && oi_used > 0) /* count 0: every collective once per type */
                    check_allreduce(c, t, &ops[oi], 0, 0, 0);
                else
                    reductions(c, t, &ops[oi], small_counts[ci], small_counts[ci] == 7, ti + oi_used);
            }
            oi_used++;
        }
        for (int ci = 0; ci < 3; ci++)
            movement(c, t, small_counts[ci], small_counts[ci] == 7, ti);
        checkpoint(c, t, "all-of-this-type");
    }
    check_barrier(c);
}

/* A representative subset, for the derived communicators. */
static void subset_matrix(const cctx *c)
{
    static const struct { const char *type; enum opid op; } pairs[] = {
        { "MPI_INT", OP_SUM },         { "MPI_DOUBLE", OP_MAX },     { "MPI_UINT8_T", OP_BXOR },
        { "MPI_FLOAT_INT", OP_MAXLOC }, { "MPI_C_BOOL", OP_LXOR },   { "MPI_SIGNED_CHAR", OP_SUM },
        { "MPI_UNSIGNED_LONG", OP_PROD }, { "MPI_SHORT", OP_LAND },
    };
    for (size_t pi = 0; pi < sizeof pairs / sizeof pairs[0]; pi++) {
        const tinfo *t = type_by_name(pairs[pi].type);
        for (int ci = 0; ci < 3; ci++)
            reductions(c, t, op_by_id(pairs[pi].op), small_counts[ci], small_counts[ci] == 7, (int)pi);
    }
    static const char *mtypes[] = { "MPI_INT", "MPI_DOUBLE_INT", "MPI_SHORT_INT" };
    for (size_t mi = 0; mi < sizeof mtypes / sizeof mtypes[0]; mi++)
        for (int ci = 0; ci < 3; ci++)
            movement(c, type_by_name(mtypes[mi]), small_counts[ci], small_counts[ci] == 7, (int)mi);
    check_barrier(c);
    checkpoint(c, NULL, "subset");
}

/* Large counts: every collective at least once, and a few representative (type, op) pairs.
 * Allreduce, Reduce and Bcast move `large` elements; Reduce_scatter(_block) and Allgather
 * use large / size + 1 elements per rank, so that their total is about `large` too. */
static void large_matrix(const cctx *c, long large, int full)
{
    if (large <= 0)
        return;
    const opinfo *sum = op_by_id(OP_SUM);
    const tinfo *ti = type_by_name("MPI_INT");
    int last = c->size - 1;
    long per = large / c->size + 1;
    check_allreduce(c, ti, sum, large, 0, 0);
    check_allreduce(c, ti, sum, large, 1, 0);
    check_reduce(c, ti, sum, large, 0, 0);
    check_reduce(c, ti, sum, large, last, 1);
    check_rs(c, ti, sum, per, 0, 0, 0);
    check_rs(c, ti, sum, per, 1, 0, 1);
    check_bcast(c, type_by_name("MPI_DOUBLE_INT"), large, last, 0);
    check_allgather(c, ti, per, 1);
    if (full) {
        const tinfo *tf = type_by_name("MPI_FLOAT");
        check_allreduce(c, tf, sum, large, 0, 0);
        check_reduce(c, tf, sum, large, last, 0);
        check_reduce(c, tf, sum, large, 0, 1);
        check_rs(c, tf, sum, per, 0, 0, 1);
        check_rs(c, tf, sum, per, 1, 0, 0);
        check_rs(c, tf, sum, per, 0, 1, 0);
        static const struct { const char *type; enum opid op; } pairs[] = {
            { "MPI_DOUBLE", OP_MAX },         { "MPI_INT8_T", OP_SUM },   { "MPI_UNSIGNED_CHAR", OP_BXOR },
            { "MPI_UINT64_T", OP_PROD },      { "MPI_DOUBLE_INT", OP_MINLOC }, { "MPI_C_BOOL", OP_LOR },
            { "MPI_SHORT", OP_MIN },          { "MPIX_C_FLOAT16", OP_SUM }, { "MPIX_BFLOAT16", OP_SUM },
        };
        for (size_t pi = 0; pi < sizeof pairs / sizeof pairs[0]; pi++) {
            const tinfo *t = type_by_name(pairs[pi].type);
            if (!t)
                continue; /* fp16 / bf16 not provided by this implementation */
            const opinfo *o = op_by_id(pairs[pi].op);
            check_allreduce(c, t, o, large, (int)(pi % 2), 0);
        }
        check_bcast(c, type_by_name("MPI_BYTE"), large, 0, 0);
        check_allgather(c, type_by_name("MPI_SHORT_INT"), per, 0);
    }
    checkpoint(c, NULL, "large-counts");
}

static void check_split_layout(const cctx *c, const char *what, int exp_rank, int exp_size)
{
    ck_t k;
    ck_init(&k, what, c, NULL, NULL, 0, -1, 0);
    if (c->rank != exp_rank || c->size != exp_size) {
        char g[64], e[64];
        snprintf(g, sizeof g, "rank%d/size%d", c->rank, c->size);
        snprintf(e, sizeof e, "rank%d/size%d", exp_rank, exp_size);
        ck_fail(&k, -1, g, e);
    }
    ck_done(&k);
}

static void set_ctx(cctx *c, MPI_Comm comm, const char *name)
{
    c->comm = comm;
    c->name = name;
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, &c->rank);
    MPI_Comm_size(comm, &c->size);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    double t0 = MPI_Wtime();

    trace = getenv("CHECK_TRACE") && atoi(getenv("CHECK_TRACE")) > 0;
    hcomm_preloaded = getenv("HCOMM_PRELOADED") && atoi(getenv("HCOMM_PRELOADED")) > 0;
    long large = 100003;
    const char *e = getenv("CHECK_LARGE");
    if (e && *e)
        large = strtol(e, NULL, 10);
    if (large > 20000000)
        large = 20000000; /* keeps the uneven Reduce_scatter counts inside an int */

    /* Barrier timing is checked only when every rank runs on this host (shared monotonic clock). */
    {
        char name[MPI_MAX_PROCESSOR_NAME + 1], *all;
        int len = 0;
        memset(name, 0, sizeof name);
        MPI_Get_processor_name(name, &len);
        all = calloc((size_t)world_size, sizeof name);
        MPI_Allgather(name, (int)sizeof name, MPI_CHAR, all, (int)sizeof name, MPI_CHAR, MPI_COMM_WORLD);
        for (int q = 0; q < world_size; q++)
            if (strcmp(all + (size_t)q * sizeof name, name) != 0)
                same_host = 0;
        free(all);
    }

    cctx world;
    set_ctx(&world, MPI_COMM_WORLD, "world");
    full_matrix(&world);
    large_matrix(&world, large, 1);

    /* Comm_dup */
    MPI_Comm dup, eo, rev;
    ck_t k;
    ck_init(&k, "Comm_dup", &world, NULL, NULL, 0, -1, 0);
    ck_rc(&k, MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    ck_done(&k);
    cctx cdup;
    set_ctx(&cdup, dup, "dup");
    check_split_layout(&cdup, "Comm_dup-layout", world_rank, world_size);
    subset_matrix(&cdup);
    large_matrix(&cdup, large, 0);

    /* Comm_split: even / odd world ranks, key = rank */
    ck_init(&k, "Comm_split", &world, NULL, NULL, 0, -1, 0);
    ck_rc(&k, MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &eo));
    ck_done(&k);
    cctx ceo;
    set_ctx(&ceo, eo, world_rank % 2 ? "split-odd" : "split-even");
    check_split_layout(&ceo, "Comm_split-layout", world_rank / 2, (world_size + 1 - world_rank % 2) / 2);
    subset_matrix(&ceo);

    /* Comm_split: one color, reversed key order (duplicate keys would keep the old order; none here) */
    ck_init(&k, "Comm_split", &world, NULL, NULL, 0, -1, 0);
    ck_rc(&k, MPI_Comm_split(dup, 0, world_size - world_rank, &rev));
    ck_done(&k);
    cctx crev;
    set_ctx(&crev, rev, "split-reversed");
    check_split_layout(&crev, "Comm_split-layout", world_size - 1 - world_rank, world_size);
    subset_matrix(&crev);
    large_matrix(&crev, large, 0);

    /* Interleave the communicators once more: contexts must stay separate. */
    check_allreduce(&ceo, type_by_name("MPI_INT"), op_by_id(OP_SUM), 7, 0, 0);
    checkpoint(&ceo, NULL, "interleaved"); /* even and odd results differ: compare within ceo */
    check_allreduce(&world, type_by_name("MPI_INT"), op_by_id(OP_SUM), 7, 0, 0);
    check_bcast(&crev, type_by_name("MPI_INT"), 7, 0, 0);
    check_allreduce(&cdup, type_by_name("MPI_INT"), op_by_id(OP_SUM), 7, 1, 0);
    check_allgather(&crev, type_by_name("MPI_INT"), 7, 0);
    checkpoint(&world, NULL, "interleaved");

    ck_init(&k, "Comm_free", &world, NULL, NULL, 0, -1, 0);
    ck_rc(&k, MPI_Comm_free(&rev));
    ck_rc(&k, MPI_Comm_free(&eo));
    ck_rc(&k, MPI_Comm_free(&dup));
    if (rev != MPI_COMM_NULL || eo != MPI_COMM_NULL || dup != MPI_COMM_NULL)
        ck_fail(&k, -1, "handle-not-MPI_COMM_NULL", "MPI_COMM_NULL");
    ck_done(&k);

    long fails = n_fail, total_fails = 0;
    int rc = MPI_Allreduce(&fails, &total_fails, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS)
        total_fails = fails ? fails : 1;
    if (world_rank == 0) {
        for (int w = 0; w < NSKIP; w++)
            if (skipped[w])
                printf("coll_check: SKIPPED %ld checks: %s\n", skipped[w], skip_why[w]);
        if (total_fails == 0)
            printf("coll_check: %ld checks passed (size=%d, large=%ld, %.2fs)\n", n_checks, world_size, large,
                   MPI_Wtime() - t0);
        else
            printf("coll_check: FAILED: %ld failures in total (rank 0: %ld checks passed)\n", total_fails, n_checks);
    }
    fflush(stdout);
    MPI_Finalize();
    return total_fails != 0 || fails != 0;
}
