// Host build of kernels/reduce.cu for tests/kernel_semantics.rs, compiled by the test with
//   g++ -include kernels/host_shim.h -I kernels ... -shared driver.cpp
// Every hcomm_reduce_* entry point is exported as a plain C function; hcomm_test_launch runs
// one of them as a grid of simulated threads, one at a time.
#include "reduce.cu"

extern "C" {
hcomm_dim3 threadIdx, blockIdx, blockDim, gridDim;
unsigned long long hcomm_test_path_hits[3];

typedef void (*hcomm_kernel)(hcomm_srcs, int, void *, unsigned long long);

// Runs `kernel` over a grid * block launch, the threads in index order or (reverse != 0) in
// reverse order, with srcs[0..nsrc) in the parameter struct and `poison` in its other slots
// (the kernels must neither use nor look at them). `nsrc` may be outside 1..8 (with at most
// 8 pointers given).
void hcomm_test_launch(hcomm_kernel kernel, unsigned grid, unsigned block, int reverse,
                       const void *const *srcs, int nsrc, void *dst, unsigned long long count,
                       const void *poison) {
    hcomm_srcs s;
    for (int k = 0; k < 8; ++k) s.p[k] = k < nsrc ? srcs[k] : poison;
    gridDim = hcomm_dim3{grid, 1, 1};
    blockDim = hcomm_dim3{block, 1, 1};
    for (unsigned long long n = 0; n < (unsigned long long)grid * block; ++n) {
        unsigned long long t = reverse ? (unsigned long long)grid * block - 1 - n : n;
        blockIdx = hcomm_dim3{(unsigned)(t / block), 0, 0};
        threadIdx = hcomm_dim3{(unsigned)(t % block), 0, 0};
        kernel(s, nsrc, dst, count);
    }
}
}
