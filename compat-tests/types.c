/*
 * types.c - derived datatypes: MPI_Type_contiguous/vector/indexed/create_struct, commit, free,
 * get_extent, get_name, size; their use in Bcast and Allgather (every byte checked, gaps left
 * untouched); on hcomm only (an extension: MPICH and Open MPI reject predefined ops on derived
 * types), contiguous and homogeneous non-contiguous types in Allreduce, Reduce (every root)
 * and Reduce_scatter_block with predefined ops; error classes under MPI_ERRORS_RETURN.
 *
 * Expected extents are the values MPICH 4.0.2 and Open MPI 4.1.4 both report (struct extents
 * are padded to the largest member alignment, as a C compiler pads a struct). Error checks run
 * on hcomm only: Debian's MPICH 4.0.2 checks no arguments.
 */
#include <mpi.h>

#include <stddef.h>
#include <stdio.h>
#include <string.h>

static int rank, size, fails;

#define CHECK(cond, ...)                                                                      \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            printf("FAIL types: rank=%d line %d: ", rank, __LINE__);                          \
            printf(__VA_ARGS__);                                                              \
            printf("\n");                                                                     \
            fails++;                                                                          \
        }                                                                                     \
    } while (0)

static void extent_is(const char *what, MPI_Datatype t, int size_, long lb_, long ext_)
{
    MPI_Aint lb = -99, ext = -99;
    int s = -99;
    MPI_Type_get_extent(t, &lb, &ext);
    MPI_Type_size(t, &s);
    CHECK(s == size_ && lb == lb_ && ext == ext_, "%s: size %d lb %ld extent %ld, expected %d %ld %ld", what, s,
          (long)lb, (long)ext, size_, lb_, ext_);
#if MPI_VERSION >= 4 /* Open MPI 4.1 is MPI 3.1: no large-count functions */
    MPI_Count clb = -99, cext = -99, cs = -99;
    MPI_Type_get_extent_c(t, &clb, &cext);
    MPI_Type_size_c(t, &cs);
    CHECK(cs == size_ && clb == lb_ && cext == ext_, "%s (_c): size %ld lb %ld extent %ld", what, (long)cs,
          (long)clb, (long)cext);
#endif
}

static MPI_Datatype make_struct(int n, const int *bl, const MPI_Aint *d, const MPI_Datatype *ty)
{
    MPI_Datatype t;
    MPI_Type_create_struct(n, bl, d, ty, &t);
    return t;
}

