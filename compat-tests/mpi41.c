/*
 * mpi41.c - MPI 4.1 point-to-point additions.
 *
 * 1. MPI_Request_get_status_any / _all / _some. Each rank: q[0] an Irecv from itself (tag 1, not yet sent), q[1] an Isend to itself
 * (tag 2), q[2] MPI_REQUEST_NULL. Polled until the send is done: _any gives index 1,
 * _some outcount 1 with index 1, _all flag 0; no handle is written. Then the tag-1 message
 * is sent: _all polls to flag 1 with q[0]'s status (source, tag, count) and the empty status
 * for MPI_REQUEST_NULL; the requests are still there for MPI_Waitall. An array of
 * MPI_REQUEST_NULL: _any flag 1 / MPI_UNDEFINED, _some outcount MPI_UNDEFINED.
 * 2. Communicator buffers: MPI_Comm_attach_buffer on a dup (room for one message, no process
 *    buffer); MPI_Bsend there goes out, MPI_Bsend on another dup (MPI_ERRORS_RETURN) is
 *    MPI_ERR_BUFFER; MPI_Comm_flush_buffer, MPI_Comm_detach_buffer return address and size;
 *    the same with the _c forms and MPI_Comm_iflush_buffer; MPI_Buffer_iflush with no process
 *    buffer completes.
 * Debian's MPICH 4.0.2 and Open MPI 4.1.4 predate MPI 4.1: the program says SKIP (77) there.
 * Prints implementation-independent lines on rank 0; failures print FAIL.
 */
#include <mpi.h>

#include <stdio.h>

static int rank, fails;

#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fails++;                                                                           \
            printf("FAIL mpi41 rank %d: ", rank);                                   \
            printf(__VA_ARGS__);                                                               \
            printf("\n");                                                                      \
        }                                                                                      \
    } while (0)

