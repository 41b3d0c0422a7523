/* intercomm_coll.c - the blocking collectives on an intercommunicator between the even and the
 * odd world ranks: Bcast, Reduce, Allreduce, Gather(v), Scatter(v), Allgather(v), Alltoall(v),
 * Reduce_scatter(_block) and Barrier, with roots on either side (MPI_ROOT / MPI_PROC_NULL /
 * the remote root's rank), groups of unequal sizes (odd world sizes), and a derived datatype.
 * Every value is checked exactly. Rank 0 prints only implementation-independent lines.
 * Under hcomm's own header, argument errors too (MPI_ROOT misuse, MPI_IN_PLACE). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int wrank, fails;

#define CHECK(cond, ...)                                                                   \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            printf("FAIL (world rank %d, line %d): ", wrank, __LINE__);                    \
            printf(__VA_ARGS__);                                                           \
            printf("\n");                                                                  \
            fails++;                                                                       \
        }                                                                                  \
    } while (0)

static int color, lrank, lsize, rsize;

/* World rank of remote rank j. */
static int remote_w(int j) { return 2 * j + (1 - color); }

/* The root argument for a collective rooted at local rank `root_l` of group `root_color`. */
static int root_arg(int root_color, int root_l) {
    if (color == root_color)
        return lrank == root_l ? MPI_ROOT : MPI_PROC_NULL;
    return root_l;
}

static void test_bcast(MPI_Comm inter) {
    for (int rc = 0; rc < 2; rc++) {
        int nroot = rc == color ? lsize : rsize;
        int root_l = nroot - 1; /* the last process of the root's group */
        int buf[5];
        for (int k = 0; k < 5; k++)
            buf[k] = -1;
        int is_root = color == rc && lrank == root_l;
        if (is_root)
            for (int k = 0; k < 5; k++)
                buf[k] = 10 * k + 7 + rc;
        MPI_Bcast(buf, 5, MPI_INT, root_arg(rc, root_l), inter);
        for (int k = 0; k < 5; k++) {
            int want = color == rc && !is_root ? -1 : 10 * k + 7 + rc;
            CHECK(buf[k] == want, "bcast(root color %d) buf[%d] = %d, expected %d", rc, k,
                  buf[k], want);
        }
    }
}

static void test_reduce(MPI_Comm inter) {
    for (int rc = 0; rc < 2; rc++) {
        int send[3], recv[3] = {-1, -1, -1};
        for (int k = 0; k < 3; k++)
            send[k] = wrank * 10 + k;
        MPI_Reduce(send, recv, 3, MPI_INT, MPI_SUM, root_arg(rc, 0), inter);
        if (color == rc && lrank == 0) {
            for (int k = 0; k < 3; k++) {
                int want = 0;
                for (int j = 0; j < rsize; j++)
                    want += remote_w(j) * 10 + k;
                CHECK(recv[k] == want, "reduce(root color %d)[%d] = %d, expected %d", rc, k,
                      recv[k], want);
            }
        } else {
            CHECK(recv[0] == -1, "reduce: a non-root's recvbuf was written");
        }
    }
    /* A non-commutative-looking check: MAX of doubles. */
    double d = wrank + 0.5, m = -1;
    MPI_Reduce(&d, &m, 1, MPI_DOUBLE, MPI_MAX, root_arg(1, 0), inter);
    if (color == 1 && lrank == 0)
        CHECK(m == remote_w(rsize - 1) + 0.5, "reduce max %g", m);
}

static void test_allreduce(MPI_Comm inter) {
    long send[4], recv[4];
    for (int k = 0; k < 4; k++) {
        send[k] = (long)wrank * 100 + k;
        recv[k] = -1;
    }
    MPI_Allreduce(send, recv, 4, MPI_LONG, MPI_SUM, inter);
    for (int k = 0; k < 4; k++) {
        long want = 0;
        for (int j = 0; j < rsize; j++)
            want += (long)remote_w(j) * 100 + k;
        CHECK(recv[k] == want, "allreduce[%d] = %ld, expected %ld", k, recv[k], want);
    }
    int mn = -1, v = wrank;
    MPI_Allreduce(&v, &mn, 1, MPI_INT, MPI_MIN, inter);
    CHECK(mn == 1 - color, "allreduce min %d, expected %d", mn, 1 - color);
}

