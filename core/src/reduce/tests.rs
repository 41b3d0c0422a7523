//! Tests for the reduction kernels: hand-picked exact values per (type, op), a bytewise
//! reference model over every supported pair (counts, aliasing, alignment), the AVX2 and
//! baseline instances against each other, and exhaustive checks of the 16-bit float
//! conversions against an f64 reference.

use super::*;
use crate::datatype::{ElemType as T, ReduceOp as R};
use std::cmp::Ordering;

const TYPES: [ElemType; 24] = [
    T::I8,
    T::U8,
    T::I16,
    T::U16,
    T::I32,
    T::U32,
    T::I64,
    T::U64,
    T::F16,
    T::BF16,
    T::F32,
    T::F64,
    T::Bool,
    T::Byte,
    T::Char,
    T::PairI32I32,
    T::PairF32I32,
    T::PairF64I32,
    T::PairI64I32,
    T::PairI16I32,
    T::PairF32F32,
    T::PairF64F64,
    T::Logical,
    T::Opaque,
];
const OPS: [ReduceOp; 12] = [
    R::Max,
    R::Min,
    R::Sum,
    R::Prod,
    R::Land,
    R::Band,
    R::Lor,
    R::Bor,
    R::Lxor,
    R::Bxor,
    R::Minloc,
    R::Maxloc,
];

fn supported() -> Vec<(ElemType, ReduceOp)> {
    let mut v = Vec::new();
    for ty in TYPES {
        for op in OPS {
            if is_supported(ty, op) {
                v.push((ty, op));
            }
        }
    }
    v
}

fn ext(ty: ElemType) -> usize {
    ty.extent().unwrap()
}

// ----- typed helpers for the hand-picked tests -------------------------------------------

/// A value with a native-endian byte encoding.
trait Ne: Copy + std::fmt::Debug {
    fn put(self, out: &mut Vec<u8>);
    fn take(b: &[u8]) -> Self;
}
macro_rules! ne {
    ($($t:ty),*) => {$(
        impl Ne for $t {
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_ne_bytes());
            }
            fn take(b: &[u8]) -> Self {
                <$t>::from_ne_bytes(b.try_into().unwrap())
            }
        }
    )*};
}
ne!(i8, u8, i16, u16, i32, u32, i64, u64, f32, f64);

fn enc<E: Ne>(v: &[E]) -> Vec<u8> {
    let mut out = Vec::new();
    for &x in v {
        x.put(&mut out);
    }
    out
}

/// `a op b` through `reduce` into a separate buffer.
fn red<E: Ne>(ty: ElemType, op: ReduceOp, a: &[E], b: &[E]) -> Vec<E> {
    assert_eq!(a.len(), b.len());
    let (a, b) = (enc(a), enc(b));
    let mut d = vec![0x5au8; a.len()];
    let n = a.len() / ext(ty);
    // SAFETY: all three buffers hold `n` elements of `ty` and are distinct.
    unsafe { reduce(ty, op, d.as_mut_ptr(), a.as_ptr(), b.as_ptr(), n) };
    d.chunks(ext(ty)).map(E::take).collect()
}

/// Same, and checks the in-place forms (`dst == a`, `dst == b`) give the same bits.
fn red3<E: Ne>(ty: ElemType, op: ReduceOp, a: &[E], b: &[E]) -> Vec<E> {
    let sep = red(ty, op, a, b);
    let (ab, bb) = (enc(a), enc(b));
    let n = ab.len() / ext(ty);
    let mut x = ab.clone();
    // SAFETY: `x` and `bb` hold `n` elements and are distinct.
    unsafe { reduce_inplace(ty, op, x.as_mut_ptr(), bb.as_ptr(), n) };
    assert_eq!(x, enc(&sep), "{ty:?} {op:?} dst == a");
    let mut y = bb.clone();
    // SAFETY: `y` and `ab` hold `n` elements; dst is exactly `b`.
    unsafe { reduce(ty, op, y.as_mut_ptr(), ab.as_ptr(), y.as_ptr(), n) };
    assert_eq!(y, enc(&sep), "{ty:?} {op:?} dst == b");
    sep
}

