/*
 * nb_coll2.c - the second set of nonblocking collectives, and MPI_Alltoallw, exact results.
 *
 *   1. Igather, Igatherv, Iscatter, Iscatterv, Ialltoallv, Ialltoallw, Iscan, Iexscan all
 *      outstanding at once on one communicator, completed with MPI_Waitall; roots differ,
 *      Igatherv/Iscatterv blocks lie in reverse rank order with gaps.
 *   2. Derived datatypes: Igather into a strided vector type at the root, Iscatterv from one,
 *      Ialltoallw and MPI_Alltoallw with a different datatype per peer (vector, contiguous,
 *      MPI_INT) and byte displacements (MPICH and Open MPI refuse predefined ops on derived
 *      datatypes, so the scans use MPI_INT).
 *   3. In place: Igather and Iscatter at the root, Ialltoallv, Iscan, Iexscan, Alltoallw.
 *   4. The _c large-count forms when the header has them (MPI 4); they print nothing extra.
 * Rank r contributes r*1000 + i (+ a salt) at index i, so every result is an exact integer;
 * bytes not covered by a datatype or a block (gaps) must keep their sentinel -1.
 * Prints implementation-independent lines on rank 0; failures print FAIL.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, fails;
/* MPI_STATUSES_IGNORE through a volatile pointer: gcc's -Wstringop-overflow otherwise flags
   the constant (MPI_Status *)1 passed as an array parameter. */
static MPI_Status *volatile statuses_ignore;

#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fails++;                                                                           \
            if (fails < 20) {                                                                  \
                printf("FAIL nb_coll2 rank %d: ", rank);                                       \
                printf(__VA_ARGS__);                                                           \
                printf("\n");                                                                  \
            }                                                                                  \
        }                                                                                      \
    } while (0)

static int val(int r, int i, int salt) { return r * 1000 + i + salt; }
static int *ints(int n, int v)
{
    int *p = malloc(sizeof(int) * (n > 0 ? n : 1));
    for (int i = 0; i < n; i++)
        p[i] = v;
    return p;
}
/* Pairwise Alltoallv count: symmetric, so both sides agree. */
static int pair(int a, int b) { return (a + b) % 3 + 1; }
/* Sum over ranks 0..k of val(r, i, salt). */
static int prefix(int k, int i, int salt) { return 1000 * k * (k + 1) / 2 + (k + 1) * (i + salt); }

