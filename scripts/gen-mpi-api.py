#!/usr/bin/env python3
"""gen-mpi-api.py - hcomm's MPI C API, generated from one description of the standard.

The description is the MPI Forum's machine-readable API (PyPI `pympistandard`, the data the
standard's own bindings chapters are built from), plus the few MPICH-only functions that
programs built against MPICH link to (EXTRAS below). From it this script writes, and `--check`
verifies are up to date (CI runs it):

  include/mpi.h           the prototypes block (every function as MPI_X and PMPI_X, the
                          large-count `_c` forms included), between the GENERATED markers
  src/unsupported.rs      an entry point (MPI_X and PMPI_X) for every function hcomm does not
                          implement yet: it fails with MPI_ERR_UNSUPPORTED_OPERATION through
                          the right error handler, naming the function (never a loader
                          error, never a silent success)
  src/libhcomm.symbols    the export list of libhcomm.so (tests/exports.rs compares it with
                          the library)
  docs/API-COVERAGE.md    which functions are implemented and which are not

Implemented functions are the ones whose entry points are written in `src/*.rs` with
`export_mpi_functions!` (`fn MPI_X / PMPI_X(...)`); everything else in the description gets a
generated stub. Not generated at all: the handle conversions MPICH defines as macros
(`MPI_Comm_c2f`, ...: integer handles convert by a cast) and the MPI-5.0 ABI functions
(`MPI_Abi_*`, `*_toint`, `*_fromint`), which are not part of the MPICH ABI hcomm speaks.

Usage: scripts/gen-mpi-api.py [--check]
Needs: python3 with pympistandard (scripts/test.sh installs it into the test venv).
"""

import argparse
import re
import sys
from pathlib import Path

try:
    import pympistandard as std
except ImportError:
    sys.exit("gen-mpi-api.py: needs the pympistandard package (pip install pympistandard==0.2.0)")

ROOT = Path(__file__).resolve().parent.parent
HEADER = ROOT / "include/mpi.h"
STUBS = ROOT / "src/unsupported.rs"
SYMBOLS = ROOT / "src/libhcomm.symbols"
COVERAGE = ROOT / "docs/API-COVERAGE.md"
BEGIN = "/* @@BEGIN-GENERATED-PROTOTYPES@@ (scripts/gen-mpi-api.py writes this block) */"
END = "/* @@END-GENERATED-PROTOTYPES@@ */"

# Functions MPICH 4 exports that the MPI-4.1 standard no longer has (removed in MPI-3.0) or
# never had (MPIX_ extensions), as MPICH 4.0.2's mpi.h declares them.
EXTRAS = [
    "int MPI_Address(void *location, MPI_Aint *address)",
    "int MPI_Errhandler_create(MPI_Handler_function *function, MPI_Errhandler *errhandler)",
    "int MPI_Errhandler_get(MPI_Comm comm, MPI_Errhandler *errhandler)",
    "int MPI_Errhandler_set(MPI_Comm comm, MPI_Errhandler errhandler)",
    "int MPI_Type_extent(MPI_Datatype datatype, MPI_Aint *extent)",
    "int MPI_Type_hindexed(int count, int array_of_blocklengths[], MPI_Aint array_of_displacements[], MPI_Datatype oldtype, MPI_Datatype *newtype)",
    "int MPI_Type_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype, MPI_Datatype *newtype)",
    "int MPI_Type_lb(MPI_Datatype datatype, MPI_Aint *displacement)",
    "int MPI_Type_struct(int count, int array_of_blocklengths[], MPI_Aint array_of_displacements[], MPI_Datatype array_of_types[], MPI_Datatype *newtype)",
    "int MPI_Type_ub(MPI_Datatype datatype, MPI_Aint *displacement)",
    "int MPIX_Query_cuda_support(void)",
    "int MPIX_Query_hip_support(void)",
    "int MPIX_Query_ze_support(void)",
    "int MPIX_GPU_query_support(int gpu_type, int *is_supported)",
]

