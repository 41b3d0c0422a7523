#!/usr/bin/env python3
"""gen-mpi-api.py - hcomm's MPI C API, generated from one description of the standard.

The description is the MPI Forum's machine-readable API (PyPI `pympistandard`, the data the
standard's own bindings chapters are built from), plus the few MPICH-only functions that
programs built against MPICH link to (EXTRAS below). From it this script writes, and `--check`
verifies are up to date (CI runs it):

  include/mpi.h           the prototypes block (every function as MPI_X and PMPI_X, the
                          large-count `_c` forms included), between the GENERATED markers
  src/entry_points.rs     the entry points (MPI_X and PMPI_X, and the `_c` forms) of the
                          implemented functions whose Rust implementation follows the
                          convention below: written from the description's C signature, so
                          the int and large-count forms of one function share one body
  src/unsupported.rs      an entry point (MPI_X and PMPI_X) for every function hcomm does not
                          implement yet: it fails with MPI_ERR_UNSUPPORTED_OPERATION through
                          the right error handler, naming the function (never a loader
                          error, never a silent success)
  src/libhcomm.symbols    the export list of libhcomm.so (tests/exports.rs compares it with
                          the library)
  docs/API-COVERAGE.md    which functions are implemented and which are not

Implemented functions are the ones with an implementation in `core/src/abi/api/` that
follows the convention (for `MPI_Foo_bar` and `MPI_Foo_bar_c`: `pub unsafe fn foo_bar(name:
&'static str, <the C parameters in order>) -> c_int`, re-exported at `abi::api`; the name
parameter may be left out; a scalar count that is `int` in one form and `MPI_Count` in the
other is a `Count`, an array of them `Ints`; ALIASES maps the MPI-1 names); the nonblocking
and persistent collectives (`MPI_Ixxx`, `MPI_Xxx_init`), whose entry points are generated from
the plan of the blocking form (`core/src/abi/api/plan.rs`: `pub unsafe fn xxx(<the blocking
form's C parameters>, c: &Comm) -> Result<Plan>`) started by `start_nonblocking` or
`start_persistent`, so each collective's checks are written once for its three forms; and the few whose
entry points are still written by hand in `src/*.rs` with `export_mpi_functions!` (`fn MPI_X /
PMPI_X(...)`: conversions no convention covers). Everything else in the description gets a
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
ENTRIES = ROOT / "src/entry_points.rs"
API = ROOT / "core/src/abi/api"
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
    # ULFM's agreement, as MPICH 4.1+ exports it (for programs built against such an MPICH).
    "int MPIX_Comm_agree(MPI_Comm comm, int *flag)",
    "int MPIX_Comm_iagree(MPI_Comm comm, int *flag, MPI_Request *request)",
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


def unarray(param):
    """`T name[]` as `T *name` (`T name[][3]` and sized arrays stay)."""
    m = re.match(r"^(.*?\S)\s*\b(\w+)\[\]$", param)
    if not m:
        return param
    base = m.group(1)
    return f"{base}*{m.group(2)}" if base.endswith("*") else f"{base} *{m.group(2)}"


class Proto:
    def __init__(self, text):
        text = text.replace("\\ldots", "...")
        m = PROTO_RE.match(text.strip())
        if not m:
            raise SystemExit(f"gen-mpi-api.py: cannot parse prototype {text!r}")
        self.ret, self.name, params = m.groups()
        self.kinds = {}  # parameter name -> the description's kind (none for EXTRAS)
        self.params = [] if params.strip() in ("", "void") else [p.strip() for p in params.split(", ")]

    def c(self, name=None):
        """The C prototype, MPICH's spelling: `T *p` rather than `T* p`, except that an array
        parameter `T p[]` is written `T *p` (the same type). GCC 11 and later read `[]` as a
        promise of at least one element and warn (-Wstringop-overflow, an error under -Werror)
        where a program passes MPI_STATUSES_IGNORE or another sentinel there, as MPICH's own
        header makes it do."""
        ps = ", ".join(re.sub(r"\*+ ?(?=\w)", lambda m: " " + m.group(0).strip(), unarray(p)).replace("  ", " ")
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
            proto = Proto(OVERRIDES.get(name, str(e)))
            proto.kinds = {prm.name: prm.kind.name for prm in e.parameters}
            out[name] = proto
    for text in EXTRAS:
        p = Proto(text)
        out[p.name] = p
    return out


def implemented_functions():
    """MPI_X names with a hand-written entry point in src/*.rs."""
    names = set()
    for f in sorted((ROOT / "src").glob("*.rs")):
        if f.name in (STUBS.name, ENTRIES.name):
            continue
        names.update(re.findall(r"\bfn\s+(MPIX?_\w+)\s*/\s*PMPIX?_\w+\s*\(", f.read_text()))
    return names


# MPI-1 names (removed in MPI-3.0, still in MPICH's ABI) and other functions implemented by an
# api function of another name.
ALIASES = {
    "MPI_Errhandler_set": "comm_set_errhandler",
    "MPI_Errhandler_get": "comm_get_errhandler",
    "MPIX_Query_cuda_support": "query_cuda_support",
    "MPI_Address": "get_address",
    "MPI_Status_set_elements_x": "status_set_elements",
}

API_FN_RE = re.compile(r"^pub (?:unsafe )?fn (\w+)\s*\(([^)]*)\)\s*->\s*c_int\s*\{", re.M)


def api_functions():
    """The public api functions: path below `hcomm_core::abi::api` -> [(param, type)]
    (`f` when its module is re-exported with `pub use m::*`, `m::f` when it is `pub mod m`)."""
    mod_rs = (API / "mod.rs").read_text()
    glob_mods = set(re.findall(r"^pub use (\w+)::\*;", mod_rs, re.M))
    pub_mods = set(re.findall(r"^pub mod (\w+);", mod_rs, re.M))
    out = {}
    for f in sorted(API.glob("*.rs")):
        if f.stem in glob_mods:
            prefix = ""
        elif f.stem in pub_mods:
            prefix = f.stem + "::"
        else:
            continue
        for m in API_FN_RE.finditer(f.read_text()):
            params = []
            for p in re.sub(r"\s+", " ", m.group(2)).split(","):
                if p.strip():
                    n, t = p.split(":", 1)
                    params.append((n.strip(), t.strip()))
            out.setdefault(m.group(1), (prefix + m.group(1), params))
    return out


def c_category(ctype, arr):
    """What a C parameter's pointer points to (None for a scalar)."""
    base = ctype.replace("const ", "").strip()
    stars = base.count("*") + (1 if arr else 0)
    base = base.replace("*", "").strip()
    if stars == 0:
        return None
    if base.endswith("_function") or base.endswith("_function_c") or base.endswith("_fn"):
        return "fn"
    if base == "char":
        return "char" + "*" * (stars - 1)
    if stars > 1:
        return "other"
    if base in INT_TYPES:
        return "int"
    if base in I64_TYPES:
        return "i64"
    if base == "void":
        return "void"
    if base == "MPI_Status":
        return "status"
    return "other"


def rust_category(rty):
    m = re.match(r"^\*(?:mut|const) (.*)$", rty)
    if not m:
        return "fn" if re.match(r"^Option<\w+Fn>$", rty) else None
    inner = m.group(1)
    if inner.startswith("*"):
        inner2 = inner
        depth = 0
        while inner2.startswith("*"):
            inner2 = re.sub(r"^\*(?:mut|const) ", "", inner2)
            depth += 1
        return "char" + "*" * depth if inner2 == "c_char" else "other"
    return {"c_int": "int", "i64": "i64", "Count": "i64", "c_void": "void", "c_char": "char",
            "Status": "status"}.get(inner, "other")


PLAN_FN_RE = re.compile(r"^pub unsafe fn (\w+)\s*\(([^)]*)\)\s*->\s*Result<Plan>\s*\{", re.M)


# The modules that hold plans of collectives (`pub mod` of `hcomm_core::abi::api`).
PLAN_MODULES = ["plan", "neighbor"]


def plan_functions():
    """The collectives' plans (`core/src/abi/api/{plan,neighbor}.rs`): name -> (module,
    [(param, type)] without the trailing `c: &Comm`)."""
    out = {}
    for mod, m in ((mod, m) for mod in PLAN_MODULES
                   for m in PLAN_FN_RE.finditer((API / f"{mod}.rs").read_text())):
        params = []
        for p in re.sub(r"\s+", " ", m.group(2)).split(","):
            if p.strip():
                n, t = p.split(":", 1)
                params.append((n.strip(), t.strip()))
        if not params or params[-1][1] != "&Comm":
            raise SystemExit(f"gen-mpi-api.py: plan::{m.group(1)} must take `c: &Comm` last")
        out[m.group(1)] = (mod, params[:-1])
    return out


def split_param(cp):
    m = re.match(r"^(.*?)\s*\b(\w+)((?:\[[0-9]*\])*)$", cp)
    ctype, pname, arr = m.groups()
    if pname in RUST_KEYWORDS:
        pname += "_"
    return ctype, pname, arr


def bind_form(proto, plans):
    """The generated entry point of a collective through its plan, as (extern parameters,
    call), or None: the nonblocking form (`MPI_Ixxx`), the persistent form (`MPI_Xxx_init`),
    and the blocking form where no api function implements it. The nonblocking and
    persistent forms' parameters are the blocking form's, then `info` (persistent) and
    `request`."""
    name = proto.name
    short = name.split("_", 1)[1]
    if short.endswith("_c"):
        short = short[:-2]
    if short.endswith("_init"):
        base, tail, start = short[:-5].lower(), ["MPI_Info info", "MPI_Request *request"], "start_persistent"
    elif short.startswith("I") and short[1:].lower() in plans:
        base, tail, start = short[1:].lower(), ["MPI_Request *request"], "start_nonblocking"
    else:
        base, tail, start = short.lower(), [], "run_blocking"
    if base not in plans:
        return None
    mod, params = plans[base]
    cparams = [p for p in proto.params if p != "..."]
    n = len(tail)
    head, rest = cparams[:len(cparams) - n], cparams[len(cparams) - n:]
    if [" ".join(split_param(p)[:2]).replace("* ", " *") for p in rest] != tail:
        return None
    if not head or head[-1] != "MPI_Comm comm":
        return None
    bound = bind_params(cparams[:len(cparams) - n - 1], params)
    if bound is None:
        return None
    ext, args = bound
    tail_ext = [("comm", "c_int"), ("info", "c_int"), ("request", "*mut c_int")]
    ext += [tail_ext[0]] + tail_ext[3 - n:]
    handles = ", ".join(name for name, _ in [tail_ext[0]] + tail_ext[3 - n:])
    call = f'api::{start}("{name}", {handles}, |c| api::{mod}::{base}({", ".join(args + ["c"])}))'
    return ext, call


def bind(proto, api):
    """The generated entry point of `proto` through an api function, as (api fn, extern
    parameters, call arguments), or None when no api function fits."""
    name = proto.name
    short = name.split("_", 1)[1]
    candidates = [ALIASES.get(name), short.lower()]
    if name.endswith("_c"):
        candidates.append(short[:-2].lower())
    for fname in filter(None, candidates):
        if fname not in api:
            continue
        path, params = api[fname]
        args = []
        rest = params
        if params and params[0][1] == "&'static str":
            args.append(f'"{name}"')
            rest = params[1:]
        cparams = [p for p in proto.params if p != "..."]
        bound = bind_params(cparams, rest)
        if bound is not None:
            return path, bound[0], args + bound[1]
    return None


def bind_params(cparams, rest):
    """The extern parameters and the call arguments that pass the C parameters `cparams` to
    Rust parameters `rest` (converting what differs between the int and large-count forms),
    or None when they do not fit."""
    if len(rest) != len(cparams):
        return None
    ext, args = [], []
    for (aname, aty), cp in zip(rest, cparams):
        ctype, pname, arr = split_param(cp)
        base = ctype.replace("const ", "").strip()
        cat = c_category(ctype, arr)
        if cat is None:  # a scalar
            if aty == "Count" and base == "int":
                ext.append((pname, "c_int"))
                args.append(f"Count::from({pname})")
            elif aty in ("Count", "i64") and base in I64_TYPES:
                ext.append((pname, "i64"))
                args.append(pname)
            elif aty == "c_int" and base in INT_TYPES:
                ext.append((pname, "c_int"))
                args.append(pname)
            elif aty == "f64" and base == "double":
                ext.append((pname, "f64"))
                args.append(pname)
            else:
                return None
        elif aty in ("Ints", "RecvCounts") and cat in ("int", "i64"):
            wide = {"Ints": "Long", "RecvCounts": "Count"}[aty]
            ctor = "Int" if cat == "int" else wide
            ext.append((pname, "*const c_int" if cat == "int" else "*const i64"))
            args.append(f"{aty}::{ctor}({pname})")
        elif rust_category(aty) == cat and cat != "other":
            ext.append((pname, aty))
            args.append(pname)
        else:
            return None
    return ext, args


# Kinds of scalar pointers that are not output handles or values the call must be able to
# write: statuses (MPI_STATUS_IGNORE), buffers, strings, attribute values and the like, whose
# rules the implementation knows.
NOT_OUT_KINDS = {
    "BUFFER", "C_BUFFER", "C_BUFFER2", "C_BUFFER3", "C_BUFFER4", "STATUS", "F08_STATUS",
    "F90_STATUS", "ATTRIBUTE_VAL", "ATTRIBUTE_VAL_10", "EXTRA_STATE", "EXTRA_STATE2",
    "STRING", "STRING_ARRAY", "STRING_2DARRAY", "FUNCTION", "POLYFUNCTION", "FUNCTION_SMALL",
    "LOGICAL_VOID", "LOGICAL_OPTIONAL", "TOOL_MPI_OBJ", "ARGUMENT_COUNT", "ARGUMENT_LIST",
    "LOCATION", "POLYLOCATION",
}


def common_checks(proto):
    """The checks every function with such an argument makes (see core/src/abi/api/checks.rs),
    from the description's parameter kinds: Rust statements that return the failed check's
    error code. None for calls whose errors go to a window's, file's or session's handler."""
    on = proto.error_object()
    if on.startswith("On::Comm("):
        comm = "Some(" + on[len("On::Comm("):-1] + ")"
    elif on == "On::Process":
        comm = "None"
    else:
        return []
    out = []
    for cp in proto.params:
        if cp == "...":
            continue
        ctype, pname, arr = split_param(cp)
        kind = proto.kinds.get(pname.rstrip("_"))
        if kind is None or arr:
            continue
        cat = c_category(ctype, arr)
        what = pname.rstrip("_")
        if cat is None and kind.endswith("_NNI"):
            fn = "negative_count" if kind.endswith("NUM_ELEM_NNI") else "negative_arg"
            if kind.startswith("RANK") or kind.startswith("RMA"):
                continue
            out.append(f'if {pname} < 0 {{ return api::checks::{fn}("{proto.name}", {comm}, '
                       f'"{what}", {pname}); }}')
        elif (cat is not None and "const" not in ctype and ctype.count("*") == 1
              and kind not in NOT_OUT_KINDS and cat != "void"):
            out.append(f'if {pname}.is_null() {{ return api::checks::null("{proto.name}", {comm}, '
                       f'"{what}"); }}')
    return out


def render_entries(funcs, bound):
    out = [
        "//! GENERATED by scripts/gen-mpi-api.py from the MPI Forum's API description",
        "//! (pympistandard) and the signatures in `core/src/abi/api/`: do not edit. The entry",
        "//! points (`MPI_X` and `PMPI_X`) of the implemented functions: each converts what",
        "//! differs between the `int` and large-count forms (a scalar count becomes a `Count`,",
        "//! an array of counts or displacements an `Ints`) and calls the one implementation,",
        "//! which checks every argument under its error handler. Before it, the checks",
        "//! every function with such an argument makes (`hcomm_core::abi::api::checks`),",
        "//! written from the parameters' kinds in the description.",
        "",
        "#![allow(clippy::too_many_arguments, clippy::missing_safety_doc)]",
        "",
        "#[allow(unused_imports)]",
        "use std::ffi::{c_char, c_int, c_void};",
        "",
        "#[allow(unused_imports)]",
        "use hcomm_core::abi::api::{self, Count, GreqCancelFn, GreqFreeFn, GreqQueryFn, Ints, RecvCounts, Status};",
        "#[allow(unused_imports)]",
        "use hcomm_core::abi::objects::CommErrhandlerFn;",
        "#[allow(unused_imports)]",
        "use hcomm_core::coll::{LargeUserFn, UserFn};",
        "",
        "/// `MPI_X` and its profiling twin `PMPI_X`, both calling the implementation.",
        "macro_rules! entry {",
        "    ($name:ident / $pname:ident ($($arg:ident: $ty:ty),*) => $call:expr) => {",
        "        #[no_mangle]",
        "        pub unsafe extern \"C\" fn $name($($arg: $ty),*) -> c_int {",
        "            // SAFETY: the caller's pointers go to the implementation unchanged; it",
        "            // validates each one it uses (the contract of `hcomm_core::abi::api`).",
        "            unsafe { $call }",
        "        }",
        "        #[no_mangle]",
        "        pub unsafe extern \"C\" fn $pname($($arg: $ty),*) -> c_int {",
        "            // SAFETY: as above.",
        "            unsafe { $call }",
        "        }",
        "    };",
        "}",
        "",
    ]
    for name in sorted(bound):
        ext, call, _ = bound[name]
        params = ", ".join(f"{n}: {t}" for n, t in ext)
        checks = common_checks(funcs[name])
        if checks:
            body = "".join(f"\n    {c}" for c in checks)
            out.append(f"entry!({name} / P{name}({params}) => {{{body}\n    {call}\n}});")
        else:
            out.append(f"entry!({name} / P{name}({params}) => {call});")
    return "\n".join(out) + "\n"


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
        "Implemented with a limit: a buffer attached to a session (`MPI_Session_attach_buffer`) is",
        "kept, flushed and detached, but hcomm does not record which session a communicator was",
        "made from, so buffered sends on that session's communicators use the communicator's",
        "buffer or the process's (`MPI_Buffer_attach`), and fail with `MPI_ERR_BUFFER` when",
        "neither is attached.",
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
    ap.add_argument("--report", action="store_true",
                    help="list hand-written entry points the generator could write, and api "
                         "functions no generated entry point uses; write nothing")
    args = ap.parse_args()

    funcs = standard_functions()
    by_hand = implemented_functions()
    api = api_functions()
    plans = plan_functions()
    bound = {}
    for name, proto in funcs.items():
        if name not in by_hand and proto.ret == "int":
            b = bind(proto, api)
            if b:
                path, ext, call_args = b
                bound[name] = (ext, f"api::{path}({', '.join(call_args)})", path)
            else:
                f = bind_form(proto, plans)
                if f:
                    bound[name] = (f[0], f[1], None)
    if args.report:
        for name in sorted(by_hand):
            if funcs.get(name) and funcs[name].ret == "int" and bind(funcs[name], api):
                print(f"by hand but generatable: {name}")
        used = {b[2] for b in bound.values()}
        for fname in sorted(set(api) - used):
            print(f"api function no generated entry point uses: {fname}")
        return
    implemented = by_hand | set(bound)
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
        ENTRIES: render_entries(funcs, bound),
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
