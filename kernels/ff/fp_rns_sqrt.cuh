// a^((p+1)/4) in the residue number system of ff/fp_rns.cuh: ff/fp_sqrt.cuh's window walk
// (378 squarings, 109 products), one product per step on the whole warp.
#ifndef SOVEREIGN_FF_FP_RNS_SQRT_CUH
#define SOVEREIGN_FF_FP_RNS_SQRT_CUH

#include "ff/fp_rns.cuh"
#include "ff/fp_sqrt.cuh"

// Inlined: a non-inlined callee would receive the constants (rns_ctx) through local memory.
__device__ __forceinline__ u32 rns_pow_sqrt(u32 a, const rns_ctx& c) {
    return pow_sqrt_window(
        a, true, [&c](u32 x) { return rns_mul(x, x, c); },
        [&c](u32 x, u32 y) { return rns_mul(x, y, c); });
}

#endif
