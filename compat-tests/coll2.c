/*
 * coll2.c - the rest of the collective family with int counts: MPI_Gather(v), MPI_Scatter(v),
 * MPI_Allgatherv, MPI_Alltoall(v), MPI_Scan, MPI_Exscan. The checks are in coll2_body.h
 * (shared with coll2_c.c, the _c large-count variants).
 */
#include <mpi.h>

#define GATHER MPI_Gather
#define GATHERV MPI_Gatherv
#define SCATTER MPI_Scatter
#define SCATTERV MPI_Scatterv
#define ALLGATHERV MPI_Allgatherv
#define ALLTOALL MPI_Alltoall
#define ALLTOALLV MPI_Alltoallv
#define SCAN MPI_Scan
#define EXSCAN MPI_Exscan
#define COUNT_T int
#define DISP_T int
#define PROG "coll2"
#include "coll2_body.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rc = run_all();
    MPI_Finalize();
    return rc;
}
