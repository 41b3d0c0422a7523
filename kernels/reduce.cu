// hcomm's GPU reduction kernels: element-wise reduction of up to 8 device buffers into one,
// bit-for-bit equal to hcomm's CPU kernels (core/src/reduce.rs).
//
// Generated into kernels/hcomm_kernels.ptx by scripts/gen-ptx.sh (NVRTC, compute_75); the
// host test (tests/kernel_semantics.rs) compiles this same file with g++ through
// kernels/host_shim.h and compares every entry point with the CPU kernels.
//
// Entry points
//   extern "C" __global__ void hcomm_reduce_<op>_<type>(hcomm_srcs srcs, int nsrc,
//                                                      void *dst, unsigned long long count)
//   op:   sum prod min max                    for f32 f64 f16 bf16 i8 i16 i32 i64 u8 u16 u32 u64
//         band bor bxor land lor lxor         for i8 i16 i32 i64 u8 u16 u32 u64
//   (exactly the pairs reduce.rs's is_supported accepts among these types and ops;
//   tests/kernel_semantics.rs checks the PTX's entry list against it).
//
// Parameters (PTX: .param .align 8 .b8 srcs[64], then nsrc, dst, count)
//   srcs   struct { const void *p[8]; }, passed by value; p[0] .. p[nsrc-1] are used, the
//          rest are ignored (may be anything).
//   nsrc   1..8 (any other value: the kernel does nothing).
//   dst    count elements; may be exactly equal to any p[k] (in-place accumulation into
//          p[0]); must not otherwise overlap a source. Pointers may be device pointers in
//          different allocations (IPC-mapped peers), with any alignment.
//   count  elements (not bytes); 0 does nothing (pointers are not touched).
//
// Semantics, for every i < count:
//   acc = p[0][i]; for k in 1..nsrc: acc = combine(acc, p[k][i]); dst[i] = acc;
// combine(a, b) is reduce.rs's `reduce(ty, op, dst, a, b)` on one element: `a` is the
// earlier operand in rank order (the accumulator / inout side), `b` the later one. So pass
// the buffers in rank order, p[0] = lowest rank, to get what the CPU path computes. With
// nsrc == 1, dst is a copy of p[0] (bits unchanged). The NaN rules (which NaN, quieted or
// not, x86_64's default NaN for invalid operations), ±0 in MIN/MAX, F16/BF16 rounding and
// integer wrap-around are those of reduce.rs's module docs; see hcomm_float.cuh.
//
// Launch: any grid and block shape (1-D: only .x is used); every loop is grid-stride.
// hcomm launches blockDim.x = 256 and a grid of its choosing. No shared memory, no
// synchronization between threads.
//
// Memory access: when dst and every source have the same address modulo 16 and element
// alignment, the body moves 16 bytes per operand per step (one vector load or store), with
// scalar elements before the first and after the last 16-byte boundary. Otherwise each
// element is loaded alone, byte by byte when some pointer is not aligned to the element
// size (a misaligned wide load would fault on the GPU).

#include "hcomm_float.cuh"

struct hcomm_srcs {
    const void *p[8];
};

#define HC_MAX_SRCS 8

// Which memory-access path a thread took (the host test counts them; nothing on the GPU).
#define HC_PATH_VEC 0
#define HC_PATH_SCALAR 1
#define HC_PATH_BYTES 2
#ifndef HCOMM_COUNT_PATH
#define HCOMM_COUNT_PATH(path) ((void)0)
#endif

// ---------------------------------------------------------------------------------------
// Element types. Elements are handled as their bits (`raw`, an unsigned integer of their
// size) everywhere but in the arithmetic.
// ---------------------------------------------------------------------------------------

// An integer type: `ord` is what MAX/MIN compare (signed or not); SUM/PROD wrap in `wide`,
// an unsigned type of at least 32 bits, so that no signed overflow (undefined behavior) can
// occur, integer promotion of 8/16-bit operands included.
template <class R, class S, class W>
struct HcInt {
    typedef R raw;
    typedef S ord;
    typedef W wide;
};
typedef HcInt<hc_u8, hc_i8, hc_u32> TyI8;
typedef HcInt<hc_u8, hc_u8, hc_u32> TyU8;
typedef HcInt<hc_u16, hc_i16, hc_u32> TyI16;
typedef HcInt<hc_u16, hc_u16, hc_u32> TyU16;
typedef HcInt<hc_u32, hc_i32, hc_u32> TyI32;
typedef HcInt<hc_u32, hc_u32, hc_u32> TyU32;
typedef HcInt<hc_u64, hc_i64, hc_u64> TyI64;
typedef HcInt<hc_u64, hc_u64, hc_u64> TyU64;