# Where MPICH 4.0.2's prototype spells a parameter differently from the standard's rendering
# (the types must be identical to MPICH's: compat-tests/check-header.sh proves they are).
OVERRIDES = {
    "MPI_Group_range_incl": "int MPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup)",
    "MPI_Group_range_excl": "int MPI_Group_range_excl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup)",
    "MPI_Pcontrol": "int MPI_Pcontrol(const int level, ...)",
    # The description renders `char *argv[]` as `char argv[]`.
    "MPI_Info_create_env": "int MPI_Info_create_env(int argc, char *argv[], MPI_Info *info)",
    # MPICH 4.0.2 predates the erratum that made the partitions const.
    "MPI_Pready_list": "int MPI_Pready_list(int length, int array_of_partitions[], MPI_Request request)",
}

# Integer handles of the MPICH ABI: MPICH converts them to and from Fortran with macros.
INT_HANDLES = ["Comm", "Errhandler", "Group", "Info", "Message", "Op", "Request", "Session", "Type", "Win"]

INT_TYPES = {
    "int", "MPI_Fint", "MPI_Comm", "MPI_Datatype", "MPI_Group", "MPI_Win", "MPI_Session",
    "MPI_Op", "MPI_Errhandler", "MPI_Request", "MPI_Message", "MPI_Info", "MPI_T_cb_safety",
    "MPI_T_source_order",
}
I64_TYPES = {"MPI_Aint", "MPI_Count", "MPI_Offset"}
PTR_TYPES = {
    "MPI_File", "MPI_T_enum", "MPI_T_cvar_handle", "MPI_T_pvar_handle", "MPI_T_pvar_session",
    "MPI_T_event_registration", "MPI_T_event_instance", "MPI_T_event_cb_function",
    "MPI_T_event_free_cb_function", "MPI_T_event_dropped_cb_function",
}
RUST_KEYWORDS = {"type", "ref", "in", "fn", "box", "match", "mod", "move", "impl", "loop", "where"}

# Data symbols of MPICH's mpi.h that hcomm defines (src/abi_data.rs).
DATA_SYMBOLS = [
    "MPI_F08_STATUSES_IGNORE", "MPI_F08_STATUS_IGNORE", "MPI_F_STATUSES_IGNORE",
    "MPI_F_STATUS_IGNORE", "MPI_T_PVAR_ALL_HANDLES", "MPI_UNWEIGHTED", "MPI_WEIGHTS_EMPTY",
]
# Functions named by MPICH's macros (MPI_DUP_FN and its typed forms are MPIR_Dup_fn).
HELPER_SYMBOLS = ["MPIR_Dup_fn"]

PROTO_RE = re.compile(r"^(.*?)\s*\b(P?MPIX?_\w+)\((.*)\)$")