static void round_all(int salt)
{
    MPI_Comm comm = MPI_COMM_WORLD;
    const int n = 3;
    MPI_Request req[8];
    /* Igather to root size-1. */
    int groot = size - 1, *g_s = ints(n, 0), *g_r = ints(n * size, -1);
    for (int i = 0; i < n; i++)
        g_s[i] = val(rank, i, salt);
    MPI_Igather(g_s, n, MPI_INT, g_r, n, MPI_INT, groot, comm, &req[0]);
    /* Igatherv to root 0: rank p sends p+1 ints, placed in reverse rank order with a gap of 1. */
    int *gv_c = ints(size, 0), *gv_d = ints(size, 0), gv_tot = 0;
    for (int p = size - 1; p >= 0; p--) {
        gv_c[p] = p + 1;
        gv_d[p] = gv_tot;
        gv_tot += p + 2;
    }
    int *gv_s = ints(rank + 1, 0), *gv_r = ints(gv_tot, -1);
    for (int i = 0; i <= rank; i++)
        gv_s[i] = val(rank, i, salt + 1);
    MPI_Igatherv(gv_s, rank + 1, MPI_INT, gv_r, gv_c, gv_d, MPI_INT, 0, comm, &req[1]);
    /* Iscatter from root 0. */
    int *sc_s = ints(n * size, 0), *sc_r = ints(n, -1);
    for (int i = 0; i < n * size; i++)
        sc_s[i] = val(0, i, salt + 2);
    MPI_Iscatter(sc_s, n, MPI_INT, sc_r, n, MPI_INT, 0, comm, &req[2]);
    /* Iscatterv from root size-1, same layout as the Igatherv. */
    int *sv_s = ints(gv_tot, 0), *sv_r = ints(rank + 2, -1);
    for (int i = 0; i < gv_tot; i++)
        sv_s[i] = val(size - 1, i, salt + 3);
    MPI_Iscatterv(sv_s, gv_c, gv_d, MPI_INT, sv_r, rank + 1, MPI_INT, size - 1, comm, &req[3]);
    /* Ialltoallv with pairwise counts. */
    int *a_sc = ints(size, 0), *a_sd = ints(size, 0), *a_rc = ints(size, 0), *a_rd = ints(size, 0);
    int stot = 0, rtot = 0;
    for (int p = 0; p < size; p++) {
        a_sc[p] = a_rc[p] = pair(rank, p);
        a_sd[p] = stot;
        a_rd[p] = rtot + 1; /* a gap of one before each block */
        stot += a_sc[p];
        rtot += a_rc[p] + 1;
    }
    int *a_s = ints(stot, 0), *a_r = ints(rtot, -1);
    for (int i = 0; i < stot; i++)
        a_s[i] = val(rank, i, salt + 4);
    MPI_Ialltoallv(a_s, a_sc, a_sd, MPI_INT, a_r, a_rc, a_rd, MPI_INT, comm, &req[4]);
    /* Ialltoallw of MPI_INT, byte displacements, two ints per peer. */
    int *w_c = ints(size, 2), *w_sd = ints(size, 0), *w_rd = ints(size, 0);
    MPI_Datatype *w_t = malloc(sizeof(MPI_Datatype) * size);
    for (int p = 0; p < size; p++) {
        w_sd[p] = (int)sizeof(int) * 2 * p;
        w_rd[p] = (int)sizeof(int) * 2 * (size - 1 - p);
        w_t[p] = MPI_INT;
    }
    int *w_s = ints(2 * size, 0), *w_r = ints(2 * size, -1);
    for (int i = 0; i < 2 * size; i++)
        w_s[i] = val(rank, i, salt + 5);
    MPI_Ialltoallw(w_s, w_c, w_sd, w_t, w_r, w_c, w_rd, w_t, comm, &req[5]);
    /* Iscan and Iexscan. */
    int *s_s = ints(n, 0), *s_r = ints(n, -1), *e_r = ints(n, -1);
    for (int i = 0; i < n; i++)
        s_s[i] = val(rank, i, salt + 6);
    MPI_Iscan(s_s, s_r, n, MPI_INT, MPI_SUM, comm, &req[6]);
    MPI_Iexscan(s_s, e_r, n, MPI_INT, MPI_SUM, comm, &req[7]);

    MPI_Waitall(8, req, statuses_ignore);
    for (int k = 0; k < 8; k++)
        CHECK(req[k] == MPI_REQUEST_NULL, "request %d not MPI_REQUEST_NULL after Waitall", k);

    if (rank == groot)
        for (int i = 0; i < n * size; i++)
            CHECK(g_r[i] == val(i / n, i % n, salt), "Igather [%d] = %d", i, g_r[i]);
    if (rank == 0)
        for (int p = 0; p < size; p++) {
            for (int i = 0; i <= p; i++)
                CHECK(gv_r[gv_d[p] + i] == val(p, i, salt + 1), "Igatherv block %d [%d] = %d", p,
                      i, gv_r[gv_d[p] + i]);
            CHECK(gv_r[gv_d[p] + p + 1] == -1, "Igatherv gap after block %d written", p);
        }
    for (int i = 0; i < n; i++)
        CHECK(sc_r[i] == val(0, rank * n + i, salt + 2), "Iscatter [%d] = %d", i, sc_r[i]);
    for (int i = 0; i <= rank; i++)
        CHECK(sv_r[i] == val(size - 1, gv_d[rank] + i, salt + 3), "Iscatterv [%d] = %d", i,
              sv_r[i]);
    CHECK(sv_r[rank + 1] == -1, "Iscatterv wrote past recvcount");
    for (int p = 0; p < size; p++) {
        /* Rank p's block for this rank starts at its sdispl for this rank. */
        int off = 0;
        for (int q = 0; q < rank; q++)
            off += pair(p, q);
        CHECK(a_r[a_rd[p] - 1] == -1, "Ialltoallv gap before block %d written", p);
        for (int i = 0; i < a_rc[p]; i++)
            CHECK(a_r[a_rd[p] + i] == val(p, off + i, salt + 4), "Ialltoallv from %d [%d] = %d", p,
                  i, a_r[a_rd[p] + i]);
    }
    for (int p = 0; p < size; p++)
        for (int i = 0; i < 2; i++)
            CHECK(w_r[2 * (size - 1 - p) + i] == val(p, 2 * rank + i, salt + 5),
                  "Ialltoallw from %d [%d] = %d", p, i, w_r[2 * (size - 1 - p) + i]);
    for (int i = 0; i < n; i++) {
        CHECK(s_r[i] == prefix(rank, i, salt + 6), "Iscan [%d] = %d", i, s_r[i]);
        if (rank > 0)
            CHECK(e_r[i] == prefix(rank - 1, i, salt + 6), "Iexscan [%d] = %d", i, e_r[i]);
    }
    free(g_s), free(g_r), free(gv_c), free(gv_d), free(gv_s), free(gv_r), free(sc_s), free(sc_r);
    free(sv_s), free(sv_r), free(a_sc), free(a_sd), free(a_rc), free(a_rd), free(a_s), free(a_r);
    free(w_c), free(w_sd), free(w_rd), free(w_t), free(w_s), free(w_r), free(s_s), free(s_r);
    free(e_r);
}

