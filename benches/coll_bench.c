/*
 * benches/coll_bench.c - one collective benchmark for every MPI implementation.
 *
 * Uses standard MPI only, so the same source is built against MPICH (mpicc.mpich), Open MPI
 * (mpicc.openmpi) and hcomm (cc -I include ... -lhcomm), and runs under each one's launcher
 * or with libhcomm_preload.so preloaded (scripts/perf-compare.sh does all of that). It measures
 * exactly what `hcomm bench` measures, with the same rules and the same output format:
 *
 *   - size S = the whole nccl-tests buffer: allreduce, bcast, reduce move S/typesize elements;
 *     allgather, allgatherv (equal blocks in rank order) and reduce_scatter
 *     (MPI_Reduce_scatter_block) S/(n*typesize) per rank.
 *     Sizes round down to whole elements (per rank); a size that rounds to nothing is skipped.
 *   - iterations: -n and -w, or by default iters = clamp(B / S, 10, -m max) with -B B (default
 *     256 MiB) and -m max (default 2000),
 *     and warm-up = max(2, iters/10), so every implementation runs the same counts.
 *   - time: warm-up, MPI_Barrier, then each rank times one batch of iters calls with
 *     MPI_Wtime; the time per call is the slowest rank's batch time / iters (MPI_MAX).
 *   - algbw = S/time, busbw = algbw * 2(n-1)/n (allreduce), (n-1)/n (allgather,
 *     reduce_scatter), 1 (bcast, reduce); GB = 1e9 bytes (nccl-tests' definitions).
 *   - #wrong (-k 1, the default): after the timed batch, inputs get exact small-integer
 *     values v(r,k) = (3k + 5r + 1) mod 11 (prod: 2 if (k + r) mod 16 == 0 else 1), outputs
 *     0xff bytes, one more call runs, and the elements differing from the exact result are
 *     counted on every rank and summed. Exit status 1 if any is wrong.
 *
 * Output (rank 0): '#' lines describing the run, then one line per size with the columns
 *   collective size count type op root inplace iters time(us) algbw(GB/s) busbw(GB/s) #wrong
 *
 * Usage: coll_bench [-c allreduce,bcast,allgather,reduce_scatter,reduce,alltoall,allgatherv|all] [-b 8] [-e 64M]
 *        [-f 2] [-d float|double|int32|int64] [-o sum|prod|max|min] [-r root] [-i (in place)]
 *        [-w warmup] [-n iters] [-m max_iters] [-B iter_bytes] [-k 0|1 (check)] [-l label]
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_ITER_BYTES (256LL << 20)
#define MIN_ITERS 10
#define PERIOD 176 /* v(r,k) and every expected value depend on k mod 176 only */

enum coll { ALLREDUCE, BCAST, ALLGATHER, REDUCE_SCATTER, REDUCE, ALLTOALL, ALLGATHERV, NCOLL };
static const char *coll_names[NCOLL] = {"allreduce", "bcast", "allgather", "reduce_scatter", "reduce", "alltoall",
                                        "allgatherv"};

struct dtype { const char *name; MPI_Datatype mpi; size_t size; };
struct op { const char *name; MPI_Op mpi; };

static int rank, nranks;
static struct dtype dt;
static struct op op;
static int root = 0, inplace = 0;

static long long parse_size(const char *s) {
    char *end;
    long long v = strtoll(s, &end, 10);
    switch (*end) {
    case 'k': case 'K': v <<= 10; break;
    case 'm': case 'M': v <<= 20; break;
    case 'g': case 'G': v <<= 30; break;
    default: break;
    }
    return v;
}

static long long value(int r, size_t k) {
    if (strcmp(op.name, "prod") == 0) return ((k + r) % 16 == 0) ? 2 : 1;
    return (long long)((3 * k + 5 * (size_t)r + 1) % 11);
}

static long long combine(long long a, long long b) {
    if (strcmp(op.name, "sum") == 0) return a + b;
    if (strcmp(op.name, "prod") == 0) return a * b;
    if (strcmp(op.name, "max") == 0) return a > b ? a : b;
    return a < b ? a : b;
}

static void encode(long long v, unsigned char *out) {
    if (strcmp(dt.name, "float") == 0) { float f = (float)v; memcpy(out, &f, 4); }
    else if (strcmp(dt.name, "double") == 0) { double d = (double)v; memcpy(out, &d, 8); }
    else if (strcmp(dt.name, "int32") == 0) { int32_t i = (int32_t)v; memcpy(out, &i, 4); }
    else { int64_t i = (int64_t)v; memcpy(out, &i, 8); }
}

