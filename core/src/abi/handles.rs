//! The MPICH ABI personality: handle values of `include/mpi.h` and their meaning.
//!
//! MPICH handles are `int`s: bits 31:30 say builtin (01) or user object (10), bits 29:26 the
//! object type. Builtin datatypes encode their size in bits 15:8 (`0x4c00SSII`).
//!
//! User-defined datatypes and ops live in process-wide tables keyed by an index that the
//! handle carries: `0xcc000000 | index` for datatypes and `0x98000000 | index` for ops (MPICH's
//! "indirect datatype" and "direct op" kinds, so they never equal a predefined handle, pair
//! types `0x8c00000X` included). Indexes are never reused: a freed handle stays invalid.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::coll::UserFunction;
use crate::datatype::{Datatype, ElemType, ReduceOp};
use crate::typemap::{Atom, Layout};

pub const COMM_WORLD: i32 = 0x4400_0000;
pub const COMM_SELF: i32 = 0x4400_0001;
pub const COMM_NULL: i32 = 0x0400_0000;
/// User communicators: `USER_COMM_BASE | index` (MPICH's "direct" kind for communicators).
pub const USER_COMM_BASE: i32 = 0x8400_0000_u32 as i32;
pub const USER_COMM_MASK: i32 = 0x03ff_ffff;

pub const DATATYPE_NULL: i32 = 0x0c00_0000;
pub const OP_NULL: i32 = 0x1800_0000;

pub const ERRHANDLER_NULL: i32 = 0x1400_0000;
pub const ERRORS_ARE_FATAL: i32 = 0x5400_0000;
pub const ERRORS_RETURN: i32 = 0x5400_0001;
pub const ERRORS_ABORT: i32 = 0x5400_0003;

// Groups, user error handlers, predefined attribute keys (the groups area).
pub const GROUP_NULL: i32 = 0x0800_0000;
pub const GROUP_EMPTY: i32 = 0x4800_0000;
/// Index bits of a user object handle (`base | index`), for every kind below.
pub const USER_OBJECT_MASK: i32 = 0x03ff_ffff;
/// User groups: MPICH's "direct" kind for groups, `0x88000000 | index`.
pub const USER_GROUP_BASE: i32 = 0x8800_0000_u32 as i32;
/// User error handlers: MPICH's "direct" kind for error handlers, `0x94000000 | index`.
pub const USER_ERRHANDLER_BASE: i32 = 0x9400_0000_u32 as i32;
pub const PROC_NULL: i32 = -1;
pub const ANY_SOURCE: i32 = -2;
pub const COMM_TYPE_SHARED: i32 = 1;
pub const COMM_TYPE_HW_GUIDED: i32 = 2;
pub const COMM_TYPE_HW_UNGUIDED: i32 = 3;
pub const MAX_OBJECT_NAME: usize = 128;
pub const KEYVAL_TAG_UB: i32 = 0x6440_0001;
pub const KEYVAL_HOST: i32 = 0x6440_0003;
pub const KEYVAL_IO: i32 = 0x6440_0005;
pub const KEYVAL_WTIME_IS_GLOBAL: i32 = 0x6440_0007;
pub const KEYVAL_UNIVERSE_SIZE: i32 = 0x6440_0009;
pub const KEYVAL_APPNUM: i32 = 0x6440_000d;
pub const KEYVAL_LASTUSEDCODE: i32 = 0x6440_000b;
pub const KEYVAL_INVALID: i32 = 0x2400_0000;
/// The largest tag `MPI_Comm_get_attr(MPI_TAG_UB)` reports (Open MPI's value; MPICH reports
/// 2^28-1; MPI asks for at least 32767). Point-to-point accepts tags `0..=MAX_TAG`.
pub const MAX_TAG: i32 = i32::MAX;

pub const IN_PLACE: usize = usize::MAX; // (void *)-1
pub const UNDEFINED: i32 = -32766;

/// `MPI_GRAPH`, `MPI_CART`, `MPI_DIST_GRAPH` (`MPI_Topo_test`).
pub const GRAPH: i32 = 1;
pub const CART: i32 = 2;
pub const DIST_GRAPH: i32 = 3;

/// The objects whose addresses the library exports as `MPI_UNWEIGHTED` and
/// `MPI_WEIGHTS_EMPTY` (`int * const`): weights arguments are compared with them by address.
pub static UNWEIGHTED_OBJ: i32 = 0;
pub static WEIGHTS_EMPTY_OBJ: i32 = 0;

