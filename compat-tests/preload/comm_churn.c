/*
 * comm_churn.c - communicators created and freed many times (handle reuse).
 *
 * MPICH hands a freed communicator's integer handle to the next communicator created, so
 * state an interposer keyed by the handle value alone would go stale: the next communicator
 * with that value (other members, other size, other rank order) would run on the old one's
 * state. Each round here creates a communicator in one of several ways — a dup, a split into
 * halves, a split that reverses the rank order, a split that leaves this rank out, and
 * MPI_Comm_create of every other rank — runs collectives on it, checks every result exactly,
 * and frees it; two communicators are sometimes alive at once and freed in the opposite
 * order. ROUNDS (default 300, env CHURN_ROUNDS) rounds.
 *
 * Exit 0 when every result matched; lines starting with FAIL otherwise.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int wrank, wsize, fails;

#define CHECK(cond, ...)                                                                            \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            if (fails++ < 10) {                                                                    \
                printf("FAIL comm_churn: rank %d: ", wrank);                                       \
                printf(__VA_ARGS__);                                                               \
                printf("\n");                                                                      \
            }                                                                                      \
        }                                                                                          \
    } while (0)

/* Collectives on `comm` whose expected results depend on who its members are and in which
 * order: a stale communicator state gives different numbers. */
static void exercise(MPI_Comm comm, int round)
{
    int r, n;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    /* World ranks of the members in comm order, known to every member. */
    int *members = malloc(sizeof(int) * n);
    MPI_Allgather(&wrank, 1, MPI_INT, members, 1, MPI_INT, comm);
    long long sum_w = 0, sum_rw = 0;
    for (int i = 0; i < n; i++) {
        sum_w += members[i];
        sum_rw += (long long)i * (members[i] + 1);
    }
    CHECK(members[r] == wrank, "round %d: allgather slot %d holds %d, not my world rank", round, r, members[r]);

    enum { K = 33 };
    long long v[K], out[K];
    for (int i = 0; i < K; i++)
        v[i] = (long long)r * (wrank + 1) + i + round;
    MPI_Allreduce(v, out, K, MPI_LONG_LONG, MPI_SUM, comm);
    for (int i = 0; i < K; i++) {
        long long exp = sum_rw + (long long)n * (i + round);
        CHECK(out[i] == exp, "round %d: allreduce[%d] = %lld, expected %lld", round, i, out[i], exp);
    }

    int root = round % n;
    long long b = r == root ? 1000LL * members[root] + round : -1;
    MPI_Bcast(&b, 1, MPI_LONG_LONG, root, comm);
    CHECK(b == 1000LL * members[root] + round, "round %d: bcast got %lld", round, b);

    int mine = wrank, red = -1;
    MPI_Reduce(&mine, &red, 1, MPI_INT, MPI_SUM, root, comm);
    if (r == root)
        CHECK(red == sum_w, "round %d: reduce at root %d = %d, expected %lld", round, root, red, sum_w);

    int *blocks = malloc(sizeof(int) * 2 * n), got[2];
    for (int i = 0; i < 2 * n; i++)
        blocks[i] = wrank * 7 + i;
    MPI_Reduce_scatter_block(blocks, got, 2, MPI_INT, MPI_SUM, comm);
    for (int j = 0; j < 2; j++)
        CHECK(got[j] == 7 * sum_w + (long long)n * (2 * r + j), "round %d: reduce_scatter_block[%d] = %d", round, j,
              got[j]);
    MPI_Barrier(comm);
    free(blocks);
    free(members);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    int rounds = getenv("CHURN_ROUNDS") ? atoi(getenv("CHURN_ROUNDS")) : 300;
    MPI_Comm held = MPI_COMM_NULL;
    for (int round = 0; round < rounds; round++) {
        MPI_Comm c = MPI_COMM_NULL;
        switch (round % 5) {
        case 0:
            MPI_Comm_dup(MPI_COMM_WORLD, &c);
            break;
        case 1: /* halves */
            MPI_Comm_split(MPI_COMM_WORLD, wrank < wsize / 2, wrank, &c);
            break;
        case 2: /* reversed order */
            MPI_Comm_split(MPI_COMM_WORLD, 0, wsize - wrank, &c);
            break;
        case 3: /* the last rank left out (MPI_UNDEFINED) */
            MPI_Comm_split(MPI_COMM_WORLD, wrank == wsize - 1 && wsize > 1 ? MPI_UNDEFINED : 1, round, &c);
            break;
        case 4: { /* every other rank, by group */
            MPI_Group wg, g;
            int n = (wsize + 1) / 2, *ranks = malloc(sizeof(int) * n);
            for (int i = 0; i < n; i++)
                ranks[i] = 2 * i;
            MPI_Comm_group(MPI_COMM_WORLD, &wg);
            MPI_Group_incl(wg, n, ranks, &g);
            MPI_Comm_create(MPI_COMM_WORLD, g, &c);
            MPI_Group_free(&g);
            MPI_Group_free(&wg);
            free(ranks);
            break;
        }
        }
        if (c != MPI_COMM_NULL)
            exercise(c, round);
        /* Keep one communicator alive across rounds now and then; free the older first. */
        if (round % 7 == 3 && held == MPI_COMM_NULL && c != MPI_COMM_NULL) {
            held = c;
            c = MPI_COMM_NULL;
        }
        if (held != MPI_COMM_NULL && round % 7 == 6) {
            exercise(held, round);
            MPI_Comm_free(&held);
        }
        if (c != MPI_COMM_NULL)
            MPI_Comm_free(&c);
        exercise(MPI_COMM_WORLD, round);
    }
    if (held != MPI_COMM_NULL)
        MPI_Comm_free(&held);
    int total = 0;
    MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (wrank == 0)
        printf("comm_churn: %d rounds at %d ranks: %s\n", rounds, wsize, total ? "FAILED" : "all results right");
    MPI_Finalize();
    return total ? 1 : 0;
}
