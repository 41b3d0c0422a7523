/*
 * types_coll2v.c - non-contiguous derived datatypes in the data-movement collectives:
 * Gather, Gatherv, Scatter, Scatterv, Allgatherv, Alltoall, Alltoallv.
 *
 * Types (every one checked with MPI_Type_get_extent, not assumed):
 *   int family:    MPI_INT, contiguous(2, INT), vector(2, 1, 3, INT) (ints 0 and 3 of 4),
 *                  indexed({1, 2}, {4, 0}, INT) (typemap order: int 4, then ints 0, 1);
 *   struct family: struct {int @0; double @8} and struct {int @20; double @0} (same type
 *                  signature, different layouts).
 * Every (sendtype, recvtype) pair within a family: the send and receive sides differ but have
 * matching type signatures (e.g. 3 × vector against 6 × MPI_INT). Per collective: every root,
 * in place (once per recvtype), v-variants with reversed displacements and gaps, zero counts.
 *
 * Data: the bytes of a block, in typemap order, are a stream determined by (source, dest)
 * ranks; the expected receive buffer is built by writing that stream into the receive type's
 * typemap over a buffer of sentinel bytes, and EVERY byte of the buffer (gaps, the bytes after
 * the last block) is compared. Send buffers must be unchanged.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, fails;

#define CHECK(cond, ...)                                                                      \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            printf("FAIL types_coll2v: rank=%d line %d: ", rank, __LINE__);                   \
            printf(__VA_ARGS__);                                                              \
            printf("\n");                                                                     \
            fails++;                                                                          \
        }                                                                                     \
    } while (0)

#define SENTINEL 0xEE

/* A datatype and its typemap as (byte offset, length) entries in typemap order. */
typedef struct {
    const char *name;
    MPI_Datatype dt;
    int per; /* signature units per item: ints (int family) or structs */
    long extent;
    int n;
    int off[4], len[4];
} T;

static unsigned char val(int src, int dst, long k)
{
    return (unsigned char)(src * 37 + dst * 11 + k * 3 + 1);
}

/* Writes the stream of (src, dst) into `count` items from item `first` of buf. */
static void put(const T *t, unsigned char *buf, long first, long count, int src, int dst)
{
    long k = 0;
    for (long i = 0; i < count; i++)
        for (int e = 0; e < t->n; e++)
            for (int b = 0; b < t->len[e]; b++, k++)
                buf[(first + i) * t->extent + t->off[e] + b] = val(src, dst, k);
}

static unsigned char *alloc(long items, const T *t)
{
    size_t n = (size_t)(items * t->extent) + 16; /* guard bytes after the last item */
    unsigned char *p = malloc(n);
    memset(p, SENTINEL, n);
    return p;
}

static size_t bytes(long items, const T *t)
{
    return (size_t)(items * t->extent) + 16;
}

static void compare(const unsigned char *got, const unsigned char *want, size_t n, const char *what,
                    const T *s, const T *r, int root)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i]) {
            CHECK(0, "%s send %s recv %s root %d: byte %zu = 0x%02x, expected 0x%02x", what, s->name, r->name,
                  root, i, got[i], want[i]);
            return;
        }
}

static int cnt(const T *t, int units)
{
    return units / t->per;
}

/* Units (a multiple of L) in the block from src to dst of the v-variants: some are zero. */
static int L;
static int uv(int src, int dst)
{
    return L * ((2 * src + dst + 1) % 3);
}

/* Symmetric, for in-place Alltoallv. */
static int us(int src, int dst)
{
    return L * ((src + dst) % 3);
}

/* Reversed displacements with one-item gaps: block p at 1 + sum_{q>p} (counts[q] + 1).
 * Returns the number of items the buffer needs. */
static long reversed(const int *counts, int *displs)
{
    long at = 1;
    for (int p = size - 1; p >= 0; p--) {
        displs[p] = (int)at;
        at += counts[p] + 1;
    }
    return at + 1;
}

/* Forward displacements with two-item gaps. */
static long forward(const int *counts, int *displs)
{
    long at = 0;
    for (int p = 0; p < size; p++) {
        displs[p] = (int)at;
        at += counts[p] + 2;
    }
    return at;
}

