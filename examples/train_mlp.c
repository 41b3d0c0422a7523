/*
 * train_mlp.c - data-parallel training of a small classifier, gradients synchronised with
 * MPI_Allreduce. Standard MPI only: builds against hcomm's include/mpi.h, MPICH or Open MPI.
 *
 * The task: 8 classes of synthetic "images" (D pixels). Each class has a fixed random
 * prototype; sample i is its class's prototype plus Gaussian noise, both drawn from seeded
 * generators keyed by i, so every rank can make any sample without communication and the data
 * are the same for any number of ranks. The model: a multilayer perceptron D -> H -> H -> 8
 * (ReLU, softmax cross-entropy), plain SGD.
 *
 * Data parallelism: rank r trains on the samples whose index is r modulo N (disjoint shards);
 * rank 0 draws the initial weights and broadcasts them; each step every rank computes the
 * gradient of its local batch (B samples), the gradients are summed with MPI_Allreduce and
 * divided by N, and every rank applies the same update, so the weights stay identical (the
 * final checksum proves it). The learning rate scales linearly with the global batch (N * B).
 *
 * Gradient synchronisation: the gradients live in one flat buffer; they are summed in buckets of
 * --bucket-kb KiB (as few calls as the bucket size allows; default 4096 KiB, i.e. usually one
 * call), or with --per-tensor one call per parameter tensor (6 calls), to compare. With
 * --overlap the backward pass runs layer by layer over the whole batch and each layer's
 * gradients go out in an MPI_Iallreduce while the layers below are computed (MPI_Waitall at
 * the end of the step): the communication of the upper layers hides behind computation.
 *
 * Output (rank 0): the configuration, per-epoch loss and accuracy, then samples/s, compute and
 * communication time (and the communication fraction), final training and held-out accuracy,
 * and the weight checksum, which every rank computes and which must agree everywhere ("weights
 * identical on all N ranks"; otherwise the program fails).
 *
 * Usage: train_mlp [--hidden H] [--input D] [--epochs E] [--batch B] [--train N] [--lr LR]
 *                  [--bucket-kb K] [--per-tensor | --overlap] [--seed S] [--min-accuracy A]
 * Defaults: H=256 D=64 (about 84 K parameters), 3 epochs, B=32 per rank, 16384 training
 * samples, LR=0.05 for a global batch of 32. --hidden 4096 --input 1024 is a ~21 M-parameter
 * model. --min-accuracy A: exit 1 unless the final training accuracy is at least A (percent).
 */
#include <mpi.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NCLASS 8

static int rank, nranks;

/* ---- deterministic random numbers ---------------------------------------------------- */

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

typedef struct {
    uint64_t s;
} rng;

static double uniform(rng *r) /* [0, 1) */
{
    r->s = mix64(r->s);
    return (double)(r->s >> 11) * (1.0 / 9007199254740992.0);
}

static double gaussian(rng *r)
{
    double u = uniform(r), v = uniform(r);
    return sqrt(-2.0 * log(u + 1e-300)) * cos(6.283185307179586 * v);
}

/* ---- the data ----------------------------------------------------------------------- */

typedef struct {
    int d;
    uint64_t seed;
    float *proto; /* NCLASS x d */
} dataset;

static void dataset_init(dataset *ds, int d, uint64_t seed)
{
    ds->d = d;
    ds->seed = seed;
    ds->proto = malloc(sizeof(float) * NCLASS * d);
    rng r = {mix64(seed ^ 0x70726f746fULL)};
    for (int i = 0; i < NCLASS * d; i++)
        ds->proto[i] = (float)(uniform(&r) * 2.0 - 1.0);
}

/* Sample `idx`: its class, and its pixels into x[d]. */
static int sample(const dataset *ds, long idx, float *x)
{
    rng r = {mix64(ds->seed ^ mix64((uint64_t)idx))};
    int c = (int)(mix64(r.s) % NCLASS);
    for (int j = 0; j < ds->d; j++)
        x[j] = 0.6f * ds->proto[c * ds->d + j] + (float)(1.1 * gaussian(&r));
    return c;
}

