/*
 * nb_match.c - MPI's matching order (non-overtaking) for nonblocking receives, many rounds.
 *
 * Every rank sends K messages to its right neighbour (tags drawn from {1, 2, 3}, most one int,
 * a few 20000 ints so they travel in several pieces) and receives K from its left neighbour
 * with a shuffled mix of receives: a specific tag or MPI_ANY_TAG, source `left` or
 * MPI_ANY_SOURCE (only the left neighbour sends to a rank, so the wildcard source does not
 * make the result timing-dependent). MPI's rule — messages from one source are matched in the
 * order they were sent against receives in the order they were posted — makes the outcome
 * unique: receive j gets the earliest message, not taken by an earlier receive, that it
 * accepts. The program computes that matching and checks each receive's data, tag, source and
 * count. Rounds whose receive mix would leave a receive without a message are redrawn.
 *
 * Variants (each many rounds):
 *   queued    the messages are sent (a barrier passed) before the receives are posted;
 *   posted    the receives are posted first, then the messages sent; the receiver sleeps
 *             a little before MPI_Waitall, so the messages arrive while nothing but the
 *             library's own progress (if any) looks at them;
 *   racing    as posted, without the sleep: messages arrive while the receives are matched;
 *   blocking  as racing, the last receive of the mix is a blocking MPI_Recv posted after
 *             the MPI_Irecvs (it comes last in posting order).
 * Prints implementation-independent lines on rank 0; failures print FAIL. A wrong match can
 * leave a later receive with no message: a rank stuck for 60 s prints FAIL and exits.
 */
#include <mpi.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define K 32
#define BIG 20000
#define ROUNDS 60

static int rank, size, fails;
/* MPI_STATUSES_IGNORE through a volatile pointer: gcc's -Wstringop-overflow otherwise flags
   the constant (MPI_Status *)1 passed as an array parameter. */
static MPI_Status *volatile statuses_ignore;

#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fails++;                                                                           \
            if (fails < 20) {                                                                  \
                printf("FAIL nb_match rank %d: ", rank);                                       \
                printf(__VA_ARGS__);                                                           \
                printf("\n");                                                                  \
            }                                                                                  \
        }                                                                                      \
    } while (0)

/* What the alarm handler prints: the round in progress. */
static char stuck[160];

static void on_alarm(int sig)
{
    (void)sig;
    ssize_t w = write(1, stuck, strlen(stuck));
    (void)w;
    _exit(1);
}

static unsigned long long rng;
static unsigned next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng >> 11);
}

/* One round's plan; every rank draws the same one. */
struct plan {
    int tag[K];       /* message i's tag */
    int len[K];       /* message i's length in ints */
    int want_tag[K];  /* receive j's tag (MPI_ANY_TAG possible) */
    int any_src[K];   /* receive j uses MPI_ANY_SOURCE */
    int expect[K];    /* message receive j must get */
};

static int match(struct plan *p)
{
    int taken[K] = {0};
    for (int j = 0; j < K; j++) {
        p->expect[j] = -1;
        for (int i = 0; i < K; i++)
            if (!taken[i] && (p->want_tag[j] == MPI_ANY_TAG || p->want_tag[j] == p->tag[i])) {
                taken[i] = 1;
                p->expect[j] = i;
                break;
            }
        if (p->expect[j] < 0)
            return 0;
    }
    return 1;
}

static void draw(struct plan *p, int round, int variant)
{
    rng = 0x9e3779b97f4a7c15ULL ^ ((unsigned long long)(round + 1) * 1000003u + variant);
    for (;;) {
        for (int i = 0; i < K; i++) {
            p->tag[i] = 1 + next() % 3;
            p->len[i] = next() % 8 == 0 ? BIG : 1;
        }
        /* One receive per message (its tag, or MPI_ANY_TAG), in shuffled posting order. */
        for (int j = 0; j < K; j++)
            p->want_tag[j] = next() % 5 < 2 ? MPI_ANY_TAG : p->tag[j];
        for (int j = K - 1; j > 0; j--) {
            int s = next() % (j + 1), t = p->want_tag[j];
            p->want_tag[j] = p->want_tag[s];
            p->want_tag[s] = t;
        }
        for (int j = 0; j < K; j++)
            p->any_src[j] = next() % 4 == 0;
        if (match(p))
            return;
    }
}

static void pause_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