static void gather(const T *S, const T *R, int in_place)
{
    int u = 2 * L, cs = cnt(S, u), cr = cnt(R, u);
    for (int root = 0; root < size; root++) {
        unsigned char *sb = alloc(cs, S), *s0 = alloc(cs, S);
        put(S, sb, 0, cs, rank, root);
        memcpy(s0, sb, bytes(cs, S));
        unsigned char *rb = alloc((long)size * cr, R), *want = alloc((long)size * cr, R);
        for (int p = 0; p < size; p++)
            put(R, want, (long)p * cr, cr, p, root);
        if (in_place && rank == root) {
            put(R, rb, (long)root * cr, cr, root, root);
            MPI_Gather(MPI_IN_PLACE, cs, S->dt, rb, cr, R->dt, root, MPI_COMM_WORLD);
        } else {
            MPI_Gather(sb, cs, S->dt, rb, cr, R->dt, root, MPI_COMM_WORLD);
        }
        if (rank == root)
            compare(rb, want, bytes((long)size * cr, R), in_place ? "Gather in place" : "Gather", S, R, root);
        compare(sb, s0, bytes(cs, S), "Gather sendbuf", S, R, root);
        free(sb), free(s0), free(rb), free(want);
    }
}

static void gatherv(const T *S, const T *R, int in_place)
{
    for (int root = 0; root < size; root++) {
        int counts[16], displs[16];
        for (int p = 0; p < size; p++)
            counts[p] = cnt(R, uv(p, root));
        long items = reversed(counts, displs);
        int cs = cnt(S, uv(rank, root));
        unsigned char *sb = alloc(cs, S), *s0 = alloc(cs, S);
        put(S, sb, 0, cs, rank, root);
        memcpy(s0, sb, bytes(cs, S));
        unsigned char *rb = alloc(items, R), *want = alloc(items, R);
        for (int p = 0; p < size; p++)
            put(R, want, displs[p], counts[p], p, root);
        if (in_place && rank == root) {
            put(R, rb, displs[root], counts[root], root, root);
            MPI_Gatherv(MPI_IN_PLACE, cs, S->dt, rb, counts, displs, R->dt, root, MPI_COMM_WORLD);
        } else {
            MPI_Gatherv(sb, cs, S->dt, rb, counts, displs, R->dt, root, MPI_COMM_WORLD);
        }
        if (rank == root)
            compare(rb, want, bytes(items, R), in_place ? "Gatherv in place" : "Gatherv", S, R, root);
        compare(sb, s0, bytes(cs, S), "Gatherv sendbuf", S, R, root);
        free(sb), free(s0), free(rb), free(want);
    }
}

static void scatter(const T *S, const T *R, int in_place)
{
    int u = 2 * L, cs = cnt(S, u), cr = cnt(R, u);
    for (int root = 0; root < size; root++) {
        unsigned char *sb = alloc((long)size * cs, S), *s0 = alloc((long)size * cs, S);
        for (int p = 0; p < size; p++)
            put(S, sb, (long)p * cs, cs, root, p);
        memcpy(s0, sb, bytes((long)size * cs, S));
        unsigned char *rb = alloc(cr, R), *want = alloc(cr, R);
        put(R, want, 0, cr, root, rank);
        if (in_place && rank == root) {
            MPI_Scatter(sb, cs, S->dt, MPI_IN_PLACE, cr, R->dt, root, MPI_COMM_WORLD);
        } else {
            MPI_Scatter(sb, cs, S->dt, rb, cr, R->dt, root, MPI_COMM_WORLD);
            compare(rb, want, bytes(cr, R), "Scatter", S, R, root);
        }
        if (rank == root)
            compare(sb, s0, bytes((long)size * cs, S), in_place ? "Scatter in place sendbuf" : "Scatter sendbuf", S,
                    R, root);
        free(sb), free(s0), free(rb), free(want);
    }
}

static void scatterv(const T *S, const T *R, int in_place)
{
    for (int root = 0; root < size; root++) {
        int counts[16], displs[16];
        for (int p = 0; p < size; p++)
            counts[p] = cnt(S, uv(root, p));
        long items = reversed(counts, displs);
        unsigned char *sb = alloc(items, S), *s0 = alloc(items, S);
        for (int p = 0; p < size; p++)
            put(S, sb, displs[p], counts[p], root, p);
        memcpy(s0, sb, bytes(items, S));
        int cr = cnt(R, uv(root, rank));
        unsigned char *rb = alloc(cr, R), *want = alloc(cr, R);
        put(R, want, 0, cr, root, rank);
        if (in_place && rank == root) {
            MPI_Scatterv(sb, counts, displs, S->dt, MPI_IN_PLACE, cr, R->dt, root, MPI_COMM_WORLD);
        } else {
            MPI_Scatterv(sb, counts, displs, S->dt, rb, cr, R->dt, root, MPI_COMM_WORLD);
            compare(rb, want, bytes(cr, R), "Scatterv", S, R, root);
        }
        if (rank == root)
            compare(sb, s0, bytes(items, S), in_place ? "Scatterv in place sendbuf" : "Scatterv sendbuf", S, R,
                    root);
        free(sb), free(s0), free(rb), free(want);
    }
}

