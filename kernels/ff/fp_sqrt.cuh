// Square root in Fp: p = 3 mod 4, so a candidate is a^((p+1)/4); it is a root iff its
// square is a (the same test ic_bls12_381's Fp::sqrt makes).
#ifndef SOVEREIGN_FF_FP_SQRT_CUH
#define SOVEREIGN_FF_FP_SQRT_CUH

#include "ff/fp.cuh"

// r = a^((p+1)/4); returns whether r^2 == a. Not inlined: one copy of the 379-step
// ladder keeps the kernel small; the exponent is public, so the branch is uniform.
__device__ __noinline__ bool fp_sqrt(fp_t& r, const fp_t& a) {
    fp_t acc;
    fp_load_const(acc, FP_ONE);
    for (int bit = FP_SQRT_EXP_BITS - 1; bit >= 0; bit--) {
        fp_sqr(acc, acc);
        if ((FP_SQRT_EXP[bit >> 5] >> (bit & 31)) & 1) fp_mul(acc, acc, a);
    }
    fp_t check;
    fp_sqr(check, acc);
    r = acc;
    return fp_eq(check, a);
}

#endif
