/*
 * groups2.c - the group constructors of MPI-1 beyond incl/excl: MPI_Group_union,
 * MPI_Group_intersection, MPI_Group_difference, MPI_Group_range_incl, MPI_Group_range_excl.
 *
 * Each result is checked member by member (translated to world ranks) against the list MPI's
 * ordering rules give: union = group1's order, then group2's members not in group1 in
 * group2's order; intersection and difference = group1's order; range_incl = triplet by
 * triplet; range_excl = the group's order. Empty results must be MPI_GROUP_EMPTY itself.
 * Rank 0 prints each result, so the expected files show the exact lists. A communicator made
 * from a union (MPI_Comm_create) shows the order carries over to communicator ranks.
 *
 * Empty groups are never freed (Open MPI 4.1.4 crashes in MPI_Group_free on MPI_GROUP_EMPTY).
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, fails;
static MPI_Group world;

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (!(cond)) {                                                          \
            printf("FAIL groups2: rank=%d line %d: ", rank, __LINE__);          \
            printf(__VA_ARGS__);                                                \
            printf("\n");                                                       \
            fails++;                                                            \
        }                                                                       \
    } while (0)

/* Checks that g holds exactly the world ranks want[0..n), in order, that MPI_Group_rank
 * agrees, and (rank 0) prints the list. Frees g unless it is empty. */
static void expect(const char *what, MPI_Group g, const int *want, int n)
{
    int gsize = -1, grank = -2;
    MPI_Group_size(g, &gsize);
    MPI_Group_rank(g, &grank);
    CHECK(gsize == n, "%s: size %d, expected %d", what, gsize, n);
    if (n == 0) {
        CHECK(g == MPI_GROUP_EMPTY, "%s: empty result is not MPI_GROUP_EMPTY", what);
        if (rank == 0)
            printf("%s: empty\n", what);
        return;
    }
    if (gsize == n) {
        int *idx = malloc(sizeof(int) * (size_t)n), *got = malloc(sizeof(int) * (size_t)n);
        for (int i = 0; i < n; i++)
            idx[i] = i;
        MPI_Group_translate_ranks(g, n, idx, world, got);
        int want_rank = MPI_UNDEFINED;
        char line[1024];
        int at = snprintf(line, sizeof line, "%s:", what);
        for (int i = 0; i < n; i++) {
            CHECK(got[i] == want[i], "%s: member %d is world rank %d, expected %d", what, i, got[i], want[i]);
            if (want[i] == rank)
                want_rank = i;
            at += snprintf(line + at, sizeof line - (size_t)at, " %d", got[i]);
        }
        CHECK(grank == want_rank, "%s: MPI_Group_rank %d, expected %d", what, grank, want_rank);
        if (rank == 0)
            printf("%s\n", line);
        free(idx);
        free(got);
    }
    MPI_Group_free(&g);
}

/* The world ranks r (0 <= r < size) with r % m == k, in order of `dir` (1 up, -1 down). */
static MPI_Group modgroup(int m, int k, int dir, int *list, int *n)
{
    int *ranks = malloc(sizeof(int) * (size_t)size);
    *n = 0;
    for (int i = 0; i < size; i++) {
        int r = dir > 0 ? i : size - 1 - i;
        if (r % m == k)
            ranks[(*n)++] = r;
    }
    memcpy(list, ranks, sizeof(int) * (size_t)*n);
    MPI_Group g;
    MPI_Group_incl(world, *n, ranks, &g);
    free(ranks);
    return g;
}

/* want = the members of a (na) then those of b (nb) not in a. */
static int union_list(const int *a, int na, const int *b, int nb, int *want)
{
    int n = 0;
    for (int i = 0; i < na; i++)
        want[n++] = a[i];
    for (int j = 0; j < nb; j++) {
        int in = 0;
        for (int i = 0; i < na; i++)
            in |= a[i] == b[j];
        if (!in)
            want[n++] = b[j];
    }
    return n;
}

/* want = the members of a (na) that are (keep = 1) / are not (keep = 0) in b. */
static int filter_list(const int *a, int na, const int *b, int nb, int keep, int *want)
{
    int n = 0;
    for (int i = 0; i < na; i++) {
        int in = 0;
        for (int j = 0; j < nb; j++)
            in |= a[i] == b[j];
        if (in == keep)
            want[n++] = a[i];
    }
    return n;
}