struct TyF32 {
    typedef hc_u32 raw;
};
struct TyF64 {
    typedef hc_u64 raw;
};
struct TyF16 {
    typedef hc_u16 raw;
};
struct TyBF16 {
    typedef hc_u16 raw;
};

// ---------------------------------------------------------------------------------------
// Operations: Op::f(type tag, a, b) on raw bits; `a` is the earlier operand.
// ---------------------------------------------------------------------------------------

struct OpSum {
    template <class R, class S, class W>
    static __device__ __forceinline__ R f(HcInt<R, S, W>, R a, R b) {
        return (R)((W)a + (W)b);
    }
    static __device__ __forceinline__ hc_u32 f(TyF32, hc_u32 a, hc_u32 b) { return hc_add32(a, b); }
    static __device__ __forceinline__ hc_u64 f(TyF64, hc_u64 a, hc_u64 b) { return hc_add64(a, b); }
    static __device__ __forceinline__ hc_u16 f(TyF16, hc_u16 a, hc_u16 b) {
        return hc_f32_to_f16(hc_add32(hc_f16_to_f32(a), hc_f16_to_f32(b)));
    }
    static __device__ __forceinline__ hc_u16 f(TyBF16, hc_u16 a, hc_u16 b) {
        return hc_f32_to_bf16(hc_add32(hc_bf16_to_f32(a), hc_bf16_to_f32(b)));
    }
};

struct OpProd {
    template <class R, class S, class W>
    static __device__ __forceinline__ R f(HcInt<R, S, W>, R a, R b) {
        return (R)((W)a * (W)b);
    }
    static __device__ __forceinline__ hc_u32 f(TyF32, hc_u32 a, hc_u32 b) { return hc_mul32(a, b); }
    static __device__ __forceinline__ hc_u64 f(TyF64, hc_u64 a, hc_u64 b) { return hc_mul64(a, b); }
    static __device__ __forceinline__ hc_u16 f(TyF16, hc_u16 a, hc_u16 b) {
        return hc_f32_to_f16(hc_mul32(hc_f16_to_f32(a), hc_f16_to_f32(b)));
    }
    static __device__ __forceinline__ hc_u16 f(TyBF16, hc_u16 a, hc_u16 b) {
        return hc_f32_to_bf16(hc_mul32(hc_bf16_to_f32(a), hc_bf16_to_f32(b)));
    }
};

struct OpMax {
    template <class R, class S, class W>
    static __device__ __forceinline__ R f(HcInt<R, S, W>, R a, R b) {
        return (S)a > (S)b ? a : b;
    }
    static __device__ __forceinline__ hc_u32 f(TyF32, hc_u32 a, hc_u32 b) { return hc_fmax<hc_u32>(a, b, a, b); }
    static __device__ __forceinline__ hc_u64 f(TyF64, hc_u64 a, hc_u64 b) { return hc_fmax64(a, b); }
    static __device__ __forceinline__ hc_u16 f(TyF16, hc_u16 a, hc_u16 b) {
        return hc_fmax<hc_u16>(a, b, hc_f16_to_f32(a), hc_f16_to_f32(b));
    }
    static __device__ __forceinline__ hc_u16 f(TyBF16, hc_u16 a, hc_u16 b) {
        return hc_fmax<hc_u16>(a, b, hc_bf16_to_f32(a), hc_bf16_to_f32(b));
    }
};

struct OpMin {
    template <class R, class S, class W>
    static __device__ __forceinline__ R f(HcInt<R, S, W>, R a, R b) {
        return (S)a < (S)b ? a : b;
    }
    static __device__ __forceinline__ hc_u32 f(TyF32, hc_u32 a, hc_u32 b) { return hc_fmin<hc_u32>(a, b, a, b); }
    static __device__ __forceinline__ hc_u64 f(TyF64, hc_u64 a, hc_u64 b) { return hc_fmin64(a, b); }
    static __device__ __forceinline__ hc_u16 f(TyF16, hc_u16 a, hc_u16 b) {
        return hc_fmin<hc_u16>(a, b, hc_f16_to_f32(a), hc_f16_to_f32(b));
    }
    static __device__ __forceinline__ hc_u16 f(TyBF16, hc_u16 a, hc_u16 b) {
        return hc_fmin<hc_u16>(a, b, hc_bf16_to_f32(a), hc_bf16_to_f32(b));
    }
};

