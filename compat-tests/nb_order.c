/* nb_order.c - nonblocking and persistent collectives are numbered apart from blocking ones.
 *
 * MPI asks every process to call a communicator's collectives, blocking and nonblocking, in
 * one order. MPICH and Open MPI number the two kinds in separate sequences, so programs that
 * start a nonblocking collective before a blocking one on some ranks and after it on others
 * run there (mpi4py's ULFM test does it with MPI_Iallreduce and MPI_Barrier); they must run on
 * hcomm too. Checked here: a nonblocking call started before an MPI_Barrier on one rank and
 * after it on the others (and that it cannot have completed before the others started it);
 * an MPI_Ibcast across a blocking MPI_Allreduce; two outstanding nonblocking calls on one side
 * of a blocking one on even ranks and on the other side on odd ranks; a persistent
 * collective's start across a barrier (MPI 4 only); all on MPI_COMM_WORLD and on a split
 * communicator. Every result is compared with its exact expected value. */
#include <mpi.h>
#include <stdio.h>

static int rank, size, fails;
/* MPI_STATUSES_IGNORE through a variable: GCC's array-bounds check takes the constant for a
 * too-short array. */
static MPI_Status *volatile statuses_ignore;

#define CHECK(cond, ...)                                                                   \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            printf("FAIL (rank %d, line %d): ", rank, __LINE__);                           \
            printf(__VA_ARGS__);                                                           \
            printf("\n");                                                                  \
            fails++;                                                                       \
        }                                                                                  \
    } while (0)

/* 1 + 2 + ... + n */
static long tri(int n) { return (long)n * (n + 1) / 2; }

static void across_barrier(MPI_Comm comm, const char *where) {
    int r, n;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    for (int root = 0; root < n; root++) {
        long in = r + 1 + root, out = -1;
        MPI_Request req;
        MPI_Barrier(comm);
        if (r == root) {
            MPI_Iallreduce(&in, &out, 1, MPI_LONG, MPI_SUM, comm, &req);
            int done = 0;
            MPI_Test(&req, &done, MPI_STATUS_IGNORE);
            /* The others start theirs only after the barrier below. */
            CHECK(n == 1 || !done, "%s: root %d's Iallreduce completed before the others began",
                  where, root);
            MPI_Barrier(comm);
        } else {
            MPI_Barrier(comm);
            MPI_Iallreduce(&in, &out, 1, MPI_LONG, MPI_SUM, comm, &req);
        }
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        CHECK(out == tri(n) + (long)n * root, "%s: root %d: Iallreduce gave %ld, expected %ld",
              where, root, out, tri(n) + (long)n * root);
    }
}

static void bcast_across_allreduce(MPI_Comm comm, const char *where) {
    int r, n;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    for (int root = 0; root < n; root++) {
        int b[4] = {-1, -1, -1, -1};
        if (r == root)
            for (int i = 0; i < 4; i++)
                b[i] = 100 * root + i;
        long in = r + 1, out = -1;
        MPI_Request req;
        if (r == root) {
            MPI_Ibcast(b, 4, MPI_INT, root, comm, &req);
            MPI_Allreduce(&in, &out, 1, MPI_LONG, MPI_SUM, comm);
        } else {
            MPI_Allreduce(&in, &out, 1, MPI_LONG, MPI_SUM, comm);
            MPI_Ibcast(b, 4, MPI_INT, root, comm, &req);
        }
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        CHECK(out == tri(n), "%s: root %d: Allreduce gave %ld, expected %ld", where, root, out,
              tri(n));
        for (int i = 0; i < 4; i++)
            CHECK(b[i] == 100 * root + i, "%s: root %d: Ibcast b[%d] = %d, expected %d", where,
                  root, i, b[i], 100 * root + i);
    }
}

static void two_sides(MPI_Comm comm, const char *where) {
    int r, n;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    long a_in = r + 1, b_in = 10 * (r + 1), c_in = 100 * (r + 1);
    long a = -1, b = -1, c = -1;
    MPI_Request req[2];
    if (r % 2 == 0) {
        MPI_Iallreduce(&a_in, &a, 1, MPI_LONG, MPI_SUM, comm, &req[0]);
        MPI_Iallreduce(&b_in, &b, 1, MPI_LONG, MPI_MAX, comm, &req[1]);
        MPI_Allreduce(&c_in, &c, 1, MPI_LONG, MPI_SUM, comm);
    } else {
        MPI_Allreduce(&c_in, &c, 1, MPI_LONG, MPI_SUM, comm);
        MPI_Iallreduce(&a_in, &a, 1, MPI_LONG, MPI_SUM, comm, &req[0]);
        MPI_Iallreduce(&b_in, &b, 1, MPI_LONG, MPI_MAX, comm, &req[1]);
    }
    MPI_Waitall(2, req, statuses_ignore);
    CHECK(a == tri(n), "%s: first Iallreduce gave %ld, expected %ld", where, a, tri(n));
    CHECK(b == 10L * n, "%s: second Iallreduce gave %ld, expected %ld", where, b, 10L * n);
    CHECK(c == 100 * tri(n), "%s: Allreduce gave %ld, expected %ld", where, c, 100 * tri(n));
}

#if MPI_VERSION >= 4 && !defined(OPEN_MPI)
static void persistent_across_barrier(MPI_Comm comm, const char *where) {
    int r, n;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    long in = r + 1, out = -1;
    MPI_Request req;
    MPI_Allreduce_init(&in, &out, 1, MPI_LONG, MPI_SUM, comm, MPI_INFO_NULL, &req);
    for (int root = 0; root < n; root++) {
        in = r + 1 + root;
        out = -1;
        if (r == root) {
            MPI_Start(&req);
            MPI_Barrier(comm);
        } else {
            MPI_Barrier(comm);
            MPI_Start(&req);
        }
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        CHECK(out == tri(n) + (long)n * root,
              "%s: root %d: persistent Allreduce gave %ld, expected %ld", where, root, out,
              tri(n) + (long)n * root);
    }
    MPI_Request_free(&req);
}
#endif

static void all(MPI_Comm comm, const char *where) {
    across_barrier(comm, where);
    bcast_across_allreduce(comm, where);
    two_sides(comm, where);
#if MPI_VERSION >= 4 && !defined(OPEN_MPI)
    persistent_across_barrier(comm, where);
#endif
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    statuses_ignore = MPI_STATUSES_IGNORE;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    all(MPI_COMM_WORLD, "world");

    /* Reversed order on a split communicator (two of them when size > 2). */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &half);
    all(half, "split");
    MPI_Comm_free(&half);

    int total = 0;
    MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf(total ? "nb_order: %d check(s) FAILED\n" : "nb_order: all checks passed\n", total);
    MPI_Finalize();
    return total != 0;
}