/* table of PERIOD encoded elements: rank r's input (r >= 0) or the reduction (r == -1) */
static void make_table(int r, unsigned char *t) {
    for (size_t k = 0; k < PERIOD; k++) {
        long long v;
        if (r >= 0) {
            v = value(r, k);
        } else {
            v = value(0, k);
            for (int q = 1; q < nranks; q++) v = combine(v, value(q, k));
        }
        encode(v, t + k * dt.size);
    }
}

static void fill(unsigned char *buf, size_t elems, size_t first_k, const unsigned char *t) {
    for (size_t e = 0; e < elems; e++)
        memcpy(buf + e * dt.size, t + ((first_k + e) % PERIOD) * dt.size, dt.size);
}

static long long count_wrong(const unsigned char *buf, size_t elems, size_t first_k, const unsigned char *t) {
    long long w = 0;
    for (size_t e = 0; e < elems; e++)
        w += memcmp(buf + e * dt.size, t + ((first_k + e) % PERIOD) * dt.size, dt.size) != 0;
    return w;
}

static unsigned char *sendbuf, *recvbuf;
static int *vcounts, *vdispls; /* allgatherv: equal blocks in rank order, as osu_allgatherv */

static void call(enum coll c, size_t block) {
    const void *s = inplace ? MPI_IN_PLACE : (const void *)sendbuf;
    int cnt = (int)block;
    switch (c) {
    case ALLREDUCE: MPI_Allreduce(s, recvbuf, cnt, dt.mpi, op.mpi, MPI_COMM_WORLD); break;
    case BCAST: MPI_Bcast(recvbuf, cnt, dt.mpi, root, MPI_COMM_WORLD); break;
    case ALLGATHER: MPI_Allgather(s, cnt, dt.mpi, recvbuf, cnt, dt.mpi, MPI_COMM_WORLD); break;
    case ALLTOALL: MPI_Alltoall(s, cnt, dt.mpi, recvbuf, cnt, dt.mpi, MPI_COMM_WORLD); break;
    case ALLGATHERV:
        for (int j = 0; j < nranks; j++) vcounts[j] = cnt, vdispls[j] = j * cnt;
        MPI_Allgatherv(s, cnt, dt.mpi, recvbuf, vcounts, vdispls, dt.mpi, MPI_COMM_WORLD);
        break;
    case REDUCE_SCATTER: MPI_Reduce_scatter_block(s, recvbuf, cnt, dt.mpi, op.mpi, MPI_COMM_WORLD); break;
    case REDUCE:
        /* MPI_IN_PLACE is for the root only */
        if (inplace && rank != root) s = sendbuf;
        MPI_Reduce(s, recvbuf, cnt, dt.mpi, op.mpi, root, MPI_COMM_WORLD);
        break;
    default: break;
    }
}

/* fills the input with the check pattern and the output with poison (same as hcomm bench) */
static void prepare(enum coll c, size_t block, size_t whole, unsigned char *tab) {
    size_t bblock = block * dt.size, size = whole * dt.size;
    int writes_output = c == BCAST ? rank != root : c == REDUCE ? rank == root : 1;
    if (writes_output) memset(recvbuf, 0xff, c == REDUCE_SCATTER ? bblock : size);
    if (c == BCAST && rank != root) return;
    make_table(rank, tab);
    switch (c) {
    case BCAST: fill(recvbuf, whole, 0, tab); break;
    case ALLGATHER:
    case ALLGATHERV:
        if (inplace) fill(recvbuf + rank * bblock, block, 0, tab);
        else fill(sendbuf, block, 0, tab);
        break;
    case REDUCE: fill(inplace && rank == root ? recvbuf : sendbuf, whole, 0, tab); break;
    case ALLTOALL: /* block j (to rank j) continues this rank's pattern at element j*block */
        fill(inplace ? recvbuf : sendbuf, whole, 0, tab);
        break;
    default: fill(inplace ? recvbuf : sendbuf, whole, 0, tab); break;
    }
}