fn bits32(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}
fn bits64(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

// ----- hand-picked values ----------------------------------------------------------------

#[test]
fn sum_wraps() {
    assert_eq!(
        red3(T::I8, R::Sum, &[127i8, -128, 5, -3], &[1, -1, -7, 3]),
        [-128, 127, -2, 0]
    );
    assert_eq!(red3(T::Char, R::Sum, &[127i8, -128], &[1, -1]), [-128, 127]);
    assert_eq!(
        red3(T::U8, R::Sum, &[255u8, 200, 1], &[1, 100, 2]),
        [0, 44, 3]
    );
    assert_eq!(
        red3(T::I16, R::Sum, &[i16::MAX, -5], &[1, 2]),
        [i16::MIN, -3]
    );
    assert_eq!(red3(T::U16, R::Sum, &[u16::MAX, 7], &[2, 8]), [1, 15]);
    assert_eq!(
        red3(T::I32, R::Sum, &[i32::MAX, i32::MIN, -1], &[1, -1, -1]),
        [i32::MIN, i32::MAX, -2]
    );
    assert_eq!(red3(T::U32, R::Sum, &[u32::MAX, 3], &[1, 4]), [0, 7]);
    assert_eq!(
        red3(T::I64, R::Sum, &[i64::MAX, i64::MIN, 40], &[1, -1, 2]),
        [i64::MIN, i64::MAX, 42]
    );
    assert_eq!(
        red3(T::U64, R::Sum, &[u64::MAX, 1 << 63], &[1, 1 << 63]),
        [0, 0]
    );
}

#[test]
fn prod_wraps() {
    assert_eq!(
        red3(T::I8, R::Prod, &[16i8, -128, -3, 127], &[16, -1, 5, 2]),
        [0, -128, -15, -2]
    );
    assert_eq!(red3(T::Char, R::Prod, &[-4i8], &[33]), [124]);
    assert_eq!(red3(T::U8, R::Prod, &[16u8, 255], &[17, 255]), [16, 1]);
    assert_eq!(red3(T::I16, R::Prod, &[256i16, -7], &[256, 6]), [0, -42]);
    assert_eq!(red3(T::U16, R::Prod, &[u16::MAX], &[u16::MAX]), [1]);
    assert_eq!(
        red3(T::I32, R::Prod, &[1 << 16, i32::MAX, -6], &[1 << 16, 2, 7]),
        [0, -2, -42]
    );
    assert_eq!(
        red3(T::U32, R::Prod, &[u32::MAX, 3], &[u32::MAX, 5]),
        [1, 15]
    );
    assert_eq!(
        red3(
            T::I64,
            R::Prod,
            &[i64::MAX, 1 << 62, i64::MIN, -3],
            &[2, 4, -1, 1 << 40]
        ),
        [-2, 0, i64::MIN, -3 << 40]
    );
    assert_eq!(
        red3(T::U64, R::Prod, &[u64::MAX, 1 << 32], &[u64::MAX, 1 << 32]),
        [1, 0]
    );
}

#[test]
fn max_min_integers_by_signedness() {
    assert_eq!(
        red3(T::I8, R::Max, &[-1i8, -128, 5], &[1, 127, 5]),
        [1, 127, 5]
    );
    assert_eq!(
        red3(T::I8, R::Min, &[-1i8, -128, 5], &[1, 127, 5]),
        [-1, -128, 5]
    );
    assert_eq!(red3(T::Char, R::Max, &[-1i8, 3], &[1, -3]), [1, 3]);
    assert_eq!(red3(T::Char, R::Min, &[-1i8, 3], &[1, -3]), [-1, -3]);
    assert_eq!(red3(T::U8, R::Max, &[255u8, 0], &[1, 0]), [255, 0]);
    assert_eq!(red3(T::U8, R::Min, &[255u8, 0], &[1, 9]), [1, 0]);
    assert_eq!(red3(T::I16, R::Max, &[-300i16, 2], &[300, -2]), [300, 2]);
    assert_eq!(red3(T::I16, R::Min, &[-300i16, 2], &[300, -2]), [-300, -2]);
    assert_eq!(red3(T::U16, R::Max, &[65535u16, 4], &[1, 5]), [65535, 5]);
    assert_eq!(red3(T::U16, R::Min, &[65535u16, 4], &[1, 5]), [1, 4]);
    assert_eq!(red3(T::I32, R::Max, &[i32::MIN, -1], &[0, -2]), [0, -1]);
    assert_eq!(
        red3(T::I32, R::Min, &[i32::MIN, -1], &[0, -2]),
        [i32::MIN, -2]
    );
    assert_eq!(red3(T::U32, R::Max, &[u32::MAX, 1], &[0, 2]), [u32::MAX, 2]);
    assert_eq!(red3(T::U32, R::Min, &[u32::MAX, 1], &[0, 2]), [0, 1]);
    assert_eq!(
        red3(T::I64, R::Max, &[i64::MIN, -1], &[i64::MAX, 0]),
        [i64::MAX, 0]
    );
    assert_eq!(
        red3(T::I64, R::Min, &[i64::MIN, -1], &[i64::MAX, 0]),
        [i64::MIN, -1]
    );
    assert_eq!(red3(T::U64, R::Max, &[u64::MAX, 1], &[0, 2]), [u64::MAX, 2]);
    assert_eq!(red3(T::U64, R::Min, &[u64::MAX, 1], &[0, 2]), [0, 1]);
}

#[test]
fn float_sum_prod() {
    let inf = f32::INFINITY;
    let got = red3(
        T::F32,
        R::Sum,
        &[1.5f32, 1e38, 0.1, -0.0, -0.0, 1.0],
        &[2.25, 3e38, 0.2, 0.0, -0.0, -inf],
    );
    assert_eq!(
        bits32(&got),
        bits32(&[3.75, inf, 0.1 + 0.2, 0.0, -0.0, -inf])
    );
    let got = red3(
        T::F32,
        R::Prod,
        &[1.5f32, -2.0, 1e30, -0.0],
        &[-4.0, 3.0, 1e10, 5.0],
    );
    assert_eq!(bits32(&got), bits32(&[-6.0, -6.0, inf, -0.0]));
    let got = red3(
        T::F64,
        R::Sum,
        &[0.1f64, 1e308, -0.0, f64::MAX],
        &[0.2, 1e308, -0.0, f64::MAX],
    );
    assert_eq!(
        bits64(&got),
        bits64(&[0.1 + 0.2, f64::INFINITY, -0.0, f64::INFINITY])
    );
    let got = red3(T::F64, R::Prod, &[3.0f64, 1e-300], &[-0.5, 1e-300]);
    assert_eq!(bits64(&got), bits64(&[-1.5, 0.0]));
}

#[test]
fn float_sum_prod_nan() {
    // `a` NaN: `a` quieted, payload and sign kept, whatever `b` is.
    let (sa, qb) = (f32::from_bits(0xff80_0001), f32::from_bits(0x7fc0_1234));
    for op in [R::Sum, R::Prod] {
        let got = red3(T::F32, op, &[sa, sa, sa], &[1.0, qb, -0.0]);
        assert_eq!(bits32(&got), [0xffc0_0001; 3], "{op:?}");
        // `b` NaN only: some NaN (the hardware quiets `b`); invalid ops: a NaN.
        let got = red3(T::F32, op, &[1.0f32, f32::INFINITY], &[qb, -f32::INFINITY]);
        assert!(got[0].is_nan());
        assert!(op == R::Prod || got[1].is_nan());
    }
    let (sa, qb) = (
        f64::from_bits(0x7ff0_0000_0000_0005),
        f64::from_bits(0xfff8_0000_0000_0009),
    );
    let got = red3(T::F64, R::Sum, &[sa, sa], &[qb, 2.0]);
    assert_eq!(bits64(&got), [0x7ff8_0000_0000_0005; 2]);
    let got = red3(T::F64, R::Prod, &[0.0f64], &[f64::INFINITY]);
    assert!(got[0].is_nan());
    // F16 / BF16: `a` quieted.
    assert_eq!(red3(T::F16, R::Sum, &[0xfc01u16], &[0x7e05]), [0xfe01]);
    assert_eq!(red3(T::F16, R::Prod, &[0x7d23u16], &[0x3c00]), [0x7f23]);
    assert_eq!(red3(T::BF16, R::Sum, &[0x7f81u16], &[0xffc2]), [0x7fc1]);
    assert_eq!(red3(T::BF16, R::Prod, &[0xff90u16], &[0x0000]), [0xffd0]);
}

#[test]
fn half_sum_prod_rounding() {
    // f16: 1+2=3; 65504+16 = 65520 is halfway to 2^16 and rounds to even: infinity;
    // 65504+15 rounds down; 2048+1 ties to even 2048; 2050+1 ties to 2052; subnormals.
    let a = [1.0, 65504.0, 65504.0, 2048.0, 2050.0, -0.0, 1.0, 0.5];
    let b = [2.0, 16.0, 15.0, 1.0, 1.0, 0.0, -1.0, 0.25];
    let (a16, b16): (Vec<u16>, Vec<u16>) = (a.map(f32_to_f16).into(), b.map(f32_to_f16).into());
    assert_eq!(
        red3(T::F16, R::Sum, &a16, &b16),
        [0x4200, 0x7c00, 0x7bff, 0x6800, 0x6802, 0x0000, 0x0000, 0x3a00]
    );
    assert_eq!(
        red3(T::F16, R::Sum, &[0x0001u16, 0x03ff], &[0x0001, 0x0001]),
        [0x0002, 0x0400]
    );
    assert_eq!(red3(T::F16, R::Sum, &[0x8001u16], &[0x0001]), [0x0000]);
    // Products: 3*3 = 9; 256*256 overflows; 2^-14 * 2^-10 = 2^-24 (smallest subnormal);
    // 2^-14 * 2^-11 = 2^-25 ties to even: 0; (1+2^-10)^2 = 1 + 2^-9 + 2^-20 rounds to 1+2^-9.
    assert_eq!(
        red3(
            T::F16,
            R::Prod,
            &[0x4200u16, 0x5c00, 0x0400, 0x0400, 0x3c01],
            &[0x4200, 0x5c00, 0x1400, 0x1000, 0x3c01]
        ),
        [0x4880, 0x7c00, 0x0001, 0x0000, 0x3c02]
    );
    // bf16: 1 + 2^-8 ties to even 1; (1+2^-7) + 2^-8 ties to 1+2^-6; overflow to inf.
    assert_eq!(
        red3(
            T::BF16,
            R::Sum,
            &[0x3f80u16, 0x3f81, 0x7f7f, 0xc000],
            &[0x3b80, 0x3b80, 0x7f7f, 0x3f80]
        ),
        [0x3f80, 0x3f82, 0x7f80, 0xbf80]
    );
    assert_eq!(
        red3(T::BF16, R::Prod, &[0x4040u16, 0x3f81], &[0xc000, 0x3f81]),
        [0xc0c0, 0x3f82]
    );
}

#[test]
fn float_max_min_nan_and_signed_zero() {
    let (n1, n2) = (f32::from_bits(0x7fc0_0001), f32::from_bits(0xff80_0002)); // qNaN, -sNaN
    let a = [
        -0.0f32,
        0.0,
        -0.0,
        0.0,
        n1,
        1.0,
        n1,
        n2,
        -f32::INFINITY,
        2.0,
        -3.0,
        n2,
    ];
    let b = [
        0.0f32,
        -0.0,
        -0.0,
        0.0,
        1.0,
        n1,
        n2,
        n1,
        3.0,
        2.0,
        -4.0,
        f32::INFINITY,
    ];
    let max = red3(T::F32, R::Max, &a, &b);
    let min = red3(T::F32, R::Min, &a, &b);
    let (p, m, q1, q2) = (0u32, 0x8000_0000u32, n1.to_bits(), n2.to_bits());
    let ni = (-f32::INFINITY).to_bits();
    assert_eq!(
        bits32(&max),
        [
            p,
            p,
            m,
            p,
            q1,
            q1,
            q1,
            q2,
            3f32.to_bits(),
            2f32.to_bits(),
            (-3f32).to_bits(),
            q2
        ]
    );
    assert_eq!(
        bits32(&min),
        [
            m,
            m,
            m,
            p,
            q1,
            q1,
            q1,
            q2,
            ni,
            2f32.to_bits(),
            (-4f32).to_bits(),
            q2
        ]
    );

    let (n1, n2) = (
        f64::from_bits(0x7ff8_0000_0000_0001),
        f64::from_bits(0x7ff0_0000_0000_0002),
    );
    let a = [-0.0f64, 0.0, n1, 1.0, n2, 5.0];
    let b = [0.0f64, -0.0, 1.0, n1, n1, -5.0];
    let (p, m) = (0u64, 1u64 << 63);
    assert_eq!(
        bits64(&red3(T::F64, R::Max, &a, &b)),
        [
            p,
            p,
            n1.to_bits(),
            n1.to_bits(),
            n2.to_bits(),
            5f64.to_bits()
        ]
    );
    assert_eq!(
        bits64(&red3(T::F64, R::Min, &a, &b)),
        [
            m,
            m,
            n1.to_bits(),
            n1.to_bits(),
            n2.to_bits(),
            (-5f64).to_bits()
        ]
    );

    // F16 and BF16: the same rule on the original bits (sNaN stays signaling).
    let a = [0x8000u16, 0x0000, 0x7c01, 0x3c00, 0x7e00, 0xfc00, 0x3c00];
    let b = [0x0000u16, 0x8000, 0x3c00, 0x7c01, 0xfd00, 0x4000, 0x3c00];
    assert_eq!(
        red3(T::F16, R::Max, &a, &b),
        [0x0000, 0x0000, 0x7c01, 0x7c01, 0x7e00, 0x4000, 0x3c00]
    );
    assert_eq!(
        red3(T::F16, R::Min, &a, &b),
        [0x8000, 0x8000, 0x7c01, 0x7c01, 0x7e00, 0xfc00, 0x3c00]
    );
    let a = [0x8000u16, 0x0000, 0x7f81, 0x3f80, 0xffc0, 0x0001];
    let b = [0x0000u16, 0x8000, 0x3f80, 0x7f81, 0x7fc0, 0x8001];
    assert_eq!(
        red3(T::BF16, R::Max, &a, &b),
        [0x0000, 0x0000, 0x7f81, 0x7f81, 0xffc0, 0x0001]
    );
    assert_eq!(
        red3(T::BF16, R::Min, &a, &b),
        [0x8000, 0x8000, 0x7f81, 0x7f81, 0xffc0, 0x8001]
    );
}

#[test]
fn logical_ops_give_0_or_1() {
    let a = [0i32, 5, 0, -1, i32::MIN];
    let b = [0i32, 0, 7, 2, i32::MIN];
    assert_eq!(red3(T::I32, R::Land, &a, &b), [0, 0, 0, 1, 1]);
    assert_eq!(red3(T::I32, R::Lor, &a, &b), [0, 1, 1, 1, 1]);
    assert_eq!(red3(T::I32, R::Lxor, &a, &b), [0, 1, 1, 0, 0]);
    let a = [0u8, 1, 0, 1];
    let b = [0u8, 0, 1, 1];
    for ty in [T::Bool, T::U8, T::I8] {
        assert_eq!(red3(ty, R::Land, &a, &b), [0, 0, 0, 1]);
        assert_eq!(red3(ty, R::Lor, &a, &b), [0, 1, 1, 1]);
        assert_eq!(red3(ty, R::Lxor, &a, &b), [0, 1, 1, 0]);
    }
    // Fortran LOGICAL: nonzero is true, results 0 / 1 (gfortran's .TRUE. is 1).
    let a = [0u32, 1, 0, 1, 0x100, u32::MAX];
    let b = [0u32, 0, 1, 1, 0x200, 0];
    assert_eq!(red3(T::Logical, R::Land, &a, &b), [0, 0, 0, 1, 1, 0]);
    assert_eq!(red3(T::Logical, R::Lor, &a, &b), [0, 1, 1, 1, 1, 1]);
    assert_eq!(red3(T::Logical, R::Lxor, &a, &b), [0, 1, 1, 0, 0, 1]);
    assert_eq!(red3(T::U8, R::Land, &[0x80u8, 2], &[0x40, 0]), [1, 0]);
    assert_eq!(red3(T::I16, R::Lor, &[0i16, 256], &[0, 0]), [0, 1]);
    assert_eq!(
        red3(T::U16, R::Lxor, &[0x100u16, 0x100], &[0x200, 0]),
        [0, 1]
    );
    assert_eq!(
        red3(T::U32, R::Land, &[1u32 << 31, 0], &[1 << 16, 1]),
        [1, 0]
    );
    assert_eq!(
        red3(T::I64, R::Lxor, &[1i64 << 40, 0], &[0, i64::MIN]),
        [1, 1]
    );
    assert_eq!(
        red3(T::U64, R::Land, &[1u64 << 63, 1 << 32], &[1 << 33, 0]),
        [1, 0]
    );
}

#[test]
fn bitwise_ops() {
    for ty in [T::U8, T::I8, T::Byte] {
        assert_eq!(
            red3(ty, R::Band, &[0xf0u8, 0xff], &[0x3c, 0x01]),
            [0x30, 0x01]
        );
        assert_eq!(
            red3(ty, R::Bor, &[0xf0u8, 0x00], &[0x3c, 0x01]),
            [0xfc, 0x01]
        );
        assert_eq!(
            red3(ty, R::Bxor, &[0xf0u8, 0xff], &[0x3c, 0x0f]),
            [0xcc, 0xf0]
        );
    }
    assert_eq!(red3(T::I16, R::Band, &[-1i16], &[0x1234]), [0x1234]);
    assert_eq!(red3(T::U16, R::Bor, &[0x8000u16], &[0x0001]), [0x8001]);
    assert_eq!(
        red3(T::I32, R::Bxor, &[-1i32], &[0x0f0f_0f0f]),
        [!0x0f0f_0f0f]
    );
    assert_eq!(
        red3(T::U32, R::Band, &[0xdead_beefu32], &[0xffff_0000]),
        [0xdead_0000]
    );
    assert_eq!(red3(T::I64, R::Bor, &[i64::MIN], &[1]), [i64::MIN + 1]);
    assert_eq!(
        red3(T::U64, R::Bxor, &[u64::MAX], &[1 << 63]),
        [u64::MAX >> 1]
    );
}

/// Encodes `(value, index)` pairs of `ty`, padding bytes set to `pad`.
fn enc_pairs(ty: ElemType, v: &[(f64, i32)], pad: u8) -> Vec<u8> {
    let e = ext(ty);
    let mut out = Vec::new();
    for &(x, i) in v {
        let mut el = vec![pad; e];
        let val = match ty {
            T::PairI32I32 => (x as i32).to_ne_bytes().to_vec(),
            T::PairF32I32 => (x as f32).to_ne_bytes().to_vec(),
            T::PairF64I32 => x.to_ne_bytes().to_vec(),
            T::PairI64I32 => (x as i64).to_ne_bytes().to_vec(),
            T::PairI16I32 => (x as i16).to_ne_bytes().to_vec(),
            T::PairF32F32 => (x as f32).to_ne_bytes().to_vec(),
            T::PairF64F64 => x.to_ne_bytes().to_vec(),
            _ => unreachable!(),
        };
        el[..val.len()].copy_from_slice(&val);
        put_pair_index(ty, f64::from(i), &mut el);
        out.extend(el);
    }
    out
}

fn pair_index_at(ty: ElemType) -> usize {
    match ty {
        T::PairF64I32 | T::PairI64I32 | T::PairF64F64 => 8,
        _ => 4,
    }
}

/// Bytes of a pair's index: an `int`, or a real for Fortran's 2REAL / 2DOUBLE_PRECISION.
fn pair_index_size(ty: ElemType) -> usize {
    if ty == T::PairF64F64 {
        8
    } else {
        4
    }
}

/// A pair's index, widened to f64 (exact for i32, f32 and f64).
fn pair_index(ty: ElemType, el: &[u8]) -> f64 {
    let at = pair_index_at(ty);
    match ty {
        T::PairF32F32 => f64::from(f32::from_ne_bytes(el[at..at + 4].try_into().unwrap())),
        T::PairF64F64 => f64::from_ne_bytes(el[at..at + 8].try_into().unwrap()),
        _ => f64::from(i32::from_ne_bytes(el[at..at + 4].try_into().unwrap())),
    }
}

fn put_pair_index(ty: ElemType, i: f64, el: &mut [u8]) {
    let at = pair_index_at(ty);
    match ty {
        T::PairF32F32 => el[at..at + 4].copy_from_slice(&(i as f32).to_ne_bytes()),
        T::PairF64F64 => el[at..at + 8].copy_from_slice(&i.to_ne_bytes()),
        _ => el[at..at + 4].copy_from_slice(&(i as i32).to_ne_bytes()),
    }
}

fn pair_value_size(ty: ElemType) -> usize {
    match ty {
        T::PairF64I32 | T::PairI64I32 | T::PairF64F64 => 8,
        T::PairI16I32 => 2,
        _ => 4,
    }
}

#[test]
fn minloc_maxloc() {
    let pairs = [
        T::PairI32I32,
        T::PairF32I32,
        T::PairF64I32,
        T::PairI64I32,
        T::PairI16I32,
        T::PairF32F32,
        T::PairF64F64,
    ];
    let a = [(1.0, 5), (3.0, 1), (2.0, 9), (2.0, 4), (-7.0, 0), (4.0, -3)];
    let b = [(3.0, 2), (1.0, 7), (2.0, 4), (2.0, 9), (-7.0, 0), (4.0, 2)];
    let minloc = [(1.0, 5), (1.0, 7), (2.0, 4), (2.0, 4), (-7.0, 0), (4.0, -3)];
    let maxloc = [(3.0, 2), (3.0, 1), (2.0, 4), (2.0, 4), (-7.0, 0), (4.0, -3)];
    for ty in pairs {
        let (ab, bb) = (enc_pairs(ty, &a, 0xaa), enc_pairs(ty, &b, 0xbb));
        for (op, want) in [(R::Minloc, &minloc), (R::Maxloc, &maxloc)] {
            // Padding comes from `a`.
            let want = enc_pairs(ty, want, 0xaa);
            let mut d = vec![0u8; ab.len()];
            // SAFETY: three distinct buffers of `a.len()` elements.
            unsafe { reduce(ty, op, d.as_mut_ptr(), ab.as_ptr(), bb.as_ptr(), a.len()) };
            assert_eq!(d, want, "{ty:?} {op:?}");
            let mut d = ab.clone();
            // SAFETY: dst == a.
            unsafe { reduce_inplace(ty, op, d.as_mut_ptr(), bb.as_ptr(), a.len()) };
            assert_eq!(d, want, "{ty:?} {op:?} in place");
        }
    }
    // Float pairs: -0 == +0 is a tie (value of `a`, lower index); NaN never wins.
    for ty in [T::PairF32I32, T::PairF64I32, T::PairF32F32, T::PairF64F64] {
        let a = [(-0.0, 3), (0.0, 3), (f64::NAN, 1), (1.0, 1)];
        let b = [(0.0, 1), (-0.0, 1), (1.0, 0), (f64::NAN, 0)];
        let want = [(-0.0, 1), (0.0, 1), (f64::NAN, 1), (1.0, 1)];
        for op in [R::Minloc, R::Maxloc] {
            let (ab, bb) = (enc_pairs(ty, &a, 0), enc_pairs(ty, &b, 0));
            let mut d = vec![0u8; ab.len()];
            // SAFETY: three distinct buffers of 4 elements.
            unsafe { reduce(ty, op, d.as_mut_ptr(), ab.as_ptr(), bb.as_ptr(), 4) };
            assert_eq!(d, enc_pairs(ty, &want, 0), "{ty:?} {op:?}");
        }
    }
}

// ----- support matrix --------------------------------------------------------------------

#[test]
fn support_rules() {
    for (ty, op) in [
        (T::F32, R::Band),
        (T::F64, R::Lor),
        (T::F16, R::Bxor),
        (T::BF16, R::Land),
        (T::Bool, R::Sum),
        (T::Bool, R::Max),
        (T::Bool, R::Band),
        (T::Byte, R::Sum),
        (T::Byte, R::Min),
        (T::Byte, R::Lor),
        (T::C32, R::Max),
        (T::C64, R::Min),
        (T::C80, R::Band),
        (T::F80, R::Bor),
        (T::PairF80I32, R::Sum),
        (T::I32, R::Minloc),
        (T::F64, R::Maxloc),
        (T::PairI32I32, R::Sum),
        (T::PairF64I32, R::Max),
        (T::Opaque, R::Sum),
        (T::Opaque, R::Bor),
        (T::Logical, R::Sum),
        (T::Logical, R::Band),
        (T::Logical, R::Max),
        (T::PairF32F32, R::Sum),
    ] {
        assert!(!is_supported(ty, op), "{ty:?} {op:?}");
    }
    for (ty, op) in [
        (T::I8, R::Sum),
        (T::Char, R::Sum),
        (T::Char, R::Prod),
        (T::Char, R::Max),
        (T::F16, R::Prod),
        (T::BF16, R::Min),
        (T::Bool, R::Lxor),
        (T::Byte, R::Bxor),
        (T::U64, R::Band),
        (T::I16, R::Lor),
        (T::PairI16I32, R::Minloc),
        (T::Char, R::Band),
        (T::Char, R::Land),
        (T::C32, R::Prod),
        (T::C64, R::Sum),
        (T::C80, R::Prod),
        (T::F80, R::Max),
        (T::PairF80I32, R::Maxloc),
        (T::Logical, R::Lxor),
        (T::PairF32F32, R::Minloc),
        (T::PairF64F64, R::Maxloc),
    ] {
        assert!(is_supported(ty, op), "{ty:?} {op:?}");
    }
    // Opaque supports nothing; the kernel table agrees with `is_supported` everywhere.
    assert!(OPS.iter().all(|&op| !is_supported(T::Opaque, op)));
    for ty in TYPES {
        for op in OPS {
            assert_eq!(kernel(ty, op, Isa::Base).is_some(), is_supported(ty, op));
            assert_eq!(
                kernel(ty, op, detected_isa()).is_some(),
                is_supported(ty, op)
            );
        }
    }
    // SUM/PROD/MAX/MIN on 13 types, the six logical and bitwise ops on 10, the three
    // logical ops on Fortran LOGICAL, MINLOC/MAXLOC on 7 pairs.
    assert_eq!(supported().len(), 4 * 13 + 6 * 10 + 3 + 2 * 7);
    for ty in [T::C32, T::C64, T::C80, T::F80, T::PairF80I32] {
        for op in OPS {
            assert_eq!(kernel(ty, op, Isa::Base).is_some(), is_supported(ty, op));
        }
    }
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "not defined")]
fn unsupported_panics_in_debug() {
    let (a, b, mut d) = ([1f32], [2f32], [0f32]);
    // SAFETY: one-element buffers; the panic happens before any access.
    unsafe {
        reduce(
            T::F32,
            R::Band,
            d.as_mut_ptr().cast(),
            a.as_ptr().cast(),
            b.as_ptr().cast(),
            1,
        )
    };
}

