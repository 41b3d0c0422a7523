/*
 * errors.c - argument checking and error handlers.
 *
 * Default mode: with MPI_ERRORS_RETURN set on MPI_COMM_WORLD, invalid arguments to the
 * collectives return an error code of the right class (MPI_Error_class), write nothing to the
 * receive buffer, and the library keeps working (a correct Allreduce after every error).
 * MPI_Error_string gives a non-empty string for every code returned.
 *   negative count -> MPI_ERR_COUNT        NULL buffer, count > 0 -> MPI_ERR_BUFFER
 *   invalid / null datatype -> MPI_ERR_TYPE  invalid / null op, op not defined for the type
 *   -> MPI_ERR_OP                          root out of range -> MPI_ERR_ROOT
 *   MPI_COMM_NULL / invalid communicator -> MPI_ERR_COMM
 * Groups, communicator constructors and Sessions: bad ranges, groups, tags, infos, psets,
 * sessions; the output handle keeps its value.
 * Nonblocking and persistent starting calls also leave the request argument unwritten;
 * MPI_Start of MPI_REQUEST_NULL or of an active request -> MPI_ERR_REQUEST.
 *   datatype constructors: negative count -> MPI_ERR_COUNT, negative block length, subarray
 *   out of bounds, bad order, darray grid not of size -> MPI_ERR_ARG; an uncommitted type in
 *   Bcast or Pack -> MPI_ERR_TYPE; Pack/Unpack(_external) past the buffer -> MPI_ERR_TRUNCATE
 *   MPI_Mrecv / MPI_Imrecv of MPI_MESSAGE_NULL -> MPI_ERR_REQUEST (the message handle is
 *   left alone; not under Open MPI, which raises it on a fatal handler of its own); MPI_Mprobe with a NULL message -> MPI_ERR_ARG (Open MPI: MPI_ERR_REQUEST); hcomm only: MPI_Bsend with no
 *   buffer attached or a message larger than the attached buffer (+ MPI_BSEND_OVERHEAD),
 *   and a second MPI_Buffer_attach -> MPI_ERR_BUFFER (Open MPI 4.1 sends such a message
 *   anyway); MPI_Buffer_attach with a negative size -> MPI_ERR_ARG.
 * Mode "fatal" (argv[1]): under the default MPI_ERRORS_ARE_FATAL, rank 1 (rank 0 when alone)
 * calls MPI_Allreduce with count -1 while the others make a valid call; the job must end
 * quickly with a non-zero status, and stderr must name MPI_Allreduce, the count and the rank
 * (the runner checks that; this program writes nothing to stderr itself).
 *
 * Not built for Debian's MPICH 4.0.2, which checks no arguments (a negative count crashes in
 * memcpy): the program says SKIP and exits 77 there. On Open MPI, handles are pointers to
 * objects, so the "garbage handle" cases (which it would dereference) are left out.
 */
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(MPICH_VERSION) && !defined(HCOMM_MPI_H)
#define REF_MPICH 1
#endif
#if defined(OPEN_MPI) && !defined(HCOMM_MPI_H)
#define REF_OMPI 1
#endif

#define N 8

static int rank, size;
static long fails, passed;
static unsigned char rbuf[N * 64 * 8];

static const char *class_name(int c)
{
    if (c == MPI_SUCCESS) return "MPI_SUCCESS";
    if (c == MPI_ERR_BUFFER) return "MPI_ERR_BUFFER";
    if (c == MPI_ERR_COUNT) return "MPI_ERR_COUNT";
    if (c == MPI_ERR_TYPE) return "MPI_ERR_TYPE";
    if (c == MPI_ERR_COMM) return "MPI_ERR_COMM";
    if (c == MPI_ERR_ROOT) return "MPI_ERR_ROOT";
    if (c == MPI_ERR_OP) return "MPI_ERR_OP";
    if (c == MPI_ERR_ARG) return "MPI_ERR_ARG";
    if (c == MPI_ERR_GROUP) return "MPI_ERR_GROUP";
    if (c == MPI_ERR_RANK) return "MPI_ERR_RANK";
    if (c == MPI_ERR_TAG) return "MPI_ERR_TAG";
    if (c == MPI_ERR_INFO) return "MPI_ERR_INFO";
    if (c == MPI_ERR_RANK) return "MPI_ERR_RANK";
    if (c == MPI_ERR_TOPOLOGY) return "MPI_ERR_TOPOLOGY";
    if (c == MPI_ERR_DIMS) return "MPI_ERR_DIMS";
    if (c == MPI_ERR_TRUNCATE) return "MPI_ERR_TRUNCATE";
    if (c == MPI_ERR_OTHER) return "MPI_ERR_OTHER";
    if (c == MPI_ERR_INTERN) return "MPI_ERR_INTERN";
    if (c == MPI_ERR_REQUEST) return "MPI_ERR_REQUEST";
    return "(other)";
}

