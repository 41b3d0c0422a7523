/*
 * groups.c - MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), MPI_Comm_group, MPI_Group_incl,
 * MPI_Group_excl, MPI_Group_size, MPI_Group_rank, MPI_Group_translate_ranks,
 * MPI_Group_compare, MPI_Group_free, MPI_GROUP_EMPTY and MPI_Comm_create.
 *
 * All ranks run on one host, so the shared-memory communicator holds every rank; its order
 * follows the key (ties: old rank), and MPI_UNDEFINED gives MPI_COMM_NULL. Groups: even
 * ranks, odd ranks, reversed order, with exact ranks and translations (MPI_PROC_NULL maps to
 * itself, non-members to MPI_UNDEFINED). MPI_Comm_create with the even group, the reversed
 * group, disjoint groups (evens pass the even group, odds the odd one: MPI-2.2), the empty
 * group, and from a created communicator; on each new communicator an Allgather of world
 * ranks shows the exact membership and order, an Allreduce and a Bcast give exact values.
 *
 * Empty groups are never freed here: Open MPI 4.1.4 crashes in MPI_Group_free on
 * MPI_GROUP_EMPTY (MPICH allows it).
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>

static int rank, size, fails;

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (!(cond)) {                                                          \
            printf("FAIL groups: rank=%d line %d: ", rank, __LINE__);           \
            printf(__VA_ARGS__);                                                \
            printf("\n");                                                       \
            fails++;                                                            \
        }                                                                       \
    } while (0)

/* On communicator c (this rank's world rank at position want_rank), checks size, rank, that
 * the members are exactly want[0..n) (world ranks, in order), an Allreduce sum and a Bcast
 * from every root. */
static void check_comm(const char *what, MPI_Comm c, const int *want, int n)
{
    int csize = -1, crank = -1;
    MPI_Comm_size(c, &csize);
    MPI_Comm_rank(c, &crank);
    CHECK(csize == n, "%s: size %d, expected %d", what, csize, n);
    if (csize != n)
        return;
    CHECK(crank >= 0 && crank < n && want[crank] == rank, "%s: rank %d does not hold world rank %d", what, crank,
          rank);
    int *got = malloc(sizeof(int) * (size_t)n);
    MPI_Allgather(&rank, 1, MPI_INT, got, 1, MPI_INT, c);
    long sum = 0;
    for (int i = 0; i < n; i++) {
        CHECK(got[i] == want[i], "%s: member %d is world rank %d, expected %d", what, i, got[i], want[i]);
        sum += want[i] + 1;
    }
    int mine = rank + 1, total = -1;
    MPI_Allreduce(&mine, &total, 1, MPI_INT, MPI_SUM, c);
    CHECK(total == sum, "%s: Allreduce sum %d, expected %ld", what, total, sum);
    for (int root = 0; root < n; root++) {
        int v = crank == root ? 1000 + rank : -1;
        MPI_Bcast(&v, 1, MPI_INT, root, c);
        CHECK(v == 1000 + want[root], "%s: Bcast from root %d gave %d, expected %d", what, root, v,
              1000 + want[root]);
    }
    free(got);
}

static void check_group(const char *what, MPI_Group g, const int *want, int n)
{
    int gsize = -1, grank = -2;
    MPI_Group_size(g, &gsize);
    MPI_Group_rank(g, &grank);
    CHECK(gsize == n, "%s: group size %d, expected %d", what, gsize, n);
    int expect_rank = MPI_UNDEFINED;
    for (int i = 0; i < n; i++)
        if (want[i] == rank)
            expect_rank = i;
    CHECK(grank == expect_rank, "%s: MPI_Group_rank %d, expected %d", what, grank, expect_rank);
}

