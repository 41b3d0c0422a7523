/*
 * sessions.c - the MPI-4 Sessions model without MPI_Init: MPI_Session_init, process sets
 * (MPI_Session_get_num_psets, _get_nth_pset, _get_pset_info), MPI_Group_from_session_pset,
 * MPI_Comm_create_from_group, collectives on the result, session error handlers
 * (MPI_Session_create_errhandler, _set_errhandler, _call_errhandler), two sessions at once,
 * and MPI_Session_finalize.
 *
 * Checks: MPI_Initialized stays false; "mpi://WORLD" and "mpi://SELF" are among the psets,
 * their names come back whole when pset_len is asked for first (0 → the length with the NUL)
 * and cut (with a NUL) when the buffer is short; "mpi_size" of each; groups and communicators
 * from them have exact members and order (Allgather of world ranks: a session's WORLD group is
 * ordered as MPI_COMM_WORLD would be), Allreduce and Bcast give exact values; two
 * communicators from one group and tag are distinct (interleaved Iallreduce); disjoint
 * subgroups (evens, odds) with their own tags; a user session handler gets the session and
 * the code; a second session outlives the first; finalize sets MPI_SESSION_NULL.
 *
 * Open MPI 4.1.4 (MPI 3.1) has no Sessions: the program says SKIP and exits 77 there.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if MPI_VERSION >= 4
static int rank = -1, size, fails;

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (!(cond)) {                                                          \
            printf("FAIL sessions: rank=%d line %d: ", rank, __LINE__);         \
            printf(__VA_ARGS__);                                                \
            printf("\n");                                                       \
            fails++;                                                            \
        }                                                                       \
    } while (0)

/* On communicator c, checks the members are exactly the ranks want[0..n) of the WORLD pset,
 * in order, then an Allreduce sum and a Bcast from every root (payload offset `salt`). */
static void check_comm(const char *what, MPI_Comm c, const int *want, int n, int salt)
{
    int csize = -1, crank = -1;
    CHECK(c != MPI_COMM_NULL, "%s: MPI_COMM_NULL", what);
    if (c == MPI_COMM_NULL)
        return;
    MPI_Comm_size(c, &csize);
    MPI_Comm_rank(c, &crank);
    CHECK(csize == n, "%s: size %d, expected %d", what, csize, n);
    if (csize != n)
        return;
    CHECK(want[crank] == rank, "%s: rank %d does not hold world rank %d", what, crank, rank);
    int *got = malloc(sizeof(int) * (size_t)n);
    MPI_Allgather(&rank, 1, MPI_INT, got, 1, MPI_INT, c);
    long sum = 0;
    for (int i = 0; i < n; i++) {
        CHECK(got[i] == want[i], "%s: member %d is world rank %d, expected %d", what, i, got[i], want[i]);
        sum += want[i] + salt;
    }
    int mine = rank + salt, total = -1;
    MPI_Allreduce(&mine, &total, 1, MPI_INT, MPI_SUM, c);
    CHECK(total == sum, "%s: Allreduce sum %d, expected %ld", what, total, sum);
    for (int root = 0; root < n; root++) {
        int v = crank == root ? 1000 * salt + rank : -1;
        MPI_Bcast(&v, 1, MPI_INT, root, c);
        CHECK(v == 1000 * salt + want[root], "%s: Bcast from root %d gave %d, expected %d", what, root, v,
              1000 * salt + want[root]);
    }
    free(got);
}

/* The "mpi_size" of pset `name`, or -1. */
static int pset_size(MPI_Session s, const char *name)
{
    MPI_Info info = MPI_INFO_NULL;
    int rc = MPI_Session_get_pset_info(s, name, &info);
    CHECK(rc == MPI_SUCCESS, "get_pset_info(%s) returned %d", name, rc);
    if (rc != MPI_SUCCESS)
        return -1;
    char v[64] = "";
    int len = (int)sizeof v - 1, flag = 0;
    MPI_Info_get_string(info, "mpi_size", &len, v, &flag);
    CHECK(flag, "get_pset_info(%s): no mpi_size", name);
    MPI_Info_free(&info);
    return flag ? atoi(v) : -1;
}

