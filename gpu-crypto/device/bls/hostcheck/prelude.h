// Host build of the BLS kernels (g++), for checking them on a machine without a GPU. CUDA
// keywords become plain C++ (a block's shared memory a static array, a barrier nothing:
// callers run the threads of a block one after the other in the order the hand-over
// needs); fp_mul_v's PTX is replaced by a portable CIOS (shim/ff/fp.cuh, made by check.sh).
#pragma once
#include <cstdint>
#define __device__
#define __global__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __constant__
#define __restrict__
#define __launch_bounds__(x)
#define __shared__ static
#define __syncthreads()
struct dim3h { unsigned x, y, z; };
static dim3h blockIdx, threadIdx, blockDim = {1, 1, 1};
static inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned n) {
    n &= 31;
    return n ? (lo >> n) | (hi << (32 - n)) : lo;
}
