// Lets g++ compile kernels/reduce.cu as host C++ for tests/kernel_semantics.rs (force-included
// with -include before the kernel source). Each kernel becomes a plain extern "C" function
// run once per simulated thread: the test driver sets the launch shape and the thread's
// indices below, then calls it. No CUDA intrinsic is used by the kernels, so only the
// execution-space keywords and the built-in index variables need a host meaning.
#ifndef HCOMM_HOST_SHIM_H
#define HCOMM_HOST_SHIM_H

#define __global__
#define __device__
#define __forceinline__ inline __attribute__((always_inline))

struct hcomm_dim3 {
    unsigned x, y, z;
};
// The simulated thread's indices and the launch shape (one thread runs at a time).
extern "C" hcomm_dim3 threadIdx, blockIdx, blockDim, gridDim;

// How many simulated threads took each memory-access path (HC_PATH_* in reduce.cu).
extern "C" unsigned long long hcomm_test_path_hits[3];
#define HCOMM_COUNT_PATH(path) (hcomm_test_path_hits[(path)] += 1)

#endif
