/*
 * sessions_mix.c - Sessions next to the world model in one process: MPI_Init, a session
 * opened and finalized while MPI_COMM_WORLD stays usable, a second session opened before
 * MPI_Finalize and used after it (MPI-4 §11.3: sessions are independent of the world model;
 * MPI_Finalized is true, the session's communicators still work), then MPI_Session_finalize.
 *
 * Checks exact Allreduce/Bcast results on MPI_COMM_WORLD and on communicators made with
 * MPI_Comm_create_from_group from the session's "mpi://WORLD", their ranks (a session's WORLD
 * is ordered as MPI_COMM_WORLD), and MPI_Initialized/MPI_Finalized at each step.
 *
 * Open MPI 4.1.4 (MPI 3.1) has no Sessions: the program says SKIP and exits 77 there.
 */
#include <mpi.h>

#include <stdio.h>

static int rank = -1;
#if MPI_VERSION >= 4
static int size, fails;
#endif

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (!(cond)) {                                                          \
            printf("FAIL sessions_mix: rank=%d line %d: ", rank, __LINE__);     \
            printf(__VA_ARGS__);                                                \
            printf("\n");                                                       \
            fails++;                                                            \
        }                                                                       \
    } while (0)

#if MPI_VERSION >= 4
/* Allreduce of rank+salt and a Bcast from the last rank on c, which must hold the world's
 * ranks in order. */
static void check_comm(const char *what, MPI_Comm c, int salt)
{
    int crank = -1, csize = -1;
    MPI_Comm_rank(c, &crank);
    MPI_Comm_size(c, &csize);
    CHECK(crank == rank && csize == size, "%s: rank %d of %d, expected %d of %d", what, crank, csize, rank, size);
    int mine = rank + salt, sum = -1;
    MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, c);
    CHECK(sum == size * (size - 1) / 2 + salt * size, "%s: Allreduce %d", what, sum);
    int v = crank == csize - 1 ? 100 * salt : -1;
    MPI_Bcast(&v, 1, MPI_INT, csize - 1, c);
    CHECK(v == 100 * salt, "%s: Bcast %d", what, v);
}

/* A communicator of the session's mpi://WORLD. */
static MPI_Comm world_of(MPI_Session s, const char *tag)
{
    MPI_Group g;
    MPI_Comm c = MPI_COMM_NULL;
    MPI_Group_from_session_pset(s, "mpi://WORLD", &g);
    MPI_Comm_create_from_group(g, tag, MPI_INFO_NULL, MPI_ERRORS_RETURN, &c);
    MPI_Group_free(&g);
    return c;
}

int main(int argc, char **argv)
{
    int flag = -1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    MPI_Session s1, s2;
    int rc = MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s1);
    CHECK(rc == MPI_SUCCESS, "first Session_init returned %d", rc);
    MPI_Comm c1 = world_of(s1, "org.hcomm.test.mix1");
    check_comm("first session", c1, 1);
    MPI_Initialized(&flag);
    CHECK(flag == 1, "MPI_Initialized is %d with a session open", flag);
    MPI_Comm_free(&c1);
    rc = MPI_Session_finalize(&s1);
    CHECK(rc == MPI_SUCCESS, "first Session_finalize returned %d", rc);
    check_comm("MPI_COMM_WORLD after the first session", MPI_COMM_WORLD, 2);

    rc = MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s2);
    CHECK(rc == MPI_SUCCESS, "second Session_init returned %d", rc);
    MPI_Comm c2 = world_of(s2, "org.hcomm.test.mix2");
    check_comm("second session", c2, 3);
    MPI_Finalize();
    MPI_Finalized(&flag);
    CHECK(flag == 1, "MPI_Finalized is %d after MPI_Finalize", flag);

    check_comm("second session after MPI_Finalize", c2, 4);
    int total = 0;
    MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM, c2);
    if (rank == 0) {
        printf("sessions_mix: %d ranks\n", size);
        printf("sessions_mix: %s\n", total ? "FAIL" : "ok");
    }
    MPI_Comm_free(&c2);
    rc = MPI_Session_finalize(&s2);
    if (rc != MPI_SUCCESS || s2 != MPI_SESSION_NULL) {
        printf("FAIL sessions_mix: rank=%d: second Session_finalize returned %d\n", rank, rc);
        total++;
    }
    return total != 0;
}
#else
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        printf("SKIP sessions_mix: MPI_VERSION %d < 4, no Sessions\n", MPI_VERSION);
    MPI_Finalize();
    return 77;
}
#endif