/* Derived datatypes. */
static void round_derived(void)
{
    MPI_Comm comm = MPI_COMM_WORLD;
    MPI_Datatype vec_r, pair_t;
    /* Two ints with a one-int gap (extent: three ints): items tile with gaps. */
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec_r);
    MPI_Type_commit(&vec_r);
    MPI_Type_contiguous(2, MPI_INT, &pair_t);
    MPI_Type_commit(&pair_t);
    MPI_Request req[3];

    /* Igather: 2 ints from each rank into one vec_r item per rank at root 0. */
    int g_s[2] = {val(rank, 0, 10), val(rank, 1, 10)}, *g_r = ints(3 * size, -1);
    MPI_Igather(g_s, 2, MPI_INT, g_r, 1, vec_r, 0, comm, &req[0]);
    /* Iscatterv from root 0: rank p gets p+1 vec_r items (2(p+1) ints), packed as MPI_INT. */
    int *sv_c = ints(size, 0), *sv_d = ints(size, 0), tot = 0;
    for (int p = 0; p < size; p++) {
        sv_c[p] = p + 1;
        sv_d[p] = tot;
        tot += p + 1;
    }
    int *sv_s = ints(3 * tot, -1), *sv_r = ints(2 * (rank + 1) + 1, -1);
    for (int i = 0; i < 3 * tot; i++)
        sv_s[i] = i % 3 == 1 ? -7 : val(0, i, 11); /* the gaps hold -7, never sent */
    MPI_Iscatterv(sv_s, sv_c, sv_d, vec_r, sv_r, 2 * (rank + 1), MPI_INT, 0, comm, &req[1]);
    /* Ialltoallw: to peer p, 2 ints; as one vec_r item to odd peers, as one pair_t to even
       ones; received as two MPI_INT from even senders, one pair_t from odd ones. */
    int *w_sc = ints(size, 0), *w_sd = ints(size, 0), *w_rc = ints(size, 0), *w_rd = ints(size, 0);
    MPI_Datatype *w_st = malloc(sizeof(MPI_Datatype) * size);
    MPI_Datatype *w_rt = malloc(sizeof(MPI_Datatype) * size);
    for (int p = 0; p < size; p++) {
        w_sc[p] = 1;
        w_st[p] = p % 2 ? vec_r : pair_t;
        w_sd[p] = (int)sizeof(int) * 3 * p;
        w_rc[p] = p % 2 ? 1 : 2;
        w_rt[p] = p % 2 ? pair_t : MPI_INT;
        w_rd[p] = (int)sizeof(int) * 2 * p;
    }
    int *w_s = ints(3 * size, 0), *w_r = ints(2 * size, -1);
    for (int i = 0; i < 3 * size; i++)
        w_s[i] = val(rank, i, 12);
    MPI_Ialltoallw(w_s, w_sc, w_sd, w_st, w_r, w_rc, w_rd, w_rt, comm, &req[2]);
    MPI_Waitall(3, req, statuses_ignore);

    if (rank == 0)
        for (int p = 0; p < size; p++) {
            CHECK(g_r[3 * p] == val(p, 0, 10) && g_r[3 * p + 2] == val(p, 1, 10),
                  "Igather vec_r from %d: %d %d", p, g_r[3 * p], g_r[3 * p + 2]);
            CHECK(g_r[3 * p + 1] == -1, "Igather vec_r gap of %d written", p);
        }
    for (int k = 0; k < 2 * (rank + 1); k++) {
        int item = sv_d[rank] + k / 2, at = 3 * item + 2 * (k % 2);
        CHECK(sv_r[k] == val(0, at, 11), "Iscatterv vec_r [%d] = %d", k, sv_r[k]);
    }
    CHECK(sv_r[2 * (rank + 1)] == -1, "Iscatterv wrote past recvcount");
    for (int p = 0; p < size; p++) {
        /* Peer p sent from its 3-int slot for this rank: ints 0,1 (pair) or 0,2 (vec_r). */
        int a = 3 * rank, b = 3 * rank + (rank % 2 ? 2 : 1);
        CHECK(w_r[2 * p] == val(p, a, 12) && w_r[2 * p + 1] == val(p, b, 12),
              "Ialltoallw from %d: %d %d", p, w_r[2 * p], w_r[2 * p + 1]);
    }

    /* Blocking MPI_Alltoallw with the same layout. */
    for (int i = 0; i < 2 * size; i++)
        w_r[i] = -1;
    MPI_Alltoallw(w_s, w_sc, w_sd, w_st, w_r, w_rc, w_rd, w_rt, comm);
    for (int p = 0; p < size; p++) {
        int a = 3 * rank, b = 3 * rank + (rank % 2 ? 2 : 1);
        CHECK(w_r[2 * p] == val(p, a, 12) && w_r[2 * p + 1] == val(p, b, 12),
              "Alltoallw from %d: %d %d", p, w_r[2 * p], w_r[2 * p + 1]);
    }
    free(g_r), free(sv_c), free(sv_d), free(sv_s), free(sv_r), free(w_sc), free(w_sd);
    free(w_rc), free(w_rd), free(w_st), free(w_rt), free(w_s), free(w_r);
    MPI_Type_free(&vec_r);
    MPI_Type_free(&pair_t);
}