static void allgatherv(const T *S, const T *R, int in_place)
{
    int counts[16], displs[16];
    for (int p = 0; p < size; p++)
        counts[p] = cnt(R, uv(p, 0));
    long items = reversed(counts, displs);
#if defined(MPICH_VERSION) && !defined(HCOMM_MPI_H)
    /* MPICH 4.0.2 bug: on one rank, Allgatherv (not in place) ignores displs[0] and copies
     * the block to the start of recvbuf (even with MPI_INT on both sides). */
    if (size == 1 && !in_place)
        displs[0] = 0;
#endif
    int cs = cnt(S, uv(rank, 0));
    unsigned char *sb = alloc(cs, S), *s0 = alloc(cs, S);
    put(S, sb, 0, cs, rank, 0);
    memcpy(s0, sb, bytes(cs, S));
    unsigned char *rb = alloc(items, R), *want = alloc(items, R);
    for (int p = 0; p < size; p++)
        put(R, want, displs[p], counts[p], p, 0);
    if (in_place) {
        put(R, rb, displs[rank], counts[rank], rank, 0);
        MPI_Allgatherv(MPI_IN_PLACE, cs, S->dt, rb, counts, displs, R->dt, MPI_COMM_WORLD);
    } else {
        MPI_Allgatherv(sb, cs, S->dt, rb, counts, displs, R->dt, MPI_COMM_WORLD);
    }
    compare(rb, want, bytes(items, R), in_place ? "Allgatherv in place" : "Allgatherv", S, R, -1);
    compare(sb, s0, bytes(cs, S), "Allgatherv sendbuf", S, R, -1);
    free(sb), free(s0), free(rb), free(want);
}

static void alltoall(const T *S, const T *R, int in_place)
{
    int u = 2 * L, cs = cnt(S, u), cr = cnt(R, u);
    unsigned char *sb = alloc((long)size * cs, S), *s0 = alloc((long)size * cs, S);
    for (int p = 0; p < size; p++)
        put(S, sb, (long)p * cs, cs, rank, p);
    memcpy(s0, sb, bytes((long)size * cs, S));
    unsigned char *rb = alloc((long)size * cr, R), *want = alloc((long)size * cr, R);
    for (int p = 0; p < size; p++)
        put(R, want, (long)p * cr, cr, p, rank);
    if (in_place) {
        for (int p = 0; p < size; p++)
            put(R, rb, (long)p * cr, cr, rank, p);
        MPI_Alltoall(MPI_IN_PLACE, cs, S->dt, rb, cr, R->dt, MPI_COMM_WORLD);
    } else {
        MPI_Alltoall(sb, cs, S->dt, rb, cr, R->dt, MPI_COMM_WORLD);
    }
    compare(rb, want, bytes((long)size * cr, R), in_place ? "Alltoall in place" : "Alltoall", S, R, -1);
    compare(sb, s0, bytes((long)size * cs, S), "Alltoall sendbuf", S, R, -1);
    free(sb), free(s0), free(rb), free(want);
}

static void alltoallv(const T *S, const T *R, int in_place)
{
    int (*units)(int, int) = in_place ? us : uv;
    int sc[16], sd[16], rc[16], rd[16];
    for (int p = 0; p < size; p++) {
        sc[p] = cnt(S, units(rank, p));
        rc[p] = cnt(R, units(p, rank));
    }
    long sitems = reversed(sc, sd), ritems = forward(rc, rd);
    unsigned char *sb = alloc(sitems, S), *s0 = alloc(sitems, S);
    for (int p = 0; p < size; p++)
        put(S, sb, sd[p], sc[p], rank, p);
    memcpy(s0, sb, bytes(sitems, S));
    unsigned char *rb = alloc(ritems, R), *want = alloc(ritems, R);
    for (int p = 0; p < size; p++)
        put(R, want, rd[p], rc[p], p, rank);
    if (in_place) {
        /* In place, the blocks sent are the receive buffer's: rc[p] items for rank p. */
        for (int p = 0; p < size; p++)
            put(R, rb, rd[p], rc[p], rank, p);
        MPI_Alltoallv(MPI_IN_PLACE, sc, sd, S->dt, rb, rc, rd, R->dt, MPI_COMM_WORLD);
    } else {
        MPI_Alltoallv(sb, sc, sd, S->dt, rb, rc, rd, R->dt, MPI_COMM_WORLD);
    }
    compare(rb, want, bytes(ritems, R), in_place ? "Alltoallv in place" : "Alltoallv", S, R, -1);
    compare(sb, s0, bytes(sitems, S), "Alltoallv sendbuf", S, R, -1);
    free(sb), free(s0), free(rb), free(want);
}