static long long wrong(enum coll c, size_t block, size_t whole, unsigned char *tab) {
    size_t bblock = block * dt.size;
    switch (c) {
    case ALLREDUCE: make_table(-1, tab); return count_wrong(recvbuf, whole, 0, tab);
    case BCAST: make_table(root, tab); return count_wrong(recvbuf, whole, 0, tab);
    case REDUCE:
        if (rank != root) return 0;
        make_table(-1, tab);
        return count_wrong(recvbuf, whole, 0, tab);
    case ALLGATHER:
    case ALLGATHERV: {
        long long w = 0;
        for (int j = 0; j < nranks; j++) {
            make_table(j, tab);
            w += count_wrong(recvbuf + j * bblock, block, 0, tab);
        }
        return w;
    }
    case REDUCE_SCATTER: make_table(-1, tab); return count_wrong(recvbuf, block, (size_t)rank * block, tab);
    case ALLTOALL: {
        long long w = 0;
        for (int j = 0; j < nranks; j++) {
            make_table(j, tab);
            w += count_wrong(recvbuf + j * bblock, block, (size_t)rank * block, tab);
        }
        return w;
    }
    default: return 0;
    }
}

int main(int argc, char **argv) {
    long long minb = 8, maxb = 64LL << 20, factor = 2, fixed_iters = 0, fixed_warm = -1, max_iters = 2000,
              iter_bytes = DEFAULT_ITER_BYTES;
    int check = 1, want[NCOLL] = {0}, any = 0;
    const char *dname = "float", *oname = "sum", *label = "";
    char colls[256] = "all";

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "-i") == 0) { inplace = 1; continue; }
        if (a[0] != '-' || strlen(a) != 2 || !v) {
            if (rank == 0) fprintf(stderr, "coll_bench: bad argument %s (see the header of benches/coll_bench.c)\n", a);
            MPI_Finalize();
            return 2;
        }
        switch (a[1]) {
        case 'c': snprintf(colls, sizeof colls, "%s", v); break;
        case 'b': minb = parse_size(v); break;
        case 'e': maxb = parse_size(v); break;
        case 'f': factor = atoll(v); break;
        case 'd': dname = v; break;
        case 'o': oname = v; break;
        case 'r': root = atoi(v); break;
        case 'w': fixed_warm = atoll(v); break;
        case 'n': fixed_iters = atoll(v); break;
        case 'm': max_iters = atoll(v); break;
        case 'B': iter_bytes = parse_size(v); break;
        case 'k': check = atoi(v); break;
        case 'l': label = v; break;
        default:
            if (rank == 0) fprintf(stderr, "coll_bench: unknown option %s\n", a);
            MPI_Finalize();
            return 2;
        }
        i++;
    }
    if (strcmp(dname, "float") == 0) dt = (struct dtype){"float", MPI_FLOAT, 4};
    else if (strcmp(dname, "double") == 0) dt = (struct dtype){"double", MPI_DOUBLE, 8};
    else if (strcmp(dname, "int32") == 0) dt = (struct dtype){"int32", MPI_INT32_T, 4};
    else if (strcmp(dname, "int64") == 0) dt = (struct dtype){"int64", MPI_INT64_T, 8};
    else { if (rank == 0) fprintf(stderr, "coll_bench: -d float|double|int32|int64\n"); MPI_Finalize(); return 2; }
    if (strcmp(oname, "sum") == 0) op = (struct op){"sum", MPI_SUM};
    else if (strcmp(oname, "prod") == 0) op = (struct op){"prod", MPI_PROD};
    else if (strcmp(oname, "max") == 0) op = (struct op){"max", MPI_MAX};
    else if (strcmp(oname, "min") == 0) op = (struct op){"min", MPI_MIN};
    else { if (rank == 0) fprintf(stderr, "coll_bench: -o sum|prod|max|min\n"); MPI_Finalize(); return 2; }
    if (factor < 2 || minb < 1 || minb > maxb || root < 0 || root >= nranks) {
        if (rank == 0) fprintf(stderr, "coll_bench: bad -f, -b/-e or -r\n");
        MPI_Finalize();
        return 2;
    }
    for (char *tok = strtok(colls, ","); tok; tok = strtok(NULL, ",")) {
        int found = 0;
        for (int c = 0; c < NCOLL; c++)
            /* "all": the five collectives of the perf tables (alltoall, allgatherv only by name) */
            if ((strcmp(tok, "all") == 0 && c != ALLTOALL && c != ALLGATHERV) || strcmp(tok, coll_names[c]) == 0) want[c] = found = 1;
        if (!found) {
            if (rank == 0) fprintf(stderr, "coll_bench: unknown collective %s\n", tok);
            MPI_Finalize();
            return 2;
        }
    }

    long long maxsize = minb;
    while (maxsize * factor <= maxb) maxsize *= factor;
    if (posix_memalign((void **)&sendbuf, 4096, (size_t)maxsize) || posix_memalign((void **)&recvbuf, 4096, (size_t)maxsize)) {
        fprintf(stderr, "coll_bench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    vcounts = malloc(nranks * sizeof *vcounts);
    vdispls = malloc(nranks * sizeof *vdispls);
    if (!vcounts || !vdispls) MPI_Abort(MPI_COMM_WORLD, 1);
    memset(sendbuf, 0, (size_t)maxsize);
    memset(recvbuf, 0, (size_t)maxsize);
    unsigned char tab[PERIOD * 8];

    if (rank == 0) {
        char lib[MPI_MAX_LIBRARY_VERSION_STRING], host[MPI_MAX_PROCESSOR_NAME];
        int len;
        MPI_Get_library_version(lib, &len);
        for (char *p = lib; *p; p++)
            if (*p == '\n') { *p = 0; break; }
        MPI_Get_processor_name(host, &len);
        printf("# coll_bench %s: %s\n", label, colls);
        printf("# ranks %d, host %s, library: %s\n", nranks, host, lib);
        printf("# sizes %lld .. %lld B (x%lld), datatype %s, op %s, root %d, %s, check %s\n", minb, maxb, factor,
               dt.name, op.name, root, inplace ? "in-place" : "out-of-place", check ? "on" : "off");
        printf("# iterations: clamp(%lld / size, 10, %lld) unless -n; warm-up: max(2, iters/10) unless -w\n", iter_bytes,
               max_iters);
        printf("#      collective        size       count      type    op  root  inplace   iters    time(us)  algbw(GB/s)  busbw(GB/s)  #wrong\n");
        fflush(stdout);
    }

    for (int c = 0; c < NCOLL; c++) {
        if (!want[c]) continue;
        for (long long want_size = minb; want_size <= maxb; want_size *= factor) {
            size_t elems = (size_t)want_size / dt.size;
            int per_rank = c == ALLGATHER || c == ALLGATHERV || c == REDUCE_SCATTER || c == ALLTOALL;
            size_t block = per_rank ? elems / nranks : elems;
            if (block == 0) continue;
            size_t whole = per_rank ? block * nranks : block;
            size_t size = whole * dt.size;
            long long iters = fixed_iters;
            if (iters <= 0) {
                iters = iter_bytes / (long long)size;
                if (iters > max_iters) iters = max_iters;
                if (iters < MIN_ITERS) iters = MIN_ITERS;
            }
            long long warm = fixed_warm >= 0 ? fixed_warm : (iters / 10 > 2 ? iters / 10 : 2);

            prepare((enum coll)c, block, whole, tab);
            for (long long i = 0; i < warm; i++) call((enum coll)c, block);
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (long long i = 0; i < iters; i++) call((enum coll)c, block);
            double mine = (MPI_Wtime() - t0) / (double)iters, t;
            MPI_Allreduce(&mine, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);

            long long w = 0, wsum = 0;
            if (check) {
                prepare((enum coll)c, block, whole, tab);
                call((enum coll)c, block);
                w = wrong((enum coll)c, block, whole, tab);
                MPI_Allreduce(&w, &wsum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
                if (wsum) any = 1;
            }
            double n = nranks;
            double factor_bus = c == ALLREDUCE ? 2 * (n - 1) / n : (c == ALLGATHER || c == ALLGATHERV || c == REDUCE_SCATTER || c == ALLTOALL) ? (n - 1) / n : 1;
            double algbw = (double)size / t / 1e9;
            if (rank == 0) {
                char ws[32];
                if (check) snprintf(ws, sizeof ws, "%lld", wsum);
                else snprintf(ws, sizeof ws, "N/A");
                int has_op = c == ALLREDUCE || c == REDUCE_SCATTER || c == REDUCE;
                int has_root = c == BCAST || c == REDUCE;
                printf("%17s %11zu %11zu %9s %5s %5d %8d %7lld %11.2f %12.3f %12.3f %7s\n", coll_names[c], size, whole,
                       dt.name, has_op ? op.name : "-", has_root ? root : -1, inplace, iters, t * 1e6, algbw,
                       algbw * factor_bus, ws);
                fflush(stdout);
            }
            if (want_size > maxb / factor) break;
        }
    }
    if (rank == 0 && any) fprintf(stderr, "coll_bench: FAIL: some results were wrong (see #wrong)\n");
    free(sendbuf);
    free(recvbuf);
    MPI_Finalize();
    return any ? 1 : 0;
}