static void round_in_place(void)
{
    MPI_Comm comm = MPI_COMM_WORLD;
    MPI_Request req[5];
    int root = size / 2;
    /* Igather in place at the root: its own block is already in recvbuf. */
    int g_s[2] = {val(rank, 0, 20), val(rank, 1, 20)}, *g_r = ints(2 * size, -1);
    if (rank == root) {
        g_r[2 * root] = g_s[0], g_r[2 * root + 1] = g_s[1];
        MPI_Igather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, g_r, 2, MPI_INT, root, comm, &req[0]);
    } else {
        MPI_Igather(g_s, 2, MPI_INT, NULL, 0, MPI_INT, root, comm, &req[0]);
    }
    /* Iscatter in place at the root: its own block stays in sendbuf. */
    int *sc_s = ints(2 * size, 0), sc_r[2] = {-1, -1};
    for (int i = 0; i < 2 * size; i++)
        sc_s[i] = val(root, i, 21);
    if (rank == root)
        MPI_Iscatter(sc_s, 2, MPI_INT, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, root, comm, &req[1]);
    else
        MPI_Iscatter(NULL, 0, MPI_INT, sc_r, 2, MPI_INT, root, comm, &req[1]);
    /* Ialltoallv in place: block for peer p holds pair(rank, p) ints at displacement 2p+... */
    int *a_c = ints(size, 0), *a_d = ints(size, 0), tot = 0;
    for (int p = 0; p < size; p++) {
        a_c[p] = pair(rank, p);
        a_d[p] = tot;
        tot += a_c[p];
    }
    int *a_b = ints(tot, 0);
    for (int i = 0; i < tot; i++)
        a_b[i] = val(rank, i, 22);
    MPI_Ialltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, a_b, a_c, a_d, MPI_INT, comm,
                   &req[2]);
    /* Iscan and Iexscan in place. */
    int s_b[3], e_b[3];
    for (int i = 0; i < 3; i++)
        s_b[i] = e_b[i] = val(rank, i, 23);
    MPI_Iscan(MPI_IN_PLACE, s_b, 3, MPI_INT, MPI_SUM, comm, &req[3]);
    MPI_Iexscan(MPI_IN_PLACE, e_b, 3, MPI_INT, MPI_SUM, comm, &req[4]);
    MPI_Waitall(5, req, statuses_ignore);

    if (rank == root)
        for (int i = 0; i < 2 * size; i++)
            CHECK(g_r[i] == val(i / 2, i % 2, 20), "Igather in place [%d] = %d", i, g_r[i]);
    if (rank != root)
        for (int i = 0; i < 2; i++)
            CHECK(sc_r[i] == val(root, 2 * rank + i, 21), "Iscatter in place [%d] = %d", i,
                  sc_r[i]);
    else
        for (int i = 0; i < 2 * size; i++)
            CHECK(sc_s[i] == val(root, i, 21), "Iscatter in place changed sendbuf [%d]", i);
    for (int p = 0; p < size; p++) {
        int off = 0;
        for (int q = 0; q < rank; q++)
            off += pair(p, q);
        for (int i = 0; i < a_c[p]; i++)
            CHECK(a_b[a_d[p] + i] == val(p, off + i, 22), "Ialltoallv in place from %d [%d] = %d",
                  p, i, a_b[a_d[p] + i]);
    }
    for (int i = 0; i < 3; i++) {
        CHECK(s_b[i] == prefix(rank, i, 23), "Iscan in place [%d] = %d", i, s_b[i]);
        if (rank > 0)
            CHECK(e_b[i] == prefix(rank - 1, i, 23), "Iexscan in place [%d] = %d", i, e_b[i]);
    }

    /* MPI_Alltoallw in place: two ints per peer at byte displacement 8p. */
    int *w_c = ints(size, 2), *w_d = ints(size, 0), *w_b = ints(2 * size, 0);
    MPI_Datatype *w_t = malloc(sizeof(MPI_Datatype) * size);
    for (int p = 0; p < size; p++)
        w_d[p] = (int)sizeof(int) * 2 * p, w_t[p] = MPI_INT;
    for (int i = 0; i < 2 * size; i++)
        w_b[i] = val(rank, i, 24);
    MPI_Alltoallw(MPI_IN_PLACE, NULL, NULL, NULL, w_b, w_c, w_d, w_t, comm);
    for (int p = 0; p < size; p++)
        for (int i = 0; i < 2; i++)
            CHECK(w_b[2 * p + i] == val(p, 2 * rank + i, 24), "Alltoallw in place from %d [%d]",
                  p, i);
    free(g_r), free(sc_s), free(a_c), free(a_d), free(a_b), free(w_c), free(w_d), free(w_b);
    free(w_t);
}