/* A correct collective right after an error: the library still works. */
static void still_works(const char *after)
{
    int in[N], out[N];
    for (int i = 0; i < N; i++)
        in[i] = rank * 100 + i;
    int rc = MPI_Allreduce(in, out, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int ok = rc == MPI_SUCCESS;
    for (int i = 0; ok && i < N; i++)
        ok = out[i] == 100 * size * (size - 1) / 2 + size * i;
    if (!ok) {
        fails++;
        char msg[MPI_MAX_ERROR_STRING] = "";
        int len = 0;
        if (rc != MPI_SUCCESS)
            MPI_Error_string(rc, msg, &len);
        printf("FAIL errors: rank=%d a valid MPI_Allreduce after \"%s\" failed (rc=%d %s)\n", rank, after, rc, msg);
    }
}

/* alt_class: a second class accepted (only where a reference MPI legitimately checks the
 * arguments in another order); -1 for none. */
static void expect_alt(const char *what, int rc, int want_class, int alt_class)
{
    int cls = -1, ok = 1;
    if (rc == MPI_SUCCESS) {
        ok = 0;
    } else {
        if (MPI_Error_class(rc, &cls) != MPI_SUCCESS)
            cls = -1;
        if (cls != want_class && (alt_class < 0 || cls != alt_class))
            ok = 0;
        char s[MPI_MAX_ERROR_STRING];
        int len = -1;
        s[0] = 0;
        if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS || len <= 0 || len >= MPI_MAX_ERROR_STRING ||
            (int)strlen(s) != len) {
            fails++;
            printf("FAIL errors: rank=%d %s: MPI_Error_string(%d) gave len=%d \"%s\"\n", rank, what, rc, len, s);
        }
    }
    for (size_t i = 0; i < sizeof rbuf; i++) {
        if (rbuf[i] != 0xEE) {
            fails++;
            printf("FAIL errors: rank=%d %s: receive buffer written at byte %zu\n", rank, what, i);
            break;
        }
    }
    if (!ok) {
        fails++;
        printf("FAIL errors: rank=%d %s: got rc=%d class=%d (%s), expected class %d (%s)\n", rank, what, rc, cls,
               class_name(cls), want_class, class_name(want_class));
    } else {
        passed++;
    }
    still_works(what);
    memset(rbuf, 0xEE, sizeof rbuf);
}

static void expect(const char *what, int rc, int want_class) { expect_alt(what, rc, want_class, -1); }

/* As expect(), and the output handle (set to `sentinel` before the call) is untouched. */
static void expect_kept(const char *what, int rc, int want_class, int now, int sentinel)
{
    if (now != sentinel) {
        fails++;
        printf("FAIL errors: rank=%d %s: an output handle was written (0x%x)\n", rank, what, now);
    }
    expect(what, rc, want_class);
}

/* Groups, communicator constructors and (MPI 4) Sessions. */
static void groups_comms_sessions(void)
{
    MPI_Group world, g = MPI_GROUP_NULL;
    MPI_Comm c = MPI_COMM_NULL;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int past[1][3] = { { 0, size, 1 } };
    expect_kept("MPI_Group_range_incl last = size", MPI_Group_range_incl(world, 1, past, &g), MPI_ERR_RANK,
                (int)(g == MPI_GROUP_NULL), 1);
    expect_kept("MPI_Group_union group1 = MPI_GROUP_NULL", MPI_Group_union(MPI_GROUP_NULL, world, &g),
                MPI_ERR_GROUP, (int)(g == MPI_GROUP_NULL), 1);
    MPI_Request r = MPI_REQUEST_NULL;
    int rc = MPI_Comm_idup(MPI_COMM_NULL, &c, &r);
    expect_kept("MPI_Comm_idup comm = MPI_COMM_NULL", rc, MPI_ERR_COMM,
                (int)(c == MPI_COMM_NULL && r == MPI_REQUEST_NULL), 1);
#ifdef HCOMM_MPI_H
    int stride0[1][3] = { { 0, size - 1, 0 } }, away[1][3] = { { size - 1, 0, 1 } };
    int twice[2][3] = { { 0, 0, 1 }, { 0, size - 1, 1 } };
    expect_kept("MPI_Group_range_incl stride 0", MPI_Group_range_incl(world, 1, stride0, &g), MPI_ERR_ARG,
                (int)(g == MPI_GROUP_NULL), 1);
    if (size > 1)
        expect_kept("MPI_Group_range_excl stride away from last", MPI_Group_range_excl(world, 1, away, &g),
                    MPI_ERR_ARG, (int)(g == MPI_GROUP_NULL), 1);
    expect_kept("MPI_Group_range_excl a rank in two triplets", MPI_Group_range_excl(world, 2, twice, &g),
                MPI_ERR_RANK, (int)(g == MPI_GROUP_NULL), 1);
    expect_kept("MPI_Group_range_incl n = -1", MPI_Group_range_incl(world, -1, past, &g), MPI_ERR_ARG,
                (int)(g == MPI_GROUP_NULL), 1);
    expect_kept("MPI_Group_intersection group2 = 0x12345",
                MPI_Group_intersection(world, (MPI_Group)0x12345, &g), MPI_ERR_GROUP, (int)(g == MPI_GROUP_NULL),
                1);
    expect_kept("MPI_Comm_create_group tag = -1", MPI_Comm_create_group(MPI_COMM_WORLD, world, -1, &c),
                MPI_ERR_TAG, (int)(c == MPI_COMM_NULL), 1);
    expect_kept("MPI_Comm_dup_with_info info = 0x12345",
                MPI_Comm_dup_with_info(MPI_COMM_WORLD, (MPI_Info)0x12345, &c), MPI_ERR_INFO,
                (int)(c == MPI_COMM_NULL), 1);
    expect("MPI_Get_hw_resource_info hw_info = NULL", MPI_Get_hw_resource_info(NULL), MPI_ERR_ARG);
    expect_kept("MPI_Comm_split_type split_type = 99", MPI_Comm_split_type(MPI_COMM_WORLD, 99, 0, MPI_INFO_NULL, &c),
                MPI_ERR_ARG, (int)(c == MPI_COMM_NULL), 1);
#endif
#if MPI_VERSION >= 4
    MPI_Session s = MPI_SESSION_NULL;
    expect("MPI_Session_init session = NULL", MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, NULL),
           MPI_ERR_ARG);
    rc = MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s);
    if (rc != MPI_SUCCESS) {
        fails++;
        printf("FAIL errors: rank=%d MPI_Session_init returned %d\n", rank, rc);
    } else {
        int n = -7, len = 0;
        char name[8] = "unset";
        expect_kept("MPI_Session_get_num_psets session = MPI_SESSION_NULL",
                    MPI_Session_get_num_psets(MPI_SESSION_NULL, MPI_INFO_NULL, &n), MPI_ERR_SESSION, n, -7);
        expect_kept("MPI_Session_get_nth_pset n = 99", MPI_Session_get_nth_pset(s, MPI_INFO_NULL, 99, &len, name),
                    MPI_ERR_ARG, len, 0);
        len = -1;
        expect_kept("MPI_Session_get_nth_pset *pset_len = -1",
                    MPI_Session_get_nth_pset(s, MPI_INFO_NULL, 0, &len, name), MPI_ERR_ARG,
                    (int)(strcmp(name, "unset") == 0), 1);
        expect_kept("MPI_Group_from_session_pset pset_name = mpi://NOPE",
                    MPI_Group_from_session_pset(s, "mpi://NOPE", &g), MPI_ERR_ARG, (int)(g == MPI_GROUP_NULL), 1);
        expect("MPI_Session_set_errhandler errhandler = 0x12345",
               MPI_Session_set_errhandler(s, (MPI_Errhandler)0x12345), MPI_ERR_ARG);
        expect_kept("MPI_Comm_create_from_group group = MPI_GROUP_NULL",
                    MPI_Comm_create_from_group(MPI_GROUP_NULL, "t", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c),
                    MPI_ERR_GROUP, (int)(c == MPI_COMM_NULL), 1);
        expect_kept("MPI_Comm_create_from_group stringtag = NULL",
                    MPI_Comm_create_from_group(world, NULL, MPI_INFO_NULL, MPI_ERRORS_RETURN, &c), MPI_ERR_ARG,
                    (int)(c == MPI_COMM_NULL), 1);
        if (size > 1) {
            int other = (rank + 1) % size;
            MPI_Group not_me;
            MPI_Group_incl(world, 1, &other, &not_me);
            expect_kept("MPI_Comm_create_from_group by a non-member",
                        MPI_Comm_create_from_group(not_me, "t", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c), MPI_ERR_GROUP,
                        (int)(c == MPI_COMM_NULL), 1);
            MPI_Group_free(&not_me);
        }
        rc = MPI_Session_finalize(&s);
        if (rc != MPI_SUCCESS || s != MPI_SESSION_NULL) {
            fails++;
            printf("FAIL errors: rank=%d MPI_Session_finalize returned %d\n", rank, rc);
        }
    }