static void split_type(void)
{
    int *all = malloc(sizeof(int) * (size_t)size), *rev = malloc(sizeof(int) * (size_t)size);
    for (int i = 0; i < size; i++) {
        all[i] = i;
        rev[i] = size - 1 - i;
    }
    MPI_Comm c;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &c);
    CHECK(c != MPI_COMM_NULL, "split_type(SHARED) gave MPI_COMM_NULL");
    if (c != MPI_COMM_NULL) {
        check_comm("split_type(SHARED, key 0)", c, all, size);
        MPI_Comm_free(&c);
    }
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, size - rank, MPI_INFO_NULL, &c);
    if (c != MPI_COMM_NULL) {
        check_comm("split_type(SHARED, reversed keys)", c, rev, size);
        MPI_Comm_free(&c);
    }
    /* Odd ranks opt out; the even ones form the node communicator. */
    int *even = malloc(sizeof(int) * (size_t)size), ne = 0;
    for (int i = 0; i < size; i += 2)
        even[ne++] = i;
    MPI_Comm_split_type(MPI_COMM_WORLD, rank % 2 ? MPI_UNDEFINED : MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &c);
    if (rank % 2) {
        CHECK(c == MPI_COMM_NULL, "split_type(MPI_UNDEFINED) did not give MPI_COMM_NULL");
    } else {
        CHECK(c != MPI_COMM_NULL, "split_type(SHARED) on an even rank gave MPI_COMM_NULL");
        if (c != MPI_COMM_NULL) {
            check_comm("split_type(SHARED, even ranks)", c, even, ne);
            /* split_type of a split_type communicator: same members. */
            MPI_Comm c2;
            MPI_Comm_split_type(c, MPI_COMM_TYPE_SHARED, -rank, MPI_INFO_NULL, &c2);
            int *reven = malloc(sizeof(int) * (size_t)ne);
            for (int i = 0; i < ne; i++)
                reven[i] = even[ne - 1 - i];
            check_comm("split_type of split_type (keys -rank)", c2, reven, ne);
            free(reven);
            MPI_Comm_free(&c2);
            MPI_Comm_free(&c);
        }
    }
    free(even);
    free(all);
    free(rev);
}