static void test_extents(void)
{
    MPI_Datatype t, v, s;
    MPI_Type_contiguous(0, MPI_INT, &t);
    extent_is("contiguous(0, INT)", t, 0, 0, 0);
    MPI_Type_free(&t);
    CHECK(t == MPI_DATATYPE_NULL, "Type_free did not set MPI_DATATYPE_NULL");
    MPI_Type_contiguous(3, MPI_DOUBLE_INT, &t);
    extent_is("contiguous(3, DOUBLE_INT)", t, 36, 0, 48);
    MPI_Type_free(&t);
    MPI_Type_contiguous(3, MPI_SHORT_INT, &t);
    extent_is("contiguous(3, SHORT_INT)", t, 18, 0, 24);
    MPI_Type_free(&t);
    MPI_Type_vector(3, 2, 4, MPI_INT, &t);
    extent_is("vector(3,2,4,INT)", t, 24, 0, 40);
    MPI_Type_free(&t);
    MPI_Type_vector(3, 2, -4, MPI_INT, &t);
    extent_is("vector(3,2,-4,INT)", t, 24, -32, 40);
    MPI_Type_free(&t);
    MPI_Type_vector(2, 3, 1, MPI_INT, &t);
    extent_is("vector(2,3,1,INT)", t, 24, 0, 16);
    MPI_Type_free(&t);
    {
        int bl[3] = {2, 0, 1}, d[3] = {5, -7, 1};
        MPI_Type_indexed(3, bl, d, MPI_DOUBLE, &t);
        extent_is("indexed({2,0,1},{5,-7,1},DOUBLE)", t, 24, 8, 48);
        MPI_Type_free(&t);
    }
    {
        int bl[2] = {1, 1};
        MPI_Aint d[2] = {0, 8};
        MPI_Datatype ty[2] = {MPI_DOUBLE, MPI_CHAR};
        t = make_struct(2, bl, d, ty);
        extent_is("struct{double@0, char@8}", t, 9, 0, 16);
        MPI_Type_free(&t);
    }
    {
        int bl[2] = {1, 3};
        MPI_Aint d[2] = {0, 2};
        MPI_Datatype ty[2] = {MPI_SHORT, MPI_CHAR};
        t = make_struct(2, bl, d, ty);
        extent_is("struct{short@0, 3 char@2}", t, 5, 0, 6);
        MPI_Type_free(&t);
    }
    {
        int bl[2] = {1, 1};
        MPI_Aint d[2] = {4, -8};
        MPI_Datatype ty[2] = {MPI_INT, MPI_DOUBLE};
        t = make_struct(2, bl, d, ty);
        extent_is("struct{int@4, double@-8}", t, 12, -8, 16);
        MPI_Type_free(&t);
    }
    {
        int bl[2] = {1, 1};
        MPI_Aint d[2] = {0, 16};
        MPI_Datatype ty[2] = {MPI_DOUBLE_INT, MPI_CHAR};
        t = make_struct(2, bl, d, ty);
        extent_is("struct{double_int@0, char@16}", t, 13, 0, 24);
        MPI_Type_free(&t);
    }
    {
        int bl[2] = {1, 0};
        MPI_Aint d[2] = {0, 8};
        MPI_Datatype ty[2] = {MPI_CHAR, MPI_DOUBLE};
        t = make_struct(2, bl, d, ty);
        extent_is("struct{char@0, 0 double@8}", t, 1, 0, 1);
        MPI_Type_free(&t);
    }
    {
        /* nested: struct of a vector, then contiguous and vector of structs */
        MPI_Type_vector(2, 1, 2, MPI_CHAR, &v);
        extent_is("vector(2,1,2,CHAR)", v, 2, 0, 3);
        int bl[2] = {1, 1};
        MPI_Aint d[2] = {0, 8};
        MPI_Datatype ty[2] = {v, MPI_INT};
        s = make_struct(2, bl, d, ty);
        MPI_Type_free(&v); /* s stays valid */
        extent_is("struct{vector@0, int@8}", s, 6, 0, 12);
        MPI_Type_contiguous(2, s, &t);
        extent_is("contiguous(2, struct{vector, int})", t, 12, 0, 24);
        MPI_Type_free(&t);
        MPI_Type_free(&s);
        MPI_Datatype ty2[2] = {MPI_INT, MPI_CHAR};
        MPI_Aint d2[2] = {0, 4};
        s = make_struct(2, bl, d2, ty2);
        MPI_Type_vector(2, 1, 2, s, &t);
        extent_is("vector(2,1,2,struct{int,char})", t, 10, 0, 24);
        MPI_Type_free(&t);
        MPI_Aint d3[1] = {1};
        t = make_struct(1, bl, d3, &s);
        extent_is("struct{struct{int,char}@1}", t, 5, 1, 8);
        MPI_Type_free(&t);
        MPI_Type_free(&s);
    }
    extent_is("MPI_DOUBLE_INT", MPI_DOUBLE_INT, 12, 0, 16);
    extent_is("MPI_INT", MPI_INT, 4, 0, 4);

    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    MPI_Type_get_name(MPI_FLOAT, name, &len);
    CHECK(strcmp(name, "MPI_FLOAT") == 0 && len == 9, "Type_get_name(MPI_FLOAT) = '%s' (%d)", name, len);
    MPI_Type_get_name(MPI_DOUBLE_INT, name, &len);
    CHECK(strcmp(name, "MPI_DOUBLE_INT") == 0 && len == 14, "Type_get_name(MPI_DOUBLE_INT) = '%s'", name);
    MPI_Type_get_name(MPI_LONG_LONG_INT, name, &len);
    CHECK(strcmp(name, "MPI_LONG_LONG_INT") == 0, "Type_get_name(MPI_LONG_LONG_INT) = '%s'", name);
    MPI_Type_contiguous(2, MPI_INT, &t);
    MPI_Type_get_name(t, name, &len);
    CHECK(name[0] == 0 && len == 0, "Type_get_name(derived) = '%s' (%d)", name, len);
    MPI_Type_free(&t);
}

/* A buffer of ints where value = tag * 1000 + index; gaps keep their -1 sentinel. */
static void fill(int *b, int n, int tag)
{
    for (int i = 0; i < n; i++)
        b[i] = tag * 1000 + i;
}

/* Bcast of `count` items of `t` (over a buffer of nints ints): positions in mask[] carry data. */
static void bcast_case(const char *what, MPI_Datatype t, int count, const int *mask, int nints, int base)
{
    int buf[256];
    for (int root = 0; root < size; root++) {
        if (rank == root)
            fill(buf, nints, root + 1);
        else
            for (int i = 0; i < nints; i++)
                buf[i] = -1;
        MPI_Bcast(buf + base, count, t, root, MPI_COMM_WORLD);
        for (int i = 0; i < nints; i++) {
            int want = (rank == root || mask[i]) ? (root + 1) * 1000 + i : -1;
            CHECK(buf[i] == want, "Bcast %s root %d: int %d is %d, expected %d", what, root, i, buf[i], want);
        }
    }
}

