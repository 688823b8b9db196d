// Square root in Fp2 in the residue number system of ff/fp2_rns.cuh: ff/fp2_sqrt.cuh's norm
// method (two exponentiations in Fp and the same choice of candidate), each product on the
// whole warp. Bounds in units of p, per coefficient, as in ff/fp_rns.cuh.
#ifndef SOVEREIGN_FF_FP2_RNS_SQRT_CUH
#define SOVEREIGN_FF_FP2_RNS_SQRT_CUH

#include "ff/fp2_rns.cuh"
#include "ff/fp_rns_sqrt.cuh"

// 1/2 = (p + 1)/2 in Montgomery lane form (below 16p): FP_HALF is (p - 1)/2, whose lowest
// limb (0xffffd555) takes the +1 without a carry.
__device__ __forceinline__ u32 rns_half(const rns_ctx& c) {
    u32 w[FP_LIMBS];
#pragma unroll
    for (int j = 0; j < FP_LIMBS; j++) w[j] = FP_HALF[j];
    w[0] += 1;
    return rns_from_words(w, c);
}

// r = a square root of a (coefficients below 2^18 p); returns whether r^2 == a, the check
// that decides, as in ff/fp2_sqrt.cuh. r's coefficients are below 16p. p16 and p96 are
// rns_kp(16) and rns_kp(96); a's coefficients must be below 96p for the closing check.
__device__ __forceinline__ bool fp2_rns_sqrt(fp2_rns_t& r, const fp2_rns_t& a, u32 p16, u32 p96,
                                             const rns_ctx& c) {
    u32 sq[2];
    {
        const u32 v[2] = {a.c0, a.c1};
        rns_mul_k<2>(sq, v, v, c);  // a0^2, a1^2 < 16p
    }
    const u32 n = rns_pow_sqrt_exp(rns_add(sq[0], sq[1], c), true, c);  // sqrt(N) < 16p
    u32 t = rns_add(a.c0, n, c);                                         // < 112p
    if (rns_is_zero(t, c)) t = rns_sub(a.c0, n, p16, c);
    const u32 half = rns_half(c);
    t = rns_mul(t, half, c);                                             // (a0 +- n)/2 < 16p
    const u32 w = rns_pow_sqrt_exp(t, false, c);                         // t^((p-3)/4) < 16p
    u32 o[2];
    {
        const u32 l[2] = {w, w}, m[2] = {t, a.c1};
        rns_mul_k<2>(o, l, m, c);  // w t, a1 w
    }
    const u32 wt = o[0];
    {
        const u32 l[2] = {wt, o[1]}, m[2] = {w, half};
        rns_mul_k<2>(o, l, m, c);  // w^2 t = t^((p-1)/2), a1 w / 2
    }
    const u32 h = o[1];
    const u32 one = rns_mul(rns_lane_const(RNS_ONE, c), rns_lane_const(RNS_M2P, c), c);
    const bool t_is_square = rns_is_zero(rns_sub(o[0], one, p16, c), c);
    const fp2_rns_t y = t_is_square ? fp2_rns_t{wt, h} : fp2_rns_t{rns_sub(0, h, p16, c), wt};
    fp2_rns_t y2;
    fp2_rns_mul_k<1>(&y2, &y, &y, p16, c);  // < 48p
    r = y;
    return fp2_rns_is_zero(fp2_rns_sub(y2, a, p96, c), c);
}

#endif