// Bitwise and logical ops: integers only (no float overloads, so a float instantiation does
// not compile). Logical ops treat nonzero as true and store 0 or 1.
#define HC_INT_OP(Name, expr)                                          \
    struct Name {                                                      \
        template <class R, class S, class W>                           \
        static __device__ __forceinline__ R f(HcInt<R, S, W>, R a, R b) { \
            return (R)(expr);                                          \
        }                                                              \
    };
HC_INT_OP(OpBand, a & b)
HC_INT_OP(OpBor, a | b)
HC_INT_OP(OpBxor, a ^ b)
HC_INT_OP(OpLand, (a != 0) & (b != 0))
HC_INT_OP(OpLor, (a | b) != 0)
HC_INT_OP(OpLxor, (a != 0) ^ (b != 0))

// ---------------------------------------------------------------------------------------
// Memory access
// ---------------------------------------------------------------------------------------

// 16 bytes of elements, 16-byte aligned: copied as a whole, it is one vector load/store.
template <class R>
union alignas(16) HcVec {
    hc_u64 q[2];
    R e[16 / sizeof(R)];
};

// Element i of a buffer aligned to the element size.
struct HcAligned {
    template <class R>
    static __device__ __forceinline__ R load(const void *p, hc_u64 i) {
        return ((const R *)p)[i];
    }
    template <class R>
    static __device__ __forceinline__ void store(void *p, hc_u64 i, R v) {
        ((R *)p)[i] = v;
    }
};

// Element i of a buffer at any address, one byte at a time (little-endian, as the GPU and
// the CPUs hcomm runs on are).
struct HcBytes {
    template <class R>
    static __device__ __forceinline__ R load(const void *p, hc_u64 i) {
        const hc_u8 *b = (const hc_u8 *)p + i * sizeof(R);
        R v = 0;
#pragma unroll
        for (unsigned j = 0; j < sizeof(R); ++j) v = (R)(v | ((R)b[j] << (8 * j)));
        return v;
    }
    template <class R>
    static __device__ __forceinline__ void store(void *p, hc_u64 i, R v) {
        hc_u8 *b = (hc_u8 *)p + i * sizeof(R);
#pragma unroll
        for (unsigned j = 0; j < sizeof(R); ++j) b[j] = (hc_u8)(v >> (8 * j));
    }
};

// The source pointers in registers. `at(k)` selects one with a chain of compares rather than
// an index: a variable index into an array (the by-value `srcs` included) would put it in
// local memory.
struct HcPtrs {
    const void *p[HC_MAX_SRCS];
    __device__ __forceinline__ const void *at(int k) const {
        const void *r = p[0];
#pragma unroll
        for (int m = 1; m < HC_MAX_SRCS; ++m)
            if (k == m) r = p[m];
        return r;
    }
};

// dst[i] = the fold of the sources' element i. The next source's element is loaded before
// the current one is combined, so that a load is in flight during the arithmetic. The loop
// over sources is not unrolled: one copy of the (for F16, long) combine per path keeps the
// PTX, and the driver's JIT time, small.
template <class Op, class Ty, class Acc>
__device__ __forceinline__ void hc_elem(const HcPtrs &src, int nsrc, void *dst, hc_u64 i) {
    typedef typename Ty::raw R;
    R acc = Acc::template load<R>(src.p[0], i);
    R next = nsrc > 1 ? Acc::template load<R>(src.p[1], i) : (R)0;
#pragma unroll 1
    for (int k = 1; k < nsrc; ++k) {
        const R cur = next;
        if (k + 1 < nsrc) next = Acc::template load<R>(src.at(k + 1), i);
        acc = Op::f(Ty(), acc, cur);
    }
    Acc::template store<R>(dst, i, acc);
}

// The same for vector j: the 16 bytes at element `head + j * N` of each buffer (16-byte
// aligned there). The offset is added at each access rather than kept in a second set of
// pointers, which would take 16 more registers.
template <class Op, class Ty>
__device__ __forceinline__ void hc_vec(const HcPtrs &src, int nsrc, void *dst, hc_u64 head, hc_u64 j) {
    typedef typename Ty::raw R;
    typedef HcVec<R> V;
    const unsigned N = 16 / sizeof(R);
    const hc_u64 off = head * sizeof(R) + j * 16;
    V acc = *(const V *)((const char *)src.p[0] + off);
    V next;
    if (nsrc > 1) next = *(const V *)((const char *)src.p[1] + off);
#pragma unroll 1
    for (int k = 1; k < nsrc; ++k) {
        const V cur = next;
        if (k + 1 < nsrc) next = *(const V *)((const char *)src.at(k + 1) + off);
#pragma unroll
        for (unsigned l = 0; l < N; ++l) acc.e[l] = Op::f(Ty(), acc.e[l], cur.e[l]);
    }
    *(V *)((char *)dst + off) = acc;
}

