//! CPU reduction kernels: `dst[i] = a[i] op b[i]` for the predefined MPI operations.
//!
//! # Design
//!
//! * **Type erasure at the top.** [`reduce`] looks up one monomorphized kernel for the
//!   `(ElemType, ReduceOp)` pair in a single `match` (`kernel`) and calls it through an
//!   `unsafe fn` pointer. Operations that do not depend on signedness (wrapping SUM/PROD,
//!   logical and bitwise ops) share one kernel per integer width.
//! * **One generic element loop.** Every kernel is `apply::<O>` for an operation type
//!   `O: Op` that combines two elements stored as byte arrays (alignment 1), so
//!   any pointer is a valid element pointer and unaligned buffers need no separate path.
//!   The loop runs over slices, which LLVM auto-vectorizes; the exact in-place cases
//!   (`dst == a`, `dst == b`) use a single `&mut` slice, so no runtime alias checks are
//!   needed and the in-place loops vectorize too.
//! * **ISA dispatch.** On x86_64 each kernel is instantiated twice from the same body: for
//!   the baseline target and inside a `#[target_feature(enable = "avx2")]` function. The AVX2
//!   instance is used when the CPU has AVX2 (detected once, cached in a static). Every
//!   operation is element-wise (no reassociation) and defined below down to the NaN it
//!   returns, so both instances, vector body or scalar tail, give bit-identical results.
//!
//! # Semantics
//!
//! * **Integers**: SUM and PROD wrap (two's complement); MAX/MIN compare signed or unsigned
//!   as the type says. `MPI_CHAR` ([`ElemType::Char`]) is signed 8-bit.
//! * **Logical ops** (LAND, LOR, LXOR, on integers and `Bool`) treat nonzero as true and
//!   store 0 or 1.
//! * **Float SUM/PROD**: IEEE 754 with round-to-nearest-even, except that the NaN returned is
//!   pinned down: if `a` is NaN the result is `a` quieted (payload and sign kept); otherwise a
//!   NaN `b` propagates as the hardware does it (x86_64, aarch64: `b` quieted), and invalid
//!   operations (`inf - inf`, `0 * inf`) give the hardware's default NaN.
//! * **F16 / BF16** are widened to f32 (exact), combined in f32 and rounded back to nearest
//!   even (overflow gives infinity, NaN stays a quiet NaN). f32 carries at least `2p + 2`
//!   significand bits for both formats, so this double rounding is innocuous: SUM and PROD
//!   are correctly rounded in the 16-bit format.
//! * **Float MAX/MIN** follow IEEE 754-2019 `maximum`/`minimum`: if either operand is NaN the
//!   result is NaN, namely `a` if `a` is NaN, else `b` (bits returned unchanged);
//!   `max(-0.0, +0.0) = +0.0` and `min(-0.0, +0.0) = -0.0` in either operand order; otherwise
//!   the larger (smaller) value. The same rule, on the original bits, holds for F16 and BF16.
//! * **MINLOC/MAXLOC** (pair types only) compare the values: if `b`'s value is strictly
//!   smaller (MINLOC) or larger (MAXLOC), the result is `b`'s value and index; if the values
//!   compare equal (including `-0.0 == +0.0`), the result is `a`'s value with the lower of
//!   the two indices; otherwise (`a` better, or a NaN makes them unordered) it is `a`.
//!   Padding bytes of the result (`PairF64I32`, `PairI64I32`, `PairI16I32`) are copied from
//!   `a` (as `MaybeUninit` bytes: padding may be uninitialized).
//! * **Complex SUM/PROD** (`C32`, `C64`, `C80`): SUM is component-wise; PROD is
//!   `(a.re*b.re - a.im*b.im, a.re*b.im + a.im*b.re)` with every product and sum rounded in
//!   the component type, the value C's `_Complex` multiplication gives for finite operands
//!   (C's Annex G recovery of infinities from NaN results is not done).
//! * **`long double`** (`F80`, x86-64 only): x87 `fadd`/`fmul` on the 80-bit values, as C
//!   computes them; MAX/MIN/MINLOC/MAXLOC follow the float rules above. The 6 padding bytes
//!   of the result come from `a`.

use crate::datatype::{ElemType, ReduceOp};
use std::marker::PhantomData;
use std::mem::MaybeUninit;

// ---------------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------------

