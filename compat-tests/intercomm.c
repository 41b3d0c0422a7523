/* intercomm.c - intercommunicators: MPI_Intercomm_create over MPI_COMM_WORLD between the even
 * and the odd world ranks, MPI_Comm_test_inter, sizes, the local and remote groups,
 * point-to-point across (MPI_ANY_SOURCE included), MPI_Barrier, MPI_Comm_dup of an
 * intercommunicator, MPI_Intercomm_merge with both orders of `high` and with equal `high`,
 * collectives on the merged communicators, MPI_Intercomm_create_from_groups (MPI 4),
 * MPI_Comm_split of the intercommunicator (members, order, remote group, point-to-point,
 * MPI_Comm_compare with its dup; MPI_COMM_NULL where the other side lacks the color),
 * MPI_Comm_create of the intercommunicator (subgroups in another order, point-to-point and
 * Allreduce across, MPI_COMM_NULL outside the group), and
 * (hcomm's header only) MPI_Comm_remote_size on an
 * intracommunicator (MPI_ERR_COMM). Rank 0 prints only implementation-independent lines. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

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

/* Checks that `merged` holds both groups, `first_color`'s group first, each in local order. */
static void check_merged(MPI_Comm merged, int wsize, int color, int lrank, int first_color,
                         const char *what) {
    int mr, ms, neven = wsize - wsize / 2, nodd = wsize / 2;
    MPI_Comm_rank(merged, &mr);
    MPI_Comm_size(merged, &ms);
    CHECK(ms == wsize, "%s: size %d, expected %d", what, ms, wsize);
    int before = color == first_color ? 0 : (first_color == 0 ? neven : nodd);
    CHECK(mr == before + lrank, "%s: rank %d, expected %d", what, mr, before + lrank);
    int *all = malloc(sizeof(int) * wsize);
    MPI_Allgather(&wrank, 1, MPI_INT, all, 1, MPI_INT, merged);
    for (int i = 0; i < wsize; i++) {
        int first_n = first_color == 0 ? neven : nodd;
        int c = i < first_n ? first_color : 1 - first_color;
        int l = i < first_n ? i : i - first_n;
        CHECK(all[i] == 2 * l + c, "%s: merged rank %d is world rank %d, expected %d", what, i,
              all[i], 2 * l + c);
    }
    int sum = 0;
    MPI_Allreduce(&wrank, &sum, 1, MPI_INT, MPI_SUM, merged);
    CHECK(sum == wsize * (wsize - 1) / 2, "%s: allreduce %d", what, sum);
    free(all);
}

