/*
 * topo_c.c - the MPI-4 large-count neighbor collectives: MPI_Neighbor_allgather_c,
 * _allgatherv_c, _alltoall_c, _alltoallv_c, _alltoallw_c and their MPI_Ineighbor_*_c forms,
 * with the checks of topo.c (topo_body.h) on a 2-D Cartesian grid (one periodic dimension),
 * a non-periodic ring and a distributed graph (a ring both ways).
 * Open MPI 4.1 (MPI 3.1) has no _c functions: the program says SKIP and exits 77 there.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>

#if MPI_VERSION >= 4
#define COUNT_T MPI_Count
#define DISPL_T MPI_Aint
#define NB_NAME "MPI_Neighbor_c"
#define INB_NAME "MPI_Ineighbor_c"
#define ALLGATHER MPI_Neighbor_allgather_c
#define IALLGATHER MPI_Ineighbor_allgather_c
#define ALLGATHERV MPI_Neighbor_allgatherv_c
#define IALLGATHERV MPI_Ineighbor_allgatherv_c
#define ALLTOALL MPI_Neighbor_alltoall_c
#define IALLTOALL MPI_Ineighbor_alltoall_c
#define ALLTOALLV MPI_Neighbor_alltoallv_c
#define IALLTOALLV MPI_Ineighbor_alltoallv_c
#define ALLTOALLW MPI_Neighbor_alltoallw_c
#define IALLTOALLW MPI_Ineighbor_alltoallw_c
/* The persistent forms are MPI 4.0. */
#if MPI_VERSION >= 4
#define PALLGATHER MPI_Neighbor_allgather_init_c
#define PALLGATHERV MPI_Neighbor_allgatherv_init_c
#define PALLTOALL MPI_Neighbor_alltoall_init_c
#define PALLTOALLV MPI_Neighbor_alltoallv_init_c
#define PALLTOALLW MPI_Neighbor_alltoallw_init_c
#endif
#include "topo_body.h"

static void on_cart(int nd, int *dims, int *periods, const char *label)
{
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, nd, dims, periods, 0, &cart);
    int nbr[4];
    for (int d = 0; d < nd; d++)
        MPI_Cart_shift(cart, d, 1, &nbr[2 * d], &nbr[2 * d + 1]);
    neighbor_all(cart, label, 2 * nd, nbr, 2 * nd, nbr);
    MPI_Comm_free(&cart);
}
#else
static int rank, size;
#endif

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
#if MPI_VERSION >= 4
    if (rank == 0)
        printf("size %d\n", size);
    int d2[2] = { 0, 0 }, p2[2] = { 1, 0 };
    MPI_Dims_create(size, 2, d2);
    on_cart(2, d2, p2, "cart 2-D, periods [1,0]");
    int d1[1] = { size }, p1[1] = { 0 };
    on_cart(1, d1, p1, "cart 1-D, not periodic");

    int prev = (rank + size - 1) % size, next = (rank + 1) % size;
    int s[2] = { prev, next }, d[2] = { next, prev }, srcs[2], dsts[2], w[2];
    MPI_Comm g;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, s, s, 2, d, d, MPI_INFO_NULL, 0, &g);
    MPI_Dist_graph_neighbors(g, 2, srcs, w, 2, dsts, w);
    neighbor_all(g, "dist graph ring both ways", 2, srcs, 2, dsts);
    MPI_Comm_free(&g);

    int all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("failures on all ranks: %d\n", all);
    MPI_Finalize();
    return fails != 0;
#else
    if (rank == 0)
        printf("SKIP topo_c: MPI_VERSION %d < 4, no large-count functions\n", MPI_VERSION);
    MPI_Finalize();
    return 77;
#endif
}
