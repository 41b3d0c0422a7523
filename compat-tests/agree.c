/* agree.c - ULFM's agreement as MPICH 4.1+ exports it (MPIX_Comm_agree, MPIX_Comm_iagree),
 * under hcomm's header only (Debian's MPICH 4.0.2 and Open MPI 4.1 do not have it: SKIP there).
 * Checks the bitwise AND over every process, on MPI_COMM_WORLD, on a split communicator and
 * over both groups of an intercommunicator; that an agreement takes no place in the sequence
 * of the communicator's collectives (one process agrees before an MPI_Barrier, the others
 * after it, as mpi4py's ULFM test does); and the argument errors. */
#include <mpi.h>
#include <stdio.h>

#ifndef HCOMM_MPI_H
int main(void) {
    printf("agree: SKIP (MPIX_Comm_agree is not in this MPI)\n");
    return 77;
}
#else
static int rank, size, fails;

#define CHECK(cond, ...)                                                                   \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            printf("FAIL (rank %d, line %d): ", rank, __LINE__);                           \
            printf(__VA_ARGS__);                                                           \
            printf("\n");                                                                  \
            fails++;                                                                       \
        }                                                                                  \
    } while (0)

/* The AND over ranks 0..n-1 of ~(1 << r) & 0xff. */
static int and_of(int n) {
    int v = 0xff;
    for (int r = 0; r < n; r++)
        v &= ~(1 << (r % 8)) & 0xff;
    return v;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    int flag = ~(1 << (rank % 8)) & 0xff;
    MPIX_Comm_agree(MPI_COMM_WORLD, &flag);
    CHECK(flag == and_of(size), "agree on world: %#x, expected %#x", flag, and_of(size));

    for (int i = 0; i < 3; i++) {
        flag = ~(1 << (rank % 8)) & 0xff;
        MPI_Request r;
        MPIX_Comm_iagree(MPI_COMM_WORLD, &flag, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        CHECK(flag == and_of(size), "iagree %d on world: %#x, expected %#x", i, flag,
              and_of(size));
    }

    /* Out of step with the communicator's collectives: rank `root` starts its agreement
     * before a barrier, the others after it. */
    for (int root = 0; root < size && size > 1; root++) {
        MPI_Request r;
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == root) {
            flag = 0xb; /* 1011 */
            MPIX_Comm_iagree(MPI_COMM_WORLD, &flag, &r);
            int done = 1;
            MPI_Test(&r, &done, MPI_STATUS_IGNORE);
            CHECK(!done, "iagree completed before the others started theirs");
            MPI_Barrier(MPI_COMM_WORLD);
        } else {
            flag = 0xd; /* 1101 */
            MPI_Barrier(MPI_COMM_WORLD);
            MPIX_Comm_iagree(MPI_COMM_WORLD, &flag, &r);
        }
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        CHECK(flag == 0x9, "iagree out of step (root %d): %#x, expected 0x9", root, flag);
    }

    /* A split communicator: each half agrees on its own ranks. */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    int hsize;
    MPI_Comm_size(half, &hsize);
    flag = rank % 2 ? 0x6 : 0x3;
    if (rank == size - 1)
        flag &= 0x2;
    MPIX_Comm_agree(half, &flag);
    int want = rank % 2 ? 0x6 : 0x3;
    if ((size - 1) % 2 == rank % 2)
        want &= 0x2;
    CHECK(flag == want, "agree on half %d: %#x, expected %#x", rank % 2, flag, want);

    /* An intercommunicator: the AND over both groups. */
    if (size > 1) {
        MPI_Comm inter;
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 5, &inter);
        flag = ~(1 << (rank % 8)) & 0xff;
        MPI_Request r;
        MPIX_Comm_iagree(inter, &flag, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        CHECK(flag == and_of(size), "iagree on the intercommunicator: %#x, expected %#x", flag,
              and_of(size));
        MPI_Comm_free(&inter);
    }
    MPI_Comm_free(&half);

    /* Argument errors. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int cls = -1, rc = MPIX_Comm_agree(MPI_COMM_WORLD, NULL);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_ARG, "agree with a NULL flag: class %d", cls);
    rc = MPIX_Comm_agree(MPI_COMM_NULL, &flag);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COMM, "agree on MPI_COMM_NULL: class %d", cls);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);

    int total = 0;
    MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("agree: %s\n", total == 0 ? "all checks passed" : "FAIL");
    MPI_Finalize();
    return total != 0;
}
#endif