int main(int argc, char **argv) {
    int wsize;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    if (wsize < 2) {
        if (wrank == 0)
            printf("intercomm: needs at least 2 ranks\n");
        MPI_Finalize();
        return 0;
    }
    int color = wrank % 2, neven = wsize - wsize / 2, nodd = wsize / 2;
    MPI_Comm local, inter;
    MPI_Comm_split(MPI_COMM_WORLD, color, wrank, &local);
    int lrank, lsize;
    MPI_Comm_rank(local, &lrank);
    MPI_Comm_size(local, &lsize);
    /* Leaders: local rank 0 of each side, world ranks 0 and 1. */
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, color == 0 ? 1 : 0, 7, &inter);

    int flag = -1;
    MPI_Comm_test_inter(inter, &flag);
    CHECK(flag == 1, "test_inter(inter) = %d", flag);
    MPI_Comm_test_inter(local, &flag);
    CHECK(flag == 0, "test_inter(local) = %d", flag);
    int r, s, rs;
    MPI_Comm_rank(inter, &r);
    MPI_Comm_size(inter, &s);
    MPI_Comm_remote_size(inter, &rs);
    int expect_rs = color == 0 ? nodd : neven;
    CHECK(r == lrank && s == lsize, "rank/size %d/%d, expected %d/%d", r, s, lrank, lsize);
    CHECK(rs == expect_rs, "remote size %d, expected %d", rs, expect_rs);

    /* The groups, translated to world ranks. */
    MPI_Group wg, lg, rg;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Comm_group(inter, &lg);
    MPI_Comm_remote_group(inter, &rg);
    int gs;
    MPI_Group_size(rg, &gs);
    CHECK(gs == rs, "remote group size %d", gs);
    MPI_Group_size(lg, &gs);
    CHECK(gs == lsize, "local group size %d", gs);
    for (int i = 0; i < rs; i++) {
        int w;
        MPI_Group_translate_ranks(rg, 1, &i, wg, &w);
        CHECK(w == 2 * i + (1 - color), "remote rank %d is world rank %d", i, w);
    }
    for (int i = 0; i < lsize; i++) {
        int w;
        MPI_Group_translate_ranks(lg, 1, &i, wg, &w);
        CHECK(w == 2 * i + color, "local rank %d is world rank %d", i, w);
    }
    MPI_Group_free(&rg);
    MPI_Group_free(&lg);

    /* Every process sends its world rank to every remote process; receives by ANY_SOURCE. */
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * (rs + 1));
    int *seen = calloc(rs, sizeof(int));
    for (int j = 0; j < rs; j++)
        MPI_Isend(&wrank, 1, MPI_INT, j, 42, inter, &reqs[j]);
    for (int j = 0; j < rs; j++) {
        int v = -1;
        MPI_Status st;
        MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 42, inter, &st);
        int src = st.MPI_SOURCE;
        CHECK(src >= 0 && src < rs, "source %d out of the remote group", src);
        if (src >= 0 && src < rs) {
            CHECK(v == 2 * src + (1 - color), "from remote %d got %d", src, v);
            seen[src]++;
        }
        CHECK(st.MPI_TAG == 42, "tag %d", st.MPI_TAG);
    }
    for (int j = 0; j < rs; j++)
        MPI_Wait(&reqs[j], MPI_STATUS_IGNORE);
    for (int j = 0; j < rs; j++)
        CHECK(seen[j] == 1, "remote %d seen %d times", j, seen[j]);
    free(seen);
    free(reqs);

    /* A message to a named remote rank, and MPI_PROC_NULL. */
    if (lrank < rs) {
        int v = 100 + wrank, got = -1;
        MPI_Status st;
        MPI_Sendrecv(&v, 1, MPI_INT, lrank, 9, &got, 1, MPI_INT, lrank, 9, inter, &st);
        CHECK(got == 100 + 2 * lrank + (1 - color), "sendrecv got %d", got);
        CHECK(st.MPI_SOURCE == lrank, "sendrecv source %d", st.MPI_SOURCE);
    }
    MPI_Send(&wrank, 1, MPI_INT, MPI_PROC_NULL, 0, inter);

    MPI_Barrier(inter);

    /* A duplicate is an intercommunicator over the same groups, with its own messages. */
    MPI_Comm dup;
    MPI_Comm_dup(inter, &dup);
    MPI_Comm_test_inter(dup, &flag);
    CHECK(flag == 1, "test_inter(dup) = %d", flag);
    MPI_Comm_remote_size(dup, &rs);
    CHECK(rs == expect_rs, "dup remote size %d", rs);
    if (lrank == 0) {
        int a = 1000 + color, b = 2000 + color, got_a = -1, got_b = -1;
        MPI_Request q[2];
        /* Same tag on both communicators: each message stays on its own. */
        MPI_Irecv(&got_a, 1, MPI_INT, 0, 5, inter, &q[0]);
        MPI_Irecv(&got_b, 1, MPI_INT, 0, 5, dup, &q[1]);
        MPI_Send(&b, 1, MPI_INT, 0, 5, dup);
        MPI_Send(&a, 1, MPI_INT, 0, 5, inter);
        MPI_Wait(&q[0], MPI_STATUS_IGNORE);
        MPI_Wait(&q[1], MPI_STATUS_IGNORE);
        CHECK(got_a == 1000 + (1 - color) && got_b == 2000 + (1 - color),
              "dup messages %d %d", got_a, got_b);
    }
    MPI_Barrier(dup);
    MPI_Comm_free(&dup);

    /* Merges: high = color puts the evens first, high = 1 - color the odds; equal high puts
     * either first, the same on every process (checked by check_merged's allgather). */
    MPI_Comm merged;
    MPI_Intercomm_merge(inter, color, &merged);
    check_merged(merged, wsize, color, lrank, 0, "merge(high=color)");
    MPI_Comm_free(&merged);
    MPI_Intercomm_merge(inter, 1 - color, &merged);
    check_merged(merged, wsize, color, lrank, 1, "merge(high=1-color)");
    MPI_Comm_free(&merged);
    MPI_Intercomm_merge(inter, 0, &merged);
    {
        int mr, first;
        MPI_Comm_rank(merged, &mr);
        /* Whichever side is first, the merged rank 0 is its local rank 0. */
        int zero_color = mr == 0 ? color : -1, any;
        MPI_Allreduce(&zero_color, &any, 1, MPI_INT, MPI_MAX, merged);
        first = any;
        check_merged(merged, wsize, color, lrank, first, "merge(high=0 on both)");
    }
    MPI_Comm_free(&merged);

