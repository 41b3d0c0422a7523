/*
 * attrs.c - MPI_Comm_get_attr on the predefined keys, MPI_Comm_set_name / MPI_Comm_get_name,
 * and user error handlers: MPI_Comm_create_errhandler, MPI_Comm_set_errhandler with it,
 * MPI_Comm_call_errhandler, MPI_Errhandler_free.
 *
 * Attributes: attribute_val receives a pointer to an int. Checked on MPI_COMM_WORLD and a
 * duplicate, where MPICH and Open MPI both have them (Open MPI has none on MPI_COMM_SELF or
 * on split/created communicators; MPICH and hcomm have them everywhere - checked for hcomm).
 *   MPI_TAG_UB          flag 1, >= 32767, equal on all ranks (MPICH 2^28-1, Open MPI and
 *                       hcomm 2^31-1)
 *   MPI_HOST            flag 1, MPI_PROC_NULL
 *   MPI_IO              flag 1, MPI_ANY_SOURCE, MPI_PROC_NULL or a rank (hcomm, MPICH:
 *                       MPI_ANY_SOURCE)
 *   MPI_WTIME_IS_GLOBAL flag 1, 0 or 1 (all three: 0)
 *   MPI_UNIVERSE_SIZE   MPICH's hydra sets no value (flag 0); Open MPI gives its slot count,
 *                       which can be below the number of ranks: checked >= 1. hcomm: exactly
 *                       the world size.
 *   MPI_APPNUM          flag 1, 0
 *   an unknown key      an error under MPI_ERRORS_RETURN (MPICH: MPI_ERR_KEYVAL; Open MPI
 *                       4.1.4: MPI_ERR_OTHER), so only "not MPI_SUCCESS" is checked.
 *
 * Names: "MPI_COMM_WORLD", "MPI_COMM_SELF"; a duplicate has the empty name (also a duplicate
 * of a named communicator); set/get round trip; renaming MPI_COMM_WORLD; a 299-character name
 * is cut (MPICH and hcomm keep 127 characters, Open MPI 63: checked as a prefix shorter than
 * MPI_MAX_OBJECT_NAME).
 *
 * Error handlers: a user handler on a duplicate is called once for MPI_Bcast with an
 * out-of-range root, with that communicator and a code of class MPI_ERR_ROOT, and the call
 * returns that code; MPI_Comm_call_errhandler calls it with the given code and returns
 * MPI_SUCCESS; a duplicate inherits it; it still works after MPI_Errhandler_free (the
 * communicator keeps its reference); MPI_Comm_get_errhandler returns it.
 */
#include <mpi.h>

#include <stdio.h>
#include <string.h>

static int rank, size, fails;

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (!(cond)) {                                                          \
            printf("FAIL attrs: rank=%d line %d: ", rank, __LINE__);            \
            printf(__VA_ARGS__);                                                \
            printf("\n");                                                       \
            fails++;                                                            \
        }                                                                       \
    } while (0)

/* Returns the attribute's value, or `absent` when flag is 0. */
static int attr(MPI_Comm c, int key, const char *what, int absent)
{
    int *v = NULL, flag = -1;
    int rc = MPI_Comm_get_attr(c, key, &v, &flag);
    CHECK(rc == MPI_SUCCESS, "MPI_Comm_get_attr(%s) rc=%d", what, rc);
    CHECK(flag == 0 || flag == 1, "MPI_Comm_get_attr(%s) flag=%d", what, flag);
    if (flag != 1)
        return absent;
    CHECK(v != NULL, "MPI_Comm_get_attr(%s) gave a NULL pointer", what);
    return v ? *v : absent;
}

