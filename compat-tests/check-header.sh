#!/usr/bin/env bash
# check-header.sh -- prove that include/mpi.h is MPICH-ABI compatible.
#
# Compares hcomm's include/mpi.h with the installed MPICH mpi.h (mpicc.mpich):
#   (a) constants: every object-like MPI_/MPIX_/PMPI_ macro of our header has
#       the same value and C type in MPICH's header (probe program compiled
#       and run against both headers, outputs diffed), plus the layout of
#       MPI_Status and the size/signedness of every typedef'd type; every
#       function-like macro (MPI_Comm_c2f, ...) has MPICH's exact definition;
#       a macro absent from MPICH fails unless it is in ALLOW_ABSENT below;
#   (b) functions: every prototype of our header is type-identical to MPICH's
#       (__builtin_types_compatible_p in a file that includes MPICH's mpi.h),
#       and every typedef names the same type as MPICH's;
#   (c) the header compiles cleanly as C99, C11 and C++ (-Wall -Wextra -Werror
#       -pedantic) with a small program calling a few functions;
#   (d) the sentinels a program may pass for an array argument (MPI_STATUSES_IGNORE,
#       MPI_ERRCODES_IGNORE, MPI_ARGV_NULL) draw no warning at -O2 -Werror.
#
# Usage: compat-tests/check-header.sh   (from any directory)
# Env:   CC (default gcc), CXX (default g++), MPICC (default mpicc.mpich)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
INC="$ROOT/include"
HDR="$INC/mpi.h"
CC=${CC:-gcc}
CXX=${CXX:-g++}
MPICC=${MPICC:-mpicc.mpich}

# Macros our header may define although MPICH 4.0.2's mpi.h does not.
# An entry that MPICH does define is still compared.
ALLOW_ABSENT=(
    HCOMM_MPI_H          # hcomm-only: lets programs detect hcomm's header
    HCOMM_VERSION_MAJOR  # hcomm-only
    HCOMM_VERSION_MINOR  # hcomm-only
    HCOMM_VERSION_PATCH  # hcomm-only
    MPIX_BFLOAT16        # added after MPICH 4.0.2 (later MPICH: 0x4c00024c)
)

# Object-like macros whose values are addresses (of a function, of a string literal): they
# differ from one program to the next, so their definitions are compared as text instead.
COMPARE_AS_TEXT=(MPI_DUP_FN MPI_COMM_DUP_FN MPI_TYPE_DUP_FN MPI_WIN_DUP_FN
    MPI_AINT_FMT_DEC_SPEC MPI_AINT_FMT_HEX_SPEC)

fail() { echo "check-header: FAIL: $*" >&2; exit 1; }
note() { echo "check-header: $*"; }

# --- prerequisites ----------------------------------------------------------
[[ -f "$HDR" ]] || fail "$HDR not found"
if ! command -v "$MPICC" >/dev/null 2>&1; then
    echo "check-header: $MPICC not found; install MPICH (Debian: apt-get install mpich libmpich-dev)" >&2
    exit 1
fi
for tool in "$CC" "$CXX"; do
    command -v "$tool" >/dev/null 2>&1 || fail "$tool not found"
done

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

is_allowed() {
    local name=$1 a
    for a in "${ALLOW_ABSENT[@]}"; do [[ $a == "$name" ]] && return 0; done
    return 1
}

# --- (a) constants ----------------------------------------------------------
# Macro definitions as the preprocessor sees them ('#define NAME[(args)] body'),
# whitespace-normalised, one per line, keyed by NAME.
defs() { tr -s ' \t' '  ' | sed 's/ $//' | LC_ALL=C sort -u; }
"$CC" -E -dM -x c /dev/null | defs >"$WORK/predef.txt"
"$CC" -E -dM -x c "$HDR" | defs >"$WORK/ours.all"
LC_ALL=C comm -13 "$WORK/predef.txt" "$WORK/ours.all" >"$WORK/ours.txt"
printf '#include <mpi.h>\n' | "$MPICC" -E -dM -x c - | defs >"$WORK/mpich.txt"

# Body of macro $1 in file $2 (as '#define NAME body'); empty if undefined.
def_line() { awk -v n="$1" '{ k = $2; sub(/\(.*/, "", k) } k == n { print; exit }' "$2"; }