/* Checks the psets include mpi://WORLD and mpi://SELF, and the name length protocol. */
static void psets(MPI_Session s)
{
    int n = -1, world = 0, self = 0;
    MPI_Session_get_num_psets(s, MPI_INFO_NULL, &n);
    CHECK(n >= 2, "get_num_psets gave %d, expected at least 2", n);
    for (int i = 0; i < n; i++) {
        int len = 0;
        MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len, NULL);
        char *name = malloc((size_t)len + 8);
        memset(name, 'x', (size_t)len + 8);
        int room = len;
        MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &room, name);
        CHECK((int)strlen(name) == len - 1, "pset %d: length %d but name \"%s\"", i, len, name);
        world += strcmp(name, "mpi://WORLD") == 0;
        self += strcmp(name, "mpi://SELF") == 0;
        if (len > 4) {
            char cut[8];
            memset(cut, 'x', sizeof cut);
            room = 4;
            MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &room, cut);
            CHECK(cut[3] == 0 && strncmp(cut, name, 3) == 0 && cut[4] == 'x',
                  "pset %d: a 4-byte buffer got \"%.3s\" (NUL at 3: %d, byte 4 untouched: %d)", i, cut,
                  cut[3] == 0, cut[4] == 'x');
        }
        free(name);
    }
    CHECK(world == 1 && self == 1, "psets: mpi://WORLD seen %d times, mpi://SELF %d times", world, self);
}

static int handler_calls, handler_code;
static MPI_Session handler_session;

static void on_error(MPI_Session *s, int *code, ...)
{
    handler_calls++;
    handler_session = *s;
    handler_code = *code;
}

static void errhandlers(MPI_Session s)
{
    MPI_Errhandler eh;
    MPI_Session_create_errhandler(on_error, &eh);
    int rc = MPI_Session_set_errhandler(s, eh);
    CHECK(rc == MPI_SUCCESS, "Session_set_errhandler returned %d", rc);
    rc = MPI_Session_call_errhandler(s, MPI_ERR_OTHER);
    CHECK(rc == MPI_SUCCESS, "Session_call_errhandler returned %d", rc);
    CHECK(handler_calls == 1 && handler_session == s && handler_code == MPI_ERR_OTHER,
          "handler: %d calls, session match %d, code %d", handler_calls, handler_session == s, handler_code);
    MPI_Errhandler got = MPI_ERRHANDLER_NULL;
    MPI_Session_get_errhandler(s, &got);
    CHECK(got != MPI_ERRHANDLER_NULL, "Session_get_errhandler gave MPI_ERRHANDLER_NULL");
    MPI_Errhandler_free(&got);
    MPI_Session_set_errhandler(s, MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&eh);
}

int main(void)
{
    int flag = -1;
    MPI_Initialized(&flag);
    int before = flag;
    MPI_Session s = MPI_SESSION_NULL, s2 = MPI_SESSION_NULL;
    int rc = MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s);
    if (rc != MPI_SUCCESS) {
        printf("FAIL sessions: MPI_Session_init returned %d\n", rc);
        return 1;
    }
    MPI_Group wg, sg;
    MPI_Group_from_session_pset(s, "mpi://WORLD", &wg);
    MPI_Group_rank(wg, &rank);
    MPI_Group_size(wg, &size);
    CHECK(before == 0, "MPI_Initialized was %d before MPI_Session_init", before);
    MPI_Initialized(&flag);
    CHECK(flag == 0, "MPI_Initialized is %d after MPI_Session_init", flag);
    psets(s);
    CHECK(pset_size(s, "mpi://WORLD") == size, "mpi://WORLD: mpi_size is not %d", size);
    CHECK(pset_size(s, "mpi://SELF") == 1, "mpi://SELF: mpi_size is not 1");
    MPI_Info used = MPI_INFO_NULL;
    rc = MPI_Session_get_info(s, &used);
    CHECK(rc == MPI_SUCCESS && used != MPI_INFO_NULL, "Session_get_info returned %d", rc);
    if (used != MPI_INFO_NULL)
        MPI_Info_free(&used);

    int *all = malloc(sizeof(int) * (size_t)size);
    for (int i = 0; i < size; i++)
        all[i] = i;
    MPI_Comm world, again, self;
    MPI_Comm_create_from_group(wg, "org.hcomm.test.world", MPI_INFO_NULL, MPI_ERRORS_RETURN, &world);
    check_comm("WORLD", world, all, size, 1);
    MPI_Errhandler weh = MPI_ERRHANDLER_NULL;
    MPI_Comm_get_errhandler(world, &weh);
    CHECK(weh == MPI_ERRORS_RETURN, "WORLD: the communicator's handler is not MPI_ERRORS_RETURN");
    MPI_Errhandler_free(&weh);

    /* One group, one tag, twice: two distinct communicators. */
    MPI_Comm_create_from_group(wg, "org.hcomm.test.world", MPI_INFO_NULL, MPI_ERRORS_RETURN, &again);
    int x = rank, y = -rank, sx = 0, sy = 0, want = size * (size - 1) / 2;
    MPI_Request rq[2];
    MPI_Status st[2];
    MPI_Iallreduce(&x, &sx, 1, MPI_INT, MPI_SUM, again, &rq[0]);
    MPI_Iallreduce(&y, &sy, 1, MPI_INT, MPI_SUM, world, &rq[1]);
    MPI_Waitall(2, rq, st);
    CHECK(sx == want && sy == -want, "WORLD twice: sums %d %d, expected %d %d", sx, sy, want, -want);

    MPI_Group_from_session_pset(s, "mpi://SELF", &sg);
    MPI_Comm_create_from_group(sg, "org.hcomm.test.self", MPI_INFO_NULL, MPI_ERRORS_RETURN, &self);
    check_comm("SELF", self, &rank, 1, 2);

    /* Disjoint subgroups, each with its own tag. */
    MPI_Group par;
    MPI_Comm parc;
    int *members = malloc(sizeof(int) * (size_t)size), n = 0;
    for (int r = rank % 2; r < size; r += 2)
        members[n++] = r;
    MPI_Group_incl(wg, n, members, &par);
    MPI_Comm_create_from_group(par, rank % 2 ? "org.hcomm.test.odds" : "org.hcomm.test.evens", MPI_INFO_NULL,
                               MPI_ERRORS_RETURN, &parc);
    check_comm(rank % 2 ? "odds" : "evens", parc, members, n, 3);

    errhandlers(s);

    /* A second session outlives the first. */
    MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s2);
    MPI_Comm_free(&parc);
    MPI_Comm_free(&self);
    MPI_Comm_free(&again);
    MPI_Comm_free(&world);
    MPI_Group_free(&par);
    MPI_Group_free(&sg);
    MPI_Group_free(&wg);