#endif
    MPI_Group_free(&world);
}

/* A rejected starting call (nonblocking or persistent) must not write its request either. */
static void expect_req(const char *what, int rc, int want_class, MPI_Request *req)
{
    if (*req != MPI_REQUEST_NULL) {
        fails++;
        printf("FAIL errors: rank=%d %s: request written\n", rank, what);
    }
    expect(what, rc, want_class);
    *req = MPI_REQUEST_NULL;
}

/* Nonblocking and persistent collectives, persistent point-to-point, MPI_Start. Every case is
 * one that every rank rejects (a case only the root rejects would leave the others' requests
 * waiting for a root that never comes). */
static void requests(const int *sbuf)
{
    MPI_Request req = MPI_REQUEST_NULL;
    int counts[64], displs[64];
    MPI_Datatype types[64];
    for (int i = 0; i < 64; i++)
        counts[i] = 1, displs[i] = i, types[i] = MPI_INT;
    expect_req("MPI_Igather root=size",
               MPI_Igather(sbuf, 1, MPI_INT, rbuf, 1, MPI_INT, size, MPI_COMM_WORLD, &req), MPI_ERR_ROOT, &req);
    expect_req("MPI_Iscatterv root=-1",
               MPI_Iscatterv(sbuf, counts, displs, MPI_INT, rbuf, 1, MPI_INT, -1, MPI_COMM_WORLD, &req),
               MPI_ERR_ROOT, &req);
    counts[size - 1] = -1;
    expect_req("MPI_Ialltoallv recvcounts[last]=-1",
               MPI_Ialltoallv(sbuf, counts, displs, MPI_INT, rbuf, counts, displs, MPI_INT, MPI_COMM_WORLD, &req),
               MPI_ERR_COUNT, &req);
    counts[size - 1] = 1;
    types[size - 1] = MPI_DATATYPE_NULL;
    expect_req("MPI_Ialltoallw recvtypes[last]=MPI_DATATYPE_NULL",
               MPI_Ialltoallw(sbuf, counts, displs, types, rbuf, counts, displs, types, MPI_COMM_WORLD, &req),
               MPI_ERR_TYPE, &req);
    expect("MPI_Alltoallw sendtypes[last]=MPI_DATATYPE_NULL",
           MPI_Alltoallw(sbuf, counts, displs, types, rbuf, counts, displs, types, MPI_COMM_WORLD),
           MPI_ERR_TYPE);
    expect_req("MPI_Iscan count=-1", MPI_Iscan(sbuf, rbuf, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req),
               MPI_ERR_COUNT, &req);
    expect_req("MPI_Iexscan MPI_OP_NULL", MPI_Iexscan(sbuf, rbuf, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD, &req),
               MPI_ERR_OP, &req);
    expect_req("MPI_Send_init dest=size", MPI_Send_init(sbuf, 1, MPI_INT, size, 0, MPI_COMM_WORLD, &req),
               MPI_ERR_RANK, &req);
    expect_req("MPI_Recv_init tag=-5", MPI_Recv_init(rbuf, 1, MPI_INT, 0, -5, MPI_COMM_WORLD, &req), MPI_ERR_TAG,
               &req);
    expect("MPI_Start MPI_REQUEST_NULL", MPI_Start(&req), MPI_ERR_REQUEST);
#if MPI_VERSION >= 4
    expect_req("MPI_Bcast_init root=size", MPI_Bcast_init(rbuf, 1, MPI_INT, size, MPI_COMM_WORLD, MPI_INFO_NULL, &req),
               MPI_ERR_ROOT, &req);
    expect_req("MPI_Allreduce_init count=-1",
               MPI_Allreduce_init(sbuf, rbuf, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req),
               MPI_ERR_COUNT, &req);
    expect_req("MPI_Gatherv_init MPI_COMM_NULL",
               MPI_Gatherv_init(sbuf, 1, MPI_INT, rbuf, counts, displs, MPI_INT, 0, MPI_COMM_NULL, MPI_INFO_NULL,
                                &req),
               MPI_ERR_COMM, &req);
#endif
#ifdef HCOMM_MPI_H
    /* Starting an active persistent request, and (hcomm's choice, documented) freeing an active
     * persistent collective request, are MPI_ERR_REQUEST; the request stays usable. */
    MPI_Request b;
    MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &b);
    MPI_Start(&b);
    expect("MPI_Start of an active request", MPI_Start(&b), MPI_ERR_REQUEST);
    expect("MPI_Request_free of an active persistent collective", MPI_Request_free(&b), MPI_ERR_REQUEST);
    MPI_Request c = b;
    if (MPI_Wait(&b, MPI_STATUS_IGNORE) != MPI_SUCCESS || b != c || MPI_Request_free(&b) != MPI_SUCCESS ||
        b != MPI_REQUEST_NULL) {
        fails++;
        printf("FAIL errors: rank=%d the persistent barrier was not usable after the refused calls\n", rank);
    }
    expect("MPI_Startall of a non-persistent request", (MPI_Ibarrier(MPI_COMM_WORLD, &b), MPI_Startall(1, &b)),
           MPI_ERR_REQUEST);
    MPI_Wait(&b, MPI_STATUS_IGNORE);
