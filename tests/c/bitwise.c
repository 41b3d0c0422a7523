/*
 * bitwise.c - reproducibility of floating-point reductions.
 *
 * Random floats and doubles with a wide dynamic range (so that the summation order changes
 * the rounding), generated from a fixed seed and the rank, are reduced with MPI_SUM and
 * MPI_PROD by Allreduce (out-of-place and in-place), Reduce (root 0 and the last rank),
 * Reduce_scatter_block and Reduce_scatter (uneven counts). Checked here:
 *   - every rank gets bitwise identical Allreduce results (hashes compared via Allgather);
 *   - every result is within the rounding error bound of an accurate local sum/product;
 * and printed on rank 0: one hash line per case and a total hash, so that the runner can
 * check that two runs of the same program give the same bits.
 * Env: CHECK_LARGE (default 100003) is the largest count.
 */
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;
static long fails;

static uint64_t rng_state;

static uint64_t rng(void)
{
    uint64_t x = rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 0x2545f4914f6cdd1dull;
}

static double pow2(int e)
{
    double v = 1.0;
    for (; e > 0; e--) v *= 2.0;
    for (; e < 0; e++) v *= 0.5;
    return v;
}

/* Input of rank r at index i: SUM gets signs and exponents in [-20, 20]; PROD gets factors in
 * [0.5, 2) (so a product of many ranks neither overflows nor underflows). */
static double value(int is_prod, int r, long i)
{
    rng_state = 0x9e3779b97f4a7c15ull ^ ((uint64_t)(unsigned)r << 32) ^ (uint64_t)i ^ ((uint64_t)is_prod << 63);
    for (int k = 0; k < 3; k++)
        rng();
    double u = (double)(rng() >> 11) * pow2(-53); /* [0, 1) */
    if (is_prod)
        return 0.5 + 1.5 * u;
    int e = (int)(rng() % 41) - 20;
    double v = (0.5 + 0.5 * u) * pow2(e);
    return (rng() & 1) ? -v : v;
}

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static uint64_t total_hash = 1469598103934665603ull;

static void fail(const char *what, long count, long index, double got, double exp, double bound)
{
    if (fails++ < 20)
        printf("FAIL %s count=%ld rank=%d index=%ld got=%.17g expected=%.17g (bound %.3g)\n", what, count, rank,
               index, got, exp, bound);
}

/* Accurate reference (long double, rank order) and the rounding error bound of any order. */
static void reference(int is_prod, int is_float, long i, double *ref, double *bound)
{
    long double acc = is_prod ? 1.0L : 0.0L, abs_sum = 0.0L;
    for (int r = 0; r < size; r++) {
        double v = value(is_prod, r, i);
        if (is_float)
            v = (float)v;
        if (is_prod)
            acc *= v;
        else
            acc += v;
        abs_sum += v < 0 ? -v : v;
    }
    double eps = is_float ? 5.96e-8 : 1.12e-16;
    *ref = (double)acc;
    if (is_prod)
        *bound = (double)((acc < 0 ? -acc : acc) * (size + 1) * eps * 1.01L);
    else
        *bound = (double)(abs_sum * (size + 1) * eps * 1.01L) + (is_float ? 1e-37 : 1e-300);
}

static void fill(void *buf, int is_prod, int is_float, long first, long n)
{
    for (long j = 0; j < n; j++) {
        double v = value(is_prod, rank, first + j);
        if (is_float)
            ((float *)buf)[j] = (float)v;
        else
            ((double *)buf)[j] = v;
    }
}

static void check_close(const char *what, const void *buf, int is_prod, int is_float, long first, long n, long count)
{
    for (long j = 0; j < n; j++) {
        double got = is_float ? ((const float *)buf)[j] : ((const double *)buf)[j], ref, bound;
        reference(is_prod, is_float, first + j, &ref, &bound);
        double d = got - ref;
        if (d < 0)
            d = -d;
        if (!(d <= bound))
            fail(what, count, j, got, ref, bound);
    }
}

/* All ranks hold the same hash; returns the hash. */
static uint64_t same_everywhere(const char *what, long count, uint64_t h)
{
    unsigned long long mine = h, *all = malloc(sizeof *all * (size_t)size);
    MPI_Allgather(&mine, 1, MPI_UNSIGNED_LONG_LONG, all, 1, MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD);
    for (int q = 0; q < size; q++) {
        if (all[q] != all[0]) {
            if (fails++ < 20)
                printf("FAIL %s count=%ld rank=%d: results differ between ranks (rank %d hash %016llx, rank 0 "
                       "hash %016llx)\n", what, count, rank, q, all[q], all[0]);
            break;
        }
    }
    free(all);
    return h;
}

