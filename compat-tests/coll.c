/*
 * coll.c - each collective with small exact data: MPI_Barrier, MPI_Bcast, MPI_Reduce
 * (out-of-place and in-place at root 0), MPI_Allreduce (several types and ops, in-place),
 * MPI_Allgather (and in-place), MPI_Reduce_scatter (uneven counts), MPI_Reduce_scatter_block.
 * coll_c.c runs the same body with the _c large-count functions.
 *
 * Every rank checks its result against values computed from the rank formulas; rank 0
 * prints the results (per-rank results gathered), so the output depends only on the number
 * of ranks. All values are small integers or exactly representable binary fractions.
 */
#include <mpi.h>

#define BCAST MPI_Bcast
#define REDUCE MPI_Reduce
#define ALLREDUCE MPI_Allreduce
#define ALLGATHER MPI_Allgather
#define REDUCE_SCATTER MPI_Reduce_scatter
#define REDUCE_SCATTER_BLOCK MPI_Reduce_scatter_block
#define COUNT_T int
#define PROG "coll"
#include "coll_body.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rc = run_all();
    MPI_Finalize();
    return rc;
}
