/*
 * coll_c.c - the MPI-4 large-count (_c) collectives: MPI_Bcast_c, MPI_Reduce_c,
 * MPI_Allreduce_c, MPI_Allgather_c, MPI_Reduce_scatter_c, MPI_Reduce_scatter_block_c, and
 * MPI_Type_size_c; the same checks and output as coll.c (coll_body.h) with MPI_Count counts.
 * Open MPI 4.1 (MPI 3.1) has no _c functions: the program says SKIP and exits 77 there.
 */
#include <mpi.h>

#include <stdio.h>

#if MPI_VERSION >= 4
#define BCAST MPI_Bcast_c
#define REDUCE MPI_Reduce_c
#define ALLREDUCE MPI_Allreduce_c
#define ALLGATHER MPI_Allgather_c
#define REDUCE_SCATTER MPI_Reduce_scatter_c
#define REDUCE_SCATTER_BLOCK MPI_Reduce_scatter_block_c
#define COUNT_T MPI_Count
#define PROG "coll_c"
#include "coll_body.h"

static int type_sizes(void)
{
    static const struct { const char *name; MPI_Datatype t; MPI_Count want; } tt[] = {
        { "MPI_CHAR", MPI_CHAR, 1 },        { "MPI_INT", MPI_INT, 4 },
        { "MPI_DOUBLE", MPI_DOUBLE, 8 },    { "MPI_UINT16_T", MPI_UINT16_T, 2 },
        { "MPI_DOUBLE_INT", MPI_DOUBLE_INT, 12 }, { "MPI_SHORT_INT", MPI_SHORT_INT, 6 },
        { "MPI_LONG_INT", MPI_LONG_INT, 12 },
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof tt / sizeof tt[0]; i++) {
        MPI_Count s = -1;
        if (MPI_Type_size_c(tt[i].t, &s) != MPI_SUCCESS || s != tt[i].want) {
            printf("FAIL coll_c: MPI_Type_size_c(%s) = %lld, expected %lld\n", tt[i].name, (long long)s,
                   (long long)tt[i].want);
            bad++;
        }
    }
    return bad;
}
#endif

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
#if MPI_VERSION >= 4
    int bad = type_sizes();
    int rc = run_all();
    MPI_Finalize();
    return rc || bad;
#else
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        printf("SKIP coll_c: MPI_VERSION %d < 4, no large-count functions\n", MPI_VERSION);
    MPI_Finalize();
    return 77;
#endif
}
