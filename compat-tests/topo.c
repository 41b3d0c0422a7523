/*
 * topo.c - process topologies and neighbor collectives.
 *
 * Cartesian: MPI_Cart_create (grids smaller than the world give MPI_COMM_NULL to the rest),
 * MPI_Topo_test, MPI_Cartdim_get, MPI_Cart_get, MPI_Cart_coords and MPI_Cart_rank of every
 * rank (also wrapped coordinates in periodic dimensions), MPI_Cart_shift by 1, -1 and 2 in
 * every dimension (periodic and not: MPI_PROC_NULL), MPI_Cart_map, MPI_Cart_sub (rows and
 * columns), MPI_Comm_dup keeping the topology. Graphs: MPI_Graph_create (a star),
 * MPI_Graphdims_get, MPI_Graph_get, MPI_Graph_neighbors(_count), MPI_Graph_map. Distributed
 * graphs: MPI_Dist_graph_create_adjacent (weighted, MPI_UNWEIGHTED, MPI_WEIGHTS_EMPTY) and
 * MPI_Dist_graph_create (edges named by other ranks too), MPI_Dist_graph_neighbors(_count).
 *
 * On each topology, every neighbor collective blocking and nonblocking (MPI_Neighbor_allgather,
 * _allgatherv, _alltoall, _alltoallv, _alltoallw with a strided receive type, and the
 * MPI_Ineighbor_* forms): every element of every receive buffer is checked on every rank,
 * including the blocks of MPI_PROC_NULL neighbors and the gaps, which must stay untouched.
 * Values sent along an edge depend only on its two ends, so processes that are neighbors twice
 * (periodic dimensions of size 1 or 2, multi-edges) get the same data whichever way an
 * implementation pairs the messages. Rank 0 prints a checksum of each result over all ranks.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT_T int
#define DISPL_T int
#define NB_NAME "MPI_Neighbor"
#define INB_NAME "MPI_Ineighbor"
#define ALLGATHER MPI_Neighbor_allgather
#define IALLGATHER MPI_Ineighbor_allgather
#define ALLGATHERV MPI_Neighbor_allgatherv
#define IALLGATHERV MPI_Ineighbor_allgatherv
#define ALLTOALL MPI_Neighbor_alltoall
#define IALLTOALL MPI_Ineighbor_alltoall
#define ALLTOALLV MPI_Neighbor_alltoallv
#define IALLTOALLV MPI_Ineighbor_alltoallv
#define ALLTOALLW MPI_Neighbor_alltoallw
#define IALLTOALLW MPI_Ineighbor_alltoallw
/* The persistent forms are MPI 4.0. */
#if MPI_VERSION >= 4
#define PALLGATHER MPI_Neighbor_allgather_init
#define PALLGATHERV MPI_Neighbor_allgatherv_init
#define PALLTOALL MPI_Neighbor_alltoall_init
#define PALLTOALLV MPI_Neighbor_alltoallv_init
#define PALLTOALLW MPI_Neighbor_alltoallw_init
#endif
#include "topo_body.h"

static void coords_of(int nd, const int *dims, int r, int *c)
{
    for (int i = nd - 1; i >= 0; i--) {
        c[i] = r % dims[i];
        r /= dims[i];
    }
}

static int rank_of(int nd, const int *dims, const int *c)
{
    int r = 0;
    for (int i = 0; i < nd; i++)
        r = r * dims[i] + c[i];
    return r;
}

static int shifted(int nd, const int *dims, const int *periods, int r, int dim, int disp)
{
    int c[8];
    coords_of(nd, dims, r, c);
    int x = c[dim] + disp;
    if (periods[dim])
        x = ((x % dims[dim]) + dims[dim]) % dims[dim];
    else if (x < 0 || x >= dims[dim])
        return MPI_PROC_NULL;
    c[dim] = x;
    return rank_of(nd, dims, c);
}

/* ------------------------------------------------------------------------------------------ */

static void cart_neighbors(int nd, const int *dims, const int *periods, int r, int *nbr)
{
    for (int d = 0; d < nd; d++) {
        nbr[2 * d] = shifted(nd, dims, periods, r, d, -1);
        nbr[2 * d + 1] = shifted(nd, dims, periods, r, d, 1);
    }
}