static void all(const T *S, const T *R)
{
    for (int in_place = 0; in_place < 2; in_place++) {
        if (in_place && S != R)
            continue; /* in place, only recvtype matters: once per type */
        gather(S, R, in_place);
        gatherv(S, R, in_place);
        scatter(S, R, in_place);
        scatterv(S, R, in_place);
        allgatherv(S, R, in_place);
        alltoall(S, R, in_place);
        alltoallv(S, R, in_place);
    }
}

static void finish_type(T *t)
{
    MPI_Aint lb, ext;
    MPI_Type_get_extent(t->dt, &lb, &ext);
    CHECK(lb == 0, "%s: lb %ld", t->name, (long)lb);
    t->extent = ext;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 16) {
        MPI_Finalize();
        return 77;
    }
    T ints[4] = {
        {"MPI_INT", MPI_INT, 1, 0, 1, {0}, {4}},
        {"contiguous(2,INT)", MPI_DATATYPE_NULL, 2, 0, 1, {0}, {8}},
        {"vector(2,1,3,INT)", MPI_DATATYPE_NULL, 2, 0, 2, {0, 12}, {4, 4}},
        {"indexed({1,2},{4,0},INT)", MPI_DATATYPE_NULL, 3, 0, 2, {16, 0}, {4, 8}},
    };
    MPI_Type_contiguous(2, MPI_INT, &ints[1].dt);
    MPI_Type_vector(2, 1, 3, MPI_INT, &ints[2].dt);
    int bl[2] = {1, 2}, di[2] = {4, 0};
    MPI_Type_indexed(2, bl, di, MPI_INT, &ints[3].dt);
    T structs[2] = {
        {"struct{int@0,double@8}", MPI_DATATYPE_NULL, 1, 0, 2, {0, 8}, {4, 8}},
        {"struct{int@20,double@0}", MPI_DATATYPE_NULL, 1, 0, 2, {20, 0}, {4, 8}},
    };
    {
        int one[2] = {1, 1};
        MPI_Datatype tys[2] = {MPI_INT, MPI_DOUBLE};
        MPI_Aint d0[2] = {0, 8}, d1[2] = {20, 0};
        MPI_Type_create_struct(2, one, d0, tys, &structs[0].dt);
        MPI_Type_create_struct(2, one, d1, tys, &structs[1].dt);
    }
    for (int i = 1; i < 4; i++)
        MPI_Type_commit(&ints[i].dt);
    for (int i = 0; i < 2; i++)
        MPI_Type_commit(&structs[i].dt);
    for (int i = 0; i < 4; i++)
        finish_type(&ints[i]);
    for (int i = 0; i < 2; i++)
        finish_type(&structs[i]);

    L = 6; /* a multiple of every int type's ints per item */
    for (int s = 0; s < 4; s++)
        for (int r = 0; r < 4; r++)
            all(&ints[s], &ints[r]);
    L = 1;
    for (int s = 0; s < 2; s++)
        for (int r = 0; r < 2; r++)
            all(&structs[s], &structs[r]);

#if MPI_VERSION >= 4
    /* The large-count variants share the code: one call each with a vector on both sides. */
    {
        const T *V = &ints[2];
        L = 6;
        MPI_Count counts[16];
        MPI_Aint displs[16];
        int ic[16], id[16];
        for (int p = 0; p < size; p++)
            ic[p] = cnt(V, uv(p, 0));
        long items = reversed(ic, id);
        for (int p = 0; p < size; p++)
            counts[p] = ic[p], displs[p] = id[p];
        int cs = cnt(V, uv(rank, 0));
        unsigned char *sb = alloc(cs, V), *rb = alloc(items, V), *want = alloc(items, V);
        put(V, sb, 0, cs, rank, 0);
        for (int p = 0; p < size; p++)
            put(V, want, id[p], ic[p], p, 0);
        MPI_Gatherv_c(sb, cs, V->dt, rb, counts, displs, V->dt, 0, MPI_COMM_WORLD);
        if (rank == 0)
            compare(rb, want, bytes(items, V), "Gatherv_c", V, V, 0);
        memset(rb, SENTINEL, bytes(items, V));
        MPI_Allgatherv_c(sb, cs, V->dt, rb, counts, displs, V->dt, MPI_COMM_WORLD);
#if defined(MPICH_VERSION) && !defined(HCOMM_MPI_H)
        if (size > 1) /* the MPICH 4.0.2 bug of allgatherv() above */
#endif
            compare(rb, want, bytes(items, V), "Allgatherv_c", V, V, -1);
        free(sb), free(rb), free(want);
    }
#endif

    for (int i = 1; i < 4; i++)
        MPI_Type_free(&ints[i].dt);
    for (int i = 0; i < 2; i++)
        MPI_Type_free(&structs[i].dt);
    int total = 0;
    MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("types_coll2v: %s (%d failures)\n", total ? "FAILED" : "ok", total);
    MPI_Finalize();
    return total ? 1 : 0;
}
