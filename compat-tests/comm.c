/*
 * comm.c - communicator management: MPI_Comm_rank, MPI_Comm_size, MPI_Comm_dup,
 * MPI_Comm_split, MPI_Comm_compare, MPI_Comm_free.
 *
 * Compare results: IDENT (same handle), CONGRUENT (dup; split keeping the order), SIMILAR
 * (split with reversed keys), UNEQUAL (even/odd split, MPI_COMM_SELF when size > 1).
 * Split layouts (rank, size) including equal keys (ties keep the old order) and
 * MPI_UNDEFINED (gives MPI_COMM_NULL); an Allreduce on each new communicator shows who is in
 * it; MPI_Comm_free sets the handle to MPI_COMM_NULL. Rank 0 prints everything (the other
 * ranks' values gathered), so the output depends only on the number of ranks.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>

static int rank, size, fails;

static const char *cmp_name(int r)
{
    if (r == MPI_IDENT) return "MPI_IDENT";
    if (r == MPI_CONGRUENT) return "MPI_CONGRUENT";
    if (r == MPI_SIMILAR) return "MPI_SIMILAR";
    if (r == MPI_UNEQUAL) return "MPI_UNEQUAL";
    return "(invalid)";
}

/* Compare on every rank; all ranks must agree with `want`; rank 0 prints. */
static void compare(const char *what, MPI_Comm a, MPI_Comm b, int want)
{
    int r = -1;
    MPI_Comm_compare(a, b, &r);
    int bad = r != want, allbad = 0;
    MPI_Allreduce(&bad, &allbad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (bad)
        printf("FAIL comm: rank=%d MPI_Comm_compare(%s) = %s, expected %s\n", rank, what, cmp_name(r),
               cmp_name(want));
    fails += bad;
    if (rank == 0)
        printf("MPI_Comm_compare(%s) = %s%s\n", what, cmp_name(want), allbad ? " [MISMATCH on some rank]" : "");
}

/* Rank, size and the sum of world ranks of the members of c, printed for every world rank. */
static void layout(const char *what, MPI_Comm c, int exp_rank, int exp_size, int exp_sum)
{
    int v[3] = { -1, -1, -1 };
    if (c != MPI_COMM_NULL) {
        MPI_Comm_rank(c, &v[0]);
        MPI_Comm_size(c, &v[1]);
        MPI_Allreduce(&rank, &v[2], 1, MPI_INT, MPI_SUM, c);
    }
    if (v[0] != exp_rank || v[1] != exp_size || v[2] != exp_sum) {
        printf("FAIL comm: rank=%d %s: rank/size/sum %d/%d/%d, expected %d/%d/%d\n", rank, what, v[0], v[1], v[2],
               exp_rank, exp_size, exp_sum);
        fails++;
    }
    int *all = malloc(sizeof(int) * 3 * (size_t)size);
    MPI_Allgather(v, 3, MPI_INT, all, 3, MPI_INT, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("%s:", what);
        for (int q = 0; q < size; q++) {
            if (all[3 * q + 1] < 0)
                printf(" [w%d: MPI_COMM_NULL]", q);
            else
                printf(" [w%d: rank %d of %d, sum %d]", q, all[3 * q], all[3 * q + 1], all[3 * q + 2]);
        }
        printf("\n");
    }
    free(all);
}

static void freed(const char *what, MPI_Comm *c)
{
    if (*c == MPI_COMM_NULL)
        return;
    if (MPI_Comm_free(c) != MPI_SUCCESS || *c != MPI_COMM_NULL) {
        printf("FAIL comm: rank=%d MPI_Comm_free(%s) did not set MPI_COMM_NULL\n", rank, what);
        fails++;
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0)
        printf("MPI_Comm_size(MPI_COMM_WORLD) = %d\n", size);
    int all_ranks = size * (size - 1) / 2;
    layout("MPI_COMM_WORLD", MPI_COMM_WORLD, rank, size, all_ranks);

    MPI_Comm dup, dup2, same, rev, eo, tie, undef;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_dup(dup, &dup2);
    MPI_Comm_split(MPI_COMM_WORLD, 5, rank, &same);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &eo);
    MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : 1, 0, &tie);
    MPI_Comm_split(MPI_COMM_WORLD, rank == size - 1 ? MPI_UNDEFINED : 3, -rank, &undef);

    layout("MPI_Comm_dup(world)", dup, rank, size, all_ranks);
    layout("MPI_Comm_dup(dup)", dup2, rank, size, all_ranks);
    layout("split(color=5, key=rank)", same, rank, size, all_ranks);
    layout("split(color=0, key=size-rank)", rev, size - 1 - rank, size, all_ranks);
    {
        int c = rank % 2, n = (size + 1 - c) / 2, sum = 0;
        for (int q = c; q < size; q += 2)
            sum += q;
        layout("split(color=rank%2, key=rank)", eo, rank / 2, n, sum);
    }
    {
        int lo = rank < 2, n = lo ? (size < 2 ? size : 2) : size - 2;
        int sum = lo ? (size < 2 ? 0 : 1) : all_ranks - 1;
        layout("split(color=rank<2?0:1, key=0)", tie, lo ? rank : rank - 2, n, sum);
    }
    if (rank == size - 1)
        layout("split(color=last?MPI_UNDEFINED:3, key=-rank)", undef, -1, -1, -1);
    else
        layout("split(color=last?MPI_UNDEFINED:3, key=-rank)", undef, size - 2 - rank, size - 1,
               all_ranks - (size - 1));

    compare("world, world", MPI_COMM_WORLD, MPI_COMM_WORLD, MPI_IDENT);
    compare("dup, dup", dup, dup, MPI_IDENT);
    compare("world, dup", MPI_COMM_WORLD, dup, MPI_CONGRUENT);
    compare("dup, dup2", dup, dup2, MPI_CONGRUENT);
    compare("world, split(same color, key=rank)", MPI_COMM_WORLD, same, MPI_CONGRUENT);
    compare("world, split(reversed keys)", MPI_COMM_WORLD, rev, size > 1 ? MPI_SIMILAR : MPI_CONGRUENT);
    compare("world, split(even/odd)", MPI_COMM_WORLD, eo, size > 1 ? MPI_UNEQUAL : MPI_CONGRUENT);
    compare("split(reversed keys), split(even/odd)", rev, eo, size > 1 ? MPI_UNEQUAL : MPI_CONGRUENT);
    compare("world, MPI_COMM_SELF", MPI_COMM_WORLD, MPI_COMM_SELF, size > 1 ? MPI_UNEQUAL : MPI_CONGRUENT);

    /* collectives on two communicators, interleaved */
    int a = rank + 1, b = 0, c2 = 0;
    MPI_Allreduce(&a, &b, 1, MPI_INT, MPI_SUM, dup);
    MPI_Allreduce(&a, &c2, 1, MPI_INT, MPI_MAX, rev);
    if (b != size * (size + 1) / 2 || c2 != size) {
        printf("FAIL comm: rank=%d interleaved Allreduce: %d %d\n", rank, b, c2);
        fails++;
    }

    freed("dup2", &dup2);
    freed("dup", &dup);
    freed("same", &same);
    freed("rev", &rev);
    freed("eo", &eo);
    freed("tie", &tie);
    freed("undef", &undef);

    /* split of a split */
    MPI_Comm half, quarter;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
    int hr, hs;
    MPI_Comm_rank(half, &hr);
    MPI_Comm_size(half, &hs);
    MPI_Comm_split(half, hr % 2, hr, &quarter);
    {
        int v[2] = { 0, 0 };
        MPI_Comm_size(quarter, &v[0]);
        MPI_Allreduce(&rank, &v[1], 1, MPI_INT, MPI_SUM, quarter);
        int *all = malloc(sizeof(int) * 2 * (size_t)size);
        MPI_Allgather(v, 2, MPI_INT, all, 2, MPI_INT, MPI_COMM_WORLD);
        if (rank == 0) {
            printf("split of a split:");
            for (int q = 0; q < size; q++)
                printf(" [w%d: size %d, sum %d]", q, all[2 * q], all[2 * q + 1]);
            printf("\n");
        }
        free(all);
    }
    freed("quarter", &quarter);
    freed("half", &half);

    int all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("failures on all ranks: %d\n", all);
    MPI_Finalize();
    return all != 0;
}