static void cart_queries(MPI_Comm cart, int nd, const int *dims, const int *periods, const char *label)
{
    int n = 1, t = -1, k = -1;
    for (int i = 0; i < nd; i++)
        n *= dims[i];
    MPI_Topo_test(cart, &t);
    CHECK(t == MPI_CART, "%s: MPI_Topo_test = %d, expected MPI_CART", label, t);
    MPI_Cartdim_get(cart, &k);
    CHECK(k == nd, "%s: MPI_Cartdim_get = %d, expected %d", label, k, nd);
    int me = -1, sz = -1;
    MPI_Comm_rank(cart, &me);
    MPI_Comm_size(cart, &sz);
    CHECK(sz == n, "%s: size %d, expected %d", label, sz, n);
    int gd[8], gp[8], gc[8], c[8], w[8];
    MPI_Cart_get(cart, nd, gd, gp, gc);
    coords_of(nd, dims, me, c);
    for (int i = 0; i < nd; i++) {
        CHECK(gd[i] == dims[i] && !gp[i] == !periods[i] && gc[i] == c[i],
              "%s: MPI_Cart_get [%d] = %d/%d/%d, expected %d/%d/%d", label, i, gd[i], gp[i], gc[i], dims[i],
              periods[i], c[i]);
        note(gd[i] * 100 + gc[i]);
    }
    for (int r = 0; r < n; r++) {
        int rr = -1;
        for (int i = 0; i < nd; i++) gc[i] = -9;
        MPI_Cart_coords(cart, r, nd, gc);
        coords_of(nd, dims, r, c);
        for (int i = 0; i < nd; i++) {
            CHECK(gc[i] == c[i], "%s: MPI_Cart_coords(%d)[%d] = %d, expected %d", label, r, i, gc[i], c[i]);
            note(gc[i]);
        }
        MPI_Cart_rank(cart, c, &rr);
        CHECK(rr == r, "%s: MPI_Cart_rank(coords of %d) = %d", label, r, rr);
        /* Periodic dimensions wrap: coordinate + dims and - dims name the same process. */
        for (int i = 0; i < nd; i++) w[i] = c[i] + (periods[i] ? (i % 2 ? -dims[i] : dims[i]) : 0);
        rr = -1;
        MPI_Cart_rank(cart, w, &rr);
        CHECK(rr == r, "%s: MPI_Cart_rank(wrapped coords of %d) = %d", label, r, rr);
    }
    static const int disps[] = { 1, -1, 2 };
    for (int d = 0; d < nd; d++)
        for (int j = 0; j < 3; j++) {
            int s = -9, dst = -9;
            MPI_Cart_shift(cart, d, disps[j], &s, &dst);
            int ws = shifted(nd, dims, periods, me, d, -disps[j]);
            int wd = shifted(nd, dims, periods, me, d, disps[j]);
            CHECK(s == ws && dst == wd, "%s: MPI_Cart_shift(%d, %d) = %d, %d; expected %d, %d", label, d,
                  disps[j], s, dst, ws, wd);
            /* MPI_PROC_NULL is -1 in MPICH, -2 in Open MPI: the checksum counts it as -1. */
            note((s == MPI_PROC_NULL ? -1 : s) * 31 + (dst == MPI_PROC_NULL ? -1 : dst));
        }
}