class Proto:
    def __init__(self, text):
        text = text.replace("\\ldots", "...")
        m = PROTO_RE.match(text.strip())
        if not m:
            raise SystemExit(f"gen-mpi-api.py: cannot parse prototype {text!r}")
        self.ret, self.name, params = m.groups()
        self.params = [] if params.strip() in ("", "void") else [p.strip() for p in params.split(", ")]

    def c(self, name=None):
        """The C prototype, MPICH's spelling: `T *p` rather than `T* p`."""
        ps = ", ".join(re.sub(r"\*+ ?(?=\w)", lambda m: " " + m.group(0).strip(), p).replace("  ", " ")
                       for p in self.params) or "void"
        ps = ps.replace(" *", " *")
        return f"{self.ret} {name or self.name}({ps});"

    def rust_params(self):
        out = []
        for i, p in enumerate(self.params):
            if p == "...":
                continue  # a callee may ignore variadic arguments (SysV x86-64 and AArch64)
            m = re.match(r"^(.*?)\s*\b(\w+)((?:\[[0-9]*\])*)$", p)
            if not m:
                raise SystemExit(f"gen-mpi-api.py: cannot parse parameter {p!r} of {self.name}")
            ctype, pname, arr = m.groups()
            base = ctype.replace("const ", "").strip()
            if "*" in base or arr:
                rty = "*mut c_void"
            elif base in INT_TYPES:
                rty = "c_int"
            elif base in I64_TYPES:
                rty = "i64"
            elif base in PTR_TYPES:
                rty = "*mut c_void"
            elif base == "double":
                rty = "f64"
            else:
                raise SystemExit(f"gen-mpi-api.py: no Rust type for {base!r} ({self.name})")
            if pname in RUST_KEYWORDS:
                pname += "_"
            out.append((pname, rty, base if rty != "*mut c_void" else base + "*"))
        return out

    def error_object(self):
        """Whose error handler reports the call: the first communicator argument, else the
        object family the function belongs to."""
        params = self.rust_params()
        for pname, rty, base in params:
            if base == "MPI_Comm":
                return f"On::Comm({pname})"
        for family in ("File", "Win", "Session"):
            if any(base == "MPI_" + family for _, _, base in params):
                return f"On::{family}"
        short = self.name.split("_", 1)[1]
        for family in ("File", "Win", "Session"):
            if short.startswith(family + "_"):
                return f"On::{family}"
        return "On::Process"


def standard_functions():
    std.use_api_version(1)
    out = {}
    for p in std.all_iso_c_procedures():
        forms = [p.express.iso_c]
        if p.has_embiggenment():
            forms.append(p.express.embiggen.iso_c)
        for e in forms:
            name = e.name
            short = name.split("_", 1)[1]
            if short.startswith("Abi_") or short.endswith(("_toint", "_fromint")):
                continue
            if short.split("_")[0] in INT_HANDLES and short.endswith(("_c2f", "_f2c")) and short.count("_") == 1:
                continue
            out[name] = Proto(OVERRIDES.get(name, str(e)))
    for text in EXTRAS:
        p = Proto(text)
        out[p.name] = p
    return out


def implemented_functions():
    """MPI_X names with a hand-written entry point in src/*.rs."""
    names = set()
    for f in sorted((ROOT / "src").glob("*.rs")):
        if f.name == STUBS.name:
            continue
        names.update(re.findall(r"\bfn\s+(MPIX?_\w+)\s*/\s*PMPIX?_\w+\s*\(", f.read_text()))
    return names


def render_header_block(funcs):
    lines = [BEGIN, "/* Every function of the MPI-4.1 C API (and the MPICH extras above the",
             "   standard), as MPI_X and PMPI_X. Those hcomm does not implement yet fail with",
             "   MPI_ERR_UNSUPPORTED_OPERATION: docs/API-COVERAGE.md lists them. */"]
    for name in sorted(funcs):
        p = funcs[name]
        lines.append(p.c())
        lines.append(p.c("P" + name))
    lines.append(END)
    return "\n".join(lines)


def render_stubs(funcs, missing):
    out = [
        "//! GENERATED by scripts/gen-mpi-api.py from the MPI Forum's API description",
        "//! (pympistandard): do not edit. Every MPI function hcomm does not implement yet, as",
        "//! `MPI_X` and `PMPI_X`: each fails with `MPI_ERR_UNSUPPORTED_OPERATION` through the",
        "//! error handler of its communicator (or of the process, for calls on windows,",
        "//! sessions and other objects hcomm cannot create yet; files: `MPI_ERRORS_RETURN`,",
        "//! the standard's default for files), naming itself.",
        "",
        "#![allow(unused_variables, clippy::too_many_arguments)]",
        "",
        "use std::ffi::{c_int, c_void};",
        "",
        "use hcomm_core::abi::api::unsupported::On;",
        "",
        "hcomm_core::export_unsupported_mpi_functions! {",
    ]
    for name in sorted(missing):
        p = funcs[name]
        if p.ret != "int":
            raise SystemExit(f"gen-mpi-api.py: {name} returns {p.ret}: it needs a hand-written implementation")
        params = ", ".join(f"{n}: {t}" for n, t, _ in p.rust_params())
        out.append(f"    fn {name} / P{name}({params}) => {p.error_object()};")
    out.append("}")
    return "\n".join(out) + "\n"