template <class Op, class Ty>
__device__ __forceinline__ void hc_reduce(const hcomm_srcs &srcs, int nsrc, void *dst, hc_u64 count) {
    typedef typename Ty::raw R;
    const unsigned N = 16 / sizeof(R);
    if (nsrc < 1 || nsrc > HC_MAX_SRCS) return;  // outside the contract: touch nothing
    const hc_u64 tid = (hc_u64)blockIdx.x * blockDim.x + threadIdx.x;
    const hc_u64 nth = (hc_u64)gridDim.x * blockDim.x;

    // Unused slots get dst's address: harmless in the alignment test below and never loaded.
    // `diff`: address bits where some source differs from dst; `any`: bits set in any address.
    const hc_u64 d = (hc_u64)dst;
    HcPtrs src;
    hc_u64 diff = 0, any = d;
#pragma unroll
    for (int k = 0; k < HC_MAX_SRCS; ++k) {
        src.p[k] = k < nsrc ? srcs.p[k] : (const void *)dst;
        const hc_u64 a = (hc_u64)src.p[k];
        diff |= a ^ d;
        any |= a;
    }

    if (any & (sizeof(R) - 1)) {
        HCOMM_COUNT_PATH(HC_PATH_BYTES);
        for (hc_u64 i = tid; i < count; i += nth) hc_elem<Op, Ty, HcBytes>(src, nsrc, dst, i);
    } else if (diff & 15) {
        HCOMM_COUNT_PATH(HC_PATH_SCALAR);
        for (hc_u64 i = tid; i < count; i += nth) hc_elem<Op, Ty, HcAligned>(src, nsrc, dst, i);
    } else {
        HCOMM_COUNT_PATH(HC_PATH_VEC);
        // Elements [0, head) lie before the first 16-byte boundary, [tail, count) after the
        // last whole vector.
        hc_u64 head = ((16 - (d & 15)) & 15) / sizeof(R);
        if (head > count) head = count;
        const hc_u64 nvec = (count - head) / N;
        const hc_u64 tail = head + nvec * N;
        for (hc_u64 j = tid; j < nvec; j += nth) hc_vec<Op, Ty>(src, nsrc, dst, head, j);
        const hc_u64 nscalar = head + (count - tail);
        for (hc_u64 s = tid; s < nscalar; s += nth)
            hc_elem<Op, Ty, HcAligned>(src, nsrc, dst, s < head ? s : tail + (s - head));
    }
}

// ---------------------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------------------

#define HC_ENTRY(op, Op, ty, Ty)                                                                 \
    extern "C" __global__ void hcomm_reduce_##op##_##ty(hcomm_srcs srcs, int nsrc, void *dst, \
                                                         unsigned long long count) {           \
        hc_reduce<Op, Ty>(srcs, nsrc, dst, count);                                             \
    }

#define HC_ARITH(op, Op)             \
    HC_ENTRY(op, Op, f32, TyF32)     \
    HC_ENTRY(op, Op, f64, TyF64)     \
    HC_ENTRY(op, Op, f16, TyF16)     \
    HC_ENTRY(op, Op, bf16, TyBF16)   \
    HC_INTEGER(op, Op)

#define HC_INTEGER(op, Op)           \
    HC_ENTRY(op, Op, i8, TyI8)       \
    HC_ENTRY(op, Op, i16, TyI16)     \
    HC_ENTRY(op, Op, i32, TyI32)     \
    HC_ENTRY(op, Op, i64, TyI64)     \
    HC_ENTRY(op, Op, u8, TyU8)       \
    HC_ENTRY(op, Op, u16, TyU16)     \
    HC_ENTRY(op, Op, u32, TyU32)     \
    HC_ENTRY(op, Op, u64, TyU64)

HC_ARITH(sum, OpSum)
HC_ARITH(prod, OpProd)
HC_ARITH(min, OpMin)
HC_ARITH(max, OpMax)
HC_INTEGER(band, OpBand)
HC_INTEGER(bor, OpBor)
HC_INTEGER(bxor, OpBxor)
HC_INTEGER(land, OpLand)
HC_INTEGER(lor, OpLor)
HC_INTEGER(lxor, OpLxor)
