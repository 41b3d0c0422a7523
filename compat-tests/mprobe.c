/*
 * mprobe.c - matched probe: MPI_Mprobe, MPI_Improbe, MPI_Mrecv, MPI_Imrecv, exact results.
 *
 *   1. Every rank sends two messages to rank 0 (tags 1 and 2, sizes depending on the rank;
 *      rank 0 sends to itself); rank 0 takes them all with MPI_Mprobe(MPI_ANY_SOURCE,
 *      MPI_ANY_TAG), allocates the size the status says, and MPI_Mrecv's them: data, source,
 *      tag and count checked.
 *   2. A matched message leaves matching: rank 0 sends itself two messages with tag 7 (3 and
 *      5 ints); MPI_Mprobe takes the first, after which MPI_Iprobe(ANY_SOURCE, ANY_TAG) and
 *      MPI_Improbe see only the second (count 5); MPI_Recv gets the second, MPI_Imrecv of
 *      the second handle and MPI_Mrecv of the first get theirs; then nothing is left.
 *   3. MPI_Improbe polls until a message from rank 1 arrives (sent after a barrier), then
 *      MPI_Imrecv + MPI_Wait; at 1 rank, from oneself.
 *   4. MPI_PROC_NULL: MPI_Mprobe/MPI_Improbe give MPI_MESSAGE_NO_PROC and the MPI_PROC_NULL
 *      status; MPI_Mrecv of it completes with that status and sets MPI_MESSAGE_NULL.
 * Prints implementation-independent lines on rank 0; failures print FAIL.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>

static int rank, size, fails;
/* MPI_STATUSES_IGNORE through a volatile pointer: gcc's -Wstringop-overflow otherwise flags
   the constant (MPI_Status *)1 passed as an array parameter. */
static MPI_Status *volatile statuses_ignore;

#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fails++;                                                                           \
            if (fails < 20) {                                                                  \
                printf("FAIL mprobe rank %d: ", rank);                                         \
                printf(__VA_ARGS__);                                                           \
                printf("\n");                                                                  \
            }                                                                                  \
        }                                                                                      \
    } while (0)

static int count_of(MPI_Status *st)
{
    int n = -1;
    MPI_Get_count(st, MPI_INT, &n);
    return n;
}