static void check_attrs(const char *cname, MPI_Comm c)
{
    const int ABSENT = -12345;
    char what[64];
    snprintf(what, sizeof what, "%s, MPI_TAG_UB", cname);
    int tag_ub = attr(c, MPI_TAG_UB, what, ABSENT);
    CHECK(tag_ub != ABSENT && tag_ub >= 32767, "%s = %d", what, tag_ub);
    int lo = 0, hi = 0;
    MPI_Allreduce(&tag_ub, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&tag_ub, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    CHECK(lo == hi, "%s differs between ranks (%d..%d)", what, lo, hi);
    snprintf(what, sizeof what, "%s, MPI_HOST", cname);
    int host = attr(c, MPI_HOST, what, ABSENT);
    CHECK(host == MPI_PROC_NULL, "%s = %d, expected MPI_PROC_NULL", what, host);
    snprintf(what, sizeof what, "%s, MPI_IO", cname);
    int io = attr(c, MPI_IO, what, ABSENT);
    CHECK(io == MPI_ANY_SOURCE || io == MPI_PROC_NULL || (io >= 0 && io < size), "%s = %d", what, io);
    snprintf(what, sizeof what, "%s, MPI_WTIME_IS_GLOBAL", cname);
    int wg = attr(c, MPI_WTIME_IS_GLOBAL, what, ABSENT);
    CHECK(wg == 0 || wg == 1, "%s = %d", what, wg);
    snprintf(what, sizeof what, "%s, MPI_UNIVERSE_SIZE", cname);
    int us = attr(c, MPI_UNIVERSE_SIZE, what, ABSENT);
#ifdef HCOMM_MPI_H
    CHECK(us == size, "%s = %d, expected %d", what, us, size);
#else
    CHECK(us == ABSENT || us >= 1, "%s = %d", what, us);
#endif
    snprintf(what, sizeof what, "%s, MPI_APPNUM", cname);
    int app = attr(c, MPI_APPNUM, what, ABSENT);
    CHECK(app == 0, "%s = %d, expected 0", what, app);
#ifdef HCOMM_MPI_H
    CHECK(tag_ub == 2147483647 && io == MPI_ANY_SOURCE && wg == 0, "%s: hcomm values %d %d %d", cname, tag_ub,
          io, wg);
#endif
}

static void attrs(void)
{
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    check_attrs("MPI_COMM_WORLD", MPI_COMM_WORLD);
    check_attrs("dup", dup);
#ifdef HCOMM_MPI_H
    check_attrs("MPI_COMM_SELF", MPI_COMM_SELF);
    MPI_Comm split;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &split);
    check_attrs("split", split);
    MPI_Comm_free(&split);
#endif
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    int *v = NULL, flag = -1;
    int rc = MPI_Comm_get_attr(dup, 0x12345, &v, &flag);
    CHECK(rc != MPI_SUCCESS, "MPI_Comm_get_attr(unknown key) succeeded (flag %d)", flag);
    MPI_Comm_free(&dup);
}

static void get_name(MPI_Comm c, const char *what, const char *want)
{
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    memset(name, 'x', sizeof name);
    int rc = MPI_Comm_get_name(c, name, &len);
    CHECK(rc == MPI_SUCCESS && strcmp(name, want) == 0 && len == (int)strlen(want),
          "MPI_Comm_get_name(%s) rc=%d gave \"%.*s\" len %d, expected \"%s\"", what, rc, MPI_MAX_OBJECT_NAME - 1,
          name, len, want);
}

static void names(void)
{
    get_name(MPI_COMM_WORLD, "MPI_COMM_WORLD", "MPI_COMM_WORLD");
    get_name(MPI_COMM_SELF, "MPI_COMM_SELF", "MPI_COMM_SELF");
    MPI_Comm dup, dup2;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    get_name(dup, "a dup", "");
    MPI_Comm_set_name(dup, "my communicator");
    get_name(dup, "a dup after set_name", "my communicator");
    MPI_Comm_dup(dup, &dup2);
    get_name(dup2, "a dup of a named communicator", "");
    MPI_Comm_set_name(dup, "renamed");
    get_name(dup, "a dup after a second set_name", "renamed");

    char big[300];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = 0;
    MPI_Comm_set_name(dup2, big);
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    MPI_Comm_get_name(dup2, name, &len);
    CHECK(len > 0 && len < MPI_MAX_OBJECT_NAME && (int)strlen(name) == len && strncmp(name, big, (size_t)len) == 0,
          "long name: len %d", len);
#ifdef HCOMM_MPI_H
    CHECK(len == MPI_MAX_OBJECT_NAME - 1, "long name: len %d, expected %d", len, MPI_MAX_OBJECT_NAME - 1);
#endif

    MPI_Comm_set_name(MPI_COMM_WORLD, "the world");
    get_name(MPI_COMM_WORLD, "MPI_COMM_WORLD after set_name", "the world");
    MPI_Comm_set_name(MPI_COMM_WORLD, "MPI_COMM_WORLD");
    MPI_Comm_free(&dup2);
    MPI_Comm_free(&dup);
}