static void set_ops(void)
{
    int ev[64], od[64], rev[64], thr[64], want[128];
    int nev, nod, nrev, nthr;
    MPI_Group evens = modgroup(2, 0, 1, ev, &nev);
    MPI_Group odds = modgroup(2, 1, -1, od, &nod); /* odd ranks, descending */
    MPI_Group reversed = modgroup(1, 0, -1, rev, &nrev);
    MPI_Group thirds = modgroup(3, 0, -1, thr, &nthr); /* multiples of 3, descending */
    MPI_Group g;
    int n;

    struct {
        const char *name;
        MPI_Group a, b;
        const int *la, *lb;
        int na, nb;
    } pairs[] = {
        {"evens,odds_down", evens, odds, ev, od, nev, nod},
        {"odds_down,evens", odds, evens, od, ev, nod, nev},
        {"reversed,evens", reversed, evens, rev, ev, nrev, nev},
        {"evens,reversed", evens, reversed, ev, rev, nev, nrev},
        {"thirds_down,evens", thirds, evens, thr, ev, nthr, nev},
        {"evens,thirds_down", evens, thirds, ev, thr, nev, nthr},
        {"evens,evens", evens, evens, ev, ev, nev, nev},
        {"evens,empty", evens, MPI_GROUP_EMPTY, ev, NULL, nev, 0},
        {"empty,odds_down", MPI_GROUP_EMPTY, odds, NULL, od, 0, nod},
    };
    for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++) {
        char what[128];
        snprintf(what, sizeof what, "union(%s)", pairs[p].name);
        MPI_Group_union(pairs[p].a, pairs[p].b, &g);
        n = union_list(pairs[p].la, pairs[p].na, pairs[p].lb, pairs[p].nb, want);
        expect(what, g, want, n);

        snprintf(what, sizeof what, "intersection(%s)", pairs[p].name);
        MPI_Group_intersection(pairs[p].a, pairs[p].b, &g);
        n = filter_list(pairs[p].la, pairs[p].na, pairs[p].lb, pairs[p].nb, 1, want);
        expect(what, g, want, n);

        snprintf(what, sizeof what, "difference(%s)", pairs[p].name);
        MPI_Group_difference(pairs[p].a, pairs[p].b, &g);
        n = filter_list(pairs[p].la, pairs[p].na, pairs[p].lb, pairs[p].nb, 0, want);
        expect(what, g, want, n);
    }

    /* A union's order carries over to the ranks of a communicator made from it. */
    MPI_Group_union(odds, evens, &g);
    n = union_list(od, nod, ev, nev, want);
    MPI_Comm c;
    MPI_Comm_create(MPI_COMM_WORLD, g, &c);
    int crank = -1, *got = malloc(sizeof(int) * (size_t)size);
    MPI_Comm_rank(c, &crank);
    CHECK(want[crank] == rank, "comm from union: rank %d holds world rank %d", crank, rank);
    MPI_Allgather(&rank, 1, MPI_INT, got, 1, MPI_INT, c);
    for (int i = 0; i < n; i++)
        CHECK(got[i] == want[i], "comm from union: member %d is world rank %d, expected %d", i, got[i], want[i]);
    free(got);
    MPI_Comm_free(&c);
    MPI_Group_free(&g);

    if (nod > 0)
        MPI_Group_free(&odds);
    MPI_Group_free(&evens);
    MPI_Group_free(&reversed);
    MPI_Group_free(&thirds);
}

/* Expands triplets as MPI defines them (strides' signs agree with last - first here). */
static int expand(int (*r)[3], int nr, int *want)
{
    int n = 0;
    for (int t = 0; t < nr; t++)
        for (int x = r[t][0]; r[t][2] > 0 ? x <= r[t][1] : x >= r[t][1]; x += r[t][2])
            want[n++] = x;
    return n;
}

static void ranges(void)
{
    int want[128], n;
    MPI_Group g;
    int last = size - 1;
    struct {
        const char *name;
        int nr;
        int r[3][3];
    } cases[] = {
        {"all", 1, {{0, last, 1}}},
        {"down", 1, {{last, 0, -1}}},
        {"evens", 1, {{0, last, 2}}},
        {"stride3_down", 1, {{last, 0, -3}}},
        {"last_first", 2, {{last, last, 1}, {0, last - 1, 1}}},
        {"stride_past_last", 1, {{0, last, last + 5}}},
        {"none", 0, {{0, 0, 1}}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char what[128];
        /* last_first names rank `last` twice at size 1: skip it there. */
        if (size == 1 && strcmp(cases[c].name, "last_first") == 0)
            continue;
        snprintf(what, sizeof what, "range_incl(%s)", cases[c].name);
        MPI_Group_range_incl(world, cases[c].nr, cases[c].r, &g);
        n = expand(cases[c].r, cases[c].nr, want);
        expect(what, g, want, n);

        snprintf(what, sizeof what, "range_excl(%s)", cases[c].name);
        MPI_Group_range_excl(world, cases[c].nr, cases[c].r, &g);
        int drop[128] = {0}, keep[128], nk = 0;
        for (int i = 0; i < n; i++)
            drop[want[i]] = 1;
        for (int i = 0; i < size; i++)
            if (!drop[i])
                keep[nk++] = i;
        expect(what, g, keep, nk);
    }

    /* Ranges of a group that is not the world's order: ranks are the group's. */
    int rv[128];
    for (int i = 0; i < size; i++)
        rv[i] = size - 1 - i;
    MPI_Group reversed, sub;
    MPI_Group_incl(world, size, rv, &reversed);
    int r1[1][3] = {{0, last, 2}};
    MPI_Group_range_incl(reversed, 1, r1, &sub);
    n = 0;
    for (int i = 0; i < size; i += 2)
        want[n++] = rv[i];
    expect("range_incl(reversed,evens)", sub, want, n);
    MPI_Group_range_excl(reversed, 1, r1, &sub);
    n = 0;
    for (int i = 1; i < size; i += 2)
        want[n++] = rv[i];
    expect("range_excl(reversed,evens)", sub, want, n);
    MPI_Group_free(&reversed);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    if (rank == 0)
        printf("groups2: %d ranks\n", size);
    set_ops();
    ranges();
    MPI_Group_free(&world);
    int total = 0;
    MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("groups2: %s\n", total ? "FAIL" : "ok");
    MPI_Finalize();
    return total != 0;
}
