/*
 * comm_create.c - communicator constructors beyond dup/split/create: MPI_Comm_create_group
 * (collective over the group only, told apart by a tag), MPI_Comm_dup_with_info,
 * MPI_Comm_idup, and (MPI 4.0, where the library has it) MPI_Comm_idup_with_info and
 * MPI_Comm_split_type(MPI_COMM_TYPE_HW_GUIDED, "mpi_hw_resource_type" = "mpi_shared_memory").
 *
 * On every new communicator an Allgather of world ranks shows the exact membership and order,
 * an Allreduce and a Bcast from every root give exact values. Create_group runs on disjoint
 * groups at once (evens and odds, same tag), twice in a row with the same group and tag (two
 * distinct communicators, used interleaved), on the reversed world, and by rank 0 alone. Only the members of a group call MPI_Comm_create_group; the others skip it.
 *
 * hcomm only: MPI_COMM_TYPE_HW_UNGUIDED on one host gives MPI_COMM_NULL; MPI 4.1's
 * MPI_Get_hw_resource_info names mpi_shared_memory, which splits the world.
 *
 * Open MPI 4.1.4 (MPI 3.1) has no MPI_Comm_idup_with_info or MPI_COMM_TYPE_HW_GUIDED: those
 * checks are compiled only where MPI_VERSION >= 4, and print nothing on rank 0, so the
 * output is the same everywhere.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, fails;

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (!(cond)) {                                                          \
            printf("FAIL comm_create: rank=%d line %d: ", rank, __LINE__);      \
            printf(__VA_ARGS__);                                                \
            printf("\n");                                                       \
            fails++;                                                            \
        }                                                                       \
    } while (0)

/* On communicator c, checks the members are exactly the world ranks want[0..n), in order,
 * then an Allreduce sum and a Bcast from every root (payload offset `salt`). */
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