/// Whether MPI allows `op` on `ty`. Everything else is `MPI_ERR_OP` for the caller.
///
/// * SUM, PROD, MAX, MIN: integers, F16, BF16, F32, F64, F80, and `Char` (as MPICH/Open MPI
///   do).
/// * SUM, PROD (not MAX, MIN): the complex types C32, C64, C80.
/// * LAND, LOR, LXOR: integers, `Bool`, `Logical` and `Char`.
/// * BAND, BOR, BXOR: integers, `Byte` and `Char`.
/// * MINLOC, MAXLOC: the pair types only.
/// * `Opaque`: nothing. The x87 types (F80, C80, PairF80I32): nothing off x86-64.
pub fn is_supported(ty: ElemType, op: ReduceOp) -> bool {
    use ElemType as T;
    use ReduceOp as R;
    if !HAVE_X87 && matches!(ty, T::F80 | T::C80 | T::PairF80I32) {
        return false;
    }
    let int = matches!(
        ty,
        T::I8 | T::U8 | T::I16 | T::U16 | T::I32 | T::U32 | T::I64 | T::U64
    );
    let float = matches!(ty, T::F16 | T::BF16 | T::F32 | T::F64 | T::F80);
    let complex = matches!(ty, T::C32 | T::C64 | T::C80);
    match op {
        R::Sum | R::Prod => int || float || complex || ty == T::Char,
        R::Max | R::Min => int || float || ty == T::Char,
        R::Land | R::Lor | R::Lxor => int || matches!(ty, T::Bool | T::Logical | T::Char),
        R::Band | R::Bor | R::Bxor => int || ty == T::Byte || ty == T::Char,
        R::Minloc | R::Maxloc => matches!(
            ty,
            T::PairI32I32
                | T::PairF32I32
                | T::PairF64I32
                | T::PairI64I32
                | T::PairI16I32
                | T::PairF80I32
                | T::PairF32F32
                | T::PairF64F64
        ),
    }
}

/// Whether the x87 extended type (`long double` on x86-64) can be reduced here.
const HAVE_X87: bool = cfg!(target_arch = "x86_64");

/// `dst[i] = a[i] op b[i]` for `i in 0..count`, elements laid out with stride
/// `ty.extent()`. `a` is the earlier (accumulated) operand, `b` the later one.
///
/// Panics in debug builds if `!is_supported(ty, op)`; does nothing in release builds.
///
/// # Safety
///
/// Unless `count == 0`, `a` and `b` must be valid for reads and `dst` valid for writes of
/// `count * ty.extent()` bytes. `dst` may be exactly equal to `a` and/or `b`; otherwise it
/// must not overlap either. (`a` and `b` may overlap each other.) Pointers may be unaligned.
pub unsafe fn reduce(
    ty: ElemType,
    op: ReduceOp,
    dst: *mut u8,
    a: *const u8,
    b: *const u8,
    count: usize,
) {
    // SAFETY: forwarded caller contract.
    unsafe { reduce_with(detected_isa(), ty, op, dst, a, b, count) }
}

/// Convenience: `inout[i] = inout[i] op input[i]`.
///
/// # Safety
///
/// As for [`reduce`] with `dst = a = inout` and `b = input`: `input` must not overlap
/// `inout` unless it is exactly equal to it.
pub unsafe fn reduce_inplace(
    ty: ElemType,
    op: ReduceOp,
    inout: *mut u8,
    input: *const u8,
    count: usize,
) {
    // SAFETY: forwarded caller contract.
    unsafe { reduce(ty, op, inout, inout, input, count) }
}

/// IEEE binary16 bits to f32 (exact).
#[inline(always)]
pub fn f16_to_f32(h: u16) -> f32 {
    let h = u32::from(h);
    let sign = (h & 0x8000) << 16;
    let em = h & 0x7fff; // exponent and mantissa
    let bits = if em >= 0x7c00 {
        // Infinity or NaN: keep the payload.
        0x7f80_0000 | ((em & 0x3ff) << 13)
    } else if em < 0x0400 {
        // Zero or subnormal: em * 2^-24, exact in f32.
        (em as f32 * f32::from_bits(0x3380_0000)).to_bits()
    } else {
        // Normal: rebias the exponent by 127 - 15.
        (em << 13) + ((127 - 15) << 23)
    };
    f32::from_bits(sign | bits)
}

/// f32 to IEEE binary16 bits, rounding to nearest-even; overflow gives infinity, a NaN
/// gives a quiet NaN with the sign and the top 9 payload bits kept.
#[inline(always)]
pub fn f32_to_f16(f: f32) -> u16 {
    let x = f.to_bits();
    let sign = (x >> 16) & 0x8000;
    let ax = x & 0x7fff_ffff;
    let h = if ax > 0x7f80_0000 {
        0x7e00 | ((ax >> 13) & 0x3ff)
    } else if ax >= 0x4780_0000 {
        // |f| >= 2^16 (or infinity): beyond every value that rounds to 65504.
        0x7c00
    } else if ax < 0x3880_0000 {
        // |f| < 2^-14, f16 subnormal or zero. In 0.5 + |f| the f32 unit in the last place
        // is 2^-24, the f16 subnormal step, so the (nearest-even) f32 addition does the
        // rounding and the low bits are the f16 pattern (0x0400 if it rounds up to 2^-14).
        (f32::from_bits(ax) + 0.5).to_bits() - 0x3f00_0000
    } else {
        // Normal: rebias, then round the 13 dropped bits to nearest-even. A carry out of
        // the mantissa bumps the exponent, up to 0x7c00 (infinity) for [65520, 65536).
        let odd = (ax >> 13) & 1;
        (ax - ((127 - 15) << 23) + 0x0fff + odd) >> 13
    };
    (h | sign) as u16
}

/// bfloat16 bits to f32 (exact).
#[inline(always)]
pub fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits(u32::from(h) << 16)
}

