/*
 * types2.c - the derived-datatype constructors beyond the basic four, their queries, packing:
 *   hvector, hindexed, indexed_block, hindexed_block, resized, dup, subarray (C and Fortran
 *   order), darray (block, cyclic(k), none, default dargs) and the MPI-1 names (not on Open
 *   MPI, which removed them): size, lb/extent, true lb/extent, envelope and contents;
 *   Type_set_name/get_name, Type_match_size, Get_elements on a partial item;
 *   those types in Sendrecv, Bcast, Scatter/Gather (a resized column type), Allgather (negative
 *   displacements, gaps left untouched) and Alltoall (a dup'd vector);
 *   Pack/Unpack/Pack_size round trips, MPI_PACKED sent and received against a typed peer, and
 *   external32 bytes compared with the exact big-endian encoding (types whose external32 size
 *   the standard, MPICH and Open MPI agree on).
 * Rank 0 prints one line per section; any mismatch prints a line with FAIL.
 * The _c forms are checked where the MPI has them (MPI 4: not Open MPI 4.1).
 */
#include <mpi.h>

#include <stdio.h>
#include <string.h>

static int rank, size, fails;

#define CHECK(cond, ...)                                                                      \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            printf("FAIL types2: rank=%d line %d: ", rank, __LINE__);                         \
            printf(__VA_ARGS__);                                                              \
            printf("\n");                                                                     \
            fails++;                                                                          \
        }                                                                                     \
    } while (0)

/* size, lb, extent, true lb, true extent of t */
static void bounds_are(const char *what, MPI_Datatype t, int sz, long lb, long ext, long tlb, long text)
{
    MPI_Aint l = -99, e = -99, tl = -99, te = -99;
    int s = -99;
    MPI_Type_size(t, &s);
    MPI_Type_get_extent(t, &l, &e);
    MPI_Type_get_true_extent(t, &tl, &te);
    CHECK(s == sz && l == lb && e == ext && tl == tlb && te == text,
          "%s: size %d lb %ld extent %ld true %ld/%ld, expected %d %ld %ld %ld/%ld", what, s, (long)l, (long)e,
          (long)tl, (long)te, sz, lb, ext, tlb, text);
    MPI_Count cs = -99, cl = -99, ce = -99, ctl = -99, cte = -99;
    MPI_Type_size_x(t, &cs);
    MPI_Type_get_extent_x(t, &cl, &ce);
    MPI_Type_get_true_extent_x(t, &ctl, &cte);
    CHECK(cs == sz && cl == lb && ce == ext && ctl == tlb && cte == text, "%s: the _x queries disagree", what);
#if MPI_VERSION >= 4
    MPI_Type_get_true_extent_c(t, &ctl, &cte);
    CHECK(ctl == tlb && cte == text, "%s: Type_get_true_extent_c %ld/%ld", what, (long)ctl, (long)cte);
#endif
}

/* envelope of t: numbers of ints, addresses, datatypes, and the combiner */
static void envelope_is(const char *what, MPI_Datatype t, int ni, int na, int nd, int comb)
{
    int i = -1, a = -1, d = -1, c = -1;
    MPI_Type_get_envelope(t, &i, &a, &d, &c);
    CHECK(i == ni && a == na && d == nd && c == comb, "%s: envelope %d %d %d combiner %d, expected %d %d %d %d",
          what, i, a, d, c, ni, na, nd, comb);
}

/* contents of t: ints, addresses and the (predefined) first input type */
static void contents_are(const char *what, MPI_Datatype t, int ni, const int *ints, int na, const MPI_Aint *addrs,
                         MPI_Datatype first)
{
    int gi[64];
    MPI_Aint ga[64];
    MPI_Datatype gd[8];
    int i = 0, a = 0, d = 0, c = 0;
    MPI_Type_get_envelope(t, &i, &a, &d, &c);
    if (i > 64 || a > 64 || d > 8) {
        CHECK(0, "%s: envelope too large (%d %d %d)", what, i, a, d);
        return;
    }
    /* the envelope's numbers as the maximums: Open MPI 4.1.4 walks max_datatypes entries */
    MPI_Type_get_contents(t, i, a, d, gi, ga, gd);
    for (int k = 0; k < ni && k < i; k++)
        CHECK(gi[k] == ints[k], "%s: integer %d is %d, expected %d", what, k, gi[k], ints[k]);
    for (int k = 0; k < na && k < a; k++)
        CHECK(ga[k] == addrs[k], "%s: address %d is %ld, expected %ld", what, k, (long)ga[k], (long)addrs[k]);
    CHECK(i == ni && a == na && d >= 1 && gd[0] == first, "%s: contents counts %d %d or type differ", what, i, a);
}

static void free_type(MPI_Datatype *t)
{
    MPI_Type_free(t);
    CHECK(*t == MPI_DATATYPE_NULL, "Type_free did not reset the handle");
}