#[test]
fn count_zero_touches_nothing() {
    for (ty, op) in supported() {
        // SAFETY: count 0: no pointer is dereferenced, null included.
        unsafe {
            reduce(
                ty,
                op,
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null(),
                0,
            );
            let mut x = [7u8; 16];
            reduce(ty, op, x.as_mut_ptr(), [1u8; 16].as_ptr(), x.as_ptr(), 0);
            assert_eq!(x, [7u8; 16]);
        }
    }
}

// ----- reference model -------------------------------------------------------------------

/// A small deterministic PRNG (splitmix64).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Binary float format: exponent and mantissa bit counts.
#[derive(Clone, Copy)]
struct Fmt {
    ebits: u32,
    mbits: u32,
}
const FMT_F16: Fmt = Fmt {
    ebits: 5,
    mbits: 10,
};
const FMT_BF16: Fmt = Fmt { ebits: 8, mbits: 7 };
const FMT_F32: Fmt = Fmt {
    ebits: 8,
    mbits: 23,
};
const FMT_F64: Fmt = Fmt {
    ebits: 11,
    mbits: 52,
};

impl Fmt {
    fn bias(self) -> i32 {
        (1 << (self.ebits - 1)) - 1
    }
    fn inf(self) -> u64 {
        ((1u64 << self.ebits) - 1) << self.mbits
    }
    fn sign(self) -> u64 {
        1 << (self.ebits + self.mbits)
    }
    fn quiet(self) -> u64 {
        1 << (self.mbits - 1)
    }
    fn is_nan(self, h: u64) -> bool {
        h & (self.sign() - 1) > self.inf()
    }
    /// Value of the non-negative pattern `h` (no NaN check; `inf()` gives the power of two
    /// just above the largest finite value). Only for formats narrower than f64.
    fn value(self, h: u64) -> f64 {
        let (e, m) = ((h >> self.mbits) as i32, h & ((1 << self.mbits) - 1));
        let pow2 = |k: i32| f64::from_bits(((k + 1023) as u64) << 52);
        let scale = self.bias() + self.mbits as i32;
        if e == 0 {
            m as f64 * pow2(1 - scale)
        } else {
            ((1u64 << self.mbits) + m) as f64 * pow2(e - scale)
        }
    }
    /// Signed value of `h`; NaN for NaN patterns. Only for formats narrower than f64.
    fn decode(self, h: u64) -> f64 {
        if self.is_nan(h) {
            return f64::NAN;
        }
        let v = if h & (self.sign() - 1) == self.inf() {
            f64::INFINITY
        } else {
            self.value(h & (self.sign() - 1))
        };
        if h & self.sign() != 0 {
            -v
        } else {
            v
        }
    }
    /// Round non-NaN `x` to this format, nearest-even, by bisection over the patterns.
    fn round(self, x: f64) -> u64 {
        let sign = if x.is_sign_negative() { self.sign() } else { 0 };
        let ax = x.abs();
        let (mut lo, mut hi) = (0u64, self.inf()); // value(lo) <= ax, searching the last
        if ax >= self.value(hi) {
            return sign | self.inf();
        }
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if self.value(mid) <= ax {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let half = (self.value(lo) + self.value(lo + 1)) / 2.0; // exact in f64
        let h = match ax.partial_cmp(&half).unwrap() {
            Ordering::Less => lo,
            Ordering::Greater => lo + 1,
            Ordering::Equal => lo + (lo & 1),
        };
        sign | h
    }
}

fn float_fmt(ty: ElemType) -> Option<Fmt> {
    match ty {
        T::F16 => Some(FMT_F16),
        T::BF16 => Some(FMT_BF16),
        T::F32 => Some(FMT_F32),
        T::F64 => Some(FMT_F64),
        _ => None,
    }
}

/// Integer-like types: (signed, bytes).
fn int_info(ty: ElemType) -> Option<(bool, usize)> {
    Some(match ty {
        T::I8 | T::Char => (true, 1),
        T::U8 | T::Bool | T::Byte => (false, 1),
        T::I16 => (true, 2),
        T::U16 => (false, 2),
        T::I32 => (true, 4),
        T::U32 | T::Logical => (false, 4),
        T::I64 => (true, 8),
        T::U64 => (false, 8),
        _ => return None,
    })
}

fn get_uint(b: &[u8]) -> u64 {
    match b.len() {
        1 => u64::from(b[0]),
        2 => u64::from(u16::from_ne_bytes(b.try_into().unwrap())),
        4 => u64::from(u32::from_ne_bytes(b.try_into().unwrap())),
        8 => u64::from_ne_bytes(b.try_into().unwrap()),
        _ => unreachable!(),
    }
}

fn put_uint(v: u64, out: &mut [u8]) {
    match out.len() {
        1 => out[0] = v as u8,
        2 => out.copy_from_slice(&(v as u16).to_ne_bytes()),
        4 => out.copy_from_slice(&(v as u32).to_ne_bytes()),
        8 => out.copy_from_slice(&v.to_ne_bytes()),
        _ => unreachable!(),
    }
}

fn get_int(b: &[u8], signed: bool) -> i128 {
    let u = get_uint(b);
    let bits = 8 * b.len() as u32;
    if signed && bits < 64 && u >> (bits - 1) == 1 {
        u as i128 - (1i128 << bits)
    } else if signed && bits == 64 {
        u as i64 as i128
    } else {
        u as i128
    }
}

/// What the model expects for one element.
#[derive(Debug, PartialEq)]
enum Expect {
    Bytes(Vec<u8>),
    /// Any NaN of the format (a NaN that only the hardware determines).
    AnyNan,
}

/// The expected result for one element, computed independently of the kernels
/// (integers in i128, floats in f64 with a bisection rounding).
fn model(ty: ElemType, op: ReduceOp, a: &[u8], b: &[u8]) -> Expect {
    let mut out = a.to_vec();
    if let Some((signed, _)) = int_info(ty) {
        let (x, y) = (get_int(a, signed), get_int(b, signed));
        let r = match op {
            R::Sum => x + y,
            R::Prod => x.wrapping_mul(y),
            R::Max => x.max(y),
            R::Min => x.min(y),
            R::Land => i128::from(x != 0 && y != 0),
            R::Lor => i128::from(x != 0 || y != 0),
            R::Lxor => i128::from((x != 0) != (y != 0)),
            R::Band => x & y,
            R::Bor => x | y,
            R::Bxor => x ^ y,
            _ => unreachable!(),
        };
        put_uint(r as u64, &mut out);
        return Expect::Bytes(out);
    }
    if let Some(f) = float_fmt(ty) {
        let (ha, hb) = (get_uint(a), get_uint(b));
        let dec = |h: u64| {
            if ty == T::F64 {
                f64::from_bits(h)
            } else {
                f.decode(h)
            }
        };
        let (x, y) = (dec(ha), dec(hb));
        let r = match op {
            R::Sum | R::Prod if x.is_nan() => ha | f.quiet(),
            R::Sum | R::Prod => {
                let r = if op == R::Sum { x + y } else { x * y };
                if r.is_nan() {
                    return Expect::AnyNan;
                }
                if ty == T::F64 {
                    r.to_bits()
                } else {
                    f.round(r) // f64 has >= 2p+2 bits: correctly rounded
                }
            }
            R::Max | R::Min => {
                let max = op == R::Max;
                if x.is_nan() {
                    ha
                } else if y.is_nan() {
                    hb
                } else if x == y && x == 0.0 {
                    let neg = if max {
                        x.is_sign_negative() && y.is_sign_negative()
                    } else {
                        x.is_sign_negative() || y.is_sign_negative()
                    };
                    if neg {
                        f.sign()
                    } else {
                        0
                    }
                } else if x == y || (x > y) == max {
                    ha
                } else {
                    hb
                }
            }
            _ => unreachable!(),
        };
        put_uint(r, &mut out);
        return Expect::Bytes(out);
    }
    // Pairs.
    let (vs, at) = (pair_value_size(ty), pair_index_at(ty));
    let cmp = match ty {
        T::PairF32I32 | T::PairF32F32 => {
            let v = |s: &[u8]| f32::from_ne_bytes(s[..4].try_into().unwrap());
            v(b).partial_cmp(&v(a))
        }
        T::PairF64I32 | T::PairF64F64 => {
            let v = |s: &[u8]| f64::from_ne_bytes(s[..8].try_into().unwrap());
            v(b).partial_cmp(&v(a))
        }
        _ => Some(get_int(&b[..vs], true).cmp(&get_int(&a[..vs], true))),
    };
    let is = pair_index_size(ty);
    let idx = |s: &[u8]| pair_index(ty, s);
    let better = if op == R::Maxloc {
        Ordering::Greater
    } else {
        Ordering::Less
    };
    if cmp == Some(better) {
        out[..vs].copy_from_slice(&b[..vs]);
        out[at..at + is].copy_from_slice(&b[at..at + is]);
    } else if cmp == Some(Ordering::Equal) && idx(b) < idx(a) {
        out[at..at + is].copy_from_slice(&b[at..at + is]);
    }
    Expect::Bytes(out)
}

fn check_against_model(ty: ElemType, op: ReduceOp, a: &[u8], b: &[u8], got: &[u8], what: &str) {
    let e = ext(ty);
    for (i, ((x, y), g)) in a.chunks(e).zip(b.chunks(e)).zip(got.chunks(e)).enumerate() {
        match model(ty, op, x, y) {
            Expect::Bytes(w) => assert_eq!(
                g, w,
                "{ty:?} {op:?} {what} element {i}: a={x:02x?} b={y:02x?}"
            ),
            Expect::AnyNan => assert!(
                float_fmt(ty).unwrap().is_nan(get_uint(g)),
                "{ty:?} {op:?} {what} element {i}: want NaN, got {g:02x?}"
            ),
        }
    }
}

/// Random elements of `ty`, rich in special values (wrap points, NaNs, ±0, ties).
fn gen(ty: ElemType, n: usize, rng: &mut Rng) -> Vec<u8> {
    let e = ext(ty);
    let mut out = vec![0u8; n * e];
    for el in out.chunks_mut(e) {
        if ty == T::Bool {
            el[0] = rng.below(2) as u8;
        } else if let Some((_, w)) = int_info(ty) {
            let special = [
                0u64,
                1,
                2,
                u64::MAX,
                u64::MAX >> (65 - 8 * w as u32),
                1 << (8 * w - 1),
            ];
            let v = if rng.below(3) == 0 {
                special[rng.below(special.len() as u64) as usize]
            } else {
                rng.next()
            };
            put_uint(v, el);
        } else if let Some(f) = float_fmt(ty) {
            let one = (f.bias() as u64) << f.mbits;
            let payload = 1 + rng.below(f.quiet() - 1);
            let special = [
                0,
                f.sign(),
                f.inf(),
                f.inf() | f.sign(),
                f.inf() | f.quiet() | payload, // quiet NaNs, various payloads
                f.inf() | f.sign() | f.quiet(),
                f.inf() | payload, // signaling NaN
                one,
                one | f.sign(),
                one + (1 << f.mbits),
                1,                  // smallest subnormal
                f.inf() - 1,        // largest finite
                (1 << f.mbits) | 3, // small normal
            ];
            let v = match rng.below(4) {
                0 => special[rng.below(special.len() as u64) as usize],
                1 => (one + rng.below(4 << f.mbits)) | (rng.below(2) * f.sign()),
                _ => rng.next(),
            };
            put_uint(v, el); // truncated to the width
        } else {
            for x in el.iter_mut() {
                *x = rng.next() as u8; // padding stays random
            }
            let vs = pair_value_size(ty);
            let pick = rng.below(6);
            match ty {
                T::PairF32I32 | T::PairF32F32 => {
                    let v = [-1.0f32, 0.0, -0.0, 2.5, f32::NAN, f32::INFINITY][pick as usize];
                    el[..4].copy_from_slice(&v.to_ne_bytes());
                }
                T::PairF64I32 | T::PairF64F64 => {
                    let v = [-1.0f64, 0.0, -0.0, 2.5, f64::NAN, f64::INFINITY][pick as usize];
                    el[..8].copy_from_slice(&v.to_ne_bytes());
                }
                _ => {
                    let v = [-1i64, 0, 1, 2, i64::MIN, i64::MAX][pick as usize];
                    put_uint(v as u64, &mut el[..vs]);
                }
            }
            let i = rng.below(6) as i32 - 1;
            put_pair_index(ty, f64::from(i), el);
        }
    }
    out
}

/// Runs one `reduce_with` on fresh copies: `how` selects dst = separate, a, b, or a = b = dst.
fn run(isa: Isa, ty: ElemType, op: ReduceOp, a: &[u8], b: &[u8], how: Alias) -> Vec<u8> {
    let n = a.len() / ext(ty);
    let (mut a, mut b) = (a.to_vec(), b.to_vec());
    let mut d = vec![0xa5u8; a.len()];
    // SAFETY: every buffer holds `n` elements; dst is separate or exactly equal to a / b.
    unsafe {
        match how {
            Alias::None => reduce_with(isa, ty, op, d.as_mut_ptr(), a.as_ptr(), b.as_ptr(), n),
            Alias::DstA => {
                reduce_with(isa, ty, op, a.as_mut_ptr(), a.as_ptr(), b.as_ptr(), n);
                d = a;
            }
            Alias::DstB => {
                reduce_with(isa, ty, op, b.as_mut_ptr(), a.as_ptr(), b.as_ptr(), n);
                d = b;
            }
            Alias::All => {
                reduce_with(isa, ty, op, a.as_mut_ptr(), a.as_ptr(), a.as_ptr(), n);
                d = a;
            }
        }
    }
    d
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Alias {
    None,
    DstA,
    DstB,
    All,
}

const COUNTS: [usize; 6] = [1, 2, 7, 31, 64, 1003];

#[test]
fn every_pair_matches_model_at_all_counts() {
    let mut rng = Rng(1);
    for (ty, op) in supported() {
        for n in COUNTS {
            let (a, b) = (gen(ty, n, &mut rng), gen(ty, n, &mut rng));
            let got = run(detected_isa(), ty, op, &a, &b, Alias::None);
            check_against_model(ty, op, &a, &b, &got, &format!("n={n}"));
            let got = run(Isa::Base, ty, op, &a, &b, Alias::None);
            check_against_model(ty, op, &a, &b, &got, &format!("base n={n}"));
        }
    }
}

#[test]
fn in_place_aliasing_matches_separate() {
    let mut rng = Rng(2);
    for (ty, op) in supported() {
        for n in [1, 7, 1003] {
            let (a, b) = (gen(ty, n, &mut rng), gen(ty, n, &mut rng));
            for isa in [Isa::Base, detected_isa()] {
                let sep = run(isa, ty, op, &a, &b, Alias::None);
                for how in [Alias::DstA, Alias::DstB] {
                    let got = run(isa, ty, op, &a, &b, how);
                    assert_eq!(got, sep, "{ty:?} {op:?} n={n} {how:?} {isa:?}");
                }
                let sep = run(isa, ty, op, &a, &a, Alias::None);
                let got = run(isa, ty, op, &a, &a, Alias::All);
                assert_eq!(got, sep, "{ty:?} {op:?} n={n} a == b == dst {isa:?}");
                check_against_model(ty, op, &a, &a, &got, "a == b == dst");
            }
        }
    }
}

#[test]
fn unaligned_pointers() {
    let mut rng = Rng(3);
    for (ty, op) in supported() {
        for n in [7, 1003] {
            let (a, b) = (gen(ty, n, &mut rng), gen(ty, n, &mut rng));
            let want = run(detected_isa(), ty, op, &a, &b, Alias::None);
            let len = a.len();
            for (oa, ob, od) in [(1, 3, 5), (3, 1, 7), (5, 2, 1)] {
                let mut ba = vec![0u8; len + 8];
                let mut bb = vec![0u8; len + 8];
                let mut bd = vec![0u8; len + 8];
                ba[oa..oa + len].copy_from_slice(&a);
                bb[ob..ob + len].copy_from_slice(&b);
                // SAFETY: each offset view holds `n` elements; the buffers are distinct.
                unsafe {
                    let (pa, pb) = (ba.as_ptr().add(oa), bb.as_ptr().add(ob));
                    reduce(ty, op, bd.as_mut_ptr().add(od), pa, pb, n);
                }
                assert_eq!(
                    &bd[od..od + len],
                    want,
                    "{ty:?} {op:?} n={n} offsets {oa},{ob},{od}"
                );
                assert!(bd[..od].iter().chain(&bd[od + len..]).all(|&x| x == 0));
                // In place at an odd address.
                // SAFETY: `ba[oa..]` holds `n` elements, distinct from `bb`.
                unsafe {
                    let pa = ba.as_mut_ptr().add(oa);
                    reduce_inplace(ty, op, pa, bb.as_ptr().add(ob), n);
                }
                assert_eq!(
                    &ba[oa..oa + len],
                    want,
                    "{ty:?} {op:?} n={n} in place, offset {oa}"
                );
            }
        }
    }
}

/// The AVX2 and baseline instances give identical bits on every supported pair, in the
/// vector body and the scalar tail, separate and in place.
#[test]
fn avx2_matches_baseline_bitwise() {
    #[cfg(target_arch = "x86_64")]
    {
        if !is_x86_feature_detected!("avx2") {
            eprintln!("avx2_matches_baseline_bitwise: no AVX2 on this CPU, skipped");
            return;
        }
        let mut rng = Rng(4);
        for (ty, op) in supported() {
            for n in (1..=40).chain([255, 1003, 4099]) {
                let (a, b) = (gen(ty, n, &mut rng), gen(ty, n, &mut rng));
                for how in [Alias::None, Alias::DstA, Alias::DstB, Alias::All] {
                    let base = run(Isa::Base, ty, op, &a, &b, how);
                    let avx2 = run(Isa::Avx2, ty, op, &a, &b, how);
                    assert_eq!(base, avx2, "{ty:?} {op:?} n={n} {how:?}");
                }
            }
        }
    }
}

// ----- 16-bit float conversions ----------------------------------------------------------

#[test]
fn f16_to_f32_exhaustive() {
    for h in 0..=u16::MAX {
        let f = f16_to_f32(h);
        let neg = h & 0x8000 != 0;
        assert_eq!(f.is_sign_negative(), neg, "{h:#06x}");
        if FMT_F16.is_nan(u64::from(h)) {
            assert!(f.is_nan(), "{h:#06x}");
            assert_eq!(
                f.to_bits() & 0x7f_ffff,
                u32::from(h & 0x3ff) << 13,
                "{h:#06x}"
            );
            // Round trip quiets, keeping sign and payload.
            assert_eq!(f32_to_f16(f), h | 0x0200, "{h:#06x}");
        } else {
            assert_eq!(f64::from(f), FMT_F16.decode(u64::from(h)), "{h:#06x}");
            assert_eq!(f32_to_f16(f), h, "round trip {h:#06x}");
        }
    }
}

#[test]
fn bf16_to_f32_exhaustive() {
    for h in 0..=u16::MAX {
        let f = bf16_to_f32(h);
        if FMT_BF16.is_nan(u64::from(h)) {
            assert!(f.is_nan(), "{h:#06x}");
            assert_eq!(f32_to_bf16(f), h | 0x0040, "{h:#06x}");
        } else {
            assert_eq!(f64::from(f), FMT_BF16.decode(u64::from(h)), "{h:#06x}");
            assert_eq!(f.is_sign_negative(), h & 0x8000 != 0);
            assert_eq!(f32_to_bf16(f), h, "round trip {h:#06x}");
        }
    }
}

/// Checks `conv(x)` against the bisection reference for `x` and `-x`.
fn check_round(fmt: Fmt, conv: fn(f32) -> u16, x: f32) {
    for x in [x, -x] {
        let got = u64::from(conv(x));
        if x.is_nan() {
            assert!(fmt.is_nan(got), "{:#010x} -> {got:#06x}", x.to_bits());
            assert_eq!(got & fmt.quiet(), fmt.quiet(), "quiet");
            assert_eq!(got & fmt.sign() != 0, x.is_sign_negative());
        } else {
            let want = fmt.round(f64::from(x));
            assert_eq!(got, want, "{x:e} ({:#010x})", x.to_bits());
        }
    }
}

#[test]
fn f32_to_16bit_rounding_boundaries() {
    for (fmt, conv) in [
        (FMT_F16, f32_to_f16 as fn(f32) -> u16),
        (FMT_BF16, f32_to_bf16 as fn(f32) -> u16),
    ] {
        // Every finite positive pattern: the value, its f32 neighbours, the midpoint to the
        // next pattern (a tie) and the midpoint's f32 neighbours.
        for h in 0..fmt.inf() {
            let v = fmt.value(h) as f32;
            let mid = ((fmt.value(h) + fmt.value(h + 1)) / 2.0) as f32;
            assert_eq!(f64::from(mid), (fmt.value(h) + fmt.value(h + 1)) / 2.0);
            for x in [v, mid] {
                check_round(fmt, conv, x);
                check_round(fmt, conv, f32::from_bits(x.to_bits() + 1));
                if x.to_bits() > 0 {
                    check_round(fmt, conv, f32::from_bits(x.to_bits() - 1));
                }
            }
        }
        for x in [
            f32::INFINITY,
            f32::MAX,
            f32::MIN_POSITIVE,
            65520.0,
            f32::from_bits(65520f32.to_bits() - 1),
            1e-8,
        ] {
            check_round(fmt, conv, x);
        }
    }
}

#[test]
fn f32_to_16bit_rounding_random() {
    let mut rng = Rng(5);
    for _ in 0..200_000 {
        let bits = rng.next() as u32;
        // Random patterns, and random values near the 16-bit ranges.
        let near16 = (bits & 0x0fff_ffff) + 0x3000_0000;
        for x in [f32::from_bits(bits), f32::from_bits(near16)] {
            check_round(FMT_F16, f32_to_f16, x);
            check_round(FMT_BF16, f32_to_bf16, x);
        }
    }
}

// ----- complex and x87 types ----------------------------------------------------------------

#[test]
fn char_logical_and_bitwise() {
    let (a, b) = ([0i8, 5, -1, 0x0f], [0i8, 0, 3, -16]);
    assert_eq!(red(T::Char, R::Land, &a, &b), [0, 0, 1, 1]);
    assert_eq!(red(T::Char, R::Lor, &a, &b), [0, 1, 1, 1]);
    assert_eq!(red(T::Char, R::Lxor, &a, &b), [0, 1, 0, 0]);
    assert_eq!(red(T::Char, R::Band, &a, &b), [0, 0, 3, 0]);
    assert_eq!(red(T::Char, R::Bor, &a, &b), [0, 5, -1, -1]);
    assert_eq!(red(T::Char, R::Bxor, &a, &b), [0, 5, -4, -1]);
}

fn cred<F: Copy + Default>(ty: ElemType, op: ReduceOp, a: &[(F, F)], b: &[(F, F)]) -> Vec<(F, F)> {
    let mut d = vec![(F::default(), F::default()); a.len()];
    // SAFETY: `(F, F)` has the layout of `{F re; F im;}` for f32/f64 here (checked by size).
    assert_eq!(std::mem::size_of::<(F, F)>(), ext(ty));
    unsafe {
        reduce(
            ty,
            op,
            d.as_mut_ptr().cast(),
            a.as_ptr().cast(),
            b.as_ptr().cast(),
            a.len(),
        )
    };
    d
}

#[test]
fn complex_sum_prod() {
    let a = [(1.5f64, -2.0), (0.1, 0.7), (1e308, 3.0)];
    let b = [(0.25f64, 4.0), (0.3, -0.9), (10.0, 0.5)];
    let s = cred(T::C64, R::Sum, &a, &b);
    let p = cred(T::C64, R::Prod, &a, &b);
    for i in 0..a.len() {
        let ((ar, ai), (br, bi)) = (a[i], b[i]);
        assert_eq!(s[i].0.to_bits(), (ar + br).to_bits());
        assert_eq!(s[i].1.to_bits(), (ai + bi).to_bits());
        assert_eq!(p[i].0.to_bits(), (ar * br - ai * bi).to_bits());
        assert_eq!(p[i].1.to_bits(), (ar * bi + ai * br).to_bits());
    }
    let a = [(1.5f32, -2.0), (0.1, 0.7)];
    let b = [(0.25f32, 4.0), (0.3, -0.9)];
    let p = cred(T::C32, R::Prod, &a, &b);
    let q = cred(T::C32, R::Prod, &b, &a);
    for i in 0..a.len() {
        let ((ar, ai), (br, bi)) = (a[i], b[i]);
        assert_eq!(p[i].0.to_bits(), (ar * br - ai * bi).to_bits());
        assert_eq!(p[i].1.to_bits(), (ar * bi + ai * br).to_bits());
        // Commutative bit for bit (finite values).
        assert_eq!(p[i].0.to_bits(), q[i].0.to_bits());
        assert_eq!(p[i].1.to_bits(), q[i].1.to_bits());
    }
}

/// An f64 (normal or zero) as the 16 bytes of an x87 `long double` (padding `pad`).
fn x87(x: f64, pad: u8) -> [u8; 16] {
    let b = x.to_bits();
    let sign = (b >> 63) as u16;
    let e = ((b >> 52) & 0x7ff) as u16;
    let (exp, man) = if e == 0 {
        (0u16, 0u64)
    } else if e == 0x7ff {
        (0x7fff, (1 << 63) | ((b & ((1 << 52) - 1)) << 11))
    } else {
        (
            e + (16383 - 1023),
            (1 << 63) | ((b & ((1 << 52) - 1)) << 11),
        )
    };
    let mut out = [pad; 16];
    out[..8].copy_from_slice(&man.to_le_bytes());
    out[8..10].copy_from_slice(&((sign << 15) | exp).to_le_bytes());
    out
}

fn fred(ty: ElemType, op: ReduceOp, a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut d = vec![0u8; a.len()];
    let n = a.len() / ext(ty);
    // SAFETY: `n` elements in each buffer.
    unsafe { reduce(ty, op, d.as_mut_ptr(), a.as_ptr(), b.as_ptr(), n) };
    d
}

#[test]
#[cfg(target_arch = "x86_64")]
fn long_double_x87() {
    let cat = |v: &[[u8; 16]]| v.concat();
    let a = cat(&[
        x87(1.5, 0xaa),
        x87(3.0, 0xaa),
        x87(-0.0, 0xaa),
        x87(2.0, 0xaa),
    ]);
    let b = cat(&[
        x87(2.25, 0x55),
        x87(-0.5, 0x55),
        x87(0.0, 0x55),
        x87(f64::NAN, 0x55),
    ]);
    let want = |v: &[f64]| cat(&v.iter().map(|&x| x87(x, 0xaa)).collect::<Vec<_>>());
    assert_eq!(
        fred(T::F80, R::Sum, &a, &b)[..48],
        want(&[3.75, 2.5, 0.0])[..]
    );
    assert_eq!(
        fred(T::F80, R::Prod, &a, &b)[..48],
        want(&[3.375, -1.5, -0.0])[..]
    );
    assert_eq!(fred(T::F80, R::Max, &a, &b), {
        let mut w = want(&[2.25, 3.0, 0.0]);
        w.extend_from_slice(&x87(f64::NAN, 0x55));
        w[32..48].copy_from_slice(&x87(0.0, 0x55));
        w[16..32].copy_from_slice(&x87(3.0, 0xaa));
        w[..16].copy_from_slice(&x87(2.25, 0x55));
        w
    });
    let m = fred(T::F80, R::Min, &a, &b);
    assert_eq!(
        m[..48],
        want(&[1.5, -0.5, -0.0])[..48]
            .iter()
            .enumerate()
            .map(|(i, &x)| if (16..32).contains(&i) {
                x87(-0.5, 0x55)[i - 16]
            } else {
                x
            })
            .collect::<Vec<_>>()[..]
    );
    // 1 + 2^-60 is exact in 64-bit precision (not in f64).
    let one = x87(1.0, 0);
    let tiny = x87(2f64.powi(-60), 0);
    let s = fred(T::F80, R::Sum, &one, &tiny);
    let mut w = one;
    w[0] = 0x08;
    assert_eq!(s, w);
}

#[test]
#[cfg(target_arch = "x86_64")]
fn long_double_complex_and_loc() {
    let cx = |re: f64, im: f64| [x87(re, 0), x87(im, 0)].concat();
    let a = cx(1.5, -2.0);
    let b = cx(0.25, 4.0);
    assert_eq!(fred(T::C80, R::Sum, &a, &b), cx(1.75, 2.0));
    assert_eq!(
        fred(T::C80, R::Prod, &a, &b),
        cx(1.5 * 0.25 + 8.0, 6.0 - 0.5)
    );
    let pair = |v: f64, i: i32| {
        let mut p = x87(v, 0).to_vec();
        p.extend_from_slice(&i.to_ne_bytes());
        p.extend_from_slice(&[0; 12]);
        p
    };
    let a = [pair(1.0, 3), pair(2.0, 5), pair(7.0, 9)].concat();
    let b = [pair(1.0, 1), pair(-2.0, 0), pair(8.0, 2)].concat();
    assert_eq!(
        fred(T::PairF80I32, R::Minloc, &a, &b),
        [pair(1.0, 1), pair(-2.0, 0), pair(7.0, 9)].concat()
    );
    assert_eq!(
        fred(T::PairF80I32, R::Maxloc, &a, &b),
        [pair(1.0, 1), pair(2.0, 5), pair(8.0, 2)].concat()
    );
}