static void groups_and_create(void)
{
    int *all = malloc(sizeof(int) * (size_t)size), *rev = malloc(sizeof(int) * (size_t)size);
    int *even = malloc(sizeof(int) * (size_t)size), *odd = malloc(sizeof(int) * (size_t)size);
    int ne = 0, no = 0;
    for (int i = 0; i < size; i++) {
        all[i] = i;
        rev[i] = size - 1 - i;
        if (i % 2)
            odd[no++] = i;
        else
            even[ne++] = i;
    }

    MPI_Group world, geven, godd, grev, gdup;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    check_group("MPI_Comm_group(MPI_COMM_WORLD)", world, all, size);
    MPI_Group_incl(world, ne, even, &geven);
    check_group("incl(even)", geven, even, ne);
    MPI_Group_excl(world, ne, even, &godd); /* empty when size == 1 */
    check_group("excl(even)", godd, odd, no);
    MPI_Group_incl(world, size, rev, &grev);
    check_group("incl(reversed)", grev, rev, size);

    int gsize = -1, grank = -1;
    MPI_Group_size(MPI_GROUP_EMPTY, &gsize);
    MPI_Group_rank(MPI_GROUP_EMPTY, &grank);
    CHECK(gsize == 0 && grank == MPI_UNDEFINED, "MPI_GROUP_EMPTY: size %d rank %d", gsize, grank);

    /* translate world ranks 0..size-1 and MPI_PROC_NULL into the even and reversed groups */
    int n = size + 1;
    int *r1 = malloc(sizeof(int) * (size_t)n), *r2 = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < size; i++)
        r1[i] = i;
    r1[size] = MPI_PROC_NULL;
    MPI_Group_translate_ranks(world, n, r1, geven, r2);
    for (int i = 0; i < size; i++) {
        int want = i % 2 ? MPI_UNDEFINED : i / 2;
        CHECK(r2[i] == want, "translate(world->even)[%d] = %d, expected %d", i, r2[i], want);
    }
    CHECK(r2[size] == MPI_PROC_NULL, "translate(MPI_PROC_NULL) = %d", r2[size]);
    MPI_Group_translate_ranks(world, n, r1, grev, r2);
    for (int i = 0; i < size; i++)
        CHECK(r2[i] == size - 1 - i, "translate(world->reversed)[%d] = %d, expected %d", i, r2[i], size - 1 - i);
    CHECK(r2[size] == MPI_PROC_NULL, "translate(MPI_PROC_NULL) = %d", r2[size]);
    for (int i = 0; i < ne; i++)
        r1[i] = i;
    MPI_Group_translate_ranks(geven, ne, r1, world, r2);
    for (int i = 0; i < ne; i++)
        CHECK(r2[i] == 2 * i, "translate(even->world)[%d] = %d, expected %d", i, r2[i], 2 * i);
    MPI_Group_translate_ranks(geven, ne, r1, MPI_GROUP_EMPTY, r2);
    for (int i = 0; i < ne; i++)
        CHECK(r2[i] == MPI_UNDEFINED, "translate(even->empty)[%d] = %d", i, r2[i]);

    /* compare */
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_group(dup, &gdup);
    int cmp = -1;
    MPI_Group_compare(world, gdup, &cmp);
    CHECK(cmp == MPI_IDENT, "compare(world, group of dup) = %d, expected MPI_IDENT", cmp);
    MPI_Group_compare(world, grev, &cmp);
    CHECK(cmp == (size > 1 ? MPI_SIMILAR : MPI_IDENT), "compare(world, reversed) = %d", cmp);
    MPI_Group_compare(world, geven, &cmp);
    CHECK(cmp == (size > 1 ? MPI_UNEQUAL : MPI_IDENT), "compare(world, even) = %d", cmp);

    /* MPI_Comm_create */
    MPI_Comm c;
    MPI_Comm_create(MPI_COMM_WORLD, geven, &c);
    if (rank % 2) {
        CHECK(c == MPI_COMM_NULL, "Comm_create(even) on an odd rank did not give MPI_COMM_NULL");
    } else {
        CHECK(c != MPI_COMM_NULL, "Comm_create(even) on an even rank gave MPI_COMM_NULL");
        if (c != MPI_COMM_NULL) {
            check_comm("Comm_create(even)", c, even, ne);
            /* create from a created communicator: its rank 0 and its last rank */
            MPI_Group sub, g01;
            MPI_Comm_group(c, &sub);
            int pick[2] = { ne - 1, 0 };
            int npick = ne > 1 ? 2 : 1;
            MPI_Group_incl(sub, npick, pick, &g01);
            MPI_Comm c2;
            MPI_Comm_create(c, g01, &c2);
            int want[2] = { even[ne - 1], even[0] };
            if (rank == want[0] || rank == want[1]) {
                CHECK(c2 != MPI_COMM_NULL, "Comm_create(first and last of even) gave MPI_COMM_NULL");
                if (c2 != MPI_COMM_NULL) {
                    check_comm("Comm_create(first and last of even)", c2, want, npick);
                    MPI_Comm_free(&c2);
                }
            } else {
                CHECK(c2 == MPI_COMM_NULL, "Comm_create(first and last of even) on a non-member");
            }
            MPI_Group_free(&g01);
            MPI_Group_free(&sub);
            MPI_Comm_free(&c);
            CHECK(c == MPI_COMM_NULL, "MPI_Comm_free did not set MPI_COMM_NULL");
        }
    }

    MPI_Comm_create(MPI_COMM_WORLD, grev, &c);
    CHECK(c != MPI_COMM_NULL, "Comm_create(reversed) gave MPI_COMM_NULL");
    if (c != MPI_COMM_NULL) {
        check_comm("Comm_create(reversed)", c, rev, size);
        MPI_Comm_free(&c);
    }

    /* disjoint groups: each rank passes the group it belongs to */
    MPI_Comm_create(MPI_COMM_WORLD, rank % 2 ? godd : geven, &c);
    CHECK(c != MPI_COMM_NULL, "Comm_create(disjoint) gave MPI_COMM_NULL");
    if (c != MPI_COMM_NULL) {
        check_comm("Comm_create(disjoint even/odd)", c, rank % 2 ? odd : even, rank % 2 ? no : ne);
        MPI_Comm_free(&c);
    }

    MPI_Comm_create(MPI_COMM_WORLD, MPI_GROUP_EMPTY, &c);
    CHECK(c == MPI_COMM_NULL, "Comm_create(MPI_GROUP_EMPTY) did not give MPI_COMM_NULL");

    /* collectives on world still line up after all that */
    int one = 1, tot = 0;
    MPI_Allreduce(&one, &tot, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(tot == size, "final Allreduce on world %d", tot);

    MPI_Group_free(&world);
    CHECK(world == MPI_GROUP_NULL, "MPI_Group_free did not set MPI_GROUP_NULL");
    MPI_Group_free(&geven);
    MPI_Group_free(&grev);
    MPI_Group_free(&gdup);
    if (no > 0)
        MPI_Group_free(&godd);
    MPI_Comm_free(&dup);
    free(r1);
    free(r2);
    free(all);
    free(rev);
    free(even);
    free(odd);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    split_type();
    groups_and_create();
    int total = 0;
    MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("groups: %s (%d ranks)\n", total ? "FAILED" : "ok", size);
    MPI_Finalize();
    return fails ? 1 : 0;
}