/* The ints of `count` items of t at buf, packed (to compare typemaps and their order). */
static int typemap_ints(MPI_Datatype t, int count, const void *buf, int *out, int max)
{
    char packed[4096];
    int pos = 0, n = 0;
    MPI_Type_commit(&t); /* packing needs a committed type; committing again is harmless */
    MPI_Pack(buf, count, t, packed, sizeof packed, &pos, MPI_COMM_SELF);
    /* unpack as plain ints: the types here are made of MPI_INT only */
    int p2 = 0;
    n = pos / 4;
    if (n > max)
        n = max;
    MPI_Unpack(packed, pos, &p2, out, n, MPI_INT, MPI_COMM_SELF);
    return n;
}

static void test_constructors(void)
{
    MPI_Datatype t, u;
    {
        MPI_Type_create_hvector(3, 2, 20, MPI_INT, &t);
        bounds_are("hvector(3,2,20B,INT)", t, 24, 0, 48, 0, 48);
        envelope_is("hvector", t, 2, 1, 1, MPI_COMBINER_HVECTOR);
        int ints[2] = { 3, 2 };
        MPI_Aint ad[1] = { 20 };
        contents_are("hvector", t, 2, ints, 1, ad, MPI_INT);
        free_type(&t);
        /* a stride that keeps the doubles aligned: Open MPI pads an unaligned extent */
        MPI_Type_create_hvector(2, 1, -16, MPI_DOUBLE, &t);
        bounds_are("hvector(2,1,-16B,DOUBLE)", t, 16, -16, 24, -16, 24);
        free_type(&t);
    }
    {
        int bl[3] = { 2, 1, 0 };
        MPI_Aint d[3] = { 16, -8, 100 };
        MPI_Type_create_hindexed(3, bl, d, MPI_INT, &t);
        bounds_are("hindexed({2,1,0},{16,-8,100},INT)", t, 12, -8, 32, -8, 32);
        envelope_is("hindexed", t, 4, 3, 1, MPI_COMBINER_HINDEXED);
        int ints[4] = { 3, 2, 1, 0 };
        contents_are("hindexed", t, 4, ints, 3, d, MPI_INT);
        free_type(&t);
    }
    {
        int d[3] = { 4, 0, -3 };
        MPI_Type_create_indexed_block(3, 2, d, MPI_INT, &t);
        bounds_are("indexed_block(3,2,{4,0,-3},INT)", t, 24, -12, 36, -12, 36);
        envelope_is("indexed_block", t, 5, 0, 1, MPI_COMBINER_INDEXED_BLOCK);
        int ints[5] = { 3, 2, 4, 0, -3 };
        contents_are("indexed_block", t, 5, ints, 0, NULL, MPI_INT);
        int buf[16], got[16];
        for (int i = 0; i < 16; i++)
            buf[i] = i;
        int n = typemap_ints(t, 1, buf + 4, got, 16);
        CHECK(n == 6 && got[0] == 8 && got[1] == 9 && got[2] == 4 && got[3] == 5 && got[4] == 1 && got[5] == 2,
              "indexed_block typemap order: n=%d %d %d %d %d %d %d", n, got[0], got[1], got[2], got[3], got[4],
              got[5]);
        free_type(&t);
    }
    {
        MPI_Aint d[2] = { 0, 40 };
        MPI_Type_create_hindexed_block(2, 3, d, MPI_SHORT, &t);
        bounds_are("hindexed_block(2,3,{0,40},SHORT)", t, 12, 0, 46, 0, 46);
        envelope_is("hindexed_block", t, 2, 2, 1, MPI_COMBINER_HINDEXED_BLOCK);
        int ints[2] = { 2, 3 };
        contents_are("hindexed_block", t, 2, ints, 2, d, MPI_SHORT);
        free_type(&t);
    }
    {
        MPI_Type_create_resized(MPI_INT, -4, 16, &t);
        bounds_are("resized(INT,-4,16)", t, 4, -4, 16, 0, 4);
        envelope_is("resized", t, 0, 2, 1, MPI_COMBINER_RESIZED);
        MPI_Aint ad[2] = { -4, 16 };
        contents_are("resized", t, 0, NULL, 2, ad, MPI_INT);
        free_type(&t);
        /* a negative extent: copies go down (both reference MPIs agree on these bounds) */
        MPI_Type_create_resized(MPI_INT, 0, -4, &u);
        bounds_are("resized(INT,0,-4)", u, 4, 0, -4, 0, 4);
        MPI_Type_contiguous(3, u, &t);
        bounds_are("contiguous(3, resized(INT,0,-4))", t, 12, -8, 4, -8, 12);
        int ints8[8] = { 0, 1, 2, 3, 4, 5, 6, 7 }, got3[3];
        int n3 = typemap_ints(t, 1, ints8 + 4, got3, 3);
        CHECK(n3 == 3 && got3[0] == 4 && got3[1] == 3 && got3[2] == 2, "negative extent typemap: %d %d %d",
              got3[0], got3[1], got3[2]);
        free_type(&t);
        MPI_Type_vector(2, 2, 3, u, &t);
        bounds_are("vector(2,2,3, resized(INT,0,-4))", t, 16, -16, 12, -16, 20);
        free_type(&t);
        free_type(&u);
        MPI_Type_vector(2, 1, 3, MPI_INT, &u);
        MPI_Type_create_resized(u, 0, 8, &t);
        bounds_are("resized(vector(2,1,3,INT),0,8)", t, 8, 0, 8, 0, 16);
        /* a derived input type comes back as a handle to free */
        MPI_Datatype in[1];
        int ni, na, nd, c;
        MPI_Type_get_envelope(t, &ni, &na, &nd, &c);
        MPI_Aint ad2[2];
        MPI_Type_get_contents(t, 0, 2, 1, NULL, ad2, in);
        bounds_are("contents of resized: the vector", in[0], 8, 0, 16, 0, 16);
        envelope_is("contents of resized: the vector", in[0], 3, 0, 1, MPI_COMBINER_VECTOR);
        MPI_Type_free(&in[0]);
        free_type(&u);
        free_type(&t);
    }
    {
        MPI_Type_vector(3, 2, 4, MPI_INT, &u);
        MPI_Type_dup(u, &t);
        bounds_are("dup(vector(3,2,4,INT))", t, 24, 0, 40, 0, 40);
        envelope_is("dup", t, 0, 0, 1, MPI_COMBINER_DUP);
        /* attributes: copied by MPI_TYPE_DUP_FN, not by MPI_TYPE_NULL_COPY_FN */
        int kdup, knull, val = 42, flag = -1;
        void *got = NULL;
        MPI_Type_create_keyval(MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN, &kdup, NULL);
        MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, &knull, NULL);
        MPI_Type_set_attr(t, kdup, &val);
        MPI_Type_set_attr(t, knull, &val);
        MPI_Datatype t2;
        MPI_Type_dup(t, &t2);
        MPI_Type_get_attr(t2, kdup, &got, &flag);
        CHECK(flag == 1 && got == &val, "dup: MPI_TYPE_DUP_FN attribute not copied (flag %d)", flag);
        MPI_Type_get_attr(t2, knull, &got, &flag);
        CHECK(flag == 0, "dup: MPI_TYPE_NULL_COPY_FN attribute copied");
        free_type(&t2);
        MPI_Type_delete_attr(t, kdup);
        MPI_Type_delete_attr(t, knull);
        MPI_Type_free_keyval(&kdup);
        MPI_Type_free_keyval(&knull);
        free_type(&u);
        bounds_are("dup after freeing its input", t, 24, 0, 40, 0, 40);
        free_type(&t);
        MPI_Type_dup(MPI_DOUBLE, &t);
        MPI_Datatype in[1];
        MPI_Type_get_contents(t, 0, 0, 1, NULL, NULL, in);
        CHECK(in[0] == MPI_DOUBLE, "dup(MPI_DOUBLE): contents is not MPI_DOUBLE");
        free_type(&t);
        envelope_is("MPI_INT", MPI_INT, 0, 0, 0, MPI_COMBINER_NAMED);
    }
    {
        int sz[2] = { 4, 5 }, sub[2] = { 2, 3 }, st[2] = { 1, 2 };
        MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_C, MPI_INT, &t);
        bounds_are("subarray C {4,5} {2,3} {1,2}", t, 24, 0, 80, 28, 32);
        envelope_is("subarray", t, 8, 0, 1, MPI_COMBINER_SUBARRAY);
        int ints[8] = { 2, 4, 5, 2, 3, 1, 2, MPI_ORDER_C };
        contents_are("subarray", t, 8, ints, 0, NULL, MPI_INT);
        int buf[20], got[20];
        for (int i = 0; i < 20; i++)
            buf[i] = i;
        int n = typemap_ints(t, 1, buf, got, 20);
        static const int want_c[6] = { 7, 8, 9, 12, 13, 14 };
        CHECK(n == 6 && memcmp(got, want_c, sizeof want_c) == 0, "subarray C typemap (n=%d, first %d)", n, got[0]);
        free_type(&t);
        MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_FORTRAN, MPI_INT, &t);
        bounds_are("subarray Fortran {4,5} {2,3} {1,2}", t, 24, 0, 80, 36, 40);
        n = typemap_ints(t, 1, buf, got, 20);
        static const int want_f[6] = { 9, 10, 13, 14, 17, 18 };
        CHECK(n == 6 && memcmp(got, want_f, sizeof want_f) == 0, "subarray Fortran typemap (n=%d, first %d)", n,
              got[0]);
        free_type(&t);
        int sz3[3] = { 2, 3, 4 }, sub3[3] = { 1, 2, 1 }, st3[3] = { 1, 1, 3 };
        MPI_Type_create_subarray(3, sz3, sub3, st3, MPI_ORDER_C, MPI_DOUBLE, &t);
        bounds_are("subarray C 3-D", t, 16, 0, 192, 152, 40);
        free_type(&t);
    }