static int calls;
static MPI_Comm seen_comm;
static int seen_code;

static void handler(MPI_Comm *comm, int *code, ...)
{
    calls++;
    seen_comm = *comm;
    seen_code = *code;
}

static void errhandlers(void)
{
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL, got = MPI_ERRHANDLER_NULL;
    int rc = MPI_Comm_create_errhandler(handler, &eh);
    CHECK(rc == MPI_SUCCESS && eh != MPI_ERRHANDLER_NULL, "MPI_Comm_create_errhandler rc=%d", rc);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_set_errhandler(dup, eh);
    MPI_Comm_get_errhandler(dup, &got);
    CHECK(got == eh, "MPI_Comm_get_errhandler does not return the user handler");
    MPI_Errhandler_free(&got);

    /* A bad call: root out of range. */
    int x = 7;
    calls = 0;
    rc = MPI_Bcast(&x, 1, MPI_INT, size, dup);
    int cls = -1;
    MPI_Error_class(seen_code, &cls);
    CHECK(calls == 1, "the handler ran %d times for a bad MPI_Bcast", calls);
    CHECK(seen_comm == dup, "the handler got another communicator");
    CHECK(cls == MPI_ERR_ROOT, "the handler got code %d of class %d, expected MPI_ERR_ROOT", seen_code, cls);
    CHECK(rc == seen_code, "MPI_Bcast returned %d, the handler got %d", rc, seen_code);
    CHECK(x == 7, "the rejected MPI_Bcast wrote the buffer");

    /* MPI_Comm_call_errhandler */
    calls = 0;
    rc = MPI_Comm_call_errhandler(dup, MPI_ERR_OTHER);
    CHECK(rc == MPI_SUCCESS, "MPI_Comm_call_errhandler returned %d", rc);
    CHECK(calls == 1 && seen_comm == dup && seen_code == MPI_ERR_OTHER,
          "MPI_Comm_call_errhandler: %d calls, code %d", calls, seen_code);

    /* A dup inherits the handler; freeing the handle keeps it attached. */
    MPI_Comm dup2;
    MPI_Comm_dup(dup, &dup2);
    rc = MPI_Errhandler_free(&eh);
    CHECK(rc == MPI_SUCCESS && eh == MPI_ERRHANDLER_NULL, "MPI_Errhandler_free rc=%d", rc);
    calls = 0;
    rc = MPI_Comm_call_errhandler(dup2, MPI_ERR_ARG);
    CHECK(rc == MPI_SUCCESS && calls == 1 && seen_comm == dup2 && seen_code == MPI_ERR_ARG,
          "handler on the dup after free: rc=%d calls=%d code=%d", rc, calls, seen_code);
    calls = 0;
    rc = MPI_Bcast(&x, 1, MPI_INT, -5, dup2);
    MPI_Error_class(rc, &cls);
    CHECK(calls == 1 && cls == MPI_ERR_ROOT && seen_comm == dup2, "bad root on the dup: calls=%d class=%d", calls,
          cls);

    /* Everything still works on the communicators. */
    int one = 1, tot = 0;
    rc = MPI_Allreduce(&one, &tot, 1, MPI_INT, MPI_SUM, dup2);
    CHECK(rc == MPI_SUCCESS && tot == size, "Allreduce on the dup: rc=%d sum=%d", rc, tot);
    MPI_Comm_free(&dup2);
    MPI_Comm_free(&dup);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    attrs();
    names();
    errhandlers();
    int total = 0;
    MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("attrs: %s (%d ranks)\n", total ? "FAILED" : "ok", size);
    MPI_Finalize();
    return fails ? 1 : 0;
}
