/*
 * fake_host.c - a stand-in "host MPI" for testing the preload without a real MPI. Built as
 * libmpich.so.12 in a scratch directory so the preload classifies it as an MPICH-ABI host
 * (int handles, MPI_ERR_INTERN = 16). It defines MPI_X and PMPI_X for the few calls used by
 * fake_main.c and deliberately lacks PMPI_Bcast_c (the preload must report it and return
 * MPI_ERR_INTERN, not abort).
 *
 * PMPI_Barrier calls the user-level MPI_Allreduce, as some MPI builds call MPI_X internally:
 * with the preload that call lands in the interposer while it is inside MPI_Barrier, and its
 * re-entry guard must send it straight to PMPI_Allreduce without counting it.
 */
#include <string.h>

int fake_pmpi_allreduce_calls; /* read by fake_main.c */

typedef int MPI_Comm;
typedef int MPI_Datatype;
typedef int MPI_Op;

int PMPI_Init(int *argc, char ***argv) { (void)argc; (void)argv; return 0; }
int MPI_Init(int *argc, char ***argv) { return PMPI_Init(argc, argv); }
int PMPI_Finalize(void) { return 0; }
int MPI_Finalize(void) { return PMPI_Finalize(); }
int PMPI_Comm_rank(MPI_Comm comm, int *rank)
{
    *rank = comm == 0x44000000 ? 0 : -1;
    return comm == 0x44000000 ? 0 : 5;
}
int MPI_Comm_rank(MPI_Comm comm, int *rank) { return PMPI_Comm_rank(comm, rank); }
int PMPI_Get_library_version(char *version, int *len)
{
    strcpy(version, "fake host MPI (compat-tests/preload/fake_host.c)");
    *len = (int)strlen(version);
    return 0;
}
int PMPI_Allreduce(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    (void)dt; (void)op; (void)comm;
    fake_pmpi_allreduce_calls++;
    if (count == 1)
        memcpy(r, s, 4);
    return 0;
}
int MPI_Allreduce(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    return PMPI_Allreduce(s, r, count, dt, op, comm);
}
int PMPI_Barrier(MPI_Comm comm)
{
    int a = 1, b = 0;
    return MPI_Allreduce(&a, &b, 1, 0x4c000405, 0x58000003, comm); /* re-entry into MPI_X */
}
int MPI_Barrier(MPI_Comm comm) { return PMPI_Barrier(comm); }