static void test_cart(int nd, const int *dims, const int *periods)
{
    char label[128];
    int n = 1, at = snprintf(label, sizeof label, "cart dims=[");
    for (int i = 0; i < nd; i++) {
        n *= dims[i];
        at += snprintf(label + at, sizeof label - at, "%s%d", i ? "," : "", dims[i]);
    }
    at += snprintf(label + at, sizeof label - at, "] periods=[");
    for (int i = 0; i < nd; i++)
        at += snprintf(label + at, sizeof label - at, "%s%d", i ? "," : "", periods[i]);
    snprintf(label + at, sizeof label - at, "]");

    MPI_Comm cart = MPI_COMM_NULL;
    MPI_Cart_create(MPI_COMM_WORLD, nd, dims, periods, 0, &cart);
    int newrank = -9;
    MPI_Cart_map(MPI_COMM_WORLD, nd, dims, periods, &newrank);
#ifdef OPEN_MPI
    /* Open MPI 4.1.4 returns the caller's rank also outside the grid. */
    CHECK(rank >= n || newrank == rank, "%s: MPI_Cart_map = %d", label, newrank);
#else
    CHECK(newrank == (rank < n ? rank : MPI_UNDEFINED), "%s: MPI_Cart_map = %d", label, newrank);
#endif
    if (rank >= n) {
        CHECK(cart == MPI_COMM_NULL, "%s: rank beyond the grid did not get MPI_COMM_NULL", label);
    } else {
        CHECK(cart != MPI_COMM_NULL, "%s: MPI_COMM_NULL inside the grid", label);
        int me = -1;
        MPI_Comm_rank(cart, &me);
        CHECK(me == rank, "%s: rank %d in the grid (reorder 0 keeps ranks)", label, me);
        cart_queries(cart, nd, dims, periods, label);
    }
    report(label);

    int nbr[16];
    cart_neighbors(nd, dims, periods, rank, nbr);
    neighbor_all(cart, label, 2 * nd, nbr, 2 * nd, nbr);

    /* A dup keeps the topology. */
    MPI_Comm dup = MPI_COMM_NULL;
    if (cart != MPI_COMM_NULL) {
        MPI_Comm_dup(cart, &dup);
        cart_queries(dup, nd, dims, periods, "dup of cart");
    }
    char dl[160];
    snprintf(dl, sizeof dl, "MPI_Comm_dup(%s)", label);
    report(dl);
    if (nd == 2)
        neighbor_all(dup, dl, 4, nbr, 4, nbr);

    /* Cart_sub: keep each single dimension in turn. */
    if (nd == 2) {
        for (int keep = 0; keep < 2; keep++) {
            MPI_Comm sub = MPI_COMM_NULL;
            int remain[2] = { keep == 0, keep == 1 };
            char sl[160];
            snprintf(sl, sizeof sl, "MPI_Cart_sub(%s, remain=[%d,%d])", label, remain[0], remain[1]);
            int sn = 0, sr[2];
            if (cart != MPI_COMM_NULL) {
                MPI_Cart_sub(cart, remain, &sub);
                int c[2];
                coords_of(2, dims, rank, c);
                cart_queries(sub, 1, &dims[keep], &periods[keep], sl);
                int me = -1;
                MPI_Comm_rank(sub, &me);
                CHECK(me == c[keep], "%s: rank %d, expected %d", sl, me, c[keep]);
                sn = 2;
                sr[0] = shifted(1, &dims[keep], &periods[keep], c[keep], 0, -1);
                sr[1] = shifted(1, &dims[keep], &periods[keep], c[keep], 0, 1);
            }
            report(sl);
            neighbor_all(sub, sl, sn, sr, sn, sr);
            if (sub != MPI_COMM_NULL)
                MPI_Comm_free(&sub);
        }
    }
    if (dup != MPI_COMM_NULL)
        MPI_Comm_free(&dup);
    if (cart != MPI_COMM_NULL)
        MPI_Comm_free(&cart);
}

/* ------------------------------------------------------------------------------------------ */

/* A star: node 0 is linked with every other node and they with it. */
static void test_graph(void)
{
    const char *label = "graph star";
    int *index = malloc(sizeof(int) * size), *edges = malloc(sizeof(int) * 2 * size);
    int ne = 0;
    for (int i = 0; i < size; i++) {
        if (i == 0)
            for (int j = 1; j < size; j++) edges[ne++] = j;
        else
            edges[ne++] = 0;
        index[i] = ne;
    }
    MPI_Comm g = MPI_COMM_NULL;
    MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &g);
    int t = -1, nn = -1, nedges = -1, newrank = -9;
    MPI_Topo_test(g, &t);
    CHECK(t == MPI_GRAPH, "%s: MPI_Topo_test = %d, expected MPI_GRAPH", label, t);
    MPI_Graphdims_get(g, &nn, &nedges);
    CHECK(nn == size && nedges == ne, "%s: MPI_Graphdims_get = %d, %d", label, nn, nedges);
    int *gi = malloc(sizeof(int) * size), *ge = malloc(sizeof(int) * 2 * size);
    MPI_Graph_get(g, size, ne, gi, ge);
    for (int i = 0; i < size; i++) CHECK(gi[i] == index[i], "%s: index[%d] = %d", label, i, gi[i]);
    for (int i = 0; i < ne; i++) CHECK(ge[i] == edges[i], "%s: edges[%d] = %d", label, i, ge[i]);
    int nbr[64], nbn = 0;
    for (int r = 0; r < size; r++) {
        int cnt = -1, want = r == 0 ? size - 1 : 1;
        MPI_Graph_neighbors_count(g, r, &cnt);
        CHECK(cnt == want, "%s: MPI_Graph_neighbors_count(%d) = %d, expected %d", label, r, cnt, want);
        int got[64];
        MPI_Graph_neighbors(g, r, cnt, got);
        for (int i = 0; i < cnt && i < want; i++) {
            int w = r == 0 ? i + 1 : 0;
            CHECK(got[i] == w, "%s: MPI_Graph_neighbors(%d)[%d] = %d, expected %d", label, r, i, got[i], w);
            note(got[i]);
            if (r == rank)
                nbr[nbn++] = got[i];
        }
    }
    MPI_Graph_map(MPI_COMM_WORLD, size, index, edges, &newrank);
    CHECK(newrank == rank, "%s: MPI_Graph_map = %d", label, newrank);
    report(label);
    neighbor_all(g, label, nbn, nbr, nbn, nbr);
    MPI_Comm_free(&g);
    free(index);
    free(edges);
    free(gi);
    free(ge);
}