/// f32 to bfloat16 bits, rounding to nearest-even; overflow gives infinity, a NaN gives a
/// quiet NaN with the sign and the top 6 payload bits kept.
#[inline(always)]
pub fn f32_to_bf16(f: f32) -> u16 {
    let x = f.to_bits();
    // Both arms are computed unconditionally so that the choice is a select (vectorizes).
    // The wrapping add overflows only for NaNs, whose rounded value is discarded.
    let rounded = x.wrapping_add(0x7fff + ((x >> 16) & 1)) >> 16;
    let quiet_nan = (x >> 16) | 0x0040;
    (if f.is_nan() { quiet_nan } else { rounded }) as u16
}

// ---------------------------------------------------------------------------------------
// Dispatch
// ---------------------------------------------------------------------------------------

/// A type-erased kernel: `(dst, a, b, count)` with the contract of [`reduce`].
type Kernel = unsafe fn(*mut u8, *const u8, *const u8, usize);

/// Which instance of the kernels to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Isa {
    Base,
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

/// The best instance for this CPU, detected once.
fn detected_isa() -> Isa {
    #[cfg(target_arch = "x86_64")]
    {
        use std::sync::atomic::{AtomicU8, Ordering::Relaxed};
        // 0: not yet detected, 1: baseline, 2: AVX2.
        static ISA: AtomicU8 = AtomicU8::new(0);
        let mut v = ISA.load(Relaxed);
        if v == 0 {
            v = if is_x86_feature_detected!("avx2") {
                2
            } else {
                1
            };
            ISA.store(v, Relaxed);
        }
        if v == 2 {
            return Isa::Avx2;
        }
    }
    Isa::Base
}

/// [`reduce`] with an explicit kernel instance (the tests compare the instances).
///
/// # Safety
///
/// As for [`reduce`]; `isa` must be supported by the CPU.
unsafe fn reduce_with(
    isa: Isa,
    ty: ElemType,
    op: ReduceOp,
    dst: *mut u8,
    a: *const u8,
    b: *const u8,
    count: usize,
) {
    let k = kernel(ty, op, isa);
    debug_assert!(k.is_some(), "reduce: {op:?} is not defined on {ty:?}");
    if let Some(k) = k {
        // SAFETY: the caller upholds the kernel contract, which is that of `reduce`, and
        // `isa` runs on this CPU.
        unsafe { k(dst, a, b, count) }
    }
}

/// The kernel for `op` on `ty`, or `None` where the operation is not defined.
fn kernel(ty: ElemType, op: ReduceOp, isa: Isa) -> Option<Kernel> {
    use ElemType as T;
    use ReduceOp as R;
    macro_rules! pick {
        ($($pat:pat => $O:ty),* $(,)?) => {
            match ty {
                $($pat => Some(instance::<$O>(isa)),)*
                _ => None,
            }
        };
    }
    // Wrapping SUM/PROD on integers are the same bits for signed and unsigned types.
    macro_rules! wrapping {
        ($K:ident) => {
            pick!(
                T::I8 | T::U8 | T::Char => $K<u8>,
                T::I16 | T::U16 => $K<u16>,
                T::I32 | T::U32 => $K<u32>,
                T::I64 | T::U64 => $K<u64>,
                T::F16 => $K<F16>,
                T::BF16 => $K<BF16>,
                T::F32 => $K<f32>,
                T::F64 => $K<f64>,
            )
        };
    }
    macro_rules! ordered {
        ($K:ident) => {
            pick!(
                T::I8 | T::Char => $K<i8>,
                T::U8 => $K<u8>,
                T::I16 => $K<i16>,
                T::U16 => $K<u16>,
                T::I32 => $K<i32>,
                T::U32 => $K<u32>,
                T::I64 => $K<i64>,
                T::U64 => $K<u64>,
                T::F16 => $K<F16>,
                T::BF16 => $K<BF16>,
                T::F32 => $K<f32>,
                T::F64 => $K<f64>,
            )
        };
    }
    // Logical and bitwise ops: one kernel per width; `Bool` / `Byte` are 8-bit, `Logical` 32
    // (only logical ops reach it: `is_supported` above).
    macro_rules! bits {
        ($K:ident, $extra:pat) => {
            pick!(
                T::I8 | T::U8 | $extra => $K<u8>,
                T::I16 | T::U16 => $K<u16>,
                T::I32 | T::U32 | T::Logical => $K<u32>,
                T::I64 | T::U64 => $K<u64>,
            )
        };
    }
    macro_rules! loc {
        ($max:expr) => {
            pick!(
                T::PairI32I32 => Loc<PairI32I32, $max>,
                T::PairF32I32 => Loc<PairF32I32, $max>,
                T::PairF64I32 => Loc<PairF64I32, $max>,
                T::PairI64I32 => Loc<PairI64I32, $max>,
                T::PairI16I32 => Loc<PairI16I32, $max>,
                T::PairF32F32 => Loc<PairF32F32, $max>,
                T::PairF64F64 => Loc<PairF64F64, $max>,
            )
        };
    }
    if !is_supported(ty, op) {
        return None;
    }
    // The complex and x87 types.
    match (ty, op) {
        (T::C32, R::Sum) => return Some(instance::<CAdd<Complex<f32>>>(isa)),
        (T::C64, R::Sum) => return Some(instance::<CAdd<Complex<f64>>>(isa)),
        (T::C80, R::Sum) => return Some(instance::<CAdd<Complex<F80>>>(isa)),
        (T::C32, R::Prod) => return Some(instance::<CMul<Complex<f32>>>(isa)),
        (T::C64, R::Prod) => return Some(instance::<CMul<Complex<f64>>>(isa)),
        (T::C80, R::Prod) => return Some(instance::<CMul<Complex<F80>>>(isa)),
        (T::F80, R::Sum) => return Some(instance::<Add<F80>>(isa)),
        (T::F80, R::Prod) => return Some(instance::<Mul<F80>>(isa)),
        (T::F80, R::Max) => return Some(instance::<Max<F80>>(isa)),
        (T::F80, R::Min) => return Some(instance::<Min<F80>>(isa)),
        (T::PairF80I32, R::Minloc) => return Some(instance::<Loc<PairF80I32, false>>(isa)),
        (T::PairF80I32, R::Maxloc) => return Some(instance::<Loc<PairF80I32, true>>(isa)),
        _ => {}
    }
    match op {
        R::Sum => wrapping!(Add),
        R::Prod => wrapping!(Mul),
        R::Max => ordered!(Max),
        R::Min => ordered!(Min),
        R::Land => bits!(LAnd, T::Bool | T::Char),
        R::Lor => bits!(LOr, T::Bool | T::Char),
        R::Lxor => bits!(LXor, T::Bool | T::Char),
        R::Band => bits!(BAnd, T::Byte | T::Char),
        R::Bor => bits!(BOr, T::Byte | T::Char),
        R::Bxor => bits!(BXor, T::Byte | T::Char),
        R::Minloc => loc!(false),
        R::Maxloc => loc!(true),
    }
}

