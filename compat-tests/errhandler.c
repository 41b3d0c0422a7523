/*
 * errhandler.c - MPI_Comm_set_errhandler / MPI_Comm_get_errhandler, MPI_Error_class,
 * MPI_Error_string.
 *
 * The default handler of MPI_COMM_WORLD is MPI_ERRORS_ARE_FATAL; after setting
 * MPI_ERRORS_RETURN, get returns it; MPI_Comm_dup copies the handler to the new
 * communicator; setting MPI_ERRORS_ARE_FATAL again is seen by get; a split communicator
 * also inherits. For every standard error class, MPI_Error_class(class) == class and
 * MPI_Error_string gives a non-empty string whose length is returned. (Invalid-argument
 * errors are in tests/c/errors.c.)
 */
#include <mpi.h>

#include <stdio.h>
#include <string.h>

static int rank, fails;

static const char *eh_name(MPI_Errhandler e)
{
    if (e == MPI_ERRORS_ARE_FATAL) return "MPI_ERRORS_ARE_FATAL";
    if (e == MPI_ERRORS_RETURN) return "MPI_ERRORS_RETURN";
    return "(other)";
}

static void get(const char *what, MPI_Comm c, MPI_Errhandler want)
{
    MPI_Errhandler e = MPI_ERRHANDLER_NULL;
    int rc = MPI_Comm_get_errhandler(c, &e);
    if (rc != MPI_SUCCESS || e != want) {
        printf("FAIL errhandler: rank=%d MPI_Comm_get_errhandler(%s) rc=%d gave %s, expected %s\n", rank, what, rc,
               eh_name(e), eh_name(want));
        fails++;
    }
    if (rank == 0)
        printf("MPI_Comm_get_errhandler(%s) = %s\n", what, eh_name(want));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    get("MPI_COMM_WORLD, default", MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    if (MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN) != MPI_SUCCESS)
        fails++;
    get("MPI_COMM_WORLD, after set MPI_ERRORS_RETURN", MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm dup, split;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    get("MPI_Comm_dup of it", dup, MPI_ERRORS_RETURN);
    MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &split);
    get("MPI_Comm_split of it", split, MPI_ERRORS_RETURN);
    if (MPI_Comm_set_errhandler(dup, MPI_ERRORS_ARE_FATAL) != MPI_SUCCESS)
        fails++;
    get("the dup, after set MPI_ERRORS_ARE_FATAL", dup, MPI_ERRORS_ARE_FATAL);
    get("MPI_COMM_WORLD, unchanged by the dup", MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL) != MPI_SUCCESS)
        fails++;
    get("MPI_COMM_WORLD, set back", MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_free(&split);
    MPI_Comm_free(&dup);

    static const struct { const char *name; int code; } classes[] = {
        { "MPI_SUCCESS", MPI_SUCCESS },       { "MPI_ERR_BUFFER", MPI_ERR_BUFFER },
        { "MPI_ERR_COUNT", MPI_ERR_COUNT },   { "MPI_ERR_TYPE", MPI_ERR_TYPE },
        { "MPI_ERR_TAG", MPI_ERR_TAG },       { "MPI_ERR_COMM", MPI_ERR_COMM },
        { "MPI_ERR_RANK", MPI_ERR_RANK },     { "MPI_ERR_ROOT", MPI_ERR_ROOT },
        { "MPI_ERR_GROUP", MPI_ERR_GROUP },   { "MPI_ERR_OP", MPI_ERR_OP },
        { "MPI_ERR_TOPOLOGY", MPI_ERR_TOPOLOGY }, { "MPI_ERR_DIMS", MPI_ERR_DIMS },
        { "MPI_ERR_ARG", MPI_ERR_ARG },       { "MPI_ERR_UNKNOWN", MPI_ERR_UNKNOWN },
        { "MPI_ERR_TRUNCATE", MPI_ERR_TRUNCATE }, { "MPI_ERR_OTHER", MPI_ERR_OTHER },
        { "MPI_ERR_INTERN", MPI_ERR_INTERN }, { "MPI_ERR_IN_STATUS", MPI_ERR_IN_STATUS },
        { "MPI_ERR_PENDING", MPI_ERR_PENDING }, { "MPI_ERR_REQUEST", MPI_ERR_REQUEST },
    };
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++) {
        int cls = -1, len = -1;
        char s[MPI_MAX_ERROR_STRING];
        memset(s, 0x7f, sizeof s);
        int rc1 = MPI_Error_class(classes[i].code, &cls);
        int rc2 = MPI_Error_string(classes[i].code, s, &len);
        int ok_class = rc1 == MPI_SUCCESS && cls == classes[i].code;
        int ok_str = rc2 == MPI_SUCCESS && len > 0 && len < MPI_MAX_ERROR_STRING && s[len] == 0 &&
                     (size_t)len == strlen(s);
        if (!ok_class || !ok_str) {
            printf("FAIL errhandler: rank=%d %s: MPI_Error_class rc=%d -> %d, MPI_Error_string rc=%d len=%d\n", rank,
                   classes[i].name, rc1, cls, rc2, len);
            fails++;
        }
        if (rank == 0)
            printf("%-18s MPI_Error_class: %s, MPI_Error_string: %s\n", classes[i].name, ok_class ? "itself" : "WRONG",
                   ok_str ? "non-empty" : "WRONG");
    }

    int all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("failures on all ranks: %d\n", all);
    MPI_Finalize();
    return all != 0;
}