static void test_bcast(void)
{
    MPI_Datatype t;
    int mask[256];
    /* vector(3, 2, 4): ints 0,1, 4,5, 8,9 of each item; extent 10 ints; 2 items */
    MPI_Type_vector(3, 2, 4, MPI_INT, &t);
    MPI_Type_commit(&t);
    memset(mask, 0, sizeof mask);
    for (int it = 0; it < 2; it++)
        for (int b = 0; b < 3; b++)
            for (int k = 0; k < 2; k++)
                mask[it * 10 + b * 4 + k] = 1;
    bcast_case("vector(3,2,4,INT)x2", t, 2, mask, 24, 0);
    MPI_Type_free(&t);

    /* negative stride: blocks at 0, -3, -6 ints from buf+6 */
    MPI_Type_vector(3, 1, -3, MPI_INT, &t);
    MPI_Type_commit(&t);
    memset(mask, 0, sizeof mask);
    mask[6] = mask[3] = mask[0] = 1;
    bcast_case("vector(3,1,-3,INT)", t, 1, mask, 10, 6);
    MPI_Type_free(&t);

    /* indexed, out of order: {2 at 5, 1 at 1, 3 at 8}; extent = 10 ints from int 1; 3 items */
    {
        int bl[3] = {2, 1, 3}, d[3] = {5, 1, 8};
        MPI_Type_indexed(3, bl, d, MPI_INT, &t);
        MPI_Type_commit(&t);
        memset(mask, 0, sizeof mask);
        for (int it = 0; it < 3; it++) {
            int o = it * 10;
            mask[o + 5] = mask[o + 6] = mask[o + 1] = mask[o + 8] = mask[o + 9] = mask[o + 10] = 1;
        }
        bcast_case("indexed x3", t, 3, mask, 40, 0);
        MPI_Type_free(&t);
    }

    /* struct {int@0; 2 short@6 (ints 1.5-2.5 -> we use int granularity: short at 8,10); double@16}:
       data ints 0, 2, 4, 5; gaps 1, 3; extent 24 bytes = 6 ints; 4 items */
    {
        int bl[3] = {1, 2, 1};
        MPI_Aint d[3] = {0, 8, 16};
        MPI_Datatype ty[3] = {MPI_INT, MPI_SHORT, MPI_DOUBLE};
        t = make_struct(3, bl, d, ty);
        MPI_Type_commit(&t);
        memset(mask, 0, sizeof mask);
        for (int it = 0; it < 4; it++) {
            int o = it * 6;
            mask[o + 0] = mask[o + 2] = mask[o + 4] = mask[o + 5] = 1;
        }
        bcast_case("struct{int,2 short,double}x4", t, 4, mask, 24, 0);
        MPI_Type_free(&t);
    }

    /* contiguous of a vector, count 0, and a dense struct with an offset (lb = 4) */
    {
        MPI_Datatype v;
        MPI_Type_vector(2, 1, 2, MPI_INT, &v);
        MPI_Type_contiguous(3, v, &t);
        MPI_Type_free(&v);
        MPI_Type_commit(&t);
        memset(mask, 0, sizeof mask);
        /* vector extent 3 ints: items at 0, 3, 6; data at +0 and +2 */
        for (int k = 0; k < 3; k++)
            mask[3 * k] = mask[3 * k + 2] = 1;
        bcast_case("contiguous(3, vector(2,1,2))", t, 1, mask, 9, 0);
        bcast_case("count 0", t, 0, (int[256]){0}, 9, 0);
        MPI_Type_free(&t);
        int bl[1] = {2};
        MPI_Aint d[1] = {4};
        MPI_Datatype ty[1] = {MPI_INT};
        t = make_struct(1, bl, d, ty);
        MPI_Type_commit(&t);
        memset(mask, 0, sizeof mask);
        for (int i = 1; i <= 6; i++)
            mask[i] = 1; /* 3 items of 2 ints from int 1 (lb 4, extent 8) */
        bcast_case("struct{2 int@4}x3", t, 3, mask, 8, 0);
        MPI_Type_free(&t);
    }
}