static void test_gather_scatter(MPI_Comm inter) {
    /* Gather to the even group's local rank 0: each odd process sends 2 ints. */
    for (int rc = 0; rc < 2; rc++) {
        int send[2] = {wrank, wrank * wrank};
        int *recv = malloc(sizeof(int) * 2 * (rsize + 1));
        for (int k = 0; k < 2 * (rsize + 1); k++)
            recv[k] = -1;
        MPI_Gather(send, 2, MPI_INT, recv, 2, MPI_INT, root_arg(rc, 0), inter);
        if (color == rc && lrank == 0)
            for (int j = 0; j < rsize; j++)
                CHECK(recv[2 * j] == remote_w(j) && recv[2 * j + 1] == remote_w(j) * remote_w(j),
                      "gather(root color %d) block %d = %d %d", rc, j, recv[2 * j],
                      recv[2 * j + 1]);
        CHECK(recv[2 * rsize] == -1, "gather wrote past the blocks");
        free(recv);
    }
    /* Gatherv: remote j sends j+1 ints, placed with a gap of one between blocks. */
    {
        int mine = lrank + 1;
        int *send = malloc(sizeof(int) * mine);
        for (int k = 0; k < mine; k++)
            send[k] = wrank * 1000 + k;
        int *counts = malloc(sizeof(int) * rsize), *displs = malloc(sizeof(int) * rsize);
        int total = 0;
        for (int j = 0; j < rsize; j++) {
            counts[j] = j + 1;
            displs[j] = total;
            total += j + 2;
        }
        int *recv = malloc(sizeof(int) * (total + 1));
        for (int k = 0; k <= total; k++)
            recv[k] = -1;
        MPI_Gatherv(send, mine, MPI_INT, recv, counts, displs, MPI_INT, root_arg(1, 0), inter);
        if (color == 1 && lrank == 0)
            for (int j = 0; j < rsize; j++) {
                for (int k = 0; k <= j; k++)
                    CHECK(recv[displs[j] + k] == remote_w(j) * 1000 + k, "gatherv [%d][%d] = %d",
                          j, k, recv[displs[j] + k]);
                CHECK(recv[displs[j] + j + 1] == -1, "gatherv wrote into the gap after %d", j);
            }
        free(send);
        free(counts);
        free(displs);
        free(recv);
    }
    /* Scatter from the odd group's last process: each even process gets 3 ints. */
    {
        int nroot = color == 1 ? lsize : rsize, root_l = nroot - 1;
        int *send = malloc(sizeof(int) * 3 * rsize);
        for (int j = 0; j < rsize; j++)
            for (int k = 0; k < 3; k++)
                send[3 * j + k] = wrank * 100 + j * 10 + k;
        int recv[3] = {-1, -1, -1};
        MPI_Scatter(send, 3, MPI_INT, recv, 3, MPI_INT, root_arg(1, root_l), inter);
        if (color == 0) {
            int rw = remote_w(root_l);
            for (int k = 0; k < 3; k++)
                CHECK(recv[k] == rw * 100 + lrank * 10 + k, "scatter[%d] = %d", k, recv[k]);
        } else {
            CHECK(recv[0] == -1, "scatter: the root's group received");
        }
        free(send);
    }
    /* Scatterv from the even group's rank 0: remote j gets j+1 ints from offset 2j. */
    {
        int *send = malloc(sizeof(int) * 3 * (rsize + 1));
        int *counts = malloc(sizeof(int) * rsize), *displs = malloc(sizeof(int) * rsize);
        for (int k = 0; k < 3 * (rsize + 1); k++)
            send[k] = wrank * 100 + k;
        for (int j = 0; j < rsize; j++) {
            counts[j] = j + 1;
            displs[j] = 2 * j;
        }
        int recv[16];
        for (int k = 0; k < 16; k++)
            recv[k] = -1;
        int mine = color == 1 ? lrank + 1 : 0;
        MPI_Scatterv(send, counts, displs, MPI_INT, recv, mine, MPI_INT, root_arg(0, 0), inter);
        if (color == 1) {
            for (int k = 0; k < mine; k++)
                CHECK(recv[k] == remote_w(0) * 100 + 2 * lrank + k, "scatterv[%d] = %d", k,
                      recv[k]);
            CHECK(recv[mine] == -1, "scatterv wrote past its count");
        }
        free(send);
        free(counts);
        free(displs);
    }
}

