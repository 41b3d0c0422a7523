// Floating-point element operations on raw bits, bit-for-bit those of hcomm's CPU kernels
// (core/src/reduce.rs, "Semantics" in its module docs). Included by reduce.cu only.
//
// Everything works on the elements' bit patterns (unsigned integers) and converts to float
// only for the arithmetic, so that NaNs are never moved through a float operation that
// could rewrite them: the GPU's arithmetic returns its own canonical NaN (0x7fffffff) for
// any NaN result, so every NaN rule below is applied on the bits, explicitly.
//
// No CUDA header is used (NVRTC from PyPI ships none of cuda_fp16.h & co.): the 16-bit
// conversions are the bit manipulations of reduce.rs's f16_to_f32 / f32_to_f16 /
// bf16_to_f32 / f32_to_bf16, transcribed line by line.
//
// The arithmetic must be IEEE round-to-nearest-even with subnormals kept: gen-ptx.sh
// compiles with --fmad=false --ftz=false (no contraction, no flush to zero), and the host
// test build with -ffp-contract=off.

#ifndef HCOMM_FLOAT_CUH
#define HCOMM_FLOAT_CUH

typedef unsigned char hc_u8;
typedef unsigned short hc_u16;
typedef unsigned int hc_u32;
typedef unsigned long long hc_u64;
typedef signed char hc_i8;
typedef short hc_i16;
typedef int hc_i32;
typedef long long hc_i64;

// Bit casts through a union: NVVM and GCC both define this punning and compile it to a move.
__device__ __forceinline__ float hc_f32(hc_u32 u) {
    union {
        hc_u32 u;
        float f;
    } c;
    c.u = u;
    return c.f;
}
__device__ __forceinline__ hc_u32 hc_bits32(float f) {
    union {
        float f;
        hc_u32 u;
    } c;
    c.f = f;
    return c.u;
}
__device__ __forceinline__ double hc_f64(hc_u64 u) {
    union {
        hc_u64 u;
        double f;
    } c;
    c.u = u;
    return c.f;
}
__device__ __forceinline__ hc_u64 hc_bits64(double f) {
    union {
        double f;
        hc_u64 u;
    } c;
    c.f = f;
    return c.u;
}