/// The `isa` instance of the kernel for `O`.
fn instance<O: Op>(isa: Isa) -> Kernel {
    match isa {
        Isa::Base => run_base::<O>,
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => run_avx2::<O>,
    }
}

/// Baseline instance of the kernel for `O`.
///
/// # Safety
///
/// The contract of [`reduce`].
unsafe fn run_base<O: Op>(dst: *mut u8, a: *const u8, b: *const u8, n: usize) {
    // SAFETY: forwarded caller contract.
    unsafe { apply::<O>(dst, a, b, n) }
}

/// AVX2 instance of the kernel for `O`: the same body compiled with AVX2 enabled.
///
/// # Safety
///
/// The contract of [`reduce`], and the CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn run_avx2<O: Op>(dst: *mut u8, a: *const u8, b: *const u8, n: usize) {
    // SAFETY: forwarded caller contract.
    unsafe { apply::<O>(dst, a, b, n) }
}

/// The element loop shared by every kernel.
///
/// # Safety
///
/// The contract of [`reduce`] with `count * size_of::<O::Raw>()` bytes.
#[inline(always)]
unsafe fn apply<O: Op>(dst: *mut u8, a: *const u8, b: *const u8, n: usize) {
    const { assert!(std::mem::align_of::<O::Raw>() == 1) };
    if n == 0 {
        return; // The pointers may be null.
    }
    let (d, a, b) = (dst.cast::<O::Raw>(), a.cast::<O::Raw>(), b.cast::<O::Raw>());
    use std::slice::{from_raw_parts, from_raw_parts_mut};
    // SAFETY: `O::Raw` is a byte array (alignment 1, checked above), so the non-null
    // pointers are aligned for it, and the caller guarantees `n` elements readable at `a`
    // and `b` and writable at `d`. The caller also guarantees that `d` either equals `a`
    // or `b` or overlaps neither; the equal cases are served by the one `&mut` slice, so
    // no `&mut` slice ever aliases another live slice.
    unsafe {
        if d.cast_const() == a && a == b {
            for x in from_raw_parts_mut(d, n) {
                *x = O::op(*x, *x);
            }
        } else if d.cast_const() == a {
            zip_inout(from_raw_parts_mut(d, n), from_raw_parts(b, n), O::op);
        } else if d.cast_const() == b {
            zip_inout(from_raw_parts_mut(d, n), from_raw_parts(a, n), |x, y| {
                O::op(y, x)
            });
        } else {
            let (a, b) = (from_raw_parts(a, n), from_raw_parts(b, n));
            zip_out(from_raw_parts_mut(d, n), a, b, O::op);
        }
    }
}

/// `d[i] = f(d[i], s[i])`.
#[inline(always)]
fn zip_inout<R: Copy>(d: &mut [R], s: &[R], f: impl Fn(R, R) -> R) {
    for (x, y) in d.iter_mut().zip(s) {
        *x = f(*x, *y);
    }
}

/// `d[i] = f(a[i], b[i])`.
#[inline(always)]
fn zip_out<R: Copy>(d: &mut [R], a: &[R], b: &[R], f: impl Fn(R, R) -> R) {
    for ((x, y), z) in d.iter_mut().zip(a).zip(b) {
        *x = f(*y, *z);
    }
}

// ---------------------------------------------------------------------------------------
// Element operations
// ---------------------------------------------------------------------------------------