static void test_allgather_alltoall(MPI_Comm inter) {
    /* Allgather: 2 ints per process; a vector type on the receive side (stride 2). */
    {
        int send[2] = {wrank, -wrank};
        int *recv = malloc(sizeof(int) * 2 * rsize);
        MPI_Allgather(send, 2, MPI_INT, recv, 2, MPI_INT, inter);
        for (int j = 0; j < rsize; j++)
            CHECK(recv[2 * j] == remote_w(j) && recv[2 * j + 1] == -remote_w(j),
                  "allgather block %d = %d %d", j, recv[2 * j], recv[2 * j + 1]);
        free(recv);
        /* The receive side as a derived type: block j is one item of a 2-int vector with
         * stride rsize, resized to one int, so its ints land at j and j + rsize. */
        MPI_Datatype strided, one;
        MPI_Type_vector(2, 1, rsize, MPI_INT, &strided);
        MPI_Type_create_resized(strided, 0, sizeof(int), &one);
        MPI_Type_commit(&one);
        int *r2 = malloc(sizeof(int) * (2 * rsize + 1));
        for (int k = 0; k <= 2 * rsize; k++)
            r2[k] = -7;
        MPI_Allgather(send, 2, MPI_INT, r2, 1, one, inter);
        for (int j = 0; j < rsize; j++)
            CHECK(r2[j] == remote_w(j) && r2[j + rsize] == -remote_w(j),
                  "allgather(vector) block %d = %d %d", j, r2[j], r2[j + rsize]);
        CHECK(r2[2 * rsize] == -7, "allgather(vector) wrote past the blocks");
        free(r2);
        MPI_Type_free(&one);
        MPI_Type_free(&strided);
    }
    /* Allgatherv: remote j contributes j+1 ints, at displs 3j. */
    {
        int mine = lrank + 1, send[16];
        for (int k = 0; k < mine; k++)
            send[k] = wrank * 50 + k;
        int *counts = malloc(sizeof(int) * rsize), *displs = malloc(sizeof(int) * rsize);
        int *recv = malloc(sizeof(int) * (3 * rsize + 3));
        for (int j = 0; j < rsize; j++) {
            counts[j] = j + 1;
            displs[j] = 3 * j;
        }
        for (int k = 0; k < 3 * rsize + 3; k++)
            recv[k] = -1;
        MPI_Allgatherv(send, mine, MPI_INT, recv, counts, displs, MPI_INT, inter);
        for (int j = 0; j < rsize; j++)
            for (int k = 0; k <= j && k < 3; k++)
                CHECK(recv[3 * j + k] == remote_w(j) * 50 + k, "allgatherv [%d][%d] = %d", j, k,
                      recv[3 * j + k]);
        free(counts);
        free(displs);
        free(recv);
    }
    /* Alltoall: to remote j, 2 ints (wrank, j); from remote j, (remote_w(j), lrank). */
    {
        int *send = malloc(sizeof(int) * 2 * rsize), *recv = malloc(sizeof(int) * 2 * rsize);
        for (int j = 0; j < rsize; j++) {
            send[2 * j] = wrank;
            send[2 * j + 1] = j;
            recv[2 * j] = recv[2 * j + 1] = -1;
        }
        MPI_Alltoall(send, 2, MPI_INT, recv, 2, MPI_INT, inter);
        for (int j = 0; j < rsize; j++)
            CHECK(recv[2 * j] == remote_w(j) && recv[2 * j + 1] == lrank,
                  "alltoall from %d: %d %d", j, recv[2 * j], recv[2 * j + 1]);
        free(send);
        free(recv);
    }
    /* Alltoallv: to remote j, (lrank + j) % 3 + 1 ints of value wrank*100 + j*10 + k. */
    {
        int *sc = malloc(sizeof(int) * rsize), *sd = malloc(sizeof(int) * rsize);
        int *rc = malloc(sizeof(int) * rsize), *rd = malloc(sizeof(int) * rsize);
        int st = 0, rt = 0;
        for (int j = 0; j < rsize; j++) {
            sc[j] = (lrank + j) % 3 + 1;
            sd[j] = st;
            st += sc[j];
            rc[j] = (j + lrank) % 3 + 1; /* what remote j sends to local rank lrank */
            rd[j] = rt;
            rt += rc[j] + 1;
        }
        int *send = malloc(sizeof(int) * (st + 1)), *recv = malloc(sizeof(int) * (rt + 1));
        for (int j = 0; j < rsize; j++)
            for (int k = 0; k < sc[j]; k++)
                send[sd[j] + k] = wrank * 100 + j * 10 + k;
        for (int k = 0; k <= rt; k++)
            recv[k] = -1;
        MPI_Alltoallv(send, sc, sd, MPI_INT, recv, rc, rd, MPI_INT, inter);
        for (int j = 0; j < rsize; j++) {
            for (int k = 0; k < rc[j]; k++)
                CHECK(recv[rd[j] + k] == remote_w(j) * 100 + lrank * 10 + k,
                      "alltoallv from %d [%d] = %d", j, k, recv[rd[j] + k]);
            CHECK(recv[rd[j] + rc[j]] == -1, "alltoallv wrote into the gap after %d", j);
        }
        /* The same exchange as Alltoallw: byte displacements, one datatype per remote
         * process (MPI_INT blocks sent, received as contiguous types of that many ints). */
        int *sdb = malloc(sizeof(int) * rsize), *rdb = malloc(sizeof(int) * rsize), *one = malloc(sizeof(int) * rsize);
        MPI_Datatype *sts = malloc(sizeof(MPI_Datatype) * rsize), *rts = malloc(sizeof(MPI_Datatype) * rsize);
        for (int j = 0; j < rsize; j++) {
            sdb[j] = sd[j] * (int)sizeof(int);
            rdb[j] = rd[j] * (int)sizeof(int);
            sts[j] = MPI_INT;
            one[j] = 1;
            MPI_Type_contiguous(rc[j], MPI_INT, &rts[j]);
            MPI_Type_commit(&rts[j]);
        }
        for (int k = 0; k <= rt; k++)
            recv[k] = -1;
        MPI_Alltoallw(send, sc, sdb, sts, recv, one, rdb, rts, inter);
        for (int j = 0; j < rsize; j++) {
            for (int k = 0; k < rc[j]; k++)
                CHECK(recv[rd[j] + k] == remote_w(j) * 100 + lrank * 10 + k,
                      "alltoallw from %d [%d] = %d", j, k, recv[rd[j] + k]);
            CHECK(recv[rd[j] + rc[j]] == -1, "alltoallw wrote into the gap after %d", j);
            MPI_Type_free(&rts[j]);
        }
        free(sdb);
        free(rdb);
        free(one);
        free(sts);
        free(rts);
        free(sc);
        free(sd);
        free(rc);
        free(rd);
        free(send);
        free(recv);
    }
}

