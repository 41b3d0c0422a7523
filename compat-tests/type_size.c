/*
 * type_size.c - MPI_Type_size (and MPI_Type_size_c where MPI >= 4) of the predefined
 * datatypes, checked against the C types (LP64: long and pointers are 8 bytes), including
 * the pair types of MINLOC/MAXLOC whose size excludes the padding (MPI_DOUBLE_INT is 12,
 * MPI_SHORT_INT 6). Types an MPI may lack are tested under #ifdef; a missing one prints a
 * "missing" line, so the output then differs from the expected one.
 */
#include <mpi.h>

#include <complex.h>
#include <stdint.h>
#include <stdio.h>
#include <wchar.h>

static int rank, fails;

static void ts(const char *name, MPI_Datatype t, int want)
{
    int s = -1;
    int rc = MPI_Type_size(t, &s);
    if (rc != MPI_SUCCESS || s != want) {
        printf("FAIL type_size: rank=%d MPI_Type_size(%s) rc=%d size=%d, expected %d\n", rank, name, rc, s, want);
        fails++;
    }
#if MPI_VERSION >= 4 /* Open MPI 4.1 is MPI 3.1: no large-count functions */
    MPI_Count sc = -1;
    rc = MPI_Type_size_c(t, &sc);
    if (rc != MPI_SUCCESS || sc != want) {
        printf("FAIL type_size: rank=%d MPI_Type_size_c(%s) rc=%d size=%lld, expected %d\n", rank, name, rc,
               (long long)sc, want);
        fails++;
    }
#endif
    if (rank == 0)
        printf("%-24s %d\n", name, want);
}

#define T(name, ctype) ts(#name, name, (int)sizeof(ctype))
#define MISSING(name)                                                                                         \
    do {                                                                                                      \
        if (rank == 0)                                                                                        \
            printf("%-24s missing\n", #name);                                                                 \
    } while (0)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    T(MPI_CHAR, char);
    T(MPI_SIGNED_CHAR, signed char);
    T(MPI_UNSIGNED_CHAR, unsigned char);
    T(MPI_BYTE, unsigned char);
    T(MPI_SHORT, short);
    T(MPI_UNSIGNED_SHORT, unsigned short);
    T(MPI_INT, int);
    T(MPI_UNSIGNED, unsigned);
    T(MPI_LONG, long);
    T(MPI_UNSIGNED_LONG, unsigned long);
    T(MPI_LONG_LONG, long long);
    T(MPI_LONG_LONG_INT, long long);
    T(MPI_UNSIGNED_LONG_LONG, unsigned long long);
    T(MPI_FLOAT, float);
    T(MPI_DOUBLE, double);
    T(MPI_C_BOOL, _Bool);
    T(MPI_INT8_T, int8_t);
    T(MPI_INT16_T, int16_t);
    T(MPI_INT32_T, int32_t);
    T(MPI_INT64_T, int64_t);
    T(MPI_UINT8_T, uint8_t);
    T(MPI_UINT16_T, uint16_t);
    T(MPI_UINT32_T, uint32_t);
    T(MPI_UINT64_T, uint64_t);
#ifdef MPI_LONG_DOUBLE
    T(MPI_LONG_DOUBLE, long double);
#else
    MISSING(MPI_LONG_DOUBLE);
#endif
#ifdef MPI_WCHAR
    T(MPI_WCHAR, wchar_t);
#else
    MISSING(MPI_WCHAR);
#endif
#ifdef MPI_PACKED
    T(MPI_PACKED, char);
#else
    MISSING(MPI_PACKED);
#endif
#ifdef MPI_AINT
    T(MPI_AINT, MPI_Aint);
#else
    MISSING(MPI_AINT);
#endif
#ifdef MPI_OFFSET
    T(MPI_OFFSET, MPI_Offset);
#else
    MISSING(MPI_OFFSET);
#endif
#ifdef MPI_COUNT
    T(MPI_COUNT, MPI_Count);
#else
    MISSING(MPI_COUNT);
#endif
#ifdef MPI_C_FLOAT_COMPLEX
    T(MPI_C_FLOAT_COMPLEX, float _Complex);
#else
    MISSING(MPI_C_FLOAT_COMPLEX);
#endif
#ifdef MPI_C_DOUBLE_COMPLEX
    T(MPI_C_DOUBLE_COMPLEX, double _Complex);
#else
    MISSING(MPI_C_DOUBLE_COMPLEX);
#endif
    /* pair types: size = value + int, without padding */
    ts("MPI_2INT", MPI_2INT, 8);
    ts("MPI_FLOAT_INT", MPI_FLOAT_INT, 8);
    ts("MPI_DOUBLE_INT", MPI_DOUBLE_INT, 12);
    ts("MPI_LONG_INT", MPI_LONG_INT, 12);
    ts("MPI_SHORT_INT", MPI_SHORT_INT, 6);
    /* implementation extensions: checked, not printed (not every MPI has them) */
    int quiet_rank = rank;
    rank = 1;
#ifdef MPIX_C_FLOAT16
    ts("MPIX_C_FLOAT16", MPIX_C_FLOAT16, 2);
#endif
#ifdef MPIX_BFLOAT16
    ts("MPIX_BFLOAT16", MPIX_BFLOAT16, 2);
#endif
    rank = quiet_rank;

    int all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("failures on all ranks: %d\n", all);
    MPI_Finalize();
    return all != 0;
}
