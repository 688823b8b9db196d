// Fp2 = Fp[u] / (u^2 + 1), the bottom of BLS12-381's tower (as ic_bls12_381's Fp2).
// Built only on fp.cuh's API. Every function allows its output to alias its inputs.
#ifndef SOVEREIGN_FF_FP2_CUH
#define SOVEREIGN_FF_FP2_CUH

#include "ff/fp.cuh"

struct fp2_t {
    fp_t c0, c1;
};

// p - 2, the Fermat inversion exponent; 381 bits.
__device__ __constant__ u32 FP_P_MINUS_2[FP_LIMBS] = {
    0xffffaaa9u, 0xb9feffffu, 0xb153ffffu, 0x1eabfffeu, 0xf6b0f624u, 0x6730d2a0u,
    0xf38512bfu, 0x64774b84u, 0x434bacd7u, 0x4b1ba7b6u, 0x397fe69au, 0x1a0111eau};

// a^-1 = a^(p-2) (0 for 0). Variable-time in the public exponent only. Used once per
// final exponentiation, so a ladder is cheap enough and needs no extra code.
__device__ __noinline__ fp_t fp_inv_v(const fp_t a) {
    fp_t acc;
    fp_load_const(acc, FP_ONE);
    for (int bit = 380; bit >= 0; bit--) {
        fp_sqr(acc, acc);
        if ((FP_P_MINUS_2[bit >> 5] >> (bit & 31)) & 1) fp_mul(acc, acc, a);
    }
    return acc;
}

__device__ __forceinline__ void fp2_zero(fp2_t& r) {
    fp_zero(r.c0);
    fp_zero(r.c1);
}

__device__ __forceinline__ void fp2_one(fp2_t& r) {
    fp_load_const(r.c0, FP_ONE);
    fp_zero(r.c1);
}

__device__ __forceinline__ bool fp2_is_zero(const fp2_t& a) {
    return fp_is_zero(a.c0) && fp_is_zero(a.c1);
}

__device__ __forceinline__ bool fp2_eq(const fp2_t& a, const fp2_t& b) {
    return fp_eq(a.c0, b.c0) && fp_eq(a.c1, b.c1);
}

__device__ __forceinline__ void fp2_add(fp2_t& r, const fp2_t& a, const fp2_t& b) {
    fp_add(r.c0, a.c0, b.c0);
    fp_add(r.c1, a.c1, b.c1);
}

__device__ __forceinline__ void fp2_sub(fp2_t& r, const fp2_t& a, const fp2_t& b) {
    fp_sub(r.c0, a.c0, b.c0);
    fp_sub(r.c1, a.c1, b.c1);
}

__device__ __forceinline__ void fp2_dbl(fp2_t& r, const fp2_t& a) { fp2_add(r, a, a); }

__device__ __forceinline__ void fp2_neg(fp2_t& r, const fp2_t& a) {
    fp_neg(r.c0, a.c0);
    fp_neg(r.c1, a.c1);
}

// The Frobenius map of Fp2 is conjugation.
__device__ __forceinline__ void fp2_conj(fp2_t& r, const fp2_t& a) {
    r.c0 = a.c0;
    fp_neg(r.c1, a.c1);
}

// r = a * (u + 1) = (a0 - a1) + (a0 + a1) u: the non-residue Fp6 is built over.
__device__ __forceinline__ void fp2_mul_by_nonresidue(fp2_t& r, const fp2_t& a) {
    fp_t t0, t1;
    fp_sub(t0, a.c0, a.c1);
    fp_add(t1, a.c0, a.c1);
    r.c0 = t0;
    r.c1 = t1;
}

// Karatsuba: three Fp products. Not inlined (one copy serves the whole tower).
__device__ __noinline__ fp2_t fp2_mul_v(const fp2_t a, const fp2_t b) {
    fp_t aa, bb, s, t;
    fp_mul(aa, a.c0, b.c0);
    fp_mul(bb, a.c1, b.c1);
    fp_add(s, a.c0, a.c1);
    fp_add(t, b.c0, b.c1);
    fp_mul(s, s, t);
    fp2_t r;
    fp_sub(r.c0, aa, bb);
    fp_sub(s, s, aa);
    fp_sub(r.c1, s, bb);
    return r;
}

// Complex squaring: (a0 + a1)(a0 - a1) + 2 a0 a1 u; two Fp products.
__device__ __noinline__ fp2_t fp2_sqr_v(const fp2_t a) {
    fp_t s, d, m;
    fp_add(s, a.c0, a.c1);
    fp_sub(d, a.c0, a.c1);
    fp_mul(m, a.c0, a.c1);
    fp2_t r;
    fp_mul(r.c0, s, d);
    fp_add(r.c1, m, m);
    return r;
}

__device__ __forceinline__ void fp2_mul(fp2_t& r, const fp2_t& a, const fp2_t& b) {
    r = fp2_mul_v(a, b);
}

__device__ __forceinline__ void fp2_sqr(fp2_t& r, const fp2_t& a) { r = fp2_sqr_v(a); }

// r = a * s for s in Fp.
__device__ __forceinline__ void fp2_mul_fp(fp2_t& r, const fp2_t& a, const fp_t& s) {
    fp_mul(r.c0, a.c0, s);
    fp_mul(r.c1, a.c1, s);
}

// (a0 - a1 u) / (a0^2 + a1^2).
__device__ __forceinline__ void fp2_inv(fp2_t& r, const fp2_t& a) {
    fp_t t0, t1;
    fp_sqr(t0, a.c0);
    fp_sqr(t1, a.c1);
    fp_add(t0, t0, t1);
    t0 = fp_inv_v(t0);
    fp_mul(r.c0, a.c0, t0);
    fp_mul(t1, a.c1, t0);
    fp_neg(r.c1, t1);
}

#endif
