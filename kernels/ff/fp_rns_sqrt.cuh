// a^((p+1)/4) in the residue number system of ff/fp_rns.cuh: the window walk of
// ff/fp_sqrt.cuh (378 squarings, 109 products), one product per step on the whole warp.
#ifndef SOVEREIGN_FF_FP_RNS_SQRT_CUH
#define SOVEREIGN_FF_FP_RNS_SQRT_CUH

#include "ff/fp_rns.cuh"
#include "ff/fp_sqrt.cuh"

// Inlined: a non-inlined callee would receive the constants (rns_ctx) through local memory.
__device__ __forceinline__ u32 rns_pow_sqrt(u32 a, const rns_ctx& c) {
    const u32 a2 = rns_mul(a, a, c);
    const u32 a3 = rns_mul(a2, a, c);
    const u32 a5 = rns_mul(a3, a2, c);
    const u32 a7 = rns_mul(a5, a2, c);
    u32 acc = a3;  // FP_SQRT_W3_LEADING
#pragma unroll 1
    for (int s = 0; s < FP_SQRT_W3_STEPS; s++) {
        const u32 step = FP_SQRT_W3[s];
#pragma unroll 1
        for (u32 k = step >> 3; k != 0; k--) acc = rns_mul(acc, acc, c);
        const u32 digit = step & 7;
        acc = rns_mul(acc, digit == 1 ? a : digit == 3 ? a3 : digit == 5 ? a5 : a7, c);
    }
    return acc;
}

#endif