static void gather_by_mprobe(void)
{
    int a[40], b[40];
    int na = 1 + rank, nb = 10 + 2 * rank;
    for (int i = 0; i < nb; i++) {
        a[i] = rank * 100 + i;
        b[i] = -(rank * 100 + i);
    }
    MPI_Request q[2];
    MPI_Isend(a, na, MPI_INT, 0, 1, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(b, nb, MPI_INT, 0, 2, MPI_COMM_WORLD, &q[1]);
    if (rank == 0) {
        int got[64] = {0};
        for (int k = 0; k < 2 * size; k++) {
            MPI_Message m = MPI_MESSAGE_NULL;
            MPI_Status st;
            MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &m, &st);
            int s = st.MPI_SOURCE, t = st.MPI_TAG, n = count_of(&st);
            CHECK(m != MPI_MESSAGE_NULL && m != MPI_MESSAGE_NO_PROC, "Mprobe gave no message");
            CHECK(s >= 0 && s < size && (t == 1 || t == 2), "Mprobe source %d tag %d", s, t);
            if (s < 0 || s >= size || (t != 1 && t != 2))
                continue;
            CHECK(!got[2 * s + t - 1], "message (%d, %d) twice", s, t);
            got[2 * s + t - 1] = 1;
            int want = t == 1 ? 1 + s : 10 + 2 * s;
            CHECK(n == want, "Mprobe count %d from %d tag %d, want %d", n, s, t, want);
            int *buf = malloc(sizeof(int) * (n > 0 ? n : 1));
            MPI_Status rs;
            int rc = MPI_Mrecv(buf, n, MPI_INT, &m, &rs);
            CHECK(rc == MPI_SUCCESS && m == MPI_MESSAGE_NULL, "Mrecv rc %d", rc);
            CHECK(rs.MPI_SOURCE == s && rs.MPI_TAG == t && count_of(&rs) == n,
                  "Mrecv status %d %d %d, want %d %d %d", rs.MPI_SOURCE, rs.MPI_TAG,
                  count_of(&rs), s, t, n);
            for (int i = 0; i < n; i++)
                if (buf[i] != (t == 1 ? 1 : -1) * (s * 100 + i)) {
                    CHECK(0, "Mrecv [%d] = %d from %d tag %d", i, buf[i], s, t);
                    break;
                }
            free(buf);
        }
    }
    MPI_Waitall(2, q, statuses_ignore);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void matched_leaves_matching(void)
{
    if (rank != 0)
        return;
    int x[3] = {1, 2, 3}, y[5] = {4, 5, 6, 7, 8}, rx[5] = {0}, ry[5] = {0};
    MPI_Request q[2];
    MPI_Isend(x, 3, MPI_INT, 0, 7, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(y, 5, MPI_INT, 0, 7, MPI_COMM_WORLD, &q[1]);
    MPI_Message m1, m2;
    MPI_Status st;
    MPI_Mprobe(0, 7, MPI_COMM_WORLD, &m1, &st);
    CHECK(count_of(&st) == 3, "first Mprobe count %d", count_of(&st));
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
    CHECK(flag && count_of(&st) == 5, "Iprobe after Mprobe: flag %d count %d", flag,
          count_of(&st));
    flag = 0;
    MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &m2, &st);
    CHECK(flag && count_of(&st) == 5, "Improbe after Mprobe: flag %d count %d", flag,
          count_of(&st));
    flag = 1;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
    CHECK(!flag, "Iprobe finds a message after both were claimed");
    MPI_Request r;
    MPI_Imrecv(ry, 5, MPI_INT, &m2, &r);
    CHECK(m2 == MPI_MESSAGE_NULL, "Imrecv left the handle set");
    MPI_Wait(&r, &st);
    CHECK(ry[0] == 4 && ry[4] == 8 && count_of(&st) == 5, "Imrecv data %d %d count %d", ry[0],
          ry[4], count_of(&st));
    MPI_Mrecv(rx, 5, MPI_INT, &m1, &st);
    CHECK(rx[0] == 1 && rx[2] == 3 && rx[3] == 0 && count_of(&st) == 3,
          "Mrecv data %d %d %d count %d", rx[0], rx[2], rx[3], count_of(&st));
    MPI_Waitall(2, q, statuses_ignore);
}

static void improbe_polls(void)
{
    int from = size > 1 ? 1 : 0, v[2] = {31, 32}, r[2] = {0, 0};
    MPI_Request sq = MPI_REQUEST_NULL;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == from)
        MPI_Isend(v, 2, MPI_INT, 0, 9, MPI_COMM_WORLD, &sq);
    if (rank == 0) {
        int flag = 0;
        MPI_Message m;
        MPI_Status st;
        while (!flag)
            MPI_Improbe(from, 9, MPI_COMM_WORLD, &flag, &m, &st);
        CHECK(st.MPI_SOURCE == from && st.MPI_TAG == 9 && count_of(&st) == 2,
              "Improbe status %d %d %d", st.MPI_SOURCE, st.MPI_TAG, count_of(&st));
        MPI_Request q;
        MPI_Imrecv(r, 2, MPI_INT, &m, &q);
        MPI_Wait(&q, &st);
        CHECK(r[0] == 31 && r[1] == 32, "Imrecv data %d %d", r[0], r[1]);
    }
    MPI_Wait(&sq, MPI_STATUS_IGNORE);
}

static void proc_null(void)
{
    MPI_Message m = MPI_MESSAGE_NULL;
    MPI_Status st;
    MPI_Mprobe(MPI_PROC_NULL, 3, MPI_COMM_WORLD, &m, &st);
    CHECK(m == MPI_MESSAGE_NO_PROC, "Mprobe(MPI_PROC_NULL) message is not MPI_MESSAGE_NO_PROC");
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && count_of(&st) == 0,
          "Mprobe(MPI_PROC_NULL) status %d %d %d", st.MPI_SOURCE, st.MPI_TAG, count_of(&st));
    int buf = 5;
    st.MPI_SOURCE = 0;
    MPI_Mrecv(&buf, 1, MPI_INT, &m, &st);
    CHECK(m == MPI_MESSAGE_NULL && buf == 5 && st.MPI_SOURCE == MPI_PROC_NULL,
          "Mrecv(MPI_MESSAGE_NO_PROC): buf %d source %d", buf, st.MPI_SOURCE);
    int flag = 0;
    MPI_Improbe(MPI_PROC_NULL, 3, MPI_COMM_WORLD, &flag, &m, &st);
    CHECK(flag && m == MPI_MESSAGE_NO_PROC, "Improbe(MPI_PROC_NULL) flag %d", flag);
    MPI_Request q;
    MPI_Imrecv(&buf, 1, MPI_INT, &m, &q);
    MPI_Wait(&q, &st);
    CHECK(m == MPI_MESSAGE_NULL && buf == 5 && st.MPI_SOURCE == MPI_PROC_NULL,
          "Imrecv(MPI_MESSAGE_NO_PROC): buf %d source %d", buf, st.MPI_SOURCE);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    statuses_ignore = MPI_STATUSES_IGNORE;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    gather_by_mprobe();
    matched_leaves_matching();
    improbe_polls();
    proc_null();
    int total = 0;
    MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("mprobe: Mprobe/Mrecv of every message, any source and tag\n");
        printf("mprobe: a matched message leaves matching; Improbe/Imrecv; MPI_PROC_NULL\n");
        printf("mprobe: %s\n", total ? "FAIL" : "ok");
    }
    MPI_Finalize();
    return total != 0;
}