/* One hash over the per-rank pieces (in rank order), known on every rank. */
static uint64_t pieces_hash(uint64_t h)
{
    unsigned long long mine = h, *all = malloc(sizeof *all * (size_t)size);
    MPI_Allgather(&mine, 1, MPI_UNSIGNED_LONG_LONG, all, 1, MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD);
    uint64_t t = fnv(all, sizeof *all * (size_t)size, 1469598103934665603ull);
    free(all);
    return t;
}

static void report(const char *what, const char *type, long count, uint64_t h)
{
    total_hash = fnv(&h, sizeof h, total_hash);
    if (rank == 0)
        printf("bitwise: %-26s %-10s count=%-7ld hash=%016llx\n", what, type, count, (unsigned long long)h);
}

static void run_case(int is_prod, int is_float, long count)
{
    MPI_Datatype dt = is_float ? MPI_FLOAT : MPI_DOUBLE;
    MPI_Op op = is_prod ? MPI_PROD : MPI_SUM;
    const char *tname = is_float ? "MPI_FLOAT" : "MPI_DOUBLE";
    size_t es = is_float ? 4 : 8;
    char name[64];
    long n_all = count * size;
    void *s = malloc(es * (size_t)(n_all + 1)), *r = malloc(es * (size_t)(n_all + 1));

    /* Allreduce, out-of-place and in-place */
    for (int ip = 0; ip < 2; ip++) {
        snprintf(name, sizeof name, "Allreduce%s-%s", ip ? "(in-place)" : "", is_prod ? "PROD" : "SUM");
        fill(ip ? r : s, is_prod, is_float, 0, count);
        MPI_Allreduce(ip ? MPI_IN_PLACE : s, r, (int)count, dt, op, MPI_COMM_WORLD);
        check_close(name, r, is_prod, is_float, 0, count, count);
        report(name, tname, count, same_everywhere(name, count, fnv(r, es * (size_t)count, 1469598103934665603ull)));
    }

    /* Reduce at root 0 and at the last rank; the root's result is broadcast to compare */
    int roots[2] = { 0, size - 1 };
    for (int ri = 0; ri < 2; ri++) {
        int root = roots[ri];
        snprintf(name, sizeof name, "Reduce(root=%s)-%s", ri ? "last" : "0", is_prod ? "PROD" : "SUM");
        fill(s, is_prod, is_float, 0, count);
        MPI_Reduce(s, r, (int)count, dt, op, root, MPI_COMM_WORLD);
        unsigned long long h = 0;
        if (rank == root) {
            check_close(name, r, is_prod, is_float, 0, count, count);
            h = fnv(r, es * (size_t)count, 1469598103934665603ull);
        }
        MPI_Bcast(&h, 1, MPI_UNSIGNED_LONG_LONG, root, MPI_COMM_WORLD);
        report(name, tname, count, h);
    }

    /* Reduce_scatter_block: recvcount = count */
    snprintf(name, sizeof name, "Reduce_scatter_block-%s", is_prod ? "PROD" : "SUM");
    fill(s, is_prod, is_float, 0, n_all);
    MPI_Reduce_scatter_block(s, r, (int)count, dt, op, MPI_COMM_WORLD);
    check_close(name, r, is_prod, is_float, count * rank, count, count);
    report(name, tname, count, pieces_hash(fnv(r, es * (size_t)count, 1469598103934665603ull)));

    /* Reduce_scatter, uneven: rank q gets (count * (q % 3)) / 2 elements */
    int *rc = malloc(sizeof(int) * (size_t)size);
    long total = 0, first = 0;
    for (int q = 0; q < size; q++) {
        rc[q] = (int)(count * (q % 3) / 2);
        if (q == rank)
            first = total;
        total += rc[q];
    }
    snprintf(name, sizeof name, "Reduce_scatter-%s", is_prod ? "PROD" : "SUM");
    fill(s, is_prod, is_float, 0, total);
    MPI_Reduce_scatter(s, r, rc, dt, op, MPI_COMM_WORLD);
    check_close(name, r, is_prod, is_float, first, rc[rank], count);
    report(name, tname, count, pieces_hash(fnv(r, es * (size_t)rc[rank], 1469598103934665603ull)));
    free(rc);
    free(s);
    free(r);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long large = 100003;
    const char *e = getenv("CHECK_LARGE");
    if (e && *e && atol(e) > 0)
        large = atol(e);
    if (large > 20000000)
        large = 20000000;
    long counts[] = { 1, 7, 1000, 4099, large };
    for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
        for (int is_float = 1; is_float >= 0; is_float--)
            for (int is_prod = 0; is_prod < 2; is_prod++)
                run_case(is_prod, is_float, counts[ci]);

    long all_fails = 0;
    MPI_Allreduce(&fails, &all_fails, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("bitwise: total hash=%016llx size=%d\n", (unsigned long long)total_hash, size);
        if (all_fails)
            printf("bitwise: FAILED (%ld failures)\n", all_fails);
        else
            printf("bitwise: OK\n");
    }
    MPI_Finalize();
    return all_fails != 0;
}