/* ---- the model ---------------------------------------------------------------------- */

enum { W1, B1, W2, B2, W3, B3, NTENSOR };

typedef struct {
    int d, h;
    long off[NTENSOR + 1]; /* tensor t is params[off[t] .. off[t+1]) */
} shape;

static void shape_init(shape *s, int d, int h)
{
    long len[NTENSOR] = {(long)h * d, h, (long)h * h, h, (long)NCLASS * h, NCLASS};
    s->d = d;
    s->h = h;
    s->off[0] = 0;
    for (int t = 0; t < NTENSOR; t++)
        s->off[t + 1] = s->off[t] + len[t];
}

/* Scratch for one sample's forward and backward pass. */
typedef struct {
    float *x, *a1, *a2, *z, *g1, *g2;
} scratch;

static void scratch_init(scratch *k, const shape *s)
{
    k->x = malloc(sizeof(float) * s->d);
    k->a1 = malloc(sizeof(float) * s->h);
    k->a2 = malloc(sizeof(float) * s->h);
    k->z = malloc(sizeof(float) * NCLASS);
    k->g1 = malloc(sizeof(float) * s->h);
    k->g2 = malloc(sizeof(float) * s->h);
}

/* out[m] = b[m] + W[m, :] . in, then ReLU if relu. */
static void dense(const float *W, const float *b, const float *in, float *out, int m, int n, int relu)
{
    for (int i = 0; i < m; i++) {
        const float *w = W + (long)i * n;
        float acc = b[i];
        for (int j = 0; j < n; j++)
            acc += w[j] * in[j];
        out[i] = relu && acc < 0 ? 0 : acc;
    }
}

/* Forward pass of k->x; returns the predicted class and leaves the softmax in k->z. */
static int forward(const shape *s, const float *p, scratch *k)
{
    dense(p + s->off[W1], p + s->off[B1], k->x, k->a1, s->h, s->d, 1);
    dense(p + s->off[W2], p + s->off[B2], k->a1, k->a2, s->h, s->h, 1);
    dense(p + s->off[W3], p + s->off[B3], k->a2, k->z, NCLASS, s->h, 0);
    int best = 0;
    float mx = k->z[0];
    for (int c = 1; c < NCLASS; c++)
        if (k->z[c] > mx)
            mx = k->z[c], best = c;
    float sum = 0;
    for (int c = 0; c < NCLASS; c++)
        sum += k->z[c] = expf(k->z[c] - mx);
    for (int c = 0; c < NCLASS; c++)
        k->z[c] /= sum;
    return best;
}

/* Adds the gradient of the cross-entropy of (k->x, label) to g; returns the loss. */
static float backward(const shape *s, const float *p, float *g, scratch *k, int label)
{
    int h = s->h, d = s->d;
    float loss = -logf(k->z[label] + 1e-12f);
    float dz[NCLASS];
    for (int c = 0; c < NCLASS; c++)
        dz[c] = k->z[c] - (c == label);
    /* layer 3 */
    memset(k->g2, 0, sizeof(float) * h);
    for (int c = 0; c < NCLASS; c++) {
        float *gw = g + s->off[W3] + (long)c * h;
        const float *w = p + s->off[W3] + (long)c * h;
        for (int j = 0; j < h; j++) {
            gw[j] += dz[c] * k->a2[j];
            k->g2[j] += dz[c] * w[j];
        }
        g[s->off[B3] + c] += dz[c];
    }
    for (int j = 0; j < h; j++)
        if (k->a2[j] <= 0)
            k->g2[j] = 0;
    /* layer 2 */
    memset(k->g1, 0, sizeof(float) * h);
    for (int i = 0; i < h; i++) {
        float gi = k->g2[i];
        if (gi == 0)
            continue;
        float *gw = g + s->off[W2] + (long)i * h;
        const float *w = p + s->off[W2] + (long)i * h;
        for (int j = 0; j < h; j++) {
            gw[j] += gi * k->a1[j];
            k->g1[j] += gi * w[j];
        }
        g[s->off[B2] + i] += gi;
    }
    for (int j = 0; j < h; j++)
        if (k->a1[j] <= 0)
            k->g1[j] = 0;
    /* layer 1 */
    for (int i = 0; i < h; i++) {
        float gi = k->g1[i];
        if (gi == 0)
            continue;
        float *gw = g + s->off[W1] + (long)i * d;
        for (int j = 0; j < d; j++)
            gw[j] += gi * k->x[j];
        g[s->off[B1] + i] += gi;
    }
    return loss;
}