#if MPI_VERSION >= 4
/* Every _c form once, exact values, nothing printed unless it fails. */
static void round_c(void)
{
    MPI_Comm comm = MPI_COMM_WORLD;
    MPI_Request req[8];
    MPI_Count *one = malloc(sizeof(MPI_Count) * size), *two = malloc(sizeof(MPI_Count) * size);
    MPI_Aint *d1 = malloc(sizeof(MPI_Aint) * size), *d2 = malloc(sizeof(MPI_Aint) * size);
    MPI_Aint *db = malloc(sizeof(MPI_Aint) * size);
    MPI_Datatype *t = malloc(sizeof(MPI_Datatype) * size);
    for (int p = 0; p < size; p++)
        one[p] = 1, two[p] = 2, d1[p] = p, d2[p] = 2 * p, db[p] = (MPI_Aint)sizeof(int) * 2 * p,
        t[p] = MPI_INT;
    int mine = val(rank, 0, 30), *g = ints(size, -1), *gv = ints(size, -1), sc = -1, scv = -1;
    int *src = ints(size, 0), *a_s = ints(2 * size, 0), *a_r = ints(2 * size, -1);
    int *w_r = ints(2 * size, -1), s_r = -1, e_r = -1;
    for (int p = 0; p < size; p++)
        src[p] = val(0, p, 31);
    for (int i = 0; i < 2 * size; i++)
        a_s[i] = val(rank, i, 32);
    MPI_Igather_c(&mine, 1, MPI_INT, g, 1, MPI_INT, 0, comm, &req[0]);
    MPI_Igatherv_c(&mine, 1, MPI_INT, gv, one, d1, MPI_INT, 0, comm, &req[1]);
    MPI_Iscatter_c(src, 1, MPI_INT, &sc, 1, MPI_INT, 0, comm, &req[2]);
    MPI_Iscatterv_c(src, one, d1, MPI_INT, &scv, 1, MPI_INT, 0, comm, &req[3]);
    MPI_Ialltoallv_c(a_s, two, d2, MPI_INT, a_r, two, d2, MPI_INT, comm, &req[4]);
    MPI_Ialltoallw_c(a_s, two, db, t, w_r, two, db, t, comm, &req[5]);
    MPI_Iscan_c(&mine, &s_r, 1, MPI_INT, MPI_SUM, comm, &req[6]);
    MPI_Iexscan_c(&mine, &e_r, 1, MPI_INT, MPI_SUM, comm, &req[7]);
    MPI_Waitall(8, req, statuses_ignore);
    if (rank == 0)
        for (int p = 0; p < size; p++)
            CHECK(g[p] == val(p, 0, 30) && gv[p] == val(p, 0, 30), "Igather(v)_c [%d]", p);
    CHECK(sc == val(0, rank, 31) && scv == val(0, rank, 31), "Iscatter(v)_c: %d %d", sc, scv);
    for (int p = 0; p < size; p++)
        for (int i = 0; i < 2; i++) {
            CHECK(a_r[2 * p + i] == val(p, 2 * rank + i, 32), "Ialltoallv_c from %d", p);
            CHECK(w_r[2 * p + i] == val(p, 2 * rank + i, 32), "Ialltoallw_c from %d", p);
        }
    CHECK(s_r == prefix(rank, 0, 30), "Iscan_c = %d", s_r);
    if (rank > 0)
        CHECK(e_r == prefix(rank - 1, 0, 30), "Iexscan_c = %d", e_r);
    for (int i = 0; i < 2 * size; i++)
        w_r[i] = -1;
    MPI_Alltoallw_c(a_s, two, db, t, w_r, two, db, t, comm);
    for (int p = 0; p < size; p++)
        for (int i = 0; i < 2; i++)
            CHECK(w_r[2 * p + i] == val(p, 2 * rank + i, 32), "Alltoallw_c from %d", p);
    free(one), free(two), free(d1), free(d2), free(db), free(t), free(g), free(gv), free(src);
    free(a_s), free(a_r), free(w_r);
}
#endif

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    statuses_ignore = MPI_STATUSES_IGNORE;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int salt = 0; salt < 300; salt += 100)
        round_all(salt);
    if (rank == 0) printf("nb_coll2: eight outstanding at once, three rounds: done\n");
    round_derived();
    if (rank == 0) printf("nb_coll2: derived datatypes: done\n");
    round_in_place();
    if (rank == 0) printf("nb_coll2: in place: done\n");
#if MPI_VERSION >= 4
    round_c();
#endif
    int all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf(all ? "nb_coll2: FAILED\n" : "nb_coll2: ok\n");
    MPI_Finalize();
    return 0;
}