static void test_allgather(void)
{
    /* Send: vector(2,1,3,INT) (ints 0 and 3) of 2 items (extent 4 ints); receive: 4 INTs per rank. */
    MPI_Datatype v, rv;
    MPI_Type_vector(2, 1, 3, MPI_INT, &v);
    MPI_Type_commit(&v);
    int send[16], recv[64 * 4];
    fill(send, 16, rank + 1);
    for (int i = 0; i < 4 * size; i++)
        recv[i] = -1;
    MPI_Allgather(send, 2, v, recv, 4, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++) {
        int want[4] = {0, 3, 4, 7};
        for (int k = 0; k < 4; k++)
            CHECK(recv[4 * r + k] == (r + 1) * 1000 + want[k], "Allgather vector->INT: recv[%d] = %d", 4 * r + k,
                  recv[4 * r + k]);
    }
    /* Receive into a strided type: resized-like via struct {int@0} with extent 8 (struct of int
       and zero... use vector(1,1,..) instead): recv type = vector(3,1,2,INT) (ints 0,2,4). */
    MPI_Type_vector(3, 1, 2, MPI_INT, &rv);
    MPI_Type_commit(&rv);
    for (int i = 0; i < 64 * 4; i++)
        recv[i] = -1;
    int s3[3] = {rank * 10 + 1, rank * 10 + 2, rank * 10 + 3};
    MPI_Allgather(s3, 3, MPI_INT, recv, 1, rv, MPI_COMM_WORLD); /* extent 5 ints per rank */
    for (int r = 0; r < size; r++)
        for (int i = 0; i < 5; i++) {
            int want = (i % 2 == 0) ? r * 10 + 1 + i / 2 : -1;
            CHECK(recv[5 * r + i] == want, "Allgather INT->vector: recv[%d] = %d, expected %d", 5 * r + i,
                  recv[5 * r + i], want);
        }
    /* In place with the strided receive type. */
    for (int i = 0; i < 64 * 4; i++)
        recv[i] = -1;
    for (int k = 0; k < 3; k++)
        recv[5 * rank + 2 * k] = rank * 10 + 1 + k;
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, 1, rv, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++)
        for (int i = 0; i < 5; i++) {
            int want = (i % 2 == 0) ? r * 10 + 1 + i / 2 : -1;
            CHECK(recv[5 * r + i] == want, "Allgather in place vector: recv[%d] = %d, expected %d", 5 * r + i,
                  recv[5 * r + i], want);
        }
    MPI_Type_free(&v);
    MPI_Type_free(&rv);

    /* Struct on both sides: {char@0, double@8} x 2 per rank; gap bytes 1..7 keep 0x55. */
    struct S {
        char c;
        double d;
    } ss[2], rs[2 * 64];
    int bl[2] = {1, 1};
    MPI_Aint d[2] = {offsetof(struct S, c), offsetof(struct S, d)};
    MPI_Datatype ty[2] = {MPI_CHAR, MPI_DOUBLE}, st;
    st = make_struct(2, bl, d, ty);
    MPI_Type_commit(&st);
    memset(ss, 0x33, sizeof ss);
    memset(rs, 0x55, sizeof rs);
    for (int k = 0; k < 2; k++) {
        ss[k].c = (char)('a' + rank + k);
        ss[k].d = rank * 100.0 + k + 0.5;
    }
    MPI_Allgather(ss, 2, st, rs, 2, st, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++)
        for (int k = 0; k < 2; k++) {
            struct S *p = &rs[2 * r + k];
            unsigned char *u = (unsigned char *)p;
            int gaps_ok = 1;
            for (int g = 1; g < 8; g++)
                gaps_ok &= u[g] == 0x55;
            CHECK(p->c == (char)('a' + r + k) && p->d == r * 100.0 + k + 0.5 && gaps_ok,
                  "Allgather struct: rank %d item %d = {%c, %g}, gaps %s", r, k, p->c, p->d, gaps_ok ? "ok" : "written");
        }
    MPI_Type_free(&st);
}

