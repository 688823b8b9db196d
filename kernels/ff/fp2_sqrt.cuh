// Square root in Fp2 = Fp[u]/(u^2 + 1) by the norm ("complex") method: two exponentiations
// in Fp instead of ic_bls12_381's two in Fp2 (Algorithm 9 of eprint 2012/685), about a
// third of the Fp products. The two roots of a square are y and -y, and the caller picks
// one by the encoding's sort flag, so the result after that choice is the same whichever
// method found a root.
//
// For a = a0 + a1 u with a square root y = y0 + y1 u: y0^2 - y1^2 = a0 and 2 y0 y1 = a1, so
// N = a0^2 + a1^2 = (y0^2 + y1^2)^2 is a square in Fp, and t = y0^2 solves
// t^2 - a0 t - a1^2/4 = 0, i.e. t = (a0 +- n)/2 with n^2 = N. With w = t^((p-3)/4),
// w^2 t = t^((p-1)/2) is +1 when t is a square in Fp and -1 when not (p = 3 mod 4, so -t
// is then a square):
//   w^2 t = 1:  y = w t + (a1 w / 2) u     (w t = sqrt(t), and 1/(w t) = w);
//   else:       y = -(a1 w / 2) + (w t) u  ((w t)^2 = -t = -y0'^2 with the roles of y0
//                                            and y1 swapped, and 1/(w t) = -w).
// Either candidate satisfies y^2 = a whenever a is a square (both roots t of the quadratic
// work; t = (a0 + n)/2 is replaced by (a0 - n)/2 only when it is zero and a != 0, where
// a1 = 0 and the other root is a0). a = 0 gives t = 0, w = 0 and y = 0. When a is not a
// square N may not be either, n is then no root and the candidate is wrong: the closing
// check y^2 == a is what decides, exactly as ic_bls12_381's Fp2::sqrt decides.
#ifndef SOVEREIGN_FF_FP2_SQRT_CUH
#define SOVEREIGN_FF_FP2_SQRT_CUH

#include "ff/fp.cuh"
#include "ff/fp2.cuh"
#include "ff/fp_sqrt.cuh"

// a^((p+1)/4) (last_product) or a^((p-3)/4): one called copy of the window serves both.
__device__ __noinline__ fp_t fp_pow_sqrt_exp(const fp_t a, bool last_product) {
    return fp_pow_sqrt_window(a, last_product);
}

// r = a square root of a (Montgomery form); returns whether a is a square (r^2 == a).
__device__ __noinline__ bool fp2_sqrt(fp2_t& r, const fp2_t a) {
    fp_t norm, t, n;
    fp_sqr(norm, a.c0);
    fp_sqr(t, a.c1);
    fp_add(norm, norm, t);
    n = fp_pow_sqrt_exp(norm, true);  // sqrt(N) when N is a square
    fp_add(t, a.c0, n);
    if (fp_is_zero(t)) fp_sub(t, a.c0, n);
    fp_half(t, t);                      // t = (a0 +- n)/2
    const fp_t w = fp_pow_sqrt_exp(t, false);
    fp_t wt, h, chk, one;
    fp_mul(wt, w, t);                   // w t
    fp_mul(chk, wt, w);                 // w^2 t = t^((p-1)/2)
    fp_mul(h, a.c1, w);
    fp_half(h, h);                      // a1 w / 2
    fp_load_const(one, FP_ONE);
    fp2_t y;
    if (fp_eq(chk, one)) {
        y.c0 = wt;
        y.c1 = h;
    } else {
        fp_neg(y.c0, h);
        y.c1 = wt;
    }
    fp2_t sq;
    fp2_sqr(sq, y);
    r = y;
    return fp2_eq(sq, a);
}

#endif