/// An element-wise operation on elements stored as byte arrays.
trait Op {
    /// A byte array of the element's extent (`[u8; N]`, or `[MaybeUninit<u8>; N]` where
    /// there is padding): alignment 1, so any pointer into a buffer is an element pointer.
    type Raw: Copy;
    fn op(a: Self::Raw, b: Self::Raw) -> Self::Raw;
}

/// A value type with its in-buffer byte representation.
trait Scalar: Copy {
    type Raw: Copy;
    fn load(r: Self::Raw) -> Self;
    fn store(self) -> Self::Raw;
}

/// SUM, PROD, MAX, MIN.
trait Arith: Scalar {
    fn add(a: Self, b: Self) -> Self;
    fn mul(a: Self, b: Self) -> Self;
    fn max(a: Self, b: Self) -> Self;
    fn min(a: Self, b: Self) -> Self;
}

/// Logical and bitwise ops (unsigned integers; the results do not depend on signedness).
trait Bits: Scalar {
    fn land(a: Self, b: Self) -> Self;
    fn lor(a: Self, b: Self) -> Self;
    fn lxor(a: Self, b: Self) -> Self;
    fn band(a: Self, b: Self) -> Self;
    fn bor(a: Self, b: Self) -> Self;
    fn bxor(a: Self, b: Self) -> Self;
}

/// Defines one `Op` type per scalar operation: load both operands, combine, store.
macro_rules! scalar_ops {
    ($($K:ident = $Tr:ident::$f:ident;)*) => {$(
        struct $K<T>(PhantomData<T>);
        impl<T: $Tr> Op for $K<T> {
            type Raw = T::Raw;
            #[inline(always)]
            fn op(a: T::Raw, b: T::Raw) -> T::Raw {
                T::$f(T::load(a), T::load(b)).store()
            }
        }
    )*};
}
scalar_ops! {
    Add = Arith::add;
    Mul = Arith::mul;
    Max = Arith::max;
    Min = Arith::min;
    LAnd = Bits::land;
    LOr = Bits::lor;
    LXor = Bits::lxor;
    BAnd = Bits::band;
    BOr = Bits::bor;
    BXor = Bits::bxor;
}

macro_rules! scalar_via_bytes {
    ($($t:ty),*) => {$(
        impl Scalar for $t {
            type Raw = [u8; std::mem::size_of::<$t>()];
            #[inline(always)]
            fn load(r: Self::Raw) -> Self {
                <$t>::from_ne_bytes(r)
            }
            #[inline(always)]
            fn store(self) -> Self::Raw {
                self.to_ne_bytes()
            }
        }
    )*};
}
scalar_via_bytes!(i8, u8, i16, u16, i32, u32, i64, u64, f32, f64);

macro_rules! int_arith {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            #[inline(always)]
            fn add(a: Self, b: Self) -> Self { a.wrapping_add(b) }
            #[inline(always)]
            fn mul(a: Self, b: Self) -> Self { a.wrapping_mul(b) }
            #[inline(always)]
            fn max(a: Self, b: Self) -> Self { Ord::max(a, b) }
            #[inline(always)]
            fn min(a: Self, b: Self) -> Self { Ord::min(a, b) }
        }
    )*};
}
int_arith!(i8, u8, i16, u16, i32, u32, i64, u64);

macro_rules! int_bits {
    ($($t:ty),*) => {$(
        impl Bits for $t {
            #[inline(always)]
            fn land(a: Self, b: Self) -> Self { ((a != 0) & (b != 0)) as $t }
            #[inline(always)]
            fn lor(a: Self, b: Self) -> Self { ((a | b) != 0) as $t }
            #[inline(always)]
            fn lxor(a: Self, b: Self) -> Self { ((a != 0) ^ (b != 0)) as $t }
            #[inline(always)]
            fn band(a: Self, b: Self) -> Self { a & b }
            #[inline(always)]
            fn bor(a: Self, b: Self) -> Self { a | b }
            #[inline(always)]
            fn bxor(a: Self, b: Self) -> Self { a ^ b }
        }
    )*};
}
int_bits!(u8, u16, u32, u64);

/// IEEE 754-2019 `maximum`/`minimum` selection (module docs): `$a`/`$b` are the operands
/// returned, `$x`/`$y` their float values, `$better` is `>` or `<`, and `$tie` the result
/// for equal values (the bitwise AND or OR of the operands, which resolves `±0`).
macro_rules! ieee_pick {
    ($a:expr, $b:expr, $x:expr, $y:expr, $better:tt, $tie:expr) => {{
        let (x, y) = ($x, $y);
        // A NaN `y` fails both comparisons and yields `$b`; a NaN `x` is caught last.
        let r = if x $better y { $a } else { $b };
        let r = if x == y { $tie } else { r };
        if x.is_nan() {
            $a
        } else {
            r
        }
    }};
}