#ifdef HCOMM_MPI_H
static void comm_buffers(void)
{
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Comm d, e;
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    MPI_Comm_dup(MPI_COMM_WORLD, &e);
    MPI_Comm_set_errhandler(e, MPI_ERRORS_RETURN);
    int v[4] = {rank, rank + 1, rank + 2, rank + 3}, r[4] = {0};
    int room = (int)sizeof v + MPI_BSEND_OVERHEAD;
    char mem[sizeof v + MPI_BSEND_OVERHEAD];
    for (int form = 0; form < 2; form++) {
        int rc = form ? MPI_Comm_attach_buffer_c(d, mem, room) : MPI_Comm_attach_buffer(d, mem, room);
        CHECK(rc == MPI_SUCCESS, "Comm_attach_buffer%s rc %d", form ? "_c" : "", rc);
        rc = MPI_Bsend(v, 4, MPI_INT, right, 1, d);
        CHECK(rc == MPI_SUCCESS, "Bsend on the communicator with a buffer: rc %d", rc);
        v[0] = -1;
        rc = MPI_Bsend(v, 4, MPI_INT, right, 1, e);
        int cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_BUFFER, "Bsend on a communicator without a buffer: class %d", cls);
        if (form) {
            MPI_Request q;
            MPI_Comm_iflush_buffer(d, &q);
            rc = MPI_Wait(&q, MPI_STATUS_IGNORE);
            CHECK(rc == MPI_SUCCESS, "Comm_iflush_buffer Wait rc %d", rc);
        } else {
            MPI_Comm_flush_buffer(d);
        }
        MPI_Recv(r, 4, MPI_INT, left, 1, d, MPI_STATUS_IGNORE);
        CHECK(r[0] == left && r[3] == left + 3, "Bsend on the communicator: %d %d", r[0], r[3]);
        v[0] = rank;
        void *addr = NULL;
        if (form) {
            MPI_Count n = -1;
            MPI_Comm_detach_buffer_c(d, &addr, &n);
            CHECK(addr == mem && n == room, "Comm_detach_buffer_c %p size %lld", addr, (long long)n);
        } else {
            int n = -1;
            MPI_Comm_detach_buffer(d, &addr, &n);
            CHECK(addr == mem && n == room, "Comm_detach_buffer %p size %d", addr, n);
        }
    }
    /* No process buffer: nothing to flush, the request completes. */
    MPI_Request q;
    MPI_Buffer_iflush(&q);
    int flag = 0;
    for (int i = 0; i < 1000 && !flag; i++)
        MPI_Test(&q, &flag, MPI_STATUS_IGNORE);
    CHECK(flag, "Buffer_iflush with no buffer attached did not complete");
    MPI_Comm_free(&d);
    MPI_Comm_free(&e);
}
#endif

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
#ifdef HCOMM_MPI_H
    int in = 0, two = 2, one = 1, got2 = 0;
    MPI_Request q[3];
    MPI_Status st[3];
    MPI_Irecv(&in, 1, MPI_INT, rank, 1, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(&two, 1, MPI_INT, rank, 2, MPI_COMM_WORLD, &q[1]);
    q[2] = MPI_REQUEST_NULL;
    MPI_Request keep[3] = {q[0], q[1], q[2]};
    int index = -1, flag = 0;
    for (int i = 0; i < 100000 && !flag; i++)
        MPI_Request_get_status_any(3, q, &index, &flag, &st[0]);
    CHECK(flag && index == 1, "get_status_any flag %d index %d", flag, index);
    int outcount = -1, idx[3] = {-1, -1, -1};
    MPI_Request_get_status_some(3, q, &outcount, idx, st);
    CHECK(outcount == 1 && idx[0] == 1, "get_status_some outcount %d index %d", outcount, idx[0]);
    flag = 1;
    MPI_Request_get_status_all(3, q, &flag, st);
    CHECK(!flag, "get_status_all complete while a receive is pending");
    CHECK(q[0] == keep[0] && q[1] == keep[1] && q[2] == MPI_REQUEST_NULL, "a handle was written");

    MPI_Send(&one, 1, MPI_INT, rank, 1, MPI_COMM_WORLD);
    flag = 0;
    for (int i = 0; i < 100000 && !flag; i++)
        MPI_Request_get_status_all(3, q, &flag, st);
    int n = -1;
    MPI_Get_count(&st[0], MPI_INT, &n);
    CHECK(flag && st[0].MPI_SOURCE == rank && st[0].MPI_TAG == 1 && n == 1,
          "get_status_all flag %d status %d %d %d", flag, st[0].MPI_SOURCE, st[0].MPI_TAG, n);
    CHECK(st[2].MPI_SOURCE == MPI_ANY_SOURCE && st[2].MPI_TAG == MPI_ANY_TAG,
          "MPI_REQUEST_NULL status %d %d", st[2].MPI_SOURCE, st[2].MPI_TAG);
    CHECK(q[0] == keep[0] && q[1] == keep[1], "get_status_all wrote a handle");
    int rc = MPI_Waitall(3, q, st);
    MPI_Recv(&got2, 1, MPI_INT, rank, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(rc == MPI_SUCCESS && in == 1 && got2 == 2, "Waitall rc %d, received %d and %d", rc, in,
          got2);

    comm_buffers();

    MPI_Request nulls[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    flag = 0;
    MPI_Request_get_status_any(2, nulls, &index, &flag, MPI_STATUS_IGNORE);
    CHECK(flag && index == MPI_UNDEFINED, "get_status_any of nulls flag %d index %d", flag, index);
    MPI_Request_get_status_some(2, nulls, &outcount, idx, st);
    CHECK(outcount == MPI_UNDEFINED, "get_status_some of nulls outcount %d", outcount);

    int total = 0;
    MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("mpi41: %s\n", total ? "FAIL" : "ok");
    MPI_Finalize();
    return total != 0;
#else
    (void)fails;
    if (rank == 0)
        printf("SKIP mpi41: MPI_Request_get_status_any/all/some are MPI 4.1\n");
    MPI_Finalize();
    return 77;
#endif
}