/* ---- gradient synchronisation --------------------------------------------------------- */

static double comm_seconds;
static long comm_calls;

static void allreduce_range(float *g, long n)
{
    while (n > 0) { /* counts are ints: split what does not fit */
        int c = n > (1 << 30) ? 1 << 30 : (int)n;
        double t = MPI_Wtime();
        MPI_Allreduce(MPI_IN_PLACE, g, c, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        comm_seconds += MPI_Wtime() - t;
        comm_calls++;
        g += c;
        n -= c;
    }
}

static void sync_gradients(const shape *s, float *g, long bucket, int per_tensor)
{
    long total = s->off[NTENSOR];
    if (per_tensor) {
        for (int t = 0; t < NTENSOR; t++)
            allreduce_range(g + s->off[t], s->off[t + 1] - s->off[t]);
    } else {
        for (long at = 0; at < total; at += bucket)
            allreduce_range(g + at, at + bucket > total ? total - at : bucket);
    }
}

/* ---- overlapped step: backward layer by layer, each layer's gradients summed while the
 * layers below are still being computed ------------------------------------------------ */

typedef struct {
    int cap;
    float *x, *a1, *a2, *z, *g1, *g2; /* per sample of the batch: d, h, h, 8, h, h floats */
    int *label;
} batch_scratch;

static void batch_init(batch_scratch *bs, const shape *s, int b)
{
    bs->cap = b;
    bs->x = malloc(sizeof(float) * (size_t)b * s->d);
    bs->a1 = malloc(sizeof(float) * (size_t)b * s->h);
    bs->a2 = malloc(sizeof(float) * (size_t)b * s->h);
    bs->z = malloc(sizeof(float) * (size_t)b * NCLASS);
    bs->g1 = malloc(sizeof(float) * (size_t)b * s->h);
    bs->g2 = malloc(sizeof(float) * (size_t)b * s->h);
    bs->label = malloc(sizeof(int) * (size_t)b);
}

/* One step's gradient with --overlap: forward every sample of the batch, then the output
 * layer's gradient for the whole batch, whose MPI_Iallreduce starts at once; then the middle
 * layer's (its MPI_Iallreduce starts), then the first layer's; MPI_Waitall at the end. The
 * communication of layers 3 and 2 overlaps the computation of the layers below. Returns the
 * batch's summed loss; adds to compute/communication time. */
static double overlapped_step(const shape *s, const float *p, float *g, scratch *k, batch_scratch *bs,
                              const long *idx, int b, const dataset *ds, double *compute)
{
    int h = s->h, d = s->d;
    double loss = 0, t0 = MPI_Wtime();
    MPI_Request req[3];
    for (int j = 0; j < b; j++) {
        bs->label[j] = sample(ds, idx[j], bs->x + (size_t)j * d);
        memcpy(k->x, bs->x + (size_t)j * d, sizeof(float) * d);
        forward(s, p, k);
        memcpy(bs->a1 + (size_t)j * h, k->a1, sizeof(float) * h);
        memcpy(bs->a2 + (size_t)j * h, k->a2, sizeof(float) * h);
        memcpy(bs->z + (size_t)j * NCLASS, k->z, sizeof(float) * NCLASS);
        loss += -logf(k->z[bs->label[j]] + 1e-12f);
    }
    /* Layer 3 (W3, b3: the tail of the parameter buffer). */
    for (int j = 0; j < b; j++) {
        float *z = bs->z + (size_t)j * NCLASS, *a2 = bs->a2 + (size_t)j * h, *g2 = bs->g2 + (size_t)j * h;
        memset(g2, 0, sizeof(float) * h);
        for (int c = 0; c < NCLASS; c++) {
            float dz = z[c] - (c == bs->label[j]);
            float *gw = g + s->off[W3] + (long)c * h;
            const float *w = p + s->off[W3] + (long)c * h;
            for (int i = 0; i < h; i++) {
                gw[i] += dz * a2[i];
                g2[i] += dz * w[i];
            }
            g[s->off[B3] + c] += dz;
        }
        for (int i = 0; i < h; i++)
            if (a2[i] <= 0)
                g2[i] = 0;
    }
    *compute += MPI_Wtime() - t0;
    MPI_Iallreduce(MPI_IN_PLACE, g + s->off[W3], (int)(s->off[NTENSOR] - s->off[W3]), MPI_FLOAT, MPI_SUM,
                   MPI_COMM_WORLD, &req[0]);
    t0 = MPI_Wtime();
    /* Layer 2 (W2, b2). */
    for (int j = 0; j < b; j++) {
        float *g2 = bs->g2 + (size_t)j * h, *a1 = bs->a1 + (size_t)j * h, *g1 = bs->g1 + (size_t)j * h;
        memset(g1, 0, sizeof(float) * h);
        for (int i = 0; i < h; i++) {
            float gi = g2[i];
            if (gi == 0)
                continue;
            float *gw = g + s->off[W2] + (long)i * h;
            const float *w = p + s->off[W2] + (long)i * h;
            for (int q = 0; q < h; q++) {
                gw[q] += gi * a1[q];
                g1[q] += gi * w[q];
            }
            g[s->off[B2] + i] += gi;
        }
        for (int q = 0; q < h; q++)
            if (a1[q] <= 0)
                g1[q] = 0;
    }
    *compute += MPI_Wtime() - t0;
    MPI_Iallreduce(MPI_IN_PLACE, g + s->off[W2], (int)(s->off[W3] - s->off[W2]), MPI_FLOAT, MPI_SUM,
                   MPI_COMM_WORLD, &req[1]);
    t0 = MPI_Wtime();
    /* Layer 1 (W1, b1). */
    for (int j = 0; j < b; j++) {
        float *g1 = bs->g1 + (size_t)j * h, *x = bs->x + (size_t)j * d;
        for (int i = 0; i < h; i++) {
            float gi = g1[i];
            if (gi == 0)
                continue;
            float *gw = g + s->off[W1] + (long)i * d;
            for (int q = 0; q < d; q++)
                gw[q] += gi * x[q];
            g[s->off[B1] + i] += gi;
        }
    }
    *compute += MPI_Wtime() - t0;
    t0 = MPI_Wtime();
    MPI_Iallreduce(MPI_IN_PLACE, g + s->off[W1], (int)(s->off[W2] - s->off[W1]), MPI_FLOAT, MPI_SUM,
                   MPI_COMM_WORLD, &req[2]);
    MPI_Status st[3];
    MPI_Waitall(3, req, st);
    comm_seconds += MPI_Wtime() - t0;
    comm_calls += 3;
    return loss;
}

/* ---- evaluation ------------------------------------------------------------------------ */

/* Accuracy (percent) over samples [first, first + n), shared out by index modulo nranks. */
static double accuracy(const shape *s, const float *p, scratch *k, const dataset *ds, long first, long n)
{
    long right[2] = {0, 0};
    for (long i = first + rank; i < first + n; i += nranks) {
        int label = sample(ds, i, k->x);
        right[0] += forward(s, p, k) == label;
        right[1]++;
    }
    long all[2];
    MPI_Allreduce(right, all, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    return 100.0 * (double)all[0] / (double)all[1];
}

static uint64_t checksum(const float *p, long n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    const unsigned char *b = (const unsigned char *)p;
    for (long i = 0; i < n * (long)sizeof(float); i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

/* ---- main ------------------------------------------------------------------------------ */

static long arg_long(int argc, char **argv, const char *name, long def)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], name))
            return atol(argv[i + 1]);
    return def;
}