#ifndef OPEN_MPI /* Open MPI 4.1 removed the MPI-1 constructors (MPI-3 deleted them) */
    {
        MPI_Type_hvector(3, 2, 20, MPI_INT, &t);
        bounds_are("MPI-1 hvector", t, 24, 0, 48, 0, 48);
        free_type(&t);
        int bl[2] = { 2, 1 };
        MPI_Aint d[2] = { 16, -8 };
        MPI_Type_hindexed(2, bl, d, MPI_INT, &t);
        bounds_are("MPI-1 hindexed", t, 12, -8, 32, -8, 32);
        free_type(&t);
        MPI_Datatype ty[2] = { MPI_INT, MPI_DOUBLE };
        MPI_Type_struct(2, bl, d, ty, &t);
        bounds_are("MPI-1 struct", t, 16, -8, 32, -8, 32);
        MPI_Aint lb = -1, ub = -1, ext = -1;
        MPI_Type_lb(t, &lb);
        MPI_Type_ub(t, &ub);
        MPI_Type_extent(t, &ext);
        CHECK(lb == -8 && ub == 24 && ext == 32, "MPI-1 lb/ub/extent %ld %ld %ld", (long)lb, (long)ub, (long)ext);
        free_type(&t);
    }
#endif
    if (rank == 0)
        printf("types2: constructors, bounds, envelopes and contents checked\n");
}