#ifdef HCOMM_MPI_H
    /* MPI 4.1's session buffers (MPICH 4.0.2 and Open MPI 4.1 predate them): attach, flush
     * (blocking and not), detach gives the buffer back; a second attach is an error. */
    {
        static char sbuf[1 << 12];
        void *back = NULL;
        int bsize = -1;
        MPI_Request fr;
        rc = MPI_Session_attach_buffer(s, sbuf, (int)sizeof sbuf);
        CHECK(rc == MPI_SUCCESS, "Session_attach_buffer returned %d", rc);
        rc = MPI_Session_attach_buffer(s, sbuf, (int)sizeof sbuf);
        CHECK(rc != MPI_SUCCESS, "a second Session_attach_buffer succeeded");
        CHECK(MPI_Session_flush_buffer(s) == MPI_SUCCESS, "Session_flush_buffer failed");
        CHECK(MPI_Session_iflush_buffer(s, &fr) == MPI_SUCCESS, "Session_iflush_buffer failed");
        MPI_Wait(&fr, MPI_STATUS_IGNORE);
        rc = MPI_Session_detach_buffer(s, &back, &bsize);
        CHECK(rc == MPI_SUCCESS && back == (void *)sbuf && bsize == (int)sizeof sbuf,
              "Session_detach_buffer: rc %d, %p (want %p), %d bytes", rc, back, (void *)sbuf, bsize);
    }
#endif
    rc = MPI_Session_finalize(&s);
    CHECK(rc == MPI_SUCCESS && s == MPI_SESSION_NULL, "Session_finalize returned %d, handle null: %d", rc,
          s == MPI_SESSION_NULL);

    MPI_Group_from_session_pset(s2, "mpi://WORLD", &wg);
    MPI_Comm_create_from_group(wg, "org.hcomm.test.second", MPI_INFO_NULL, MPI_ERRORS_RETURN, &world);
    check_comm("second session WORLD", world, all, size, 4);
    int total = 0;
    MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM, world);
    if (rank == 0) {
        printf("sessions: %d processes in mpi://WORLD\n", size);
        printf("sessions: %s\n", total ? "FAIL" : "ok");
    }
    MPI_Comm_free(&world);
    MPI_Group_free(&wg);
    rc = MPI_Session_finalize(&s2);
    if (rc != MPI_SUCCESS || s2 != MPI_SESSION_NULL) {
        printf("FAIL sessions: rank=%d: second Session_finalize returned %d\n", rank, rc);
        total++;
    }
    free(members);
    free(all);
    return total != 0;
}
#else
int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        printf("SKIP sessions: MPI_VERSION %d < 4, no Sessions\n", MPI_VERSION);
    MPI_Finalize();
    return 77;
}
#endif