static void test_reduce_scatter(MPI_Comm inter) {
    /* Both groups' totals must agree: total = lsize * rsize * 2. */
    int total = lsize * rsize * 2;
    int *send = malloc(sizeof(int) * total);
    for (int e = 0; e < total; e++)
        send[e] = wrank * 1000 + e;
    /* Block: each local process gets total / lsize = 2 * rsize elements. */
    int rc = total / lsize;
    int *recv = malloc(sizeof(int) * (rc + 1));
    for (int k = 0; k <= rc; k++)
        recv[k] = -1;
    MPI_Reduce_scatter_block(send, recv, rc, MPI_INT, MPI_SUM, inter);
    int wsum = 0;
    for (int j = 0; j < rsize; j++)
        wsum += remote_w(j) * 1000;
    for (int k = 0; k < rc; k++) {
        int e = lrank * rc + k;
        CHECK(recv[k] == wsum + rsize * e, "reduce_scatter_block[%d] = %d, expected %d", k,
              recv[k], wsum + rsize * e);
    }
    CHECK(recv[rc] == -1, "reduce_scatter_block wrote past recvcount");
    free(recv);
    /* Uneven: local rank 0 gets all but lsize-1 elements, the others one each. */
    int *counts = malloc(sizeof(int) * lsize);
    for (int i = 0; i < lsize; i++)
        counts[i] = i == 0 ? total - (lsize - 1) : 1;
    int mine = counts[lrank], first = lrank == 0 ? 0 : total - (lsize - 1) + (lrank - 1);
    recv = malloc(sizeof(int) * (mine + 1));
    for (int k = 0; k <= mine; k++)
        recv[k] = -1;
    MPI_Reduce_scatter(send, recv, counts, MPI_INT, MPI_SUM, inter);
    for (int k = 0; k < mine; k++) {
        int e = first + k;
        CHECK(recv[k] == wsum + rsize * e, "reduce_scatter[%d] = %d, expected %d", k, recv[k],
              wsum + rsize * e);
    }
    CHECK(recv[mine] == -1, "reduce_scatter wrote past its count");
    free(recv);
    free(counts);
    free(send);
}