for a in "${ALLOW_ABSENT[@]}"; do
    [[ -n $(def_line "$a" "$WORK/ours.txt") ]] || fail "allowlisted $a is not defined in include/mpi.h (stale allowlist)"
done

# Completeness: every MPI_/MPIX_/PMPI_ macro of MPICH's mpi.h (and the mpio.h it includes)
# is in ours, but for MPICH's internal include guard.
MPICH_ONLY=(MPI_PROTO_H_INCLUDED)
while read -r name; do
    [[ " ${MPICH_ONLY[*]} " == *" $name "* ]] && continue
    [[ -n $(def_line "$name" "$WORK/ours.txt") ]] || fail "MPICH's mpi.h defines $name; include/mpi.h does not"
done < <(awk '{ k = $2; sub(/\(.*/, "", k); print k }' "$WORK/mpich.txt" | grep -E '^P?MPIX?_')

probe_names=()
skipped=()
funclike=0
mapfile -t keys < <(awk '{ print $2 }' "$WORK/ours.txt")
for key in "${keys[@]}"; do
    name=${key%%(*}
    ours=$(def_line "$name" "$WORK/ours.txt")
    theirs=$(def_line "$name" "$WORK/mpich.txt")
    if [[ -z $theirs ]]; then
        is_allowed "$name" || fail "$name is defined in include/mpi.h but not in MPICH's mpi.h (not allowlisted)"
        skipped+=("$name")
        continue
    fi
    if [[ ! $name =~ ^(MPI|MPIX|PMPI)_ ]] && ! is_allowed "$name"; then
        fail "unexpected macro $name in include/mpi.h (not MPI_/MPIX_/PMPI_, not allowlisted)"
    fi
    if [[ $key == *"("* ]] || [[ " ${COMPARE_AS_TEXT[*]} " == *" $name "* ]]; then
        # Function-like macro: require MPICH's exact definition.
        [[ $ours == "$theirs" ]] || fail "macro differs from MPICH:"$'\n'"  ours:  $ours"$'\n'"  MPICH: $theirs"
        funclike=$((funclike + 1))
    elif [[ $ours == "#define $name" ]]; then
        # Empty macro (MPI_INCLUDED): MPICH's must be empty too.
        [[ $theirs == "#define $name" ]] || fail "$name is empty here but MPICH has: $theirs"
    else
        probe_names+=("$name")
    fi
done

# Typedef'd types and MPI_Status fields, taken from our header.
# (Not the aliases of function types, `typedef MPI_X_function MPI_X_fn;`: they have no size;
# section (b) compares them.)
mapfile -t types < <(grep -vE '^typedef [A-Za-z0-9_]+_function ' "$HDR" |
    sed -nE 's/^typedef [^;(){}]+ (MPI_[A-Za-z0-9_]+);$/\1/p')
mapfile -t fields < <(sed -n '/^typedef struct MPI_Status {/,/^} MPI_Status;/p' "$HDR" |
    sed -nE 's/^ *[a-zA-Z_ ]+ ([A-Za-z_][A-Za-z0-9_]*);$/\1/p')
((${#types[@]} > 0)) || fail "no typedefs found in include/mpi.h"
((${#fields[@]} > 0)) || fail "no MPI_Status fields found in include/mpi.h"

{
    cat <<'EOF'
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <mpi.h>

/* Classify a constant's C type, and read its value as integer or double. */
#define HC_KIND(x) _Generic((x), \
    int: "int", unsigned: "unsigned", long: "long", unsigned long: "ulong", \
    long long: "llong", unsigned long long: "ullong", \
    float: "float", double: "double", long double: "ldouble", \
    void *: "void*", int *: "int*", MPI_Status *: "MPI_Status*", \
    default: "other")
#define HC_IS_FLT(x) _Generic((x), float: 1, double: 1, long double: 1, default: 0)
#define HC_AS_LL(x) ((long long)(intptr_t)_Generic((x), \
    float: 0, double: 0, long double: 0, default: (x)))
#define HC_AS_DBL(x) ((double)_Generic((x), \
    float: (x), double: (x), long double: (x), default: 0))
#define P(name) hc_print(#name, HC_KIND(name), HC_IS_FLT(name), HC_AS_LL(name), HC_AS_DBL(name))

static void hc_print(const char *n, const char *k, int isf, long long v, double d)
{
    if (isf)
        printf("%s %s %.17g\n", n, k, d);
    else
        printf("%s %s %lld\n", n, k, v);
}

int main(void)
{
EOF
    for n in "${probe_names[@]}"; do
        printf '    P(%s);\n' "$n"
    done
    for t in "${types[@]}"; do
        printf '    printf("sizeof(%s) %%zu\\n", sizeof(%s));\n' "$t" "$t"
        # Signedness only means something for arithmetic types (not MPI_Status, not the
        # tools interface's opaque pointers).
        if [[ $t != MPI_Status ]] && ! grep -qE "^typedef [^;]*\* *$t;\$" "$HDR"; then
            printf '    printf("signed(%s) %%d\\n", (int)((%s)-1 < 0));\n' "$t" "$t"
        fi
    done
    printf '    printf("sizeof(MPI_Status) %%zu\\n", sizeof(MPI_Status));\n'
    for f in "${fields[@]}"; do
        printf '    printf("offsetof(MPI_Status,%s) %%zu\\n", offsetof(MPI_Status, %s));\n' "$f" "$f"
    done
    printf '    return 0;\n}\n'
} >"$WORK/probe.c"

"$CC" -std=c11 -Wall -Wextra -Werror -I "$INC" -o "$WORK/probe_ours" "$WORK/probe.c" ||
    fail "probe does not compile against include/mpi.h"
"$MPICC" -std=c11 -Wall -Wextra -Werror -o "$WORK/probe_mpich" "$WORK/probe.c" ||
    fail "probe does not compile against MPICH's mpi.h"
"$WORK/probe_ours" >"$WORK/values.ours"
"$WORK/probe_mpich" >"$WORK/values.mpich"
if ! diff -u "$WORK/values.mpich" "$WORK/values.ours" >"$WORK/values.diff"; then
    cat "$WORK/values.diff" >&2
    fail "constants or layouts differ from MPICH (--- MPICH, +++ include/mpi.h)"
fi
nlayout=$(($(wc -l <"$WORK/values.ours") - ${#probe_names[@]}))
note "(a) ${#probe_names[@]} constants (value + C type) and $nlayout type/layout facts match MPICH; $funclike function-like macros identical"
if ((${#skipped[@]} > 0)); then
    note "    not in MPICH's header (allowlisted): ${skipped[*]}"
fi

# --- (b) prototypes and typedefs ---------------------------------------------
# Prototypes are one per line: '<ret> NAME(<params>);'.
proto_re='^(int|double|MPI_Aint|MPI_Fint|MPI_File) (P?MPIX?_[A-Za-z0-9_]+)\((.*)\);$'
mapfile -t protos < <(grep -E "$proto_re" "$HDR")
((${#protos[@]} > 0)) || fail "no prototypes found in include/mpi.h"

# Cross-check with what the compiler sees as declared functions, so that no
# declaration escapes the line-based extraction (e.g. one split over lines).
gcc -fsyntax-only -aux-info "$WORK/aux.txt" -x c "$HDR"
# (MPIR_Dup_fn, the function MPI_DUP_FN names, is the one declaration outside that form.)
sed -nE 's/.*extern [A-Za-z_ ]+ ([A-Za-z_][A-Za-z0-9_]*) \(.*/\1/p' "$WORK/aux.txt" | grep -vx MPIR_Dup_fn |
    LC_ALL=C sort >"$WORK/declared.txt"
printf '%s\n' "${protos[@]}" | sed -E "s/$proto_re/\\2/" | LC_ALL=C sort >"$WORK/extracted.txt"
if ! diff -u "$WORK/declared.txt" "$WORK/extracted.txt" >"$WORK/decl.diff"; then
    cat "$WORK/decl.diff" >&2
    fail "declared functions (---) differ from one-line prototypes (+++)"
fi
[[ -z $(uniq -d "$WORK/extracted.txt") ]] || fail "duplicate prototypes: $(uniq -d "$WORK/extracted.txt" | tr '\n' ' ')"
# Every MPI_X needs its PMPI_X and vice versa.
grep -E '^MPIX?_' "$WORK/extracted.txt" | sed 's/^/P/' >"$WORK/want_pmpi.txt" || true
grep -E '^PMPIX?_' "$WORK/extracted.txt" >"$WORK/have_pmpi.txt" || true
if ! diff -u "$WORK/want_pmpi.txt" "$WORK/have_pmpi.txt" >"$WORK/pmpi.diff"; then
    cat "$WORK/pmpi.diff" >&2
    fail "MPI_X and PMPI_X prototypes do not pair up"
fi

# Functions MPICH 4.0.2 does not declare (MPI-4.1 additions: MPI_Status_set_source, ...)
# cannot be compared with it; their prototypes come from the standard's description
# (scripts/gen-mpi-api.py) and are listed below.
printf '#include <mpi.h>\n' | "$MPICC" -fsyntax-only -aux-info "$WORK/mpich-aux.txt" -x c -
sed -nE 's/.*extern [A-Za-z_ ]+ ([A-Za-z_][A-Za-z0-9_]*) \(.*/\1/p' "$WORK/mpich-aux.txt" | LC_ALL=C sort -u >"$WORK/mpich-declared.txt"
newer=()
{
    printf '#include <mpi.h>\n\n/* Typedefs of include/mpi.h, renamed */\n'
    grep -E '^typedef [^;(){}]+ MPI_[A-Za-z0-9_]+;$' "$HDR" | while read -r line; do
        t=$(sed -E 's/.* (MPI_[A-Za-z0-9_]+);$/\1/' <<<"$line")
        sed -E "s/ $t;\$/ hcomm_check_$t;/" <<<"$line"
        printf '_Static_assert(__builtin_types_compatible_p(%s, hcomm_check_%s), "typedef %s differs from MPICH");\n' "$t" "$t" "$t"
    done
    printf '_Static_assert(__builtin_types_compatible_p(MPI_Status, struct MPI_Status), "MPI_Status is not struct MPI_Status");\n'
    printf '\n/* Prototypes of include/mpi.h, renamed */\n'
    for p in "${protos[@]}"; do
        name=$(sed -E "s/$proto_re/\\2/" <<<"$p")
        if ! grep -qx "$name" "$WORK/mpich-declared.txt"; then
            echo "$name" >>"$WORK/newer.txt"
            continue
        fi
        sed -E "s/ $name\\(/ hcomm_check_$name(/" <<<"$p"
        printf '_Static_assert(__builtin_types_compatible_p(__typeof__(%s), __typeof__(hcomm_check_%s)), "%s prototype differs from MPICH");\n' "$name" "$name" "$name"
    done
} >"$WORK/protos.c"

if ! "$MPICC" -std=c11 -Wall -Wextra -Werror -fsyntax-only "$WORK/protos.c" 2>"$WORK/protos.err"; then
    grep -E 'error' "$WORK/protos.err" >&2 || cat "$WORK/protos.err" >&2
    fail "prototypes or typedefs differ from MPICH"
fi
touch "$WORK/newer.txt"
nnewer=$(wc -l <"$WORK/newer.txt")
note "(b) $((${#protos[@]} - nnewer)) prototypes ($(grep -c '^MPI' "$WORK/extracted.txt") MPI_ + $(grep -c '^PMPI' "$WORK/extracted.txt") PMPI_) and ${#types[@]} typedefs are type-identical to MPICH's"
if ((nnewer > 0)); then
    note "    not declared by MPICH 4.0.2 (MPI-4.1 additions, compiled but not compared): $(grep -v "^PMPI" "$WORK/newer.txt" | tr '\n' ' ')"
fi

# --- (c) the header compiles as C and C++ ------------------------------------
cat >"$WORK/use.c" <<'EOF'
#include <mpi.h>
#include <mpi.h> /* include guard */
#if !defined(MPI_INCLUDED) || !defined(HCOMM_MPI_H)
#error "include guard / hcomm marker missing"
#endif

int main(int argc, char **argv)
{
    int provided = MPI_THREAD_SINGLE, rank = 0, size = 0, len = 0, cmp = MPI_UNEQUAL;
    int counts[1] = { 1 };
    double in = 1.0, out = 0.0;
    MPI_Count tsize = 0;
    MPI_Comm dup = MPI_COMM_NULL;
    char name[MPI_MAX_PROCESSOR_NAME];
    char err[MPI_MAX_ERROR_STRING];

    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
        MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_compare(MPI_COMM_WORLD, dup, &cmp);
    MPI_Get_processor_name(name, &len);
    MPI_Error_string(MPI_ERR_TRUNCATE, err, &len);
    MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, dup);
    MPI_Allreduce(MPI_IN_PLACE, &out, 1, MPI_DOUBLE, MPI_MAX, dup);
    MPI_Reduce_scatter(&in, &out, counts, MPI_DOUBLE, MPI_SUM, dup);
    MPI_Bcast_c(&out, (MPI_Count)1, MPI_DOUBLE, 0, dup);
    MPI_Type_size_c(MPI_DOUBLE_INT, &tsize);
    PMPI_Barrier(dup);
    MPI_Comm_free(&dup);
    (void)MPI_Wtime();
    MPI_Finalize();
    return (int)(rank + size + cmp + (int)tsize + (out > 0.0));
}
EOF
for std in c99 c11; do
    "$CC" -std="$std" -Wall -Wextra -Werror -pedantic -Wstrict-prototypes -I "$INC" \
        -c -o "$WORK/use_$std.o" "$WORK/use.c" || fail "header does not compile as $std"
done
for std in c++11 c++17; do
    "$CXX" -x c++ -std="$std" -Wall -Wextra -Werror -pedantic -I "$INC" \
        -c -o "$WORK/use_$std.o" "$WORK/use.c" || fail "header does not compile as $std"
    # extern "C": the C++ object must reference the plain C symbol names.
    nm -u "$WORK/use_$std.o" | grep -qE ' U MPI_Allreduce$' ||
        fail "C++ object does not reference the unmangled MPI_Allreduce (extern \"C\" missing?)"
    if nm -u "$WORK/use_$std.o" | grep -E ' U _Z.*P?MPI_'; then
        fail "C++ object references mangled MPI symbols (extern \"C\" missing?)"
    fi
done
# The test program is plain MPI: it must compile against MPICH too (minus the hcomm marker).
"$MPICC" -std=c11 -Wall -Wextra -Werror -DHCOMM_MPI_H -c -o "$WORK/use_mpich.o" "$WORK/use.c" ||
    fail "test program does not compile against MPICH (test bug)"
note "(c) header compiles as C99, C11, C++11, C++17 (-Wall -Wextra -Werror -pedantic)"

# (d) The sentinels MPI lets a program pass for an array (MPI_STATUSES_IGNORE,
# MPI_ERRCODES_IGNORE, MPI_ARGV_NULL) compile without warnings at -O2: GCC 11 and later warn
# (-Wstringop-overflow) where a parameter is spelled `T p[]`, as MPICH's header spells them.
cat >"$WORK/sentinels.c" <<'EOF'
#include <mpi.h>

int main(int argc, char **argv)
{
    MPI_Request rq[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    int idx[2] = {0, 0}, outcount = 0, flag = 0;
    MPI_Comm child = MPI_COMM_NULL;
    MPI_Init(&argc, &argv);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    MPI_Testall(2, rq, &flag, MPI_STATUSES_IGNORE);
    MPI_Waitsome(2, rq, &outcount, idx, MPI_STATUSES_IGNORE);
    if (argc > 5)
        MPI_Comm_spawn("true", MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_SELF, &child, MPI_ERRCODES_IGNORE);
    MPI_Finalize();
    return flag + outcount;
}
EOF
"$CC" -std=c11 -O2 -Wall -Wextra -Werror -I "$INC" -c -o "$WORK/sentinels.o" "$WORK/sentinels.c" ||
    fail "sentinel arguments (MPI_STATUSES_IGNORE, ...) draw warnings at -O2"
if "$MPICC" -std=c11 -O2 -Wall -Wextra -Werror -DHCOMM_MPI_H -c -o "$WORK/sentinels_mpich.o" "$WORK/sentinels.c" 2>/dev/null; then
    note "(d) sentinel arguments compile at -O2 -Werror (MPICH's header too)"
else
    note "(d) sentinel arguments compile at -O2 -Werror (MPICH's header draws -Wstringop-overflow there)"
fi

echo "PASS: include/mpi.h matches MPICH ($("$MPICC" -E -dM -x c - <<<'#include <mpi.h>' | sed -nE 's/^#define MPICH_VERSION "(.*)"/\1/p')): ${#probe_names[@]} constants, ${#protos[@]} prototypes, ${#types[@]} types"