/* The owner of global index g of a dimension of n over p processes (distribution, darg). */
static int owner(int g, int n, int p, int dist, int darg)
{
    if (dist == MPI_DISTRIBUTE_NONE)
        return 0;
    if (dist == MPI_DISTRIBUTE_BLOCK) {
        int b = darg == MPI_DISTRIBUTE_DFLT_DARG ? (n + p - 1) / p : darg;
        return g / b;
    }
    int b = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
    return (g / b) % p;
}

/* darray over a 2-D grid: the typemap must be the owned elements in storage order. */
static void darray_case(const char *what, const int *gs, const int *dist, const int *darg, int order)
{
    int ps[2] = { 0, 0 };
    MPI_Dims_create(size, 2, ps);
    if (dist[0] == MPI_DISTRIBUTE_NONE || dist[1] == MPI_DISTRIBUTE_NONE) {
        ps[dist[0] == MPI_DISTRIBUTE_NONE ? 0 : 1] = 1;
        ps[dist[0] == MPI_DISTRIBUTE_NONE ? 1 : 0] = size;
    }
    int coords[2] = { rank / ps[1], rank % ps[1] }; /* row-major grid */
    MPI_Datatype t;
    MPI_Type_create_darray(size, rank, 2, gs, dist, darg, ps, order, MPI_INT, &t);
    MPI_Type_commit(&t);
    int total = gs[0] * gs[1];
    MPI_Aint lb, ext;
    MPI_Type_get_extent(t, &lb, &ext);
    CHECK(lb == 0 && ext == 4L * total, "%s: lb %ld extent %ld", what, (long)lb, (long)ext);
    int glob[256], got[256], want[256], nw = 0;
    for (int i = 0; i < total; i++)
        glob[i] = i;
    /* storage order: C has the last index fastest, Fortran the first */
    for (int a = 0; a < (order == MPI_ORDER_C ? gs[0] : gs[1]); a++)
        for (int b = 0; b < (order == MPI_ORDER_C ? gs[1] : gs[0]); b++) {
            int i = order == MPI_ORDER_C ? a : b, j = order == MPI_ORDER_C ? b : a;
            if (owner(i, gs[0], ps[0], dist[0], darg[0]) == coords[0] &&
                owner(j, gs[1], ps[1], dist[1], darg[1]) == coords[1])
                want[nw++] = order == MPI_ORDER_C ? i * gs[1] + j : i + j * gs[0];
        }
    int sz = -1;
    MPI_Type_size(t, &sz);
    CHECK(sz == 4 * nw, "%s: size %d, expected %d", what, sz, 4 * nw);
    int n = typemap_ints(t, 1, glob, got, 256);
    CHECK(n == nw && memcmp(got, want, 4 * nw) == 0, "%s: typemap differs (%d elements, expected %d)", what, n, nw);
    /* every element is owned exactly once: the types' sizes sum to the whole array */
    int all = 0;
    MPI_Allreduce(&sz, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(all == 4 * total, "%s: sizes sum to %d, expected %d", what, all, 4 * total);
    /* and the type moves data: the packed owned elements received back into the darray */
    int mine[256];
    int pos = 0;
    MPI_Pack(glob, 1, t, mine, sizeof mine, &pos, MPI_COMM_SELF);
    int recv[256];
    for (int i = 0; i < total; i++)
        recv[i] = -1;
    MPI_Sendrecv(mine, nw, MPI_INT, 0, 0, recv, 1, t, 0, 0, MPI_COMM_SELF, MPI_STATUS_IGNORE);
    for (int i = 0; i < total; i++) {
        int owned = 0;
        for (int k = 0; k < nw; k++)
            owned |= want[k] == i;
        CHECK(recv[i] == (owned ? i : -1), "%s: receive into the darray wrote %d at %d", what, recv[i], i);
    }
    MPI_Type_free(&t);
}

static void test_darray(void)
{
    int gs[2] = { 7, 5 };
    int d1[2] = { MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC }, a1[2] = { MPI_DISTRIBUTE_DFLT_DARG, 2 };
    darray_case("darray block x cyclic(2), C", gs, d1, a1, MPI_ORDER_C);
    darray_case("darray block x cyclic(2), Fortran", gs, d1, a1, MPI_ORDER_FORTRAN);
    int d2[2] = { MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK }, a2[2] = { MPI_DISTRIBUTE_DFLT_DARG, 5 };
    darray_case("darray cyclic x block(5), C", gs, d2, a2, MPI_ORDER_C);
    int d3[2] = { MPI_DISTRIBUTE_NONE, MPI_DISTRIBUTE_BLOCK }, a3[2] = { MPI_DISTRIBUTE_DFLT_DARG,
                                                                          MPI_DISTRIBUTE_DFLT_DARG };
    int gs3[2] = { 3, 9 };
    darray_case("darray none x block, Fortran", gs3, d3, a3, MPI_ORDER_FORTRAN);
    {
        MPI_Datatype t;
        int g[1] = { 10 }, di[1] = { MPI_DISTRIBUTE_CYCLIC }, da[1] = { 3 }, ps[1] = { size };
        MPI_Type_create_darray(size, rank, 1, g, di, da, ps, MPI_ORDER_C, MPI_INT, &t);
        envelope_is("darray", t, 8, 0, 1, MPI_COMBINER_DARRAY);
        int ints[8] = { size, rank, 1, 10, MPI_DISTRIBUTE_CYCLIC, 3, size, MPI_ORDER_C };
        contents_are("darray", t, 8, ints, 0, NULL, MPI_INT);
        MPI_Type_free(&t);
    }
    if (rank == 0)
        printf("types2: darray typemaps (block, cyclic, none; C and Fortran order) checked\n");
}

static void test_queries(void)
{
    MPI_Datatype t;
    MPI_Type_vector(2, 2, 3, MPI_INT, &t);
    MPI_Type_commit(&t);
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    MPI_Type_set_name(t, "my vector");
    MPI_Type_get_name(t, name, &len);
    CHECK(strcmp(name, "my vector") == 0 && len == 9, "Type_get_name after set_name: '%s' (%d)", name, len);
    /* 7 ints received with a type of 4 ints per item: one item and 3 elements of the next */
    int sbuf[7] = { 1, 2, 3, 4, 5, 6, 7 }, rbuf[20];
    MPI_Status st;
    MPI_Sendrecv(sbuf, 7, MPI_INT, 0, 5, rbuf, 3, t, 0, 5, MPI_COMM_SELF, &st);
    int n = -1, c = -1;
    MPI_Get_elements(&st, t, &n);
    MPI_Get_count(&st, t, &c);
    CHECK(n == 7 && c == MPI_UNDEFINED, "Get_elements %d (expected 7), Get_count %d (MPI_UNDEFINED)", n, c);
    CHECK(rbuf[0] == 1 && rbuf[1] == 2 && rbuf[3] == 3 && rbuf[4] == 4 && rbuf[5] == 5 && rbuf[6] == 6 &&
              rbuf[8] == 7,
          "partial receive into vector: %d %d %d %d %d %d %d", rbuf[0], rbuf[1], rbuf[3], rbuf[4], rbuf[5], rbuf[6],
          rbuf[8]);
    MPI_Count nx = -1;
    MPI_Get_elements_x(&st, t, &nx);
    CHECK(nx == 7, "Get_elements_x %ld", (long)nx);
#if MPI_VERSION >= 4
    nx = -1;
    MPI_Get_elements_c(&st, t, &nx);
    CHECK(nx == 7, "Get_elements_c %ld", (long)nx);
#endif
    MPI_Get_elements(&st, MPI_INT, &n);
    CHECK(n == 7, "Get_elements(MPI_INT) %d", n);
    MPI_Type_free(&t);
    /* Type_match_size: a type of the requested class and size */
    static const struct {
        int cls, sz;
    } m[] = { { MPI_TYPECLASS_REAL, 4 },    { MPI_TYPECLASS_REAL, 8 },    { MPI_TYPECLASS_INTEGER, 1 },
              { MPI_TYPECLASS_INTEGER, 2 }, { MPI_TYPECLASS_INTEGER, 4 }, { MPI_TYPECLASS_INTEGER, 8 },
              { MPI_TYPECLASS_COMPLEX, 8 }, { MPI_TYPECLASS_COMPLEX, 16 } };
    for (unsigned i = 0; i < sizeof m / sizeof m[0]; i++) {
        MPI_Datatype r = MPI_DATATYPE_NULL;
        int s = -1;
        int rc = MPI_Type_match_size(m[i].cls, m[i].sz, &r);
        if (rc == MPI_SUCCESS)
            MPI_Type_size(r, &s);
        CHECK(rc == MPI_SUCCESS && s == m[i].sz, "Type_match_size(%d, %d): rc %d size %d", m[i].cls, m[i].sz, rc, s);
    }
    if (rank == 0)
        printf("types2: set/get_name, Get_elements of a partial item, Type_match_size checked\n");
}

static void test_communication(void)
{
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    /* Sendrecv of a subarray item to a contiguous receive, and back into a hindexed type with
     * a negative displacement */
    {
        int sz[2] = { 4, 5 }, sub[2] = { 2, 3 }, st[2] = { 1, 2 };
        MPI_Datatype sa;
        MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_C, MPI_INT, &sa);
        MPI_Type_commit(&sa);
        int a[20], r[6];
        for (int i = 0; i < 20; i++)
            a[i] = rank * 100 + i;
        MPI_Sendrecv(a, 1, sa, next, 1, r, 6, MPI_INT, prev, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        static const int idx[6] = { 7, 8, 9, 12, 13, 14 };
        for (int k = 0; k < 6; k++)
            CHECK(r[k] == prev * 100 + idx[k], "subarray Sendrecv: r[%d] = %d", k, r[k]);
        int bl[2] = { 4, 2 };
        MPI_Aint d[2] = { 8, -16 };
        MPI_Datatype hi;
        MPI_Type_create_hindexed(2, bl, d, MPI_INT, &hi);
        MPI_Type_commit(&hi);
        int b[16];
        for (int i = 0; i < 16; i++)
            b[i] = -1;
        MPI_Sendrecv(r, 6, MPI_INT, next, 2, b + 6, 1, hi, prev, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        int pp = (prev + size - 1) % size;
        for (int i = 0; i < 16; i++) {
            int want = -1;
            if (i >= 8 && i < 12)
                want = pp * 100 + idx[i - 8];
            if (i >= 2 && i < 4)
                want = pp * 100 + idx[4 + i - 2];
            CHECK(b[i] == want, "hindexed receive: b[%d] = %d, expected %d", i, b[i], want);
        }
        MPI_Type_free(&hi);
        /* Bcast of one subarray item from every root */
        for (int root = 0; root < size; root++) {
            for (int i = 0; i < 20; i++)
                a[i] = rank == root ? 1000 * root + i : -1;
            MPI_Bcast(a, 1, sa, root, MPI_COMM_WORLD);
            for (int i = 0; i < 20; i++) {
                int in = (i / 5 >= 1 && i / 5 < 3 && i % 5 >= 2);
                int want = rank == root || in ? 1000 * root + i : -1;
                CHECK(a[i] == want, "subarray Bcast root %d: a[%d] = %d", root, i, a[i]);
            }
        }
        MPI_Type_free(&sa);
    }
    /* Scatter / Gather columns of a 3 x size matrix with a resized column type */
    {
        MPI_Datatype col, colr;
        MPI_Type_vector(3, 1, size, MPI_INT, &col);
        MPI_Type_create_resized(col, 0, sizeof(int), &colr);
        MPI_Type_commit(&colr);
        MPI_Type_free(&col);
        int m[3 * 64], c[3];
        for (int i = 0; i < 3 * size; i++)
            m[i] = rank == 0 ? i : -1;
        MPI_Scatter(m, 1, colr, c, 3, MPI_INT, 0, MPI_COMM_WORLD);
        for (int k = 0; k < 3; k++)
            CHECK(c[k] == k * size + rank, "Scatter column: c[%d] = %d", k, c[k]);
        for (int k = 0; k < 3; k++)
            c[k] = 10 * c[k] + 1;
        for (int i = 0; i < 3 * size; i++)
            m[i] = -1;
        MPI_Gather(c, 3, MPI_INT, m, 1, colr, 0, MPI_COMM_WORLD);
        if (rank == 0)
            for (int i = 0; i < 3 * size; i++)
                CHECK(m[i] == 10 * i + 1, "Gather column: m[%d] = %d", i, m[i]);
        MPI_Type_free(&colr);
    }
    /* Allgather into an indexed_block type with a negative displacement: ints +1 and -1 of
     * each item (lb -4, extent 12), the middle int is a gap */
    {
        int d[2] = { 1, -1 };
        MPI_Datatype ib;
        MPI_Type_create_indexed_block(2, 1, d, MPI_INT, &ib);
        MPI_Type_commit(&ib);
        int s[2] = { rank * 10 + 1, rank * 10 + 2 }, r[3 * 64];
        for (int i = 0; i < 3 * size; i++)
            r[i] = -1;
        MPI_Allgather(s, 2, MPI_INT, r + 1, 1, ib, MPI_COMM_WORLD);
        for (int q = 0; q < size; q++)
            CHECK(r[3 * q + 2] == q * 10 + 1 && r[3 * q] == q * 10 + 2 && r[3 * q + 1] == -1,
                  "Allgather indexed_block: item %d = %d %d %d", q, r[3 * q], r[3 * q + 1], r[3 * q + 2]);
        MPI_Type_free(&ib);
    }
    /* Alltoall with a dup of a committed vector (the dup is committed too) */
    {
        MPI_Datatype v, dv;
        MPI_Type_vector(2, 1, 2, MPI_INT, &v);
        MPI_Type_commit(&v);
        MPI_Type_dup(v, &dv);
        MPI_Type_free(&v);
        int s[4 * 64], r[4 * 64];
        MPI_Aint lb, ext;
        MPI_Type_get_extent(dv, &lb, &ext);
        CHECK(ext == 12, "dup'd vector extent %ld", (long)ext);
        /* items every 3 ints: block q is ints 3q and 3q+2 */
        for (int i = 0; i < 3 * size + 1; i++) {
            s[i] = rank * 1000 + i;
            r[i] = -1;
        }
        MPI_Alltoall(s, 1, dv, r, 1, dv, MPI_COMM_WORLD);
        for (int q = 0; q < size; q++)
            CHECK(r[3 * q] == q * 1000 + 3 * rank && r[3 * q + 2] == q * 1000 + 3 * rank + 2 && r[3 * q + 1] == -1,
                  "Alltoall dup'd vector: block %d = %d %d %d", q, r[3 * q], r[3 * q + 1], r[3 * q + 2]);
        MPI_Type_free(&dv);
    }
    if (rank == 0)
        printf("types2: Sendrecv, Bcast, Scatter, Gather, Allgather, Alltoall with the new types checked\n");
}

static void test_pack(void)
{
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    /* vector(3, 1, 2): ints 0, 2, 4 of an item of extent 5 ints; two items: 0 2 4 5 7 9 */
    static const int at[6] = { 0, 2, 4, 5, 7, 9 };
    int in_v[12] = { 0 };
    for (int k = 0; k < 6; k++)
        in_v[at[k]] = 1;
    MPI_Datatype v;
    MPI_Type_vector(3, 1, 2, MPI_INT, &v);
    MPI_Type_commit(&v);
    int a[12];
    double x = 2.5 + rank;
    for (int i = 0; i < 12; i++)
        a[i] = rank * 100 + i;
    int s1 = -1, s2 = -1;
    MPI_Pack_size(2, v, MPI_COMM_WORLD, &s1);
    MPI_Pack_size(1, MPI_DOUBLE, MPI_COMM_WORLD, &s2);
    char buf[256];
    int pos = 0;
    MPI_Pack(a, 2, v, buf, sizeof buf, &pos, MPI_COMM_WORLD);
    int mid = pos;
    MPI_Pack(&x, 1, MPI_DOUBLE, buf, sizeof buf, &pos, MPI_COMM_WORLD);
    CHECK(mid >= 24 && mid <= s1 && pos - mid <= s2 && pos - mid >= 8, "Pack positions %d %d (sizes %d %d)", mid,
          pos, s1, s2);
    int b[12];
    double y = 0;
    for (int i = 0; i < 12; i++)
        b[i] = -1;
    int p2 = 0;
    MPI_Unpack(buf, pos, &p2, b, 2, v, MPI_COMM_WORLD);
    MPI_Unpack(buf, pos, &p2, &y, 1, MPI_DOUBLE, MPI_COMM_WORLD);
    CHECK(p2 == pos && y == x, "Unpack position %d (packed %d), double %g", p2, pos, y);
    for (int i = 0; i < 12; i++) {
        int want = in_v[i] ? a[i] : -1;
        CHECK(b[i] == want, "Unpack vector: b[%d] = %d, expected %d", i, b[i], want);
    }
    /* packed data sent as MPI_PACKED, received with the type; and the reverse */
    for (int i = 0; i < 12; i++)
        b[i] = -1;
    MPI_Sendrecv(buf, mid, MPI_PACKED, next, 3, b, 2, v, prev, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 0; i < 12; i++) {
        int want = in_v[i] ? prev * 100 + i : -1;
        CHECK(b[i] == want, "MPI_PACKED -> vector: b[%d] = %d, expected %d", i, b[i], want);
    }
    char rb[256];
    MPI_Status st;
    MPI_Sendrecv(a, 2, v, next, 4, rb, sizeof rb, MPI_PACKED, prev, 4, MPI_COMM_WORLD, &st);
    int got = -1;
    MPI_Get_count(&st, MPI_PACKED, &got);
    int c[6], p3 = 0;
    MPI_Unpack(rb, got, &p3, c, 6, MPI_INT, MPI_COMM_WORLD);
    for (int k = 0; k < 6; k++)
        CHECK(c[k] == prev * 100 + at[k], "vector -> MPI_PACKED: c[%d] = %d", k, c[k]);
    MPI_Type_free(&v);

    /* external32: big-endian, standard sizes */
    struct {
        int i;
        short s;
        double d;
        long long ll;
        float f;
        char ch;
    } in = { 0x01020304, -2, 1.5, -3, 2.0f, 'A' }, out;
    static const unsigned char want[] = { 1,    2,    3,    4,    0xff, 0xfe, 0x3f, 0xf8, 0,    0,    0,    0,
                                          0,    0,    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfd, 0x40, 0,
                                          0,    0,    0x41 };
    MPI_Datatype tys[6] = { MPI_INT, MPI_SHORT, MPI_DOUBLE, MPI_LONG_LONG, MPI_FLOAT, MPI_CHAR };
    void *ptrs[6] = { &in.i, &in.s, &in.d, &in.ll, &in.f, &in.ch };
    void *optrs[6] = { &out.i, &out.s, &out.d, &out.ll, &out.f, &out.ch };
    static const int sizes[6] = { 4, 2, 8, 8, 4, 1 };
    unsigned char ext[64];
    MPI_Aint epos = 0;
    for (int k = 0; k < 6; k++) {
        MPI_Aint es = -1;
        MPI_Pack_external_size("external32", 1, tys[k], &es);
        CHECK(es == sizes[k], "Pack_external_size of type %d is %ld, expected %d", k, (long)es, sizes[k]);
        MPI_Pack_external("external32", ptrs[k], 1, tys[k], ext, sizeof ext, &epos);
    }
    CHECK(epos == (MPI_Aint)sizeof want && memcmp(ext, want, sizeof want) == 0, "external32 bytes differ (%ld)",
          (long)epos);
    memset(&out, 0, sizeof out);
    MPI_Aint upos = 0;
    for (int k = 0; k < 6; k++)
        MPI_Unpack_external("external32", ext, epos, &upos, optrs[k], 1, tys[k]);
    CHECK(upos == epos && out.i == in.i && out.s == in.s && out.d == in.d && out.ll == in.ll && out.f == in.f &&
              out.ch == in.ch,
          "Unpack_external round trip");
    /* a derived type in external32: a vector of ints */
    MPI_Type_vector(2, 1, 2, MPI_INT, &v);
    MPI_Type_commit(&v);
    int vi[3] = { 0x0a0b0c0d, 99, -1 }, vo[3] = { 7, 7, 7 };
    MPI_Aint vs = -1, vp = 0, vq = 0;
    MPI_Pack_external_size("external32", 1, v, &vs);
    MPI_Pack_external("external32", vi, 1, v, ext, sizeof ext, &vp);
    static const unsigned char wantv[8] = { 0x0a, 0x0b, 0x0c, 0x0d, 0xff, 0xff, 0xff, 0xff };
    CHECK(vs == 8 && vp == 8 && memcmp(ext, wantv, 8) == 0, "external32 of a vector: size %ld pos %ld", (long)vs,
          (long)vp);
    MPI_Unpack_external("external32", ext, vp, &vq, vo, 1, v);
    CHECK(vo[0] == vi[0] && vo[1] == 7 && vo[2] == -1, "Unpack_external vector: %d %d %d", vo[0], vo[1], vo[2]);
    MPI_Type_free(&v);
    if (rank == 0)
        printf("types2: Pack/Unpack, MPI_PACKED against typed peers, external32 bytes checked\n");
}

#if MPI_VERSION >= 4
/* The large-count forms: constructors record MPI_Count arguments (envelope_c, contents_c). */
static void test_large_count(void)
{
    MPI_Datatype t;
    MPI_Type_create_hvector_c(3, 2, 20, MPI_INT, &t);
    MPI_Count ni = -1, na = -1, nl = -1, nd = -1;
    int comb = -1;
    MPI_Type_get_envelope_c(t, &ni, &na, &nl, &nd, &comb);
    CHECK(ni == 0 && na == 0 && nl == 3 && nd == 1 && comb == MPI_COMBINER_HVECTOR, "envelope_c %ld %ld %ld %ld %d",
          (long)ni, (long)na, (long)nl, (long)nd, comb);
    MPI_Count lc[3] = { 0 };
    MPI_Datatype in[1];
    MPI_Type_get_contents_c(t, 0, 0, 3, 1, NULL, NULL, lc, in);
    CHECK(lc[0] == 3 && lc[1] == 2 && lc[2] == 20 && in[0] == MPI_INT, "contents_c %ld %ld %ld", (long)lc[0],
          (long)lc[1], (long)lc[2]);
    bounds_are("hvector_c", t, 24, 0, 48, 0, 48);
    MPI_Type_commit(&t);
    int a[12], b[12];
    for (int i = 0; i < 12; i++) {
        a[i] = i;
        b[i] = -1;
    }
    char buf[128];
    MPI_Count pos = 0, p2 = 0, ps = -1;
    MPI_Pack_size_c(1, t, MPI_COMM_WORLD, &ps);
    MPI_Pack_c(a, 1, t, buf, sizeof buf, &pos, MPI_COMM_WORLD);
    MPI_Unpack_c(buf, pos, &p2, b, 1, t, MPI_COMM_WORLD);
    CHECK(pos <= ps && p2 == pos && b[0] == 0 && b[1] == 1 && b[2] == -1 && b[5] == 5 && b[10] == 10 && b[11] == 11,
          "Pack_c/Unpack_c");
    MPI_Count es = -1, ep = 0;
    MPI_Pack_external_size_c("external32", 1, t, &es);
    MPI_Pack_external_c("external32", a, 1, t, buf, sizeof buf, &ep);
    CHECK(es == 24 && ep == 24 && buf[3] == 0 && buf[7] == 1 && buf[11] == 5, "Pack_external_c");
    MPI_Type_free(&t);
    MPI_Count sz[2] = { 4, 5 }, sub[2] = { 2, 3 }, st[2] = { 1, 2 };
    MPI_Type_create_subarray_c(2, sz, sub, st, MPI_ORDER_C, MPI_INT, &t);
    bounds_are("subarray_c", t, 24, 0, 80, 28, 32);
    MPI_Type_free(&t);
    MPI_Type_create_resized_c(MPI_INT, -4, 16, &t);
    bounds_are("resized_c", t, 4, -4, 16, 0, 4);
    MPI_Type_free(&t);
}
#endif

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_constructors();
    test_darray();
    test_queries();
    test_communication();
    test_pack();
#if MPI_VERSION >= 4
    test_large_count();
#endif
    int all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("types2: %s\n", all ? "FAILED" : "all checks passed");
    MPI_Finalize();
    return all != 0;
}