#if MPI_VERSION >= 4
    /* MPI_Intercomm_create_from_groups: the same two groups from group handles alone, the
     * last process of each side leading; checked with an allreduce across (each side gets
     * the sum of the other side's world ranks). */
    {
        MPI_Group evens, odds;
        int *ev = malloc(sizeof(int) * neven), *od = malloc(sizeof(int) * (nodd + 1));
        for (int i = 0; i < neven; i++)
            ev[i] = 2 * i;
        for (int i = 0; i < nodd; i++)
            od[i] = 2 * i + 1;
        MPI_Group_incl(wg, neven, ev, &evens);
        MPI_Group_incl(wg, nodd, od, &odds);
        MPI_Comm ic;
        MPI_Group mine = color == 0 ? evens : odds, other = color == 0 ? odds : evens;
        int nmine = color == 0 ? neven : nodd, nother = color == 0 ? nodd : neven;
        MPI_Intercomm_create_from_groups(mine, nmine - 1, other, nother - 1, "hcomm-test-icfg",
                                         MPI_INFO_NULL, MPI_ERRORS_RETURN, &ic);
        int f = -1, rsz = -1, sum = -1, want = 0;
        MPI_Comm_test_inter(ic, &f);
        MPI_Comm_remote_size(ic, &rsz);
        CHECK(f == 1 && rsz == nother, "from_groups: inter %d remote size %d", f, rsz);
        for (int j = 0; j < nother; j++)
            want += 2 * j + (1 - color);
        int mr = -1;
        MPI_Comm_rank(ic, &mr);
        CHECK(mr == lrank, "from_groups: rank %d, expected %d", mr, lrank);
        /* Point-to-point across: local rank 0 of each side swaps with remote rank 0. */
        if (lrank == 0) {
            int got = -1;
            MPI_Sendrecv(&wrank, 1, MPI_INT, 0, 3, &got, 1, MPI_INT, 0, 3, ic, MPI_STATUS_IGNORE);
            CHECK(got == 1 - color, "from_groups: remote rank 0 is world rank %d", got);
        }
        MPI_Allreduce(&wrank, &sum, 1, MPI_INT, MPI_SUM, ic);
        CHECK(sum == want, "from_groups: allreduce %d, expected %d", sum, want);
        MPI_Comm_free(&ic);
        MPI_Group_free(&evens);
        MPI_Group_free(&odds);
        free(ev);
        free(od);
    }
