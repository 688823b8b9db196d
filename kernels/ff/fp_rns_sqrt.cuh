// a^((p+1)/4) and a^((p-3)/4) in the residue number system of ff/fp_rns.cuh: ff/fp_sqrt.cuh's
// window walk (378 squarings, 109 products), one product per step on the whole warp.
#ifndef SOVEREIGN_FF_FP_RNS_SQRT_CUH
#define SOVEREIGN_FF_FP_RNS_SQRT_CUH

#include "ff/fp_rns.cuh"
#include "ff/fp_sqrt.cuh"

// a^((p+1)/4), or a^((p-3)/4) when `last_product` is false (ff/fp_sqrt.cuh's
// pow_sqrt_window). Inlined: a non-inlined callee would receive the constants (rns_ctx)
// through local memory.
__device__ __forceinline__ u32 rns_pow_sqrt_exp(u32 a, bool last_product, const rns_ctx& c) {
    return pow_sqrt_window(
        a, last_product, [&c](u32 x) { return rns_mul(x, x, c); },
        [&c](u32 x, u32 y) { return rns_mul(x, y, c); });
}

__device__ __forceinline__ u32 rns_pow_sqrt(u32 a, const rns_ctx& c) {
    return rns_pow_sqrt_exp(a, true, c);
}

#endif
