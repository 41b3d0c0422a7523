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
    expect("MPI_Bcast buffer=NULL", MPI_Bcast(NULL, N, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER);
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