pub const IDENT: i32 = 0;
pub const CONGRUENT: i32 = 1;
pub const SIMILAR: i32 = 2;
pub const UNEQUAL: i32 = 3;

pub const THREAD_SINGLE: i32 = 0;
pub const THREAD_MULTIPLE: i32 = 3;

pub const MAX_PROCESSOR_NAME: usize = 128;
pub const MAX_ERROR_STRING: usize = 512;
pub const MAX_LIBRARY_VERSION_STRING: usize = 8192;

/// Every predefined datatype of `include/mpi.h`, with its name (for messages).
const DATATYPES: &[(i32, &str, ElemType, usize, usize)] = {
    use ElemType::*;
    &[
        (0x4c000101, "MPI_CHAR", Char, 1, 1),
        (0x4c000118, "MPI_SIGNED_CHAR", I8, 1, 1),
        (0x4c000102, "MPI_UNSIGNED_CHAR", U8, 1, 1),
        (0x4c00010d, "MPI_BYTE", Byte, 1, 1),
        (0x4c00040e, "MPI_WCHAR", Opaque, 4, 4),
        (0x4c000203, "MPI_SHORT", I16, 2, 2),
        (0x4c000204, "MPI_UNSIGNED_SHORT", U16, 2, 2),
        (0x4c000405, "MPI_INT", I32, 4, 4),
        (0x4c000406, "MPI_UNSIGNED", U32, 4, 4),
        (0x4c000807, "MPI_LONG", I64, 8, 8),
        (0x4c000808, "MPI_UNSIGNED_LONG", U64, 8, 8),
        (0x4c00040a, "MPI_FLOAT", F32, 4, 4),
        (0x4c00080b, "MPI_DOUBLE", F64, 8, 8),
        (0x4c00100c, "MPI_LONG_DOUBLE", F80, 16, 16),
        (0x4c000809, "MPI_LONG_LONG", I64, 8, 8),
        (0x4c000819, "MPI_UNSIGNED_LONG_LONG", U64, 8, 8),
        (0x4c00010f, "MPI_PACKED", Opaque, 1, 1),
        (0x8c000000_u32 as i32, "MPI_FLOAT_INT", PairF32I32, 8, 8),
        (0x8c000001_u32 as i32, "MPI_DOUBLE_INT", PairF64I32, 12, 16),
        (0x8c000002_u32 as i32, "MPI_LONG_INT", PairI64I32, 12, 16),
        (0x8c000003_u32 as i32, "MPI_SHORT_INT", PairI16I32, 6, 8),
        (0x4c000816, "MPI_2INT", PairI32I32, 8, 8),
        (
            0x8c000004_u32 as i32,
            "MPI_LONG_DOUBLE_INT",
            PairF80I32,
            20,
            32,
        ),
        (0x4c00081e, "MPI_COMPLEX", C32, 8, 8),
        (0x4c001022, "MPI_DOUBLE_COMPLEX", C64, 16, 16),
        (0x4c00041d, "MPI_LOGICAL", Logical, 4, 4),
        (0x4c00041c, "MPI_REAL", F32, 4, 4),
        (0x4c00081f, "MPI_DOUBLE_PRECISION", F64, 8, 8),
        (0x4c00041b, "MPI_INTEGER", I32, 4, 4),
        (0x4c000820, "MPI_2INTEGER", PairI32I32, 8, 8),
        (0x4c000821, "MPI_2REAL", PairF32F32, 8, 8),
        (0x4c001023, "MPI_2DOUBLE_PRECISION", PairF64F64, 16, 16),
        (0x4c00011a, "MPI_CHARACTER", Opaque, 1, 1),
        (0x4c000427, "MPI_REAL4", F32, 4, 4),
        (0x4c000829, "MPI_REAL8", F64, 8, 8),
        // MPICH 4 on x86-64 gcc defines MPI_REAL16 as C `long double` (`MPIR_REAL16_CTYPE`)
        // and reduces it so; hcomm follows the ABI it implements (gfortran's REAL(16) is
        // binary128, which neither MPI reduces as such).
        (0x4c00102b, "MPI_REAL16", F80, 16, 16),
        (0x4c000828, "MPI_COMPLEX8", C32, 8, 8),
        (0x4c00102a, "MPI_COMPLEX16", C64, 16, 16),
        (0x4c00202c, "MPI_COMPLEX32", C80, 32, 32),
        (0x4c00012d, "MPI_INTEGER1", I8, 1, 1),
        (0x4c00022f, "MPI_INTEGER2", I16, 2, 2),
        (0x4c000430, "MPI_INTEGER4", I32, 4, 4),
        (0x4c000831, "MPI_INTEGER8", I64, 8, 8),
        (0x4c000137, "MPI_INT8_T", I8, 1, 1),
        (0x4c000238, "MPI_INT16_T", I16, 2, 2),
        (0x4c000439, "MPI_INT32_T", I32, 4, 4),
        (0x4c00083a, "MPI_INT64_T", I64, 8, 8),
        (0x4c00013b, "MPI_UINT8_T", U8, 1, 1),
        (0x4c00023c, "MPI_UINT16_T", U16, 2, 2),
        (0x4c00043d, "MPI_UINT32_T", U32, 4, 4),
        (0x4c00083e, "MPI_UINT64_T", U64, 8, 8),
        (0x4c00013f, "MPI_C_BOOL", Bool, 1, 1),
        (0x4c000840, "MPI_C_FLOAT_COMPLEX", C32, 8, 8),
        (0x4c001041, "MPI_C_DOUBLE_COMPLEX", C64, 16, 16),
        (0x4c002042, "MPI_C_LONG_DOUBLE_COMPLEX", C80, 32, 32),
        (0x4c000246, "MPIX_C_FLOAT16", F16, 2, 2),
        (0x4c00024c, "MPIX_BFLOAT16", BF16, 2, 2),
        (0x4c000843, "MPI_AINT", I64, 8, 8),
        (0x4c000844, "MPI_OFFSET", I64, 8, 8),
        (0x4c000845, "MPI_COUNT", I64, 8, 8),
        (0x4c000133, "MPI_CXX_BOOL", Bool, 1, 1),
        (0x4c000834, "MPI_CXX_FLOAT_COMPLEX", C32, 8, 8),
        (0x4c001035, "MPI_CXX_DOUBLE_COMPLEX", C64, 16, 16),
        (0x4c002036, "MPI_CXX_LONG_DOUBLE_COMPLEX", C80, 32, 32),
    ]
};