enum { QUEUED, POSTED, RACING, BLOCKING, NVARIANTS };
static const char *variant_name[NVARIANTS] = {"queued", "posted", "racing", "blocking"};

static void round_of(int variant, int round, int *out[K], int *in[K])
{
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    struct plan p;
    draw(&p, round, variant);
    snprintf(stuck, sizeof stuck, "FAIL nb_match rank %d: %s round %d: no progress for 60 s\n",
             rank, variant_name[variant], round);
    alarm(60);
    MPI_Request sq[K], rq[K];
    MPI_Status st[K];
    for (int i = 0; i < K; i++) {
        for (int e = 0; e < p.len[i]; e++)
            out[i][e] = round * 100000 + i * 1000 + e % 1000;
        for (int e = 0; e < BIG; e++)
            in[i][e] = -1;
    }
    int nirecv = variant == BLOCKING ? K - 1 : K;
    if (variant == QUEUED) {
        for (int i = 0; i < K; i++)
            MPI_Isend(out[i], p.len[i], MPI_INT, right, p.tag[i], MPI_COMM_WORLD, &sq[i]);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    for (int j = 0; j < nirecv; j++)
        MPI_Irecv(in[j], BIG, MPI_INT, p.any_src[j] ? MPI_ANY_SOURCE : left, p.want_tag[j],
                  MPI_COMM_WORLD, &rq[j]);
    if (variant != QUEUED) {
        MPI_Barrier(MPI_COMM_WORLD); /* every receive is posted before the first send */
        for (int i = 0; i < K; i++)
            MPI_Isend(out[i], p.len[i], MPI_INT, right, p.tag[i], MPI_COMM_WORLD, &sq[i]);
    }
    if (variant == POSTED)
        pause_us(2000);
    if (variant == BLOCKING)
        MPI_Recv(in[K - 1], BIG, MPI_INT, p.any_src[K - 1] ? MPI_ANY_SOURCE : left,
                 p.want_tag[K - 1], MPI_COMM_WORLD, &st[K - 1]);
    int rc = MPI_Waitall(nirecv, rq, st);
    CHECK(rc == MPI_SUCCESS, "%s round %d: Waitall (receives) rc %d", variant_name[variant], round, rc);
    rc = MPI_Waitall(K, sq, statuses_ignore);
    CHECK(rc == MPI_SUCCESS, "%s round %d: Waitall (sends) rc %d", variant_name[variant], round, rc);
    for (int j = 0; j < K; j++) {
        int i = p.expect[j], cnt = -1;
        MPI_Get_count(&st[j], MPI_INT, &cnt);
        int got = in[j][0] >= 0 ? (in[j][0] / 1000) % 100 : -1;
        int ok = st[j].MPI_SOURCE == left && st[j].MPI_TAG == p.tag[i] && cnt == p.len[i] &&
                 in[j][0] == round * 100000 + i * 1000;
        for (int e = 1; ok && e < p.len[i]; e++)
            ok = in[j][e] == round * 100000 + i * 1000 + e % 1000;
        CHECK(ok,
              "%s round %d: receive %d (tag %d%s) got message %d (tag %d, count %d, source %d), "
              "want message %d (tag %d, count %d)",
              variant_name[variant], round, j, p.want_tag[j], p.any_src[j] ? ", any source" : "",
              got, st[j].MPI_TAG, cnt, st[j].MPI_SOURCE, i, p.tag[i], p.len[i]);
    }
    alarm(0);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    statuses_ignore = MPI_STATUSES_IGNORE;
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGALRM, on_alarm);

    int *out[K], *in[K];
    for (int i = 0; i < K; i++) {
        out[i] = malloc(sizeof(int) * BIG);
        in[i] = malloc(sizeof(int) * BIG);
    }
    for (int v = 0; v < NVARIANTS; v++) {
        int before = fails;
        for (int r = 0; r < ROUNDS; r++)
            round_of(v, r, out, in);
        int bad = 0, mine = fails - before;
        MPI_Allreduce(&mine, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (rank == 0)
            printf("nb_match: %s: %s\n", variant_name[v], bad ? "FAILED" : "done");
    }
    for (int i = 0; i < K; i++) {
        free(out[i]);
        free(in[i]);
    }

    int all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf(all ? "nb_match: FAILED\n" : "nb_match: ok\n");
    MPI_Finalize();
    return all ? 1 : 0;
}