static void test_reductions(void)
{
#ifdef HCOMM_MPI_H
    /* MPI defines the predefined ops on predefined types only, and MPICH 4.0.2 and Open MPI
       4.1.4 reject them on any derived type (MPI_ERR_OP). hcomm reduces a type made of one
       predefined type as its elements: contiguous(3, INT) as 3*count INTs. */
    MPI_Datatype c3, vd;
    MPI_Type_contiguous(3, MPI_INT, &c3);
    MPI_Type_commit(&c3);
    enum { N = 5 };
    int in[3 * N * 64], out[3 * N * 64];
    for (int i = 0; i < 3 * N * size; i++)
        in[i] = (rank + 1) * (i + 1);
    long tri = (long)size * (size + 1) / 2;
    MPI_Allreduce(in, out, N, c3, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < 3 * N; i++)
        CHECK(out[i] == tri * (i + 1), "Allreduce contiguous: out[%d] = %d", i, out[i]);
    memcpy(out, in, sizeof(int) * 3 * N);
    MPI_Allreduce(MPI_IN_PLACE, out, N, c3, MPI_MAX, MPI_COMM_WORLD);
    for (int i = 0; i < 3 * N; i++)
        CHECK(out[i] == size * (i + 1), "Allreduce in place contiguous MAX: out[%d] = %d", i, out[i]);
    for (int root = 0; root < size; root++) {
        for (int i = 0; i < 3 * N; i++)
            out[i] = -1;
        MPI_Reduce(in, out, N, c3, MPI_SUM, root, MPI_COMM_WORLD);
        for (int i = 0; i < 3 * N; i++) {
            int want = rank == root ? (int)(tri * (i + 1)) : -1;
            CHECK(out[i] == want, "Reduce contiguous root %d: out[%d] = %d", root, i, out[i]);
        }
    }
    MPI_Reduce_scatter_block(in, out, 2, c3, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < 6; i++)
        CHECK(out[i] == tri * (6 * rank + i + 1), "Reduce_scatter_block contiguous: out[%d] = %d", i, out[i]);

    /* Homogeneous non-contiguous: vector(2,1,2,DOUBLE) (doubles 0 and 2 of 3), gaps untouched. */
    MPI_Type_vector(2, 1, 2, MPI_DOUBLE, &vd);
    MPI_Type_commit(&vd);
    double din[9], dout[9];
    for (int i = 0; i < 9; i++) {
        din[i] = rank + i;
        dout[i] = -1.0;
    }
    MPI_Allreduce(din, dout, 3, vd, MPI_SUM, MPI_COMM_WORLD); /* items at 0, 3, 6: doubles 0,2,3,5,6,8 */
    for (int i = 0; i < 9; i++) {
        int data = (i % 3) != 1;
        double want = data ? (double)(tri - size) + (double)size * i : -1.0;
        CHECK(dout[i] == want, "Allreduce vector(DOUBLE): out[%d] = %g, expected %g", i, dout[i], want);
    }
    MPI_Type_free(&vd);
    MPI_Type_free(&c3);
#endif
}

static void test_errors(void)
{
#ifdef HCOMM_MPI_H /* the reference MPIs check no (MPICH) or few (Open MPI) of these */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Datatype t, saved;
    int buf[8] = {0}, cls = -1, rc;
    MPI_Type_contiguous(2, MPI_INT, &t);
    rc = MPI_Bcast(buf, 1, t, 0, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TYPE, "Bcast with an uncommitted type: class %d", cls);
    rc = MPI_Allreduce(buf, buf + 4, 1, t, MPI_SUM, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TYPE, "Allreduce with an uncommitted type: class %d", cls);
    MPI_Type_commit(&t);
    saved = t;
    MPI_Type_free(&t);
    rc = MPI_Bcast(buf, 1, saved, 0, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TYPE, "Bcast with a freed type: class %d", cls);
    t = MPI_INT;
    rc = MPI_Type_free(&t);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TYPE && t == MPI_INT, "Type_free(MPI_INT): class %d", cls);
    rc = MPI_Type_free(&saved);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TYPE, "double Type_free: class %d", cls);
    rc = MPI_Type_contiguous(-1, MPI_INT, &t);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COUNT, "Type_contiguous(-1): class %d", cls);
    rc = MPI_Type_vector(2, 1, 2, MPI_DATATYPE_NULL, &t);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TYPE, "Type_vector(DATATYPE_NULL): class %d", cls);
    rc = MPI_Allreduce(buf, buf + 4, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_OP, "Allreduce with MPI_OP_NULL: class %d", cls);
    /* a predefined op on a type mixing int and double */
    int bl[2] = {1, 1};
    MPI_Aint d[2] = {0, 8};
    MPI_Datatype ty[2] = {MPI_INT, MPI_DOUBLE};
    t = make_struct(2, bl, d, ty);
    MPI_Type_commit(&t);
    double db[4] = {0};
    rc = MPI_Allreduce(db, db + 2, 1, t, MPI_SUM, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_OP, "Allreduce SUM on struct{int,double}: class %d", cls);
    MPI_Type_free(&t);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
#endif
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 64) {
        MPI_Finalize();
        return 77;
    }
    test_extents();
    test_bcast();
    test_allgather();
    test_reductions();
    test_errors();
    int all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("types: %s (%d failures)\n", all ? "FAILED" : "ok", all);
    MPI_Finalize();
    return all ? 1 : 0;
}