__device__ __forceinline__ bool hc_isnan32(hc_u32 x) { return (x & 0x7fffffffu) > 0x7f800000u; }
__device__ __forceinline__ bool hc_isnan64(hc_u64 x) {
    return (x & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
}

// ---------------------------------------------------------------------------------------
// SUM and PROD: the NaN rule of reduce.rs, with x86_64's results for the hardware parts.
//   a NaN            -> a quieted (sign and payload kept)
//   else b NaN       -> b quieted (what x86_64 and aarch64 return for one NaN operand)
//   else NaN result  -> the x86_64 default NaN (negative, quiet, zero payload): the result of
//                       an invalid operation (inf - inf, 0 * inf). The GPU's own would be
//                       0x7fffffff.
//   else             -> the IEEE result, round to nearest even.
// ---------------------------------------------------------------------------------------

#define HC_F32_QUIET 0x00400000u
#define HC_F32_DEFAULT_NAN 0xffc00000u
#define HC_F64_QUIET 0x0008000000000000ull
#define HC_F64_DEFAULT_NAN 0xfff8000000000000ull

__device__ __forceinline__ hc_u32 hc_nan_rule32(hc_u32 a, hc_u32 b, float r) {
    if (hc_isnan32(a)) return a | HC_F32_QUIET;
    if (hc_isnan32(b)) return b | HC_F32_QUIET;
    hc_u32 rb = hc_bits32(r);
    return hc_isnan32(rb) ? HC_F32_DEFAULT_NAN : rb;
}
__device__ __forceinline__ hc_u64 hc_nan_rule64(hc_u64 a, hc_u64 b, double r) {
    if (hc_isnan64(a)) return a | HC_F64_QUIET;
    if (hc_isnan64(b)) return b | HC_F64_QUIET;
    hc_u64 rb = hc_bits64(r);
    return hc_isnan64(rb) ? HC_F64_DEFAULT_NAN : rb;
}

__device__ __forceinline__ hc_u32 hc_add32(hc_u32 a, hc_u32 b) {
    return hc_nan_rule32(a, b, hc_f32(a) + hc_f32(b));
}
__device__ __forceinline__ hc_u32 hc_mul32(hc_u32 a, hc_u32 b) {
    return hc_nan_rule32(a, b, hc_f32(a) * hc_f32(b));
}
__device__ __forceinline__ hc_u64 hc_add64(hc_u64 a, hc_u64 b) {
    return hc_nan_rule64(a, b, hc_f64(a) + hc_f64(b));
}
__device__ __forceinline__ hc_u64 hc_mul64(hc_u64 a, hc_u64 b) {
    return hc_nan_rule64(a, b, hc_f64(a) * hc_f64(b));
}

// ---------------------------------------------------------------------------------------
// MAX and MIN: IEEE 754-2019 maximum / minimum as reduce.rs's ieee_pick! does it, on the
// operands' original bits `a`, `b` (a NaN is returned unchanged, not quieted). `wa`, `wb`
// are the bits of their f32 values (widened for F16/BF16; `a`, `b` themselves for F32), and
// `x`, `y` those values.
//   r = x > y ? a : b      (a NaN y fails the comparison and gives b)
//   x == y -> a & b (max) or a | b (min): equal values have equal bits except +0/-0, where
//             the AND gives +0 and the OR gives -0 in either order.
//   x NaN  -> a
// ---------------------------------------------------------------------------------------

template <class R>
__device__ __forceinline__ R hc_fmax(R a, R b, hc_u32 wa, hc_u32 wb) {
    float x = hc_f32(wa), y = hc_f32(wb);
    R r = x > y ? a : b;
    if (x == y) r = (R)(a & b);
    return hc_isnan32(wa) ? a : r;
}
template <class R>
__device__ __forceinline__ R hc_fmin(R a, R b, hc_u32 wa, hc_u32 wb) {
    float x = hc_f32(wa), y = hc_f32(wb);
    R r = x < y ? a : b;
    if (x == y) r = (R)(a | b);
    return hc_isnan32(wa) ? a : r;
}
__device__ __forceinline__ hc_u64 hc_fmax64(hc_u64 a, hc_u64 b) {
    double x = hc_f64(a), y = hc_f64(b);
    hc_u64 r = x > y ? a : b;
    if (x == y) r = a & b;
    return hc_isnan64(a) ? a : r;
}
__device__ __forceinline__ hc_u64 hc_fmin64(hc_u64 a, hc_u64 b) {
    double x = hc_f64(a), y = hc_f64(b);
    hc_u64 r = x < y ? a : b;
    if (x == y) r = a | b;
    return hc_isnan64(a) ? a : r;
}

// ---------------------------------------------------------------------------------------
// binary16 and bfloat16 <-> f32 (reduce.rs: f16_to_f32, f32_to_f16, bf16_to_f32,
// f32_to_bf16).
// ---------------------------------------------------------------------------------------

// Exact. Returns the f32's bits.
__device__ __forceinline__ hc_u32 hc_f16_to_f32(hc_u16 h16) {
    hc_u32 h = h16;
    hc_u32 sign = (h & 0x8000u) << 16;
    hc_u32 em = h & 0x7fffu;
    hc_u32 bits;
    if (em >= 0x7c00u) {
        // Infinity or NaN: keep the payload.
        bits = 0x7f800000u | ((em & 0x3ffu) << 13);
    } else if (em < 0x0400u) {
        // Zero or subnormal: em * 2^-24, exact in f32 (em < 2^10 converts exactly).
        bits = hc_bits32((float)em * hc_f32(0x33800000u));
    } else {
        // Normal: rebias the exponent by 127 - 15.
        bits = (em << 13) + ((127u - 15u) << 23);
    }
    return sign | bits;
}

// Round to nearest even; overflow gives infinity; a NaN gives a quiet NaN with the sign and
// the top 9 payload bits kept. Takes the f32's bits.
__device__ __forceinline__ hc_u16 hc_f32_to_f16(hc_u32 x) {
    hc_u32 sign = (x >> 16) & 0x8000u;
    hc_u32 ax = x & 0x7fffffffu;
    hc_u32 h;
    if (ax > 0x7f800000u) {
        h = 0x7e00u | ((ax >> 13) & 0x3ffu);
    } else if (ax >= 0x47800000u) {
        // |f| >= 2^16 (or infinity): beyond every value that rounds to 65504.
        h = 0x7c00u;
    } else if (ax < 0x38800000u) {
        // f16 subnormal or zero: in 0.5 + |f| the f32 ulp is 2^-24, the f16 subnormal step,
        // so the nearest-even f32 addition does the rounding (needs no flush to zero).
        h = hc_bits32(hc_f32(ax) + 0.5f) - 0x3f000000u;
    } else {
        // Normal: rebias, then round the 13 dropped bits to nearest even; a carry out of the
        // mantissa bumps the exponent, up to 0x7c00 (infinity).
        hc_u32 odd = (ax >> 13) & 1u;
        h = (ax - ((127u - 15u) << 23) + 0x0fffu + odd) >> 13;
    }
    return (hc_u16)(h | sign);
}

// Exact. Returns the f32's bits.
__device__ __forceinline__ hc_u32 hc_bf16_to_f32(hc_u16 h) { return (hc_u32)h << 16; }

// Round to nearest even; overflow gives infinity; a NaN gives a quiet NaN with the sign and
// the top 6 payload bits kept. Takes the f32's bits.
__device__ __forceinline__ hc_u16 hc_f32_to_bf16(hc_u32 x) {
    if (hc_isnan32(x)) return (hc_u16)((x >> 16) | 0x0040u);
    return (hc_u16)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

#endif