static int cmp_pair(const void *a, const void *b)
{
    const int *x = a, *y = b;
    return x[0] != y[0] ? (x[0] > y[0]) - (x[0] < y[0]) : (x[1] > y[1]) - (x[1] < y[1]);
}

/* Checks a distributed graph's neighbors against the expected (rank, weight) pairs, in any
 * order when `sorted`; returns the neighbors in the implementation's order. */
static void dist_check(MPI_Comm g, const char *label, int nin, const int *win, int nout, const int *wout,
                       int weighted, int sorted, int *srcs, int *dsts)
{
    int t = -1, in = -1, out = -1, wt = -1;
    MPI_Topo_test(g, &t);
    CHECK(t == MPI_DIST_GRAPH, "%s: MPI_Topo_test = %d, expected MPI_DIST_GRAPH", label, t);
    MPI_Dist_graph_neighbors_count(g, &in, &out, &wt);
    CHECK(in == nin && out == nout && !wt == !weighted, "%s: counts %d, %d, weighted %d; expected %d, %d, %d",
          label, in, out, wt, nin, nout, weighted);
    if (in != nin || out != nout)
        return;
    int sw[64], dw[64];
    MPI_Dist_graph_neighbors(g, nin, srcs, weighted ? sw : MPI_UNWEIGHTED, nout, dsts,
                             weighted ? dw : MPI_UNWEIGHTED);
    int a[128], b[128];
    for (int side = 0; side < 2; side++) {
        int n = side ? nout : nin;
        const int *want = side ? wout : win;
        for (int i = 0; i < n; i++) {
            a[2 * i] = side ? dsts[i] : srcs[i];
            a[2 * i + 1] = weighted ? (side ? dw[i] : sw[i]) : 0;
            b[2 * i] = want[2 * i];
            b[2 * i + 1] = weighted ? want[2 * i + 1] : 0;
        }
        if (sorted) {
            qsort(a, n, 2 * sizeof(int), cmp_pair);
            qsort(b, n, 2 * sizeof(int), cmp_pair);
        }
        for (int i = 0; i < 2 * n; i++) {
            CHECK(a[i] == b[i], "%s: %s[%d] = %d, expected %d", label, side ? "destinations/weights" : "sources/weights",
                  i, a[i], b[i]);
            note(a[i]);
        }
    }
}

