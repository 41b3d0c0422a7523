//! Element types and reduction operations as the algorithms see them.
//!
//! The ABI layer (`abi::handles`) maps an MPI datatype handle to a [`Datatype`]; everything
//! below the ABI works only with these values, so a second ABI (Open MPI, MPI-5) only adds a
//! mapping, never a new code path.

/// How the elements of a datatype are interpreted by reductions.
///
/// Pair types (`MPI_2INT`, `MPI_FLOAT_INT`, ...) are laid out as the C struct
/// `{ value; int index; }` with the C ABI's padding: their size (bytes of data) can be
/// smaller than their extent (stride in a buffer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElemType {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    /// IEEE binary16 (`MPIX_C_FLOAT16`): reduced in f32, rounded to nearest-even.
    F16,
    /// bfloat16 (`MPIX_BFLOAT16`): reduced in f32, rounded to nearest-even.
    BF16,
    F32,
    F64,
    /// C `_Bool` (one byte, 0 or 1): logical ops only.
    Bool,
    /// `MPI_BYTE`: bitwise ops only.
    Byte,
    /// Fortran `LOGICAL` (`MPI_LOGICAL`, 4 bytes): logical ops only; nonzero is true and
    /// results are 0 or 1, as MPICH (`MPII_TO_FLOG`) and Open MPI compute them for gfortran,
    /// whose `.TRUE.` is 1.
    Logical,
    /// `MPI_CHAR`: MPI allows no reduction on it, but MPICH and Open MPI accept
    /// SUM/PROD/MIN/MAX (signed 8-bit arithmetic) and the logical and bitwise ops, and
    /// programs rely on it.
    Char,
    /// x87 80-bit extended precision (`long double` on x86-64), stored in 16 bytes (10 bytes
    /// of data, 6 of padding). Reducible on x86-64 only.
    F80,
    /// `float _Complex` = `{float re; float im;}` (`MPI_C_FLOAT_COMPLEX`, `MPI_COMPLEX`, ...).
    C32,
    /// `double _Complex` = `{double re; double im;}`.
    C64,
    /// `long double _Complex` = two [`ElemType::F80`], extent 32.
    C80,
    /// `MPI_2INT` = `{int; int}`, size 8, extent 8.
    PairI32I32,
    /// `MPI_FLOAT_INT` = `{float; int}`, size 8, extent 8.
    PairF32I32,
    /// `MPI_DOUBLE_INT` = `{double; int}`, size 12, extent 16.
    PairF64I32,
    /// `MPI_LONG_INT` = `{long; int}`, size 12, extent 16.
    PairI64I32,
    /// `MPI_SHORT_INT` = `{short; int}`, size 6, extent 8.
    PairI16I32,
    /// `MPI_LONG_DOUBLE_INT` = `{long double; int}`, index at 16, size 20, extent 32.
    PairF80I32,
    /// `MPI_2REAL` = `{float; float}`: Fortran's MINLOC/MAXLOC pair, the index a real too.
    PairF32F32,
    /// `MPI_2DOUBLE_PRECISION` = `{double; double}`.
    PairF64F64,
    /// A type that can be moved (bcast, allgather) but never reduced:
    /// `MPI_PACKED`, `MPI_WCHAR`, `MPI_CHARACTER`, ...
    Opaque,
}

impl ElemType {
    /// Stride of one element in a buffer, in bytes. `None` for [`ElemType::Opaque`],
    /// whose extent comes from the datatype handle.
    pub const fn extent(self) -> Option<usize> {
        use ElemType::*;
        Some(match self {
            I8 | U8 | Bool | Byte | Char => 1,
            I16 | U16 | F16 | BF16 => 2,
            I32 | U32 | F32 | Logical => 4,
            I64 | U64 | F64 | C32 => 8,
            F80 | C64 => 16,
            C80 => 32,
            PairI32I32 | PairF32I32 | PairI16I32 | PairF32F32 => 8,
            PairF64I32 | PairI64I32 | PairF64F64 => 16,
            PairF80I32 => 32,
            Opaque => return None,
        })
    }
}

/// A predefined reduction operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Max,
    Min,
    Sum,
    Prod,
    Land,
    Band,
    Lor,
    Bor,
    Lxor,
    Bxor,
    Minloc,
    Maxloc,
}

/// A datatype as the core sees it: how to interpret elements, and their size and extent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Datatype {
    pub elem: ElemType,
    /// Bytes of data in one element (`MPI_Type_size`).
    pub size: usize,
    /// Stride between elements in a buffer (`MPI_Type_get_extent`).
    pub extent: usize,
}

impl Datatype {
    pub const fn new(elem: ElemType, size: usize, extent: usize) -> Self {
        Datatype { elem, size, extent }
    }
}