/// A predefined datatype, or `None` for anything else (null, user-defined, garbage).
pub fn datatype(h: i32) -> Option<(Datatype, &'static str)> {
    DATATYPES
        .iter()
        .find(|d| d.0 == h)
        .map(|&(_, name, elem, size, extent)| (Datatype::new(elem, size, extent), name))
}

/// `MPI_REPLACE` and `MPI_NO_OP`: predefined, but ops of one-sided accumulates only.
pub const OP_REPLACE: i32 = 0x5800_000d;
pub const OP_NO_OP: i32 = 0x5800_000e;

/// A predefined reduction op. `MPI_REPLACE`/`MPI_NO_OP` (one-sided only) are not collectives' ops.
pub fn op(h: i32) -> Option<(ReduceOp, &'static str)> {
    use ReduceOp::*;
    Some(match h {
        0x5800_0001 => (Max, "MPI_MAX"),
        0x5800_0002 => (Min, "MPI_MIN"),
        0x5800_0003 => (Sum, "MPI_SUM"),
        0x5800_0004 => (Prod, "MPI_PROD"),
        0x5800_0005 => (Land, "MPI_LAND"),
        0x5800_0006 => (Band, "MPI_BAND"),
        0x5800_0007 => (Lor, "MPI_LOR"),
        0x5800_0008 => (Bor, "MPI_BOR"),
        0x5800_0009 => (Lxor, "MPI_LXOR"),
        0x5800_000a => (Bxor, "MPI_BXOR"),
        0x5800_000b => (Minloc, "MPI_MINLOC"),
        0x5800_000c => (Maxloc, "MPI_MAXLOC"),
        _ => return None,
    })
}

/// The C-struct alignment of a predefined type, as MPICH 4.0.2 computes it for the struct extent
/// rule (Open MPI agrees except for `MPI_REAL16`/`MPI_COMPLEX32`, 16 there).
fn align_of(name: &str, d: &Datatype) -> usize {
    match d.elem {
        ElemType::PairF32I32 | ElemType::PairI32I32 | ElemType::PairI16I32 => return 4,
        ElemType::PairF64I32 | ElemType::PairI64I32 => return 8,
        _ => {}
    }
    match name {
        "MPI_LONG_DOUBLE_INT" => 16,
        "MPI_REAL16" | "MPI_COMPLEX32" => 1,
        n if n.contains("COMPLEX") || n.starts_with("MPI_2") => d.size / 2,
        _ => d.size,
    }
}

