/*
 * fake_main.c - drives fake_host.c (see there) under the preload and prints what happened:
 *   reentry: pmpi_allreduce_calls=2     one direct MPI_Allreduce + one from inside PMPI_Barrier
 *   missing: MPI_Bcast_c rc=16          the fake host has no PMPI_Bcast_c: MPICH's ERR_INTERN
 * compat-tests/preload.sh checks these lines and the HCOMM_STATS line (allreduce_forwarded=1:
 * the re-entrant call is not counted; barrier_forwarded=1).
 */
#include <dlfcn.h>
#include <stdio.h>

extern int fake_pmpi_allreduce_calls;
int MPI_Init(int *argc, char ***argv);
int MPI_Finalize(void);
int MPI_Allreduce(const void *s, void *r, int count, int dt, int op, int comm);
int MPI_Barrier(int comm);

int main(int argc, char **argv)
{
    int a = 7, b = 0;
    if (MPI_Init(&argc, &argv) != 0)
        return 1;
    MPI_Allreduce(&a, &b, 1, 0x4c000405, 0x58000003, 0x44000000);
    if (b != 7)
        printf("FAIL fake_main: allreduce got=%d expected=7\n", b);
    MPI_Barrier(0x44000000);
    printf("reentry: pmpi_allreduce_calls=%d\n", fake_pmpi_allreduce_calls);
    /* Only the preload defines MPI_Bcast_c here: look it up at run time. */
    int (*bcast_c)(void *, long long, int, int, int) =
        (int (*)(void *, long long, int, int, int))dlsym(RTLD_DEFAULT, "MPI_Bcast_c");
    if (bcast_c)
        printf("missing: MPI_Bcast_c rc=%d\n", bcast_c(&a, 1, 0x4c000405, 0, 0x44000000));
    else
        printf("missing: MPI_Bcast_c not found (preload not loaded?)\n");
    return MPI_Finalize();
}