static void create_group(void)
{
    MPI_Group world, mine;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int *members = malloc(sizeof(int) * (size_t)size), n = 0;
    for (int r = rank % 2; r < size; r += 2)
        members[n++] = r;
    MPI_Group_incl(world, n, members, &mine);

    /* Evens and odds at once, with one tag: each rank calls with its own parity group. */
    MPI_Comm a, b;
    MPI_Comm_create_group(MPI_COMM_WORLD, mine, 7, &a);
    check_comm(rank % 2 ? "create_group(odds)" : "create_group(evens)", a, members, n, 1);

    /* The same group and tag again: a second, distinct communicator. */
    MPI_Comm_create_group(MPI_COMM_WORLD, mine, 7, &b);
    int cmp = -1;
    MPI_Comm_compare(a, b, &cmp);
    CHECK(cmp == MPI_CONGRUENT, "create_group twice: compare %d, expected MPI_CONGRUENT", cmp);
    /* Interleaved use: messages of one must not reach the other. */
    int x = rank, y = -rank, sx = -1, sy = -1;
    MPI_Request rq[2];
    MPI_Status st[2];
    MPI_Iallreduce(&x, &sx, 1, MPI_INT, MPI_SUM, b, &rq[0]);
    MPI_Iallreduce(&y, &sy, 1, MPI_INT, MPI_SUM, a, &rq[1]);
    MPI_Waitall(2, rq, st);
    int want = 0;
    for (int i = 0; i < n; i++)
        want += members[i];
    CHECK(sx == want && sy == -want, "create_group twice: sums %d %d, expected %d %d", sx, sy, want, -want);
    MPI_Comm_free(&a);
    MPI_Comm_free(&b);

    /* The whole world, reversed. (Not from a duplicate of the world: MPICH 4.0.2 crashes in
     * MPI_Comm_create_group on a communicator made by MPI_Comm_dup.) */
    MPI_Group rev;
    int *rv = malloc(sizeof(int) * (size_t)size);
    for (int i = 0; i < size; i++)
        rv[i] = size - 1 - i;
    MPI_Group_incl(world, size, rv, &rev);
    MPI_Comm_create_group(MPI_COMM_WORLD, rev, 0, &a);
    check_comm("create_group(reversed)", a, rv, size, 2);
    MPI_Comm_free(&a);

    /* Only rank 0 (a group of one), while the others wait in a barrier. */
    if (rank == 0) {
        MPI_Group self;
        int zero = 0;
        MPI_Group_incl(world, 1, &zero, &self);
        MPI_Comm_create_group(MPI_COMM_WORLD, self, 3, &a);
        check_comm("create_group(rank 0)", a, &zero, 1, 3);
        MPI_Comm_free(&a);
        MPI_Group_free(&self);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    MPI_Group_free(&rev);
    MPI_Group_free(&mine);
    MPI_Group_free(&world);
    free(rv);
    free(members);
    if (rank == 0)
        printf("comm_create: create_group done\n");
}

static void dups(void)
{
    int *all = malloc(sizeof(int) * (size_t)size);
    for (int i = 0; i < size; i++)
        all[i] = i;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "comm_create_test_hint", "1");

    MPI_Comm c, d;
    int cmp = -1;
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &c);
    MPI_Comm_compare(MPI_COMM_WORLD, c, &cmp);
    CHECK(cmp == MPI_CONGRUENT, "dup_with_info: compare %d, expected MPI_CONGRUENT", cmp);
    check_comm("dup_with_info", c, all, size, 4);

    /* A duplicate of the duplicate, nonblocking. */
    MPI_Request r = MPI_REQUEST_NULL;
    MPI_Comm_idup(c, &d, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    CHECK(r == MPI_REQUEST_NULL, "idup: request not MPI_REQUEST_NULL after MPI_Wait");
    MPI_Comm_compare(c, d, &cmp);
    CHECK(cmp == MPI_CONGRUENT, "idup: compare %d, expected MPI_CONGRUENT", cmp);
    check_comm("idup", d, all, size, 5);
    MPI_Comm_free(&d);

    /* Two idups outstanding at once, completed together. */
    MPI_Comm e[2];
    MPI_Request rq[2];
    MPI_Status st[2];
    MPI_Comm_idup(MPI_COMM_WORLD, &e[0], &rq[0]);
    MPI_Comm_idup(c, &e[1], &rq[1]);
    MPI_Waitall(2, rq, st);
    check_comm("idup pair 0", e[0], all, size, 6);
    check_comm("idup pair 1", e[1], all, size, 7);
    MPI_Comm_free(&e[0]);
    MPI_Comm_free(&e[1]);

#if MPI_VERSION >= 4
    MPI_Comm_idup_with_info(c, info, &d, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    check_comm("idup_with_info", d, all, size, 8);
    MPI_Comm_free(&d);

    /* All ranks share one host, so the shared-memory resource holds the whole world. */
    MPI_Info hw;
    MPI_Info_create(&hw);
    MPI_Info_set(hw, "mpi_hw_resource_type", "mpi_shared_memory");
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, size - rank, hw, &d);
    int *rv = malloc(sizeof(int) * (size_t)size);
    for (int i = 0; i < size; i++)
        rv[i] = size - 1 - i;
    check_comm("split_type(HW_GUIDED, mpi_shared_memory)", d, rv, size, 9);
    MPI_Comm_free(&d);
    MPI_Info_free(&hw);
    free(rv);
#endif
#ifdef HCOMM_MPI_H
    /* hcomm knows one hardware level, the host: on one host no resource is strictly smaller
     * than the world, so the unguided split gives MPI_COMM_NULL (MPICH splits by hwloc's
     * levels instead, so this is checked for hcomm only). */
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_UNGUIDED, 0, MPI_INFO_NULL, &d);
    CHECK(d == MPI_COMM_NULL, "split_type(HW_UNGUIDED) on one host is not MPI_COMM_NULL");
    /* MPI 4.1: the resource type MPI_Get_hw_resource_info names splits the world (one host). */
    MPI_Info res;
    char type[64] = "";
    int tlen = (int)sizeof type - 1, tflag = 0;
    MPI_Get_hw_resource_info(&res);
    MPI_Info_get_string(res, "mpi_hw_resource_type", &tlen, type, &tflag);
    CHECK(tflag && strcmp(type, "mpi_shared_memory") == 0, "Get_hw_resource_info: mpi_hw_resource_type = \"%s\"",
          type);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, res, &d);
    check_comm("split_type(HW_GUIDED, Get_hw_resource_info)", d, all, size, 10);
    MPI_Comm_free(&d);
    MPI_Info_free(&res);
#endif
    MPI_Comm_free(&c);
    MPI_Info_free(&info);
    free(all);
    if (rank == 0)
        printf("comm_create: dups done\n");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0)
        printf("comm_create: %d ranks\n", size);
    create_group();
    dups();
    int total = 0;
    MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("comm_create: %s\n", total ? "FAIL" : "ok");
    MPI_Finalize();
    return total != 0;
}