macro_rules! float_arith {
    ($($t:ty: $quiet:expr;)*) => {$(
        impl Arith for $t {
            // The arithmetic is done unconditionally so that the NaN rule is a select,
            // which keeps the loops vectorizable.
            #[inline(always)]
            fn add(a: Self, b: Self) -> Self {
                let r = a + b;
                if a.is_nan() { <$t>::from_bits(a.to_bits() | $quiet) } else { r }
            }
            #[inline(always)]
            fn mul(a: Self, b: Self) -> Self {
                let r = a * b;
                if a.is_nan() { <$t>::from_bits(a.to_bits() | $quiet) } else { r }
            }
            #[inline(always)]
            fn max(a: Self, b: Self) -> Self {
                ieee_pick!(a, b, a, b, >, <$t>::from_bits(a.to_bits() & b.to_bits()))
            }
            #[inline(always)]
            fn min(a: Self, b: Self) -> Self {
                ieee_pick!(a, b, a, b, <, <$t>::from_bits(a.to_bits() | b.to_bits()))
            }
        }
    )*};
}
float_arith! {
    f32: 1 << 22;
    f64: 1 << 51;
}

/// IEEE binary16, stored as its bits.
#[derive(Clone, Copy)]
struct F16(u16);
/// bfloat16, stored as its bits.
#[derive(Clone, Copy)]
struct BF16(u16);

macro_rules! half_arith {
    ($($t:ident: $to:ident, $from:ident;)*) => {$(
        impl Scalar for $t {
            type Raw = [u8; 2];
            #[inline(always)]
            fn load(r: [u8; 2]) -> Self { $t(u16::from_ne_bytes(r)) }
            #[inline(always)]
            fn store(self) -> [u8; 2] { self.0.to_ne_bytes() }
        }
        impl Arith for $t {
            #[inline(always)]
            fn add(a: Self, b: Self) -> Self { $t($from(f32::add($to(a.0), $to(b.0)))) }
            #[inline(always)]
            fn mul(a: Self, b: Self) -> Self { $t($from(f32::mul($to(a.0), $to(b.0)))) }
            #[inline(always)]
            fn max(a: Self, b: Self) -> Self {
                ieee_pick!(a, b, $to(a.0), $to(b.0), >, $t(a.0 & b.0))
            }
            #[inline(always)]
            fn min(a: Self, b: Self) -> Self {
                ieee_pick!(a, b, $to(a.0), $to(b.0), <, $t(a.0 | b.0))
            }
        }
    )*};
}
half_arith! {
    F16: f16_to_f32, f32_to_f16;
    BF16: bf16_to_f32, f32_to_bf16;
}

/// Layout of a `{ value; index; }` pair type: the index is an `int` for C's pairs and a real
/// of the value's type for Fortran's `MPI_2REAL` / `MPI_2DOUBLE_PRECISION`.
trait Pair {
    type V: Copy + PartialOrd;
    type I: Copy + PartialOrd;
    /// `[MaybeUninit<u8>; extent]`.
    type Raw: Copy;
    fn get(r: &Self::Raw) -> (Self::V, Self::I);
    fn set(r: &mut Self::Raw, v: Self::V, i: Self::I);
}

macro_rules! pairs {
    ($($P:ident: $v:ty, index $i:ty, at $at:literal, extent $ext:literal;)*) => {$(
        struct $P;
        impl Pair for $P {
            type V = $v;
            type I = $i;
            // `MaybeUninit` bytes: the padding may be uninitialized; it is only copied.
            type Raw = [MaybeUninit<u8>; $ext];
            #[inline(always)]
            fn get(r: &Self::Raw) -> ($v, $i) {
                let p = r.as_ptr().cast::<u8>();
                const _: () = assert!(
                    std::mem::size_of::<$v>() <= $at && $at + std::mem::size_of::<$i>() <= $ext
                );
                // SAFETY: both reads are in bounds (checked above) and unaligned; the
                // value and index bytes are the element's data, initialized like any
                // other element the caller passes (only padding may be uninitialized).
                unsafe {
                    (p.cast::<$v>().read_unaligned(), p.add($at).cast::<$i>().read_unaligned())
                }
            }
            #[inline(always)]
            fn set(r: &mut Self::Raw, v: $v, i: $i) {
                let p = r.as_mut_ptr().cast::<u8>();
                // SAFETY: both writes are in bounds (see `get`) and unaligned.
                unsafe {
                    p.cast::<$v>().write_unaligned(v);
                    p.add($at).cast::<$i>().write_unaligned(i);
                }
            }
        }
    )*};
}
pairs! {
    PairI32I32: i32, index i32, at 4, extent 8;
    PairF32I32: f32, index i32, at 4, extent 8;
    PairF64I32: f64, index i32, at 8, extent 16;
    PairI64I32: i64, index i32, at 8, extent 16;
    PairI16I32: i16, index i32, at 4, extent 8;
    PairF80I32: F80, index i32, at 16, extent 32;
    PairF32F32: f32, index f32, at 4, extent 8;
    PairF64F64: f64, index f64, at 8, extent 16;
}

/// MAXLOC (`MAX = true`) or MINLOC on pair type `P`.
struct Loc<P, const MAX: bool>(PhantomData<P>);

impl<P: Pair, const MAX: bool> Op for Loc<P, MAX> {
    type Raw = P::Raw;
    #[inline(always)]
    fn op(a: P::Raw, b: P::Raw) -> P::Raw {
        let ((va, ia), (vb, ib)) = (P::get(&a), P::get(&b));
        let b_better = if MAX { vb > va } else { vb < va };
        let mut out = a; // padding from `a`
        if b_better {
            P::set(&mut out, vb, ib);
        } else if vb == va && ib < ia {
            P::set(&mut out, va, ib);
        }
        out
    }
}