static void test_dist_graph(void)
{
    int prev = (rank + size - 1) % size, next = (rank + 1) % size;
    int srcs[64], dsts[64];

    /* A ring both ways, weighted, given adjacently. */
    {
        const char *label = "dist_graph_create_adjacent ring";
        int s[2] = { prev, next }, d[2] = { next, prev }, swt[2] = { 3 * rank, 3 * rank + 1 },
            dwt[2] = { 5 * rank, 5 * rank + 1 };
        MPI_Comm g;
        MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, s, swt, 2, d, dwt, MPI_INFO_NULL, 0, &g);
        int win[4] = { prev, 3 * rank, next, 3 * rank + 1 }, wout[4] = { next, 5 * rank, prev, 5 * rank + 1 };
        dist_check(g, label, 2, win, 2, wout, 1, 0, srcs, dsts);
        report(label);
        neighbor_all(g, label, 2, srcs, 2, dsts);
        MPI_Comm dup;
        MPI_Comm_dup(g, &dup);
        dist_check(dup, "dup of dist graph", 2, win, 2, wout, 1, 0, srcs, dsts);
        report("MPI_Comm_dup(dist graph)");
        MPI_Comm_free(&dup);
        MPI_Comm_free(&g);
    }
    /* The same ring one way, MPI_UNWEIGHTED. */
    {
        const char *label = "dist_graph_create_adjacent ring, unweighted";
        MPI_Comm g;
        /* Through a volatile: Open MPI's constant address makes gcc warn about reading it. */
        int *volatile unweighted = MPI_UNWEIGHTED;
        MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &prev, unweighted, 1, &next, unweighted, MPI_INFO_NULL, 0,
                                       &g);
        int win[2] = { prev, 0 }, wout[2] = { next, 0 };
        dist_check(g, label, 1, win, 1, wout, 0, 0, srcs, dsts);
        report(label);
        neighbor_all(g, label, 1, srcs, 1, dsts);
        MPI_Comm_free(&g);
    }
    /* Everyone to rank 0; the empty sides are MPI_WEIGHTS_EMPTY. */
    {
        const char *label = "dist_graph_create_adjacent gather to 0";
        int nin = rank == 0 ? size - 1 : 0, nout = rank == 0 ? 0 : 1;
        int s[64], sw[64], zero = 0;
        /* Through a volatile: Open MPI's constant address makes gcc warn about reading it. */
        int *volatile empty = MPI_WEIGHTS_EMPTY;
        for (int i = 0; i < nin; i++) {
            s[i] = i + 1;
            sw[i] = 7 * i;
        }
        MPI_Comm g;
        MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, nin, s, nin ? sw : empty, nout, &zero,
                                       nout ? &zero : empty, MPI_INFO_NULL, 0, &g);
        int win[128], wout[2] = { 0, 0 };
        for (int i = 0; i < nin; i++) {
            win[2 * i] = i + 1;
            win[2 * i + 1] = 7 * i;
        }
        dist_check(g, label, nin, win, nout, wout, 1, 0, srcs, dsts);
        report(label);
        neighbor_all(g, label, nin, srcs, nout, dsts);
        MPI_Comm_free(&g);
    }
    /* MPI_Dist_graph_create: each rank names its edges to rank+1 and rank+2, and rank 0 also
     * names the edge from the last rank to itself. */
    {
        const char *label = "dist_graph_create";
        int src[2] = { rank, size - 1 }, deg[2] = { 2, 1 }, dst[3] = { next, (rank + 2) % size, 0 },
            wt[3] = { 10 * rank + 1, 10 * rank + 2, 99 };
        int n = rank == 0 ? 2 : 1;
        MPI_Comm g;
        MPI_Dist_graph_create(MPI_COMM_WORLD, n, src, deg, dst, wt, MPI_INFO_NULL, 0, &g);
        int win[6], wout[6], nin = 0, nout = 0;
        int p2 = (rank + 2 * size - 2) % size;
        win[2 * nin] = prev, win[2 * nin + 1] = 10 * prev + 1, nin++;
        win[2 * nin] = p2, win[2 * nin + 1] = 10 * p2 + 2, nin++;
        if (rank == 0)
            win[2 * nin] = size - 1, win[2 * nin + 1] = 99, nin++;
        wout[2 * nout] = next, wout[2 * nout + 1] = 10 * rank + 1, nout++;
        wout[2 * nout] = (rank + 2) % size, wout[2 * nout + 1] = 10 * rank + 2, nout++;
        if (rank == size - 1)
            wout[2 * nout] = 0, wout[2 * nout + 1] = 99, nout++;
        dist_check(g, label, nin, win, nout, wout, 1, 1, srcs, dsts);
        report(label);
        neighbor_all(g, label, nin, srcs, nout, dsts);
        MPI_Comm_free(&g);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0)
        printf("size %d\n", size);

    int t = -1;
    MPI_Topo_test(MPI_COMM_WORLD, &t);
    CHECK(t == MPI_UNDEFINED, "MPI_Topo_test(MPI_COMM_WORLD) = %d, expected MPI_UNDEFINED", t);

    int d2[2] = { 0, 0 }, p10[2] = { 1, 0 }, p00[2] = { 0, 0 };
    MPI_Dims_create(size, 2, d2);
    test_cart(2, d2, p10);
    test_cart(2, d2, p00);
    int d1[1] = { size }, p1[1] = { 1 }, p0[1] = { 0 };
    test_cart(1, d1, p1);
    test_cart(1, d1, p0);
    int d3[3] = { 1, size, 1 }, p011[3] = { 0, 1, 1 };
    test_cart(3, d3, p011);
    int one[1] = { 1 };
    test_cart(1, one, p0);
    if (size >= 3) {
        int d[1] = { size - 1 };
        test_cart(1, d, p1);
    }
    test_graph();
    test_dist_graph();

    int all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("failures on all ranks: %d\n", all);
    MPI_Finalize();
    return fails != 0;
}