#ifdef HCOMM_MPI_H
/* Argument errors, under hcomm's header only (the class a reference MPI picks may differ). */
static void test_errors(MPI_Comm inter) {
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    int v = 1, r = -1, cls = -1, rc;
    rc = MPI_Bcast(&v, 1, MPI_INT, rsize, inter);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_ROOT, "bcast root = remote size: class %d", cls);
    rc = MPI_Allreduce(MPI_IN_PLACE, &r, 1, MPI_INT, MPI_SUM, inter);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_ARG, "allreduce in place: class %d", cls);
    CHECK(r == -1, "allreduce in place wrote its buffer");
    rc = MPI_Scan(&v, &r, 1, MPI_INT, MPI_SUM, inter);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COMM, "scan on an intercommunicator: class %d", cls);
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_ARE_FATAL);
}
#endif

int main(int argc, char **argv) {
    int wsize;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    if (wsize < 2) {
        if (wrank == 0)
            printf("intercomm_coll: needs at least 2 ranks\n");
        MPI_Finalize();
        return 0;
    }
    color = wrank % 2;
    MPI_Comm local, inter;
    MPI_Comm_split(MPI_COMM_WORLD, color, wrank, &local);
    MPI_Comm_rank(local, &lrank);
    MPI_Comm_size(local, &lsize);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, color == 0 ? 1 : 0, 11, &inter);
    MPI_Comm_remote_size(inter, &rsize);

    test_bcast(inter);
    test_reduce(inter);
    test_allreduce(inter);
    test_gather_scatter(inter);
    test_allgather_alltoall(inter);
    test_reduce_scatter(inter);
#ifdef HCOMM_MPI_H
    test_errors(inter);
#endif
    MPI_Barrier(inter);
    /* The same calls on a duplicate, once more (fresh internal communicators). */
    MPI_Comm dup;
    MPI_Comm_dup(inter, &dup);
    test_allreduce(dup);
    test_reduce_scatter(dup);
    MPI_Comm_free(&dup);

    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
    int total = 0;
    MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (wrank == 0) {
        printf("intercomm_coll: groups of %d and %d ranks\n", wsize - wsize / 2, wsize / 2);
        printf("intercomm_coll: %s\n", total == 0 ? "all checks passed" : "FAIL");
    }
    MPI_Finalize();
    return total != 0;
}