// ---------------------------------------------------------------------------------------
// Complex types
// ---------------------------------------------------------------------------------------

/// A real type that complex numbers are built from: SUM, PROD and negation (exact).
trait Real: Arith {
    fn neg(self) -> Self;
}
impl Real for f32 {
    #[inline(always)]
    fn neg(self) -> Self {
        -self
    }
}
impl Real for f64 {
    #[inline(always)]
    fn neg(self) -> Self {
        -self
    }
}
impl Real for F80 {
    #[inline(always)]
    fn neg(mut self) -> Self {
        // The sign is bit 7 of byte 9, as `fchs` flips it.
        // SAFETY: byte 9 is data, initialized like every element the caller passes.
        let b = unsafe { self.0[9].assume_init() };
        self.0[9] = MaybeUninit::new(b ^ 0x80);
        self
    }
}

/// `{ re; im; }`.
#[derive(Clone, Copy)]
struct Complex<R>(R, R);

/// SUM and PROD on complex numbers.
trait Field: Scalar {
    fn add(a: Self, b: Self) -> Self;
    fn mul(a: Self, b: Self) -> Self;
}

impl<R: Real> Field for Complex<R>
where
    Complex<R>: Scalar,
{
    #[inline(always)]
    fn add(a: Self, b: Self) -> Self {
        Complex(R::add(a.0, b.0), R::add(a.1, b.1))
    }
    /// `(a.re*b.re - a.im*b.im, a.re*b.im + a.im*b.re)`, each product and sum rounded in
    /// `R`: what C's `_Complex` multiplication (and MPICH's Fortran complex PROD) computes
    /// for finite operands. `x - y` is computed as `x + (-y)`, the same value.
    #[inline(always)]
    fn mul(a: Self, b: Self) -> Self {
        let re = R::add(R::mul(a.0, b.0), R::mul(a.1, b.1).neg());
        let im = R::add(R::mul(a.0, b.1), R::mul(a.1, b.0));
        Complex(re, im)
    }
}

macro_rules! complex_scalar {
    ($($r:ty, $half:literal, $zero:expr;)*) => {$(
        impl Scalar for Complex<$r> {
            type Raw = <<$r as Scalar>::Raw as RawArray>::Doubled;
            #[inline(always)]
            fn load(r: Self::Raw) -> Self {
                let re: <$r as Scalar>::Raw = r[..$half].try_into().unwrap();
                let im: <$r as Scalar>::Raw = r[$half..].try_into().unwrap();
                Complex(<$r>::load(re), <$r>::load(im))
            }
            #[inline(always)]
            fn store(self) -> Self::Raw {
                let mut out = [$zero; 2 * $half];
                out[..$half].copy_from_slice(&self.0.store());
                out[$half..].copy_from_slice(&self.1.store());
                out
            }
        }
    )*};
}

/// The byte array of two elements.
trait RawArray {
    type Doubled: Copy;
}
impl RawArray for [u8; 4] {
    type Doubled = [u8; 8];
}
impl RawArray for [u8; 8] {
    type Doubled = [u8; 16];
}
impl RawArray for [MaybeUninit<u8>; 16] {
    type Doubled = [MaybeUninit<u8>; 32];
}

complex_scalar! {
    f32, 4, 0u8;
    f64, 8, 0u8;
    F80, 16, MaybeUninit::<u8>::new(0);
}

scalar_ops! {
    CAdd = Field::add;
    CMul = Field::mul;
}

// ---------------------------------------------------------------------------------------
// x87 extended precision
// ---------------------------------------------------------------------------------------

/// An x87 80-bit value as C stores a `long double` on x86-64: 10 bytes of data (64-bit
/// significand with explicit integer bit, 15-bit exponent, sign) and 6 bytes of padding,
/// which may be uninitialized and are carried from the first operand.
///
/// SUM and PROD are the x87 `fadd`/`fmul` in the default control word (64-bit precision,
/// round to nearest-even), exactly what C's `long double` arithmetic does, so the results
/// are bit-identical to a C reference fold. MAX/MIN follow the module's float rules.
#[derive(Clone, Copy)]
struct F80([MaybeUninit<u8>; 16]);

impl Scalar for F80 {
    type Raw = [MaybeUninit<u8>; 16];
    #[inline(always)]
    fn load(r: Self::Raw) -> Self {
        F80(r)
    }
    #[inline(always)]
    fn store(self) -> Self::Raw {
        self.0
    }
}

impl F80 {
    /// The sign bit.
    #[inline(always)]
    fn negative(&self) -> bool {
        // SAFETY: byte 9 is data (see `Real::neg`).
        unsafe { self.0[9].assume_init() & 0x80 != 0 }
    }
}

/// How two x87 values compare.
#[derive(Clone, Copy, PartialEq, Eq)]
enum X87Cmp {
    Less,
    Equal,
    Greater,
    Unordered,
}

#[cfg(target_arch = "x86_64")]
mod x87 {
    use super::{X87Cmp, F80};
    use std::arch::asm;