def render_symbols(funcs, implemented):
    syms = set(DATA_SYMBOLS) | set(HELPER_SYMBOLS)
    for name in set(funcs) | implemented:
        syms.add(name)
        syms.add("P" + name)
    return "\n".join(sorted(syms)) + "\n"


def render_coverage(funcs, implemented, missing):
    def family(n):
        return n.split("_")[1] if n.count("_") >= 1 else n

    total = len(funcs)
    impl_std = sorted(n for n in funcs if n in implemented)
    lines = [
        "# MPI API coverage",
        "",
        "Generated by `scripts/gen-mpi-api.py` from the MPI Forum's API description; do not edit.",
        "",
        f"`libhcomm.so` exports all {total} C functions of MPI 4.1 and MPICH's extras (each as",
        "`MPI_X` and `PMPI_X`; large-count `_c` forms counted separately). "
        f"{len(impl_std)} are implemented;",
        f"the other {len(missing)} fail with `MPI_ERR_UNSUPPORTED_OPERATION` through the error handler",
        "of their communicator (else the process's: `MPI_COMM_WORLD`'s; files: returned, as the",
        "standard's default file error handler does), with a message naming the function.",
        "Handle conversions of integer handles (`MPI_Comm_c2f`, ...) are macros, as in MPICH.",
        "",
        "## Implemented",
        "",
    ]
    lines += wrap(impl_std)
    lines += ["", "## Not implemented yet (MPI_ERR_UNSUPPORTED_OPERATION)", ""]
    groups = {}
    for n in sorted(missing):
        groups.setdefault(family(n), []).append(n)
    for g in sorted(groups):
        lines.append(f"- **{g}** ({len(groups[g])}): " + ", ".join(f"`{n}`" for n in groups[g]))
    return "\n".join(lines) + "\n"


def wrap(names):
    return ["- " + ", ".join(f"`{n}`" for n in names[i:i + 8]) for i in range(0, len(names), 8)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="fail if a generated file is out of date")
    args = ap.parse_args()

    funcs = standard_functions()
    implemented = implemented_functions()
    unknown = sorted(implemented - set(funcs))
    if unknown:
        sys.exit(f"gen-mpi-api.py: implemented but not in the description: {' '.join(unknown)}")
    missing = sorted(set(funcs) - implemented)

    header = HEADER.read_text()
    if BEGIN not in header or END not in header:
        sys.exit(f"gen-mpi-api.py: {HEADER} lacks the {BEGIN!r} ... {END!r} markers")
    a, b = header.index(BEGIN), header.index(END) + len(END)
    outputs = {
        HEADER: header[:a] + render_header_block(funcs) + header[b:],
        STUBS: render_stubs(funcs, missing),
        SYMBOLS: render_symbols(funcs, implemented),
        COVERAGE: render_coverage(funcs, implemented, missing),
    }
    stale = []
    for path, text in outputs.items():
        old = path.read_text() if path.exists() else None
        if old != text:
            stale.append(path.relative_to(ROOT))
            if not args.check:
                path.write_text(text)
    if args.check:
        if stale:
            sys.exit("gen-mpi-api.py --check: out of date (run scripts/gen-mpi-api.py): "
                     + " ".join(map(str, stale)))
        print(f"gen-mpi-api.py --check: up to date ({len(funcs)} functions, "
              f"{len(funcs) - len(missing)} implemented)")
    else:
        print(f"gen-mpi-api.py: {len(funcs)} functions, {len(funcs) - len(missing)} implemented, "
              f"{len(missing)} stubs; wrote {' '.join(map(str, stale)) or 'nothing (up to date)'}")


if __name__ == "__main__":
    main()