#endif
}

static int fatal_mode(void)
{
    int culprit = size > 1 ? 1 : 0;
    int in[N] = { 0 }, out[N];
    if (rank == culprit) {
        printf("errors(fatal): rank %d makes an invalid call now\n", rank);
        fflush(stdout);
        MPI_Allreduce(in, out, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        printf("errors(fatal): FAIL: rank %d returned from an invalid call under MPI_ERRORS_ARE_FATAL\n", rank);
        fflush(stdout);
        MPI_Finalize();
        return 1;
    }
    MPI_Allreduce(in, out, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("errors(fatal): FAIL: rank %d completed an Allreduce that a failed rank never joined\n", rank);
    MPI_Finalize();
    return 1;
}

/* hcomm: the checks generated into every entry point from the standard's parameter kinds
 * (scripts/gen-mpi-api.py, core/src/abi/api/checks.rs): a NULL scalar output argument is
 * MPI_ERR_ARG, a negative element count MPI_ERR_COUNT, a negative length MPI_ERR_ARG; one
 * function of each family. */
static void generated_checks(void)
{
#ifdef HCOMM_MPI_H
    MPI_Comm dup = MPI_COMM_NULL;
    MPI_Group g;
    MPI_Request req = MPI_REQUEST_NULL, reqs[1] = { MPI_REQUEST_NULL };
    MPI_Status st, sts[1];
    int v = 0;
    expect("MPI_Comm_rank rank = NULL", MPI_Comm_rank(MPI_COMM_WORLD, NULL), MPI_ERR_ARG);
    expect("MPI_Comm_size size = NULL", MPI_Comm_size(MPI_COMM_WORLD, NULL), MPI_ERR_ARG);
    expect("MPI_Comm_dup newcomm = NULL", MPI_Comm_dup(MPI_COMM_WORLD, NULL), MPI_ERR_ARG);
    expect("MPI_Comm_split newcomm = NULL", MPI_Comm_split(MPI_COMM_WORLD, 0, 0, NULL), MPI_ERR_ARG);
    still_works("MPI_Comm_split newcomm = NULL");
    MPI_Comm_group(MPI_COMM_WORLD, &g);
    expect("MPI_Group_size size = NULL", MPI_Group_size(g, NULL), MPI_ERR_ARG);
    MPI_Group_free(&g);
    expect("MPI_Type_size size = NULL", MPI_Type_size(MPI_INT, NULL), MPI_ERR_ARG);
    expect("MPI_Info_create info = NULL", MPI_Info_create(NULL), MPI_ERR_ARG);
    expect("MPI_Op_commutative commute = NULL", MPI_Op_commutative(MPI_SUM, NULL), MPI_ERR_ARG);
    expect("MPI_Isend request = NULL", MPI_Isend(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, NULL),
           MPI_ERR_ARG);
    expect("MPI_Irecv count = -1", MPI_Irecv(&v, -1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &req),
           MPI_ERR_COUNT);
    expect("MPI_Ibarrier request = NULL", MPI_Ibarrier(MPI_COMM_WORLD, NULL), MPI_ERR_ARG);
    expect("MPI_Bcast_init request = NULL", MPI_Bcast_init(&v, 1, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, NULL),
           MPI_ERR_ARG);
    expect("MPI_Test flag = NULL", MPI_Test(&req, NULL, &st), MPI_ERR_ARG);
    expect("MPI_Waitall count = -1", MPI_Waitall(-1, reqs, sts), MPI_ERR_ARG);
    expect("MPI_Get_count count = NULL", MPI_Get_count(&st, MPI_INT, NULL), MPI_ERR_ARG);
    expect("MPI_Allgather_c recvcount = -1",
           MPI_Allgather_c(&v, 1, MPI_INT, rbuf, (MPI_Count)-1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_COUNT);
    still_works("the generated checks");
    (void)dup;
#endif
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
#ifdef REF_MPICH
    /* Debian MPICH 4.0.2 checks no arguments (a negative count crashes in memcpy). */
    if (rank == 0)
        printf("SKIP errors: this MPICH build does no argument checking\n");
    MPI_Finalize();
    return 77;
#endif
    if (argc > 1 && strcmp(argv[1], "fatal") == 0)
        return fatal_mode();

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    memset(rbuf, 0xEE, sizeof rbuf);
    int sbuf[N * 64];
    for (int i = 0; i < N * 64; i++)
        sbuf[i] = i;
    float fs[N];
    for (int i = 0; i < N; i++)
        fs[i] = (float)i;
    int rcounts[64];
    for (int i = 0; i < 64; i++)
        rcounts[i] = 1;

    /* counts */
    expect("MPI_Allreduce count=-1", MPI_Allreduce(sbuf, rbuf, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_COUNT);
    expect("MPI_Reduce count=-1", MPI_Reduce(sbuf, rbuf, -1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    expect("MPI_Bcast count=-1", MPI_Bcast(rbuf, -1, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    expect("MPI_Allgather recvcount=-1", MPI_Allgather(sbuf, -1, MPI_INT, rbuf, -1, MPI_INT, MPI_COMM_WORLD),
           MPI_ERR_COUNT);
    rcounts[size - 1] = -1;
    expect("MPI_Reduce_scatter recvcounts[last]=-1",
           MPI_Reduce_scatter(sbuf, rbuf, rcounts, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_COUNT);
    rcounts[size - 1] = 1;
    expect("MPI_Reduce_scatter_block recvcount=-1",
           MPI_Reduce_scatter_block(sbuf, rbuf, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_COUNT);
#if MPI_VERSION >= 4
    expect("MPI_Allreduce_c count=-1", MPI_Allreduce_c(sbuf, rbuf, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
           MPI_ERR_COUNT);
    expect("MPI_Bcast_c count=-1", MPI_Bcast_c(rbuf, -1, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
#endif

    /* buffers (Open MPI 4.1.4 does not check for NULL buffers: it segfaults in memcpy) */
#ifndef REF_OMPI
    expect("MPI_Allreduce sendbuf=NULL", MPI_Allreduce(NULL, rbuf, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
           MPI_ERR_BUFFER);
    expect("MPI_Allreduce recvbuf=NULL", MPI_Allreduce(sbuf, NULL, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
           MPI_ERR_BUFFER);
    /* The small calls' lean entry must leave these to the general checks. */
    expect("MPI_Allreduce sendbuf == recvbuf", MPI_Allreduce(rbuf, rbuf, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
           MPI_ERR_BUFFER);
    expect("MPI_Allreduce recvbuf=MPI_IN_PLACE",
           MPI_Allreduce(sbuf, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    expect("MPI_Bcast buffer=NULL", MPI_Bcast(NULL, N, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    expect("MPI_Bcast buffer=MPI_IN_PLACE", MPI_Bcast(MPI_IN_PLACE, 1, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    expect("MPI_Allgather sendbuf = own block of recvbuf",
           MPI_Allgather(rbuf + rank * sizeof(int), 1, MPI_INT, rbuf, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    expect("MPI_Reduce_scatter_block sendbuf == recvbuf",
           MPI_Reduce_scatter_block(rbuf, rbuf, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_BUFFER);
#endif

    /* datatypes */
#ifdef REF_OMPI /* Open MPI 4.1.4 checks "op defined for this type" first: MPI_ERR_OP */
    expect_alt("MPI_Allreduce MPI_DATATYPE_NULL",
               MPI_Allreduce(sbuf, rbuf, N, MPI_DATATYPE_NULL, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_TYPE, MPI_ERR_OP);
#else
    expect("MPI_Allreduce MPI_DATATYPE_NULL",
           MPI_Allreduce(sbuf, rbuf, N, MPI_DATATYPE_NULL, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_TYPE);
#endif
    expect("MPI_Bcast MPI_DATATYPE_NULL", MPI_Bcast(rbuf, N, MPI_DATATYPE_NULL, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
#ifndef REF_OMPI
    expect("MPI_Allreduce datatype=0x12345",
           MPI_Allreduce(sbuf, rbuf, N, (MPI_Datatype)0x12345, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_TYPE);
#endif

    /* derived datatypes and packing: outputs point into rbuf, so a rejected call that wrote
     * its new handle or packed bytes is caught */
    {
        MPI_Datatype *nt = (MPI_Datatype *)rbuf;
        expect("MPI_Type_create_hvector count=-1", MPI_Type_create_hvector(-1, 1, 8, MPI_INT, nt), MPI_ERR_COUNT);
        expect("MPI_Type_create_resized MPI_DATATYPE_NULL", MPI_Type_create_resized(MPI_DATATYPE_NULL, 0, 4, nt),
               MPI_ERR_TYPE);
        int bl[2] = { 1, -1 };
        MPI_Aint hd[2] = { 0, 8 };
        expect("MPI_Type_create_hindexed blocklength=-1", MPI_Type_create_hindexed(2, bl, hd, MPI_INT, nt),
               MPI_ERR_ARG);
        int sz[2] = { 4, 5 }, sub[2] = { 2, 3 }, st[2] = { 3, 0 };
        expect("MPI_Type_create_subarray start+subsize > size",
               MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_C, MPI_INT, nt), MPI_ERR_ARG);
        sub[0] = 5;
        st[0] = 0;
        expect("MPI_Type_create_subarray subsize > size",
               MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_C, MPI_INT, nt), MPI_ERR_ARG);
        sub[0] = 2;
        expect("MPI_Type_create_subarray bad order", MPI_Type_create_subarray(2, sz, sub, st, 1234, MPI_INT, nt),
               MPI_ERR_ARG);
        int gs[1] = { 10 }, di[1] = { MPI_DISTRIBUTE_BLOCK }, da[1] = { MPI_DISTRIBUTE_DFLT_DARG },
            ps[1] = { size + 1 };
        expect("MPI_Type_create_darray psizes do not multiply to size",
               MPI_Type_create_darray(size, rank, 1, gs, di, da, ps, MPI_ORDER_C, MPI_INT, nt), MPI_ERR_ARG);
        /* an uncommitted type in communication and packing */
        MPI_Datatype v;
        MPI_Type_vector(2, 1, 2, MPI_INT, &v);
        expect("MPI_Bcast uncommitted type", MPI_Bcast(rbuf, 1, v, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
        int pos = 0;
        expect("MPI_Pack uncommitted type", MPI_Pack(sbuf, 1, v, rbuf, 64, &pos, MPI_COMM_WORLD), MPI_ERR_TYPE);
        MPI_Type_commit(&v);
        pos = 0;
        expect("MPI_Pack incount=-1", MPI_Pack(sbuf, -1, v, rbuf, 64, &pos, MPI_COMM_WORLD), MPI_ERR_COUNT);
        MPI_Type_free(&v);
        pos = 0;
        expect("MPI_Pack outsize too small", MPI_Pack(sbuf, 4, MPI_INT, rbuf, 15, &pos, MPI_COMM_WORLD),
               MPI_ERR_TRUNCATE);
        char packed[16] = { 0 };
        pos = 0;
        expect("MPI_Unpack insize too small", MPI_Unpack(packed, 8, &pos, rbuf, 4, MPI_INT, MPI_COMM_WORLD),
               MPI_ERR_TRUNCATE);
        MPI_Aint epos = 0;
        expect("MPI_Pack_external outsize too small",
               MPI_Pack_external("external32", sbuf, 4, MPI_INT, rbuf, 15, &epos), MPI_ERR_TRUNCATE);
#ifdef HCOMM_MPI_H
        /* hcomm packs types with a negative extent but does not communicate them */
        MPI_Datatype neg;
        MPI_Type_create_resized(MPI_INT, 0, -4, &neg);
        MPI_Type_commit(&neg);
        expect("MPI_Bcast type with a negative extent", MPI_Bcast(rbuf, 1, neg, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
        MPI_Type_free(&neg);
#endif
#ifndef REF_OMPI /* Open MPI 4.1.4 accepts any datarep string */
        epos = 0;
        expect("MPI_Pack_external datarep=native", MPI_Pack_external("native", sbuf, 1, MPI_INT, rbuf, 64, &epos),
               MPI_ERR_ARG);
        expect("MPI_Type_get_contents of MPI_INT",
               MPI_Type_get_contents(MPI_INT, 0, 0, 1, NULL, NULL, (MPI_Datatype *)rbuf), MPI_ERR_TYPE);
#endif
    }

    /* ops */
    expect("MPI_Allreduce MPI_OP_NULL", MPI_Allreduce(sbuf, rbuf, N, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD),
           MPI_ERR_OP);
    expect("MPI_Allreduce MPI_BAND on MPI_FLOAT", MPI_Allreduce(fs, rbuf, N, MPI_FLOAT, MPI_BAND, MPI_COMM_WORLD),
           MPI_ERR_OP);
    expect("MPI_Reduce MPI_BAND on MPI_FLOAT", MPI_Reduce(fs, rbuf, N, MPI_FLOAT, MPI_BAND, 0, MPI_COMM_WORLD),
           MPI_ERR_OP);
    expect("MPI_Allreduce MPI_MINLOC on MPI_INT", MPI_Allreduce(sbuf, rbuf, N, MPI_INT, MPI_MINLOC, MPI_COMM_WORLD),
           MPI_ERR_OP);
#ifndef REF_OMPI
    expect("MPI_Allreduce op=0x12345", MPI_Allreduce(sbuf, rbuf, N, MPI_INT, (MPI_Op)0x12345, MPI_COMM_WORLD),
           MPI_ERR_OP);
#endif

    /* roots */
    expect("MPI_Bcast root=size", MPI_Bcast(rbuf, N, MPI_INT, size, MPI_COMM_WORLD), MPI_ERR_ROOT);
    expect("MPI_Bcast root=-5", MPI_Bcast(rbuf, N, MPI_INT, -5, MPI_COMM_WORLD), MPI_ERR_ROOT);
    expect("MPI_Reduce root=size", MPI_Reduce(sbuf, rbuf, N, MPI_INT, MPI_SUM, size, MPI_COMM_WORLD), MPI_ERR_ROOT);

    /* communicators (the error is raised on MPI_COMM_WORLD's handler, set to MPI_ERRORS_RETURN) */
    expect("MPI_Allreduce MPI_COMM_NULL", MPI_Allreduce(sbuf, rbuf, N, MPI_INT, MPI_SUM, MPI_COMM_NULL),
           MPI_ERR_COMM);
    expect("MPI_Bcast MPI_COMM_NULL", MPI_Bcast(rbuf, N, MPI_INT, 0, MPI_COMM_NULL), MPI_ERR_COMM);
    expect("MPI_Barrier MPI_COMM_NULL", MPI_Barrier(MPI_COMM_NULL), MPI_ERR_COMM);
#ifndef REF_OMPI
    expect("MPI_Allreduce comm=0x12345", MPI_Allreduce(sbuf, rbuf, N, MPI_INT, MPI_SUM, (MPI_Comm)0x12345),
           MPI_ERR_COMM);
#endif

    groups_comms_sessions();
    generated_checks();
    /* process topologies: no topology, bad dims, ranks and coordinates; outputs not written */
    {
        int d[2] = { size, 0 }, p[2] = { 0, 0 }, nd = -9;
        MPI_Comm bad = (MPI_Comm)0x7777;
#ifndef REF_OMPI /* Open MPI 4.1.4: MPI_ERR_INTERN without a topology, MPI_ERR_OTHER / MPI_ERR_ARG for bad dims */
        MPI_Request req = (MPI_Request)0x7777;
        expect("MPI_Neighbor_allgather without a topology",
               MPI_Neighbor_allgather(sbuf, 1, MPI_INT, rbuf, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_TOPOLOGY);
        expect("MPI_Ineighbor_alltoall without a topology",
               MPI_Ineighbor_alltoall(sbuf, 1, MPI_INT, rbuf, 1, MPI_INT, MPI_COMM_WORLD, &req), MPI_ERR_TOPOLOGY);
        if (req != (MPI_Request)0x7777) {
            fails++;
            printf("FAIL errors: rank=%d MPI_Ineighbor_alltoall without a topology wrote the request\n", rank);
        }
        expect("MPI_Cart_create dims[1]=0", MPI_Cart_create(MPI_COMM_WORLD, 2, d, p, 0, &bad), MPI_ERR_DIMS);
        expect("MPI_Cart_create ndims=-1", MPI_Cart_create(MPI_COMM_WORLD, -1, d, p, 0, &bad), MPI_ERR_DIMS);
#endif
        d[1] = 2;
        expect("MPI_Cart_create grid larger than the communicator",
               MPI_Cart_create(MPI_COMM_WORLD, 2, d, p, 0, &bad), MPI_ERR_ARG);
        if (bad != (MPI_Comm)0x7777) {
            fails++;
            printf("FAIL errors: rank=%d a rejected MPI_Cart_create wrote comm_cart\n", rank);
        }
        expect("MPI_Cartdim_get without a topology", MPI_Cartdim_get(MPI_COMM_WORLD, &nd), MPI_ERR_TOPOLOGY);
        MPI_Comm cart;
        MPI_Cart_create(MPI_COMM_WORLD, 1, d, p, 0, &cart);
        int c[2] = { size, 0 }, r = -9, src = -9, dst = -9;
        expect("MPI_Cart_rank coords[0]=size (non-periodic)", MPI_Cart_rank(cart, c, &r), MPI_ERR_ARG);
        expect("MPI_Graphdims_get on a Cartesian communicator", MPI_Graphdims_get(cart, &nd, &r), MPI_ERR_TOPOLOGY);
#ifndef REF_OMPI /* Open MPI 4.1.4 checks none of these */
        expect("MPI_Cart_coords rank=size", MPI_Cart_coords(cart, size, 1, c), MPI_ERR_RANK);
        expect("MPI_Cart_shift direction=1 of 1", MPI_Cart_shift(cart, 1, 1, &src, &dst), MPI_ERR_ARG);
        int in, out, w;
        expect("MPI_Dist_graph_neighbors_count on a Cartesian communicator",
               MPI_Dist_graph_neighbors_count(cart, &in, &out, &w), MPI_ERR_TOPOLOGY);
#endif
        expect("MPI_Neighbor_alltoall recvcount=-1",
               MPI_Neighbor_alltoall(sbuf, 1, MPI_INT, rbuf, -1, MPI_INT, cart), MPI_ERR_COUNT);
        if (r != -9 || src != -9 || dst != -9 || nd != -9 || c[0] != size) {
            fails++;
            printf("FAIL errors: rank=%d a rejected topology query wrote an output\n", rank);
        }
        MPI_Comm_free(&cart);
#ifndef REF_OMPI /* Open MPI 4.1.4 creates the graph */
        int idx[1] = { 1 }, edges[1] = { size };
        expect("MPI_Graph_create edges[0]=size", MPI_Graph_create(MPI_COMM_WORLD, 1, idx, edges, 0, &bad),
               MPI_ERR_RANK);
#endif
        int srcs[1] = { size };
        /* Through a volatile: Open MPI's constant address makes gcc warn about reading it. */
        int *volatile unweighted = MPI_UNWEIGHTED;
        expect_alt("MPI_Dist_graph_create_adjacent sources[0]=size",
                   MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, srcs, unweighted, 0, srcs, unweighted,
                                                  MPI_INFO_NULL, 0, &bad),
                   MPI_ERR_RANK, MPI_ERR_ARG);
    }
    /* before the mismatched Gatherv below, whose failure notice ends the world's later calls
       on some ranks */
    requests(sbuf);
    /* matched probe: a message handle that names no claimed message */
    {
        MPI_Status st;
#ifndef REF_OMPI /* Open MPI raises these on a handler of its own choice (fatal) */
        MPI_Message m = MPI_MESSAGE_NULL;
        MPI_Request q = MPI_REQUEST_NULL;
        expect("MPI_Mrecv MPI_MESSAGE_NULL", MPI_Mrecv(rbuf, N, MPI_INT, &m, &st), MPI_ERR_REQUEST);
        expect("MPI_Imrecv MPI_MESSAGE_NULL", MPI_Imrecv(rbuf, N, MPI_INT, &m, &q), MPI_ERR_REQUEST);
        if (m != MPI_MESSAGE_NULL || q != MPI_REQUEST_NULL) {
            fails++;
            printf("FAIL errors: rank=%d a rejected MPI_Mrecv/MPI_Imrecv changed its handles\n", rank);
        }
#endif
        /* Open MPI says MPI_ERR_REQUEST */
        expect_alt("MPI_Mprobe message=NULL", MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, NULL, &st), MPI_ERR_ARG,
                   MPI_ERR_REQUEST);
    }

#ifdef HCOMM_MPI_H
    /* buffered mode: too little attached space */
    {
        int msg[N] = { 0 };
        expect("MPI_Bsend with no buffer attached", MPI_Bsend(msg, N, MPI_INT, rank, 1, MPI_COMM_WORLD),
               MPI_ERR_BUFFER);
        int room = (int)sizeof msg + MPI_BSEND_OVERHEAD - 1;
        char *mem = malloc(room);
        expect("MPI_Buffer_attach size=-1", MPI_Buffer_attach(mem, -1), MPI_ERR_ARG);
        if (MPI_Buffer_attach(mem, room) != MPI_SUCCESS) {
            fails++;
            printf("FAIL errors: rank=%d MPI_Buffer_attach of %d bytes failed\n", rank, room);
        }
        expect("MPI_Buffer_attach twice", MPI_Buffer_attach(mem, room), MPI_ERR_BUFFER);
        expect("MPI_Bsend one byte over the attached space", MPI_Bsend(msg, N, MPI_INT, rank, 1, MPI_COMM_WORLD),
               MPI_ERR_BUFFER);
        int flag = 1;
        MPI_Iprobe(rank, 1, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        if (flag) {
            fails++;
            printf("FAIL errors: rank=%d a rejected MPI_Bsend sent its message\n", rank);
        }
        void *addr;
        int n;
        MPI_Buffer_detach(&addr, &n);
        free(mem);
    }
#endif

#ifdef HCOMM_MPI_H
    /* hcomm detects a message shorter than the receiver expects (counts of a v-collective that
     * disagree) and fails the receiving call instead of waiting for bytes that never come. */
    if (size >= 2 && size <= 16) {
        int vcounts[16], vdispls[16];
        for (int i = 0; i < size; i++) {
            vcounts[i] = 4;
            vdispls[i] = 4 * i;
        }
        int vbuf[4 * 16];
        int rc = MPI_Gatherv(sbuf, rank == 1 ? 3 : 4, MPI_INT, vbuf, vcounts, vdispls, MPI_INT, 0, MPI_COMM_WORLD);
        int cls = -1;
        if (rc != MPI_SUCCESS)
            MPI_Error_class(rc, &cls);
        if (rank == 0 && cls != MPI_ERR_TRUNCATE) {
            fails++;
            printf("FAIL errors: rank=0 MPI_Gatherv with a short message from rank 1: rc=%d class=%d, expected "
                   "MPI_ERR_TRUNCATE\n", rc, cls);
        } else if (rank == 0) {
            passed++;
        }
        still_works("a mismatched MPI_Gatherv");
    }
#endif

    /* the classes themselves */
    static const int classes[] = { MPI_ERR_BUFFER, MPI_ERR_COUNT, MPI_ERR_TYPE, MPI_ERR_COMM, MPI_ERR_ROOT,
                                   MPI_ERR_OP, MPI_ERR_ARG, MPI_ERR_OTHER, MPI_ERR_INTERN };
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++) {
        int cls = -1;
        if (MPI_Error_class(classes[i], &cls) != MPI_SUCCESS || cls != classes[i]) {
            fails++;
            printf("FAIL errors: MPI_Error_class(%s) = %d\n", class_name(classes[i]), cls);
        }
    }

    long all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all)
            printf("errors: FAILED (%ld failures)\n", all);
        else
            printf("errors: OK (%ld error cases)\n", passed);
    }
    MPI_Finalize();
    return all != 0;
}