/// A predefined datatype as a typemap entry.
pub fn atom(h: i32) -> Option<Atom> {
    let &(_, name, elem, size, extent) = DATATYPES.iter().find(|d| d.0 == h)?;
    let dt = Datatype::new(elem, size, extent);
    Some(Atom {
        handle: h,
        dt,
        align: align_of(name, &dt),
    })
}

/// `MPI_Type_get_name` of a predefined type (MPICH's spelling).
pub fn datatype_name(h: i32) -> Option<&'static str> {
    let name = DATATYPES.iter().find(|d| d.0 == h)?.1;
    Some(match name {
        "MPI_LONG_LONG" => "MPI_LONG_LONG_INT",
        "MPI_C_FLOAT_COMPLEX" => "MPI_C_COMPLEX",
        n => n,
    })
}

pub const USER_TYPE_BASE: i32 = 0xcc00_0000_u32 as i32;
pub const USER_OP_BASE: i32 = 0x9800_0000_u32 as i32;
const INDEX_MASK: i32 = 0x03ff_ffff;

/// A user-defined datatype.
#[derive(Debug)]
pub struct UserType {
    pub layout: Arc<Layout>,
    committed: AtomicBool,
    /// How it was made (`MPI_Type_get_envelope` / `MPI_Type_get_contents`).
    pub contents: Contents,
}

/// The constructor call of a derived datatype, as `MPI_Type_get_contents` returns it:
/// integer arguments, address arguments, `MPI_Count` arguments (the `_c` constructors put
/// counts and displacements there) and input datatypes.
#[derive(Debug, Default)]
pub struct Contents {
    /// `MPI_COMBINER_*` (MPICH's values).
    pub combiner: i32,
    pub ints: Vec<i64>,
    pub addrs: Vec<i64>,
    pub large: Vec<i64>,
    /// Input types; a user-defined one is kept alive here (the program may free its handle).
    pub types: Vec<TypeRef>,
}

#[derive(Debug, Clone)]
pub enum TypeRef {
    Named(i32),
    User(Arc<UserType>),
}

impl UserType {
    pub fn committed(&self) -> bool {
        self.committed.load(Ordering::Acquire)
    }
}

/// A user-defined op (`MPI_Op_create`).
#[derive(Clone, Copy, Debug)]
pub struct UserOpDef {
    pub f: UserFunction,
    pub commute: bool,
}

/// Objects of one kind, by index.
struct Table<T> {
    next: i32,
    map: BTreeMap<i32, T>,
}

impl<T: Clone> Table<T> {
    const fn new() -> Self {
        Table {
            next: 0,
            map: BTreeMap::new(),
        }
    }
    fn get(&self, h: i32, base: i32) -> Option<T> {
        if h & !INDEX_MASK != base {
            return None;
        }
        self.map.get(&(h & INDEX_MASK)).cloned()
    }
    fn add(&mut self, v: T, base: i32) -> Option<i32> {
        if self.next > INDEX_MASK {
            return None;
        }
        let i = self.next;
        self.next += 1;
        self.map.insert(i, v);
        Some(base | i)
    }
    fn remove(&mut self, h: i32, base: i32) -> bool {
        h & !INDEX_MASK == base && self.map.remove(&(h & INDEX_MASK)).is_some()
    }
}

static TYPES: Mutex<Table<Arc<UserType>>> = Mutex::new(Table::new());
static OPS: Mutex<Table<UserOpDef>> = Mutex::new(Table::new());

/// A user-defined datatype that exists (committed or not).
pub fn user_type(h: i32) -> Option<Arc<UserType>> {
    // Checked before taking the lock: predefined handles are the common case.
    if h & !INDEX_MASK != USER_TYPE_BASE {
        return None;
    }
    TYPES.lock().get(h, USER_TYPE_BASE)
}

/// The layout of any valid datatype, predefined or user-defined (committed or not).
pub fn layout(h: i32) -> Option<Arc<Layout>> {
    match atom(h) {
        Some(a) => Some(Arc::new(Layout::atom(a))),
        None => user_type(h).map(|t| t.layout.clone()),
    }
}