#endif

    /* MPI_Comm_split of the intercommunicator: color = local rank parity, key reversing the
     * order; each new intercommunicator joins one parity of both sides. */
    {
        int par = lrank % 2, nmine = (lsize - par + 1) / 2, ntheirs = (rs - par + 1) / 2;
        MPI_Comm sp;
        MPI_Comm_split(inter, par, -lrank, &sp);
        if (ntheirs == 0) {
            CHECK(sp == MPI_COMM_NULL, "split: no remote process of parity %d, yet a communicator", par);
        } else {
            int sr = -1, ss = -1, srs = -1;
            MPI_Comm_rank(sp, &sr);
            MPI_Comm_size(sp, &ss);
            MPI_Comm_remote_size(sp, &srs);
            /* Local ranks par, par + 2, ... in reverse order. */
            CHECK(ss == nmine && srs == ntheirs && sr == nmine - 1 - lrank / 2,
                  "split: rank %d size %d remote size %d (want %d %d %d)", sr, ss, srs, nmine - 1 - lrank / 2,
                  nmine, ntheirs);
            MPI_Group srg;
            MPI_Comm_remote_group(sp, &srg);
            for (int i = 0; i < srs; i++) {
                int w, other_lrank = par + 2 * (ntheirs - 1 - i);
                MPI_Group_translate_ranks(srg, 1, &i, wg, &w);
                CHECK(w == 2 * other_lrank + (1 - color), "split: remote rank %d is world rank %d", i, w);
            }
            MPI_Group_free(&srg);
            /* Point-to-point across: every process sends its world rank to remote rank 0. */
            int got = -1;
            MPI_Request sq;
            MPI_Isend(&wrank, 1, MPI_INT, 0, 3, sp, &sq);
            if (sr == 0) {
                int sum = 0, want = 0;
                for (int i = 0; i < srs; i++) {
                    MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 3, sp, MPI_STATUS_IGNORE);
                    sum += got;
                    want += 2 * (par + 2 * i) + (1 - color);
                }
                CHECK(sum == want, "split: sum of the remote world ranks %d, want %d", sum, want);
            }
            MPI_Wait(&sq, MPI_STATUS_IGNORE);
            MPI_Barrier(sp);
            MPI_Comm d;
            int cmp = -1;
            MPI_Comm_dup(sp, &d);
            MPI_Comm_compare(sp, d, &cmp);
            CHECK(cmp == MPI_CONGRUENT, "compare(split intercomm, its dup) = %d", cmp);
            MPI_Comm_compare(sp, inter, &cmp);
            CHECK((ss == lsize && srs == rs) || cmp == MPI_UNEQUAL, "compare(split, parent) = %d", cmp);
            MPI_Comm_free(&d);
            MPI_Comm_free(&sp);
        }
        MPI_Comm_split(inter, MPI_UNDEFINED, 0, &sp);
        CHECK(sp == MPI_COMM_NULL, "split(MPI_UNDEFINED) gave a communicator");
    }

    /* Buffered sends across: MPI_Bsend to remote rank 0 from the attached buffer. */
    {
        int bsz = 1024 + MPI_BSEND_OVERHEAD;
        char *bbuf = malloc(bsz);
        MPI_Buffer_attach(bbuf, bsz);
        int v = wrank * 3;
        MPI_Bsend(&v, 1, MPI_INT, 0, 6, inter);
        if (lrank == 0) {
            int sum = 0, want = 0, got = -1;
            for (int i = 0; i < rs; i++) {
                MPI_Recv(&got, 1, MPI_INT, i, 6, inter, MPI_STATUS_IGNORE);
                sum += got;
                want += 3 * (2 * i + (1 - color));
            }
            CHECK(sum == want, "bsend across: sum %d, want %d", sum, want);
        }
        void *back;
        int back_size;
        MPI_Buffer_detach(&back, &back_size);
        CHECK(back == bbuf && back_size == bsz, "buffer_detach gave %p %d", back, back_size);
        free(bbuf);
    }

    /* MPI_Comm_create of the intercommunicator: each side keeps its local ranks but the last
     * (all of them when it has one), in reverse order; the members get an intercommunicator
     * between the two subgroups, the others MPI_COMM_NULL. */
    {
        MPI_Group lg, sub;
        MPI_Comm_group(inter, &lg);
        int keep_l = lsize > 1 ? lsize - 1 : 1, keep_r = rs > 1 ? rs - 1 : 1;
        int *ranks = malloc(sizeof(int) * lsize);
        /* Open MPI 4.1 gives the members' local ranks in the group's order but their remote
         * ranks in the parent's order, so with a reordered group a message to remote rank 0
         * reaches another process than the one that is rank 0 there (the program hangs):
         * under Open MPI the group keeps the parent's order. */
#if defined(OPEN_MPI) && !defined(HCOMM_MPI_H)
        const int reversed = 0;
#else
        const int reversed = 1;
#endif
        for (int i = 0; i < keep_l; i++)
            ranks[i] = reversed ? keep_l - 1 - i : i;
        MPI_Group_incl(lg, keep_l, ranks, &sub);
        MPI_Comm cc;
        MPI_Comm_create(inter, sub, &cc);
        if (lrank >= keep_l) {
            CHECK(cc == MPI_COMM_NULL, "create: local rank %d is not in the group, yet a communicator",
                  lrank);
        } else {
            int cr = -1, cs = -1, crs = -1, inter_flag = 0;
            MPI_Comm_test_inter(cc, &inter_flag);
            MPI_Comm_rank(cc, &cr);
            MPI_Comm_size(cc, &cs);
            MPI_Comm_remote_size(cc, &crs);
            int want_r = reversed ? keep_l - 1 - lrank : lrank;
            CHECK(inter_flag && cr == want_r && cs == keep_l && crs == keep_r,
                  "create: inter %d rank %d size %d remote size %d (want rank %d sizes %d %d)",
                  inter_flag, cr, cs, crs, want_r, keep_l, keep_r);
            /* The remote group in the other side's group order. */
            MPI_Group crg;
            MPI_Comm_remote_group(cc, &crg);
            for (int i = 0; i < crs; i++) {
                int w = -1, other = reversed ? keep_r - 1 - i : i;
                MPI_Group_translate_ranks(crg, 1, &i, wg, &w);
                CHECK(w == 2 * other + (1 - color), "create: remote rank %d is world rank %d, want %d",
                      i, w, 2 * other + (1 - color));
            }
            MPI_Group_free(&crg);
            /* Point-to-point across: every member sends its world rank to remote rank 0. */
            int got = -1;
            MPI_Request sq;
            MPI_Isend(&wrank, 1, MPI_INT, 0, 4, cc, &sq);
            if (cr == 0) {
                int sum = 0, want = 0;
                for (int i = 0; i < crs; i++) {
                    MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 4, cc, MPI_STATUS_IGNORE);
                    sum += got;
                    want += 2 * (keep_r - 1 - i) + (1 - color);
                }
                CHECK(sum == want, "create: sum of the remote world ranks %d, want %d", sum, want);
            }
            MPI_Wait(&sq, MPI_STATUS_IGNORE);
            int v = wrank, r = -1;
            MPI_Allreduce(&v, &r, 1, MPI_INT, MPI_MAX, cc);
            CHECK(r == 2 * (keep_r - 1) + (1 - color), "create: allreduce max %d, want %d", r,
                  2 * (keep_r - 1) + (1 - color));
            MPI_Comm_free(&cc);
        }
        free(ranks);
        MPI_Group_free(&sub);
        MPI_Group_free(&lg);
    }

#ifdef HCOMM_MPI_H
    /* Errors: an intracommunicator has no remote group (hcomm's header only: MPICH 4.0.2
     * returns success here). */
    MPI_Comm_set_errhandler(local, MPI_ERRORS_RETURN);
    int rc = MPI_Comm_remote_size(local, &rs), cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_COMM, "remote_size(intracomm): rc %d class %d", rc,
          cls);
#endif

    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
    MPI_Group_free(&wg);
    int total = 0;
    MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (wrank == 0) {
        printf("intercomm: groups of %d and %d ranks\n", neven, nodd);
        printf("intercomm: %s\n", total == 0 ? "all checks passed" : "FAIL");
    }
    MPI_Finalize();
    return total != 0;
}