    /// `a + b` (`ADD = true`) or `a * b`, rounded as the x87 control word says; the
    /// padding comes from `a`.
    #[inline(always)]
    pub(super) fn arith<const ADD: bool>(a: F80, b: F80) -> F80 {
        let mut out = a;
        // SAFETY: the loads read the 10 data bytes of `a` and `b`, the store writes the 10
        // data bytes of `out`; the x87 stack is left as found (two pushes, two pops).
        unsafe {
            if ADD {
                asm!(
                    "fld tbyte ptr [{a}]",
                    "fld tbyte ptr [{b}]",
                    "faddp",
                    "fstp tbyte ptr [{d}]",
                    a = in(reg) a.0.as_ptr(),
                    b = in(reg) b.0.as_ptr(),
                    d = in(reg) out.0.as_mut_ptr(),
                    out("st(0)") _,
                    out("st(1)") _,
                    options(nostack),
                );
            } else {
                asm!(
                    "fld tbyte ptr [{a}]",
                    "fld tbyte ptr [{b}]",
                    "fmulp",
                    "fstp tbyte ptr [{d}]",
                    a = in(reg) a.0.as_ptr(),
                    b = in(reg) b.0.as_ptr(),
                    d = in(reg) out.0.as_mut_ptr(),
                    out("st(0)") _,
                    out("st(1)") _,
                    options(nostack),
                );
            }
        }
        out
    }

    /// How `a` compares with `b` (`fucomip`).
    #[inline(always)]
    pub(super) fn cmp(a: &F80, b: &F80) -> X87Cmp {
        let (above, below, equal, unordered): (u8, u8, u8, u8);
        // SAFETY: two 10-byte loads of data bytes; the x87 stack is left as found.
        unsafe {
            asm!(
                "fld tbyte ptr [{b}]",
                "fld tbyte ptr [{a}]",
                "fucomip st, st(1)",
                "fstp st(0)",
                "seta {gt}",
                "setb {lt}",
                "sete {eq}",
                "setp {un}",
                a = in(reg) a.0.as_ptr(),
                b = in(reg) b.0.as_ptr(),
                gt = out(reg_byte) above,
                lt = out(reg_byte) below,
                eq = out(reg_byte) equal,
                un = out(reg_byte) unordered,
                out("st(0)") _,
                out("st(1)") _,
                options(nostack, readonly),
            );
        }
        if unordered != 0 {
            X87Cmp::Unordered
        } else if above != 0 {
            X87Cmp::Greater
        } else if below != 0 {
            X87Cmp::Less
        } else {
            debug_assert!(equal != 0);
            X87Cmp::Equal
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod x87 {
    //! Never called: `is_supported` refuses the x87 types off x86-64.
    use super::{X87Cmp, F80};
    pub(super) fn arith<const ADD: bool>(_: F80, _: F80) -> F80 {
        unreachable!("x87 arithmetic off x86-64")
    }
    pub(super) fn cmp(_: &F80, _: &F80) -> X87Cmp {
        unreachable!("x87 comparison off x86-64")
    }
}

impl F80 {
    #[inline(always)]
    fn is_nan(&self) -> bool {
        x87::cmp(self, self) == X87Cmp::Unordered
    }
    /// IEEE `maximum` (`MAX = true`) or `minimum`, as `ieee_pick!` does for the other floats:
    /// a NaN `a` wins, then a NaN `b`; equal values of different sign (±0) give `+0` for
    /// MAX and `-0` for MIN; otherwise the larger (smaller) operand.
    #[inline(always)]
    fn pick<const MAX: bool>(a: Self, b: Self) -> Self {
        match x87::cmp(&a, &b) {
            X87Cmp::Unordered => {
                if a.is_nan() {
                    a
                } else {
                    b
                }
            }
            X87Cmp::Greater => {
                if MAX {
                    a
                } else {
                    b
                }
            }
            X87Cmp::Less => {
                if MAX {
                    b
                } else {
                    a
                }
            }
            X87Cmp::Equal => {
                if a.negative() != MAX {
                    a
                } else {
                    b
                }
            }
        }
    }
}

impl Arith for F80 {
    #[inline(always)]
    fn add(a: Self, b: Self) -> Self {
        x87::arith::<true>(a, b)
    }
    #[inline(always)]
    fn mul(a: Self, b: Self) -> Self {
        x87::arith::<false>(a, b)
    }
    #[inline(always)]
    fn max(a: Self, b: Self) -> Self {
        F80::pick::<true>(a, b)
    }
    #[inline(always)]
    fn min(a: Self, b: Self) -> Self {
        F80::pick::<false>(a, b)
    }
}

impl PartialEq for F80 {
    fn eq(&self, other: &Self) -> bool {
        x87::cmp(self, other) == X87Cmp::Equal
    }
}

impl PartialOrd for F80 {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        use std::cmp::Ordering::*;
        match x87::cmp(self, other) {
            X87Cmp::Less => Some(Less),
            X87Cmp::Equal => Some(Equal),
            X87Cmp::Greater => Some(Greater),
            X87Cmp::Unordered => None,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------

#[cfg(test)]
mod tests;