static double arg_double(int argc, char **argv, const char *name, double def)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], name))
            return atof(argv[i + 1]);
    return def;
}

static int arg_flag(int argc, char **argv, const char *name)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], name))
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    int h = (int)arg_long(argc, argv, "--hidden", 256);
    int d = (int)arg_long(argc, argv, "--input", 64);
    int epochs = (int)arg_long(argc, argv, "--epochs", 3);
    int batch = (int)arg_long(argc, argv, "--batch", 32);
    long ntrain = arg_long(argc, argv, "--train", 16384);
    long ntest = 4096;
    double base_lr = arg_double(argc, argv, "--lr", 0.05);
    long bucket = arg_long(argc, argv, "--bucket-kb", 4096) * 1024 / (long)sizeof(float);
    int per_tensor = arg_flag(argc, argv, "--per-tensor");
    int overlap = arg_flag(argc, argv, "--overlap");
    uint64_t seed = (uint64_t)arg_long(argc, argv, "--seed", 1);
    double min_acc = arg_double(argc, argv, "--min-accuracy", -1);
    if (h < 1 || d < 1 || epochs < 1 || batch < 1 || ntrain < (long)batch * nranks || bucket < 1) {
        if (rank == 0)
            fprintf(stderr, "train_mlp: bad arguments (see the header of examples/train_mlp.c)\n");
        MPI_Finalize();
        return 2;
    }

    shape s;
    shape_init(&s, d, h);
    long nparam = s.off[NTENSOR];
    float *p = malloc(sizeof(float) * nparam), *g = malloc(sizeof(float) * nparam);
    dataset ds;
    dataset_init(&ds, d, seed);
    scratch k;
    scratch_init(&k, &s);
    batch_scratch bs;
    batch_init(&bs, &s, batch);
    long *idx = malloc(sizeof(long) * (size_t)batch);

    /* He initialisation on rank 0, broadcast to everyone. */
    if (rank == 0) {
        rng r = {mix64(seed ^ 0x77656967687473ULL)};
        int fan_in[NTENSOR] = {d, 1, h, 1, h, 1};
        for (int t = 0; t < NTENSOR; t++)
            for (long i = s.off[t]; i < s.off[t + 1]; i++)
                p[i] = t % 2 ? 0.0f : (float)(gaussian(&r) * sqrt(2.0 / fan_in[t]));
    }
    MPI_Bcast(p, (int)nparam, MPI_FLOAT, 0, MPI_COMM_WORLD);

    long global_batch = (long)batch * nranks;
    long steps_per_epoch = ntrain / global_batch;
    float lr = (float)(base_lr * (double)global_batch / 32.0);
    long shard = ntrain / nranks; /* samples of each rank's shard */
    uint64_t stride = shard % 7919 ? 7919 : 1; /* coprime with the shard size */
    if (rank == 0) {
        printf("train_mlp: %d ranks, MLP %d-%d-%d-%d (%ld parameters, %.1f MiB of gradients), "
               "%ld training samples, %d epochs, batch %d per rank (%ld global), lr %.4g, %s\n",
               nranks, d, h, h, NCLASS, nparam, nparam * 4.0 / 1048576.0, ntrain, epochs, batch, global_batch, lr,
               overlap      ? "MPI_Iallreduce per layer, overlapped with the layers below"
               : per_tensor ? "one allreduce per tensor"
                            : "bucketed allreduce");
        fflush(stdout);
    }

    double compute_seconds = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (int e = 0; e < epochs; e++) {
        double loss_sum = 0;
        for (long step = 0; step < steps_per_epoch; step++) {
            double t0 = MPI_Wtime();
            memset(g, 0, sizeof(float) * nparam);
            /* This rank's shard is the indices equal to rank modulo N; it visits them in an
             * order that changes every epoch (an affine permutation of the shard). */
            for (int j = 0; j < batch; j++) {
                long q = step * batch + j;
                idx[j] = (long)(((uint64_t)q * stride + mix64((uint64_t)e + seed)) % (uint64_t)shard) * nranks + rank;
            }
            if (overlap) {
                compute_seconds += MPI_Wtime() - t0;
                loss_sum += overlapped_step(&s, p, g, &k, &bs, idx, batch, &ds, &compute_seconds);
            } else {
                for (int j = 0; j < batch; j++) {
                    int label = sample(&ds, idx[j], k.x);
                    forward(&s, p, &k);
                    loss_sum += backward(&s, p, g, &k, label);
                }
                compute_seconds += MPI_Wtime() - t0;
                sync_gradients(&s, g, bucket, per_tensor);
            }
            t0 = MPI_Wtime();
            float scale = lr / (float)global_batch;
            for (long i = 0; i < nparam; i++)
                p[i] -= scale * g[i];
            compute_seconds += MPI_Wtime() - t0;
        }
        double loss_all = 0;
        MPI_Allreduce(&loss_sum, &loss_all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        double acc = accuracy(&s, p, &k, &ds, ntrain, ntest);
        if (rank == 0) {
            printf("epoch %d: loss %.4f, held-out accuracy %.2f%%\n", e + 1,
                   loss_all / (double)(steps_per_epoch * global_batch), acc);
            fflush(stdout);
        }
    }
    double elapsed = MPI_Wtime() - start;

    double train_acc = accuracy(&s, p, &k, &ds, 0, ntrain);
    double test_acc = accuracy(&s, p, &k, &ds, ntrain, ntest);
    long long sum = (long long)checksum(p, nparam), lo, hi;
    MPI_Allreduce(&sum, &lo, 1, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&sum, &hi, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    /* The slowest rank's split is the one that bounds the job. */
    double times[2] = {compute_seconds, comm_seconds}, tmax[2];
    MPI_Allreduce(times, tmax, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);

    int ok = lo == hi && (min_acc < 0 || train_acc >= min_acc);
    if (rank == 0) {
        double samples = (double)epochs * steps_per_epoch * global_batch;
        printf("throughput: %.0f samples/s (%.0f samples in %.2f s)\n", samples / elapsed, samples, elapsed);
        printf("time split (slowest rank): compute %.2f s, communication %.2f s (%.1f%% of the step time), "
               "%ld allreduce calls per rank%s\n",
               tmax[0], tmax[1], 100.0 * tmax[1] / (tmax[0] + tmax[1]), comm_calls,
               overlap ? " (communication: time in MPI_Waitall, i.e. not hidden)" : "");
        printf("accuracy: training %.2f%%, held-out %.2f%% (chance: 12.5%%)\n", train_acc, test_acc);
        printf("weights checksum: %016llx (%s on all %d ranks)\n", (unsigned long long)sum,
               lo == hi ? "identical" : "DIFFERENT", nranks);
        if (lo != hi)
            printf("FAIL train_mlp: the weights differ between ranks\n");
        if (min_acc >= 0 && train_acc < min_acc)
            printf("FAIL train_mlp: training accuracy %.2f%% is below --min-accuracy %.2f%%\n", train_acc, min_acc);
    }
    free(p);
    free(g);
    free(idx);
    MPI_Finalize();
    return ok ? 0 : 1;
}