/// Registers a new (uncommitted) datatype; `None` when the handle space is exhausted.
pub fn add_type(layout: Layout) -> Option<i32> {
    add_type_with(Arc::new(layout), Contents::default(), false)
}

/// Registers a new datatype made by `contents`, committed or not (`MPI_Type_dup` keeps the
/// committed state).
pub fn add_type_with(layout: Arc<Layout>, contents: Contents, committed: bool) -> Option<i32> {
    let t = Arc::new(UserType {
        layout,
        committed: AtomicBool::new(committed),
        contents,
    });
    TYPES.lock().add(t, USER_TYPE_BASE)
}

/// A new handle for an existing user type (`MPI_Type_get_contents` hands out input types
/// this way; the program frees the handle, the type lives on where it is used).
pub fn add_type_ref(t: Arc<UserType>) -> Option<i32> {
    TYPES.lock().add(t, USER_TYPE_BASE)
}

/// Marks a user type committed; false if `h` is not one.
pub fn commit_type(h: i32) -> bool {
    user_type(h)
        .map(|t| t.committed.store(true, Ordering::Release))
        .is_some()
}

/// Frees a user type; false if `h` is not one.
pub fn free_type(h: i32) -> bool {
    TYPES.lock().remove(h, USER_TYPE_BASE)
}

pub fn user_op(h: i32) -> Option<UserOpDef> {
    // Checked before taking the lock: every predefined op (MPI_SUM, ...) asks first.
    if h & !INDEX_MASK != USER_OP_BASE {
        return None;
    }
    OPS.lock().get(h, USER_OP_BASE)
}

pub fn add_op(op: UserOpDef) -> Option<i32> {
    OPS.lock().add(op, USER_OP_BASE)
}

pub fn free_op(h: i32) -> bool {
    OPS.lock().remove(h, USER_OP_BASE)
}

pub fn is_errhandler(h: i32) -> bool {
    matches!(h, ERRORS_ARE_FATAL | ERRORS_RETURN | ERRORS_ABORT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_sizes_match_handle_encoding() {
        for &(h, name, _, size, _) in DATATYPES {
            if (h as u32) & 0xfc00_0000 == 0x4c00_0000 {
                assert_eq!(((h >> 8) & 0xff) as usize, size, "{name}");
            }
        }
    }

    #[test]
    fn decode() {
        let (dt, name) = datatype(0x8c000001_u32 as i32).unwrap();
        assert_eq!((dt.size, dt.extent, name), (12, 16, "MPI_DOUBLE_INT"));
        assert!(datatype(DATATYPE_NULL).is_none());
        assert!(datatype(0x12345).is_none());
        assert_eq!(op(0x5800_0003).unwrap().0, ReduceOp::Sum);
        assert!(op(OP_NULL).is_none());
        assert!(op(0x5800_000d).is_none());
        let mut handles: Vec<i32> = DATATYPES.iter().map(|d| d.0).collect();
        handles.sort();
        handles.dedup();
        assert_eq!(handles.len(), DATATYPES.len());
    }

    #[test]
    fn user_handles_are_distinct_and_not_reused() {
        let l = Layout::atom(atom(0x4c000405).unwrap());
        let a = add_type(l.clone()).unwrap();
        let b = add_type(l).unwrap();
        assert_ne!(a, b);
        for h in [a, b] {
            assert_eq!(h as u32 & 0xfc00_0000, 0xcc00_0000);
            assert!(datatype(h).is_none());
        }
        assert!(!user_type(a).unwrap().committed());
        assert!(commit_type(a) && user_type(a).unwrap().committed());
        assert!(free_type(a) && !free_type(a) && user_type(a).is_none());
        assert!(!free_type(0x4c000405) && !commit_type(0x8c000000_u32 as i32));
        assert_eq!(atom(0x8c000001_u32 as i32).unwrap().align, 8);
        assert_eq!(atom(0x4c00100c).unwrap().align, 16);
        assert_eq!(atom(0x4c000840).unwrap().align, 4);
        assert_eq!(datatype_name(0x4c000809), Some("MPI_LONG_LONG_INT"));
    }

    #[test]
    fn extents_of_typed_elements_agree() {
        for &(_, name, elem, size, extent) in DATATYPES {
            if let Some(e) = elem.extent() {
                assert_eq!(e, extent, "{name}");
            }
            assert!(size <= extent, "{name}");
        }
    }
}
