/*
 * coll2_c.c - the MPI-4 large-count variants MPI_Gather_c, MPI_Gatherv_c, MPI_Scatter_c,
 * MPI_Scatterv_c, MPI_Allgatherv_c, MPI_Alltoall_c, MPI_Alltoallv_c, MPI_Scan_c, MPI_Exscan_c
 * (MPI_Count counts, MPI_Aint displacements), with the checks of coll2.c (coll2_body.h).
 * Open MPI 4.1 (MPI 3.1) has no _c functions: the program says SKIP and exits 77 there.
 */
#include <mpi.h>

#include <stdio.h>

#if MPI_VERSION >= 4
#define GATHER MPI_Gather_c
#define GATHERV MPI_Gatherv_c
#define SCATTER MPI_Scatter_c
#define SCATTERV MPI_Scatterv_c
#define ALLGATHERV MPI_Allgatherv_c
#define ALLTOALL MPI_Alltoall_c
#define ALLTOALLV MPI_Alltoallv_c
#define SCAN MPI_Scan_c
#define EXSCAN MPI_Exscan_c
#define COUNT_T MPI_Count
#define DISP_T MPI_Aint
#define PROG "coll2_c"
#include "coll2_body.h"
#endif

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
#if MPI_VERSION >= 4
    int rc = run_all();
    MPI_Finalize();
    return rc;
#else
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        printf("SKIP coll2_c: MPI_VERSION %d < 4, no large-count functions\n", MPI_VERSION);
    MPI_Finalize();
    return 77;
#endif
}
