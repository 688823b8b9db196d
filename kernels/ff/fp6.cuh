// Fp6 = Fp2[v] / (v^3 - (u + 1)) (as ic_bls12_381's Fp6). Built on fp2.cuh.
// Every function allows its output to alias its inputs.
#ifndef SOVEREIGN_FF_FP6_CUH
#define SOVEREIGN_FF_FP6_CUH

#include "ff/fp2.cuh"

struct fp6_t {
    fp2_t c0, c1, c2;
};

// Frobenius coefficients (ic_bls12_381's fp6.rs, Montgomery form): c1 is multiplied by
// (0 + FP6_FROB_C1_U u), c2 by (FP6_FROB_C2 + 0 u).
__device__ __constant__ u32 FP6_FROB_C1_U[FP_LIMBS] = {
    0x8671f071u, 0xcd03c9e4u, 0x1fcda5d2u, 0x5dab2246u, 0xd3851b95u, 0x587042afu,
    0x01bacb9eu, 0x8eb60ebeu, 0x83d050d2u, 0x03f97d6eu, 0x54638741u, 0x18f02065u};
__device__ __constant__ u32 FP6_FROB_C2[FP_LIMBS] = {
    0x867545c3u, 0x890dc9e4u, 0x3285a5d5u, 0x2af32253u, 0x309b7e2cu, 0x50880866u,
    0x7e881024u, 0xa20d1b8cu, 0xe2db9068u, 0x14e4f04fu, 0x1564853au, 0x14e56d3fu};

__device__ __forceinline__ void fp6_zero(fp6_t& r) {
    fp2_zero(r.c0);
    fp2_zero(r.c1);
    fp2_zero(r.c2);
}

__device__ __forceinline__ void fp6_one(fp6_t& r) {
    fp2_one(r.c0);
    fp2_zero(r.c1);
    fp2_zero(r.c2);
}

__device__ __forceinline__ bool fp6_eq(const fp6_t& a, const fp6_t& b) {
    return fp2_eq(a.c0, b.c0) && fp2_eq(a.c1, b.c1) && fp2_eq(a.c2, b.c2);
}

__device__ __forceinline__ void fp6_add(fp6_t& r, const fp6_t& a, const fp6_t& b) {
    fp2_add(r.c0, a.c0, b.c0);
    fp2_add(r.c1, a.c1, b.c1);
    fp2_add(r.c2, a.c2, b.c2);
}

__device__ __forceinline__ void fp6_sub(fp6_t& r, const fp6_t& a, const fp6_t& b) {
    fp2_sub(r.c0, a.c0, b.c0);
    fp2_sub(r.c1, a.c1, b.c1);
    fp2_sub(r.c2, a.c2, b.c2);
}

__device__ __forceinline__ void fp6_neg(fp6_t& r, const fp6_t& a) {
    fp2_neg(r.c0, a.c0);
    fp2_neg(r.c1, a.c1);
    fp2_neg(r.c2, a.c2);
}

// r = a * v = (xi a2, a0, a1) with xi = u + 1.
__device__ __forceinline__ void fp6_mul_by_nonresidue(fp6_t& r, const fp6_t& a) {
    fp2_t t;
    fp2_mul_by_nonresidue(t, a.c2);
    r.c2 = a.c1;
    r.c1 = a.c0;
    r.c0 = t;
}

// Karatsuba over Fp2: six Fp2 products.
__device__ __noinline__ void fp6_mul(fp6_t& r, const fp6_t& a, const fp6_t& b) {
    fp2_t t0, t1, t2, s, t, c0, c1, c2;
    fp2_mul(t0, a.c0, b.c0);
    fp2_mul(t1, a.c1, b.c1);
    fp2_mul(t2, a.c2, b.c2);
    // c0 = t0 + xi ((a1 + a2)(b1 + b2) - t1 - t2)
    fp2_add(s, a.c1, a.c2);
    fp2_add(t, b.c1, b.c2);
    fp2_mul(s, s, t);
    fp2_sub(s, s, t1);
    fp2_sub(s, s, t2);
    fp2_mul_by_nonresidue(s, s);
    fp2_add(c0, s, t0);
    // c1 = (a0 + a1)(b0 + b1) - t0 - t1 + xi t2
    fp2_add(s, a.c0, a.c1);
    fp2_add(t, b.c0, b.c1);
    fp2_mul(s, s, t);
    fp2_sub(s, s, t0);
    fp2_sub(s, s, t1);
    fp2_mul_by_nonresidue(t, t2);
    fp2_add(c1, s, t);
    // c2 = (a0 + a2)(b0 + b2) - t0 - t2 + t1
    fp2_add(s, a.c0, a.c2);
    fp2_add(t, b.c0, b.c2);
    fp2_mul(s, s, t);
    fp2_sub(s, s, t0);
    fp2_sub(s, s, t2);
    fp2_add(c2, s, t1);
    r.c0 = c0;
    r.c1 = c1;
    r.c2 = c2;
}

// Chung-Hasan SQR2 (ic_bls12_381's Fp6::square).
__device__ __noinline__ void fp6_sqr(fp6_t& r, const fp6_t& a) {
    fp2_t s0, s1, s2, s3, s4, t;
    fp2_sqr(s0, a.c0);
    fp2_mul(s1, a.c0, a.c1);
    fp2_dbl(s1, s1);
    fp2_sub(s2, a.c0, a.c1);
    fp2_add(s2, s2, a.c2);
    fp2_sqr(s2, s2);
    fp2_mul(s3, a.c1, a.c2);
    fp2_dbl(s3, s3);
    fp2_sqr(s4, a.c2);
    fp2_mul_by_nonresidue(t, s3);
    fp2_add(r.c0, t, s0);
    fp2_mul_by_nonresidue(t, s4);
    fp2_add(t, t, s1);
    // c2 = s1 + s2 + s3 - s0 - s4 (s1 is read before r.c1 is written: r may alias a only).
    fp2_add(s2, s1, s2);
    fp2_add(s2, s2, s3);
    fp2_sub(s2, s2, s0);
    fp2_sub(r.c2, s2, s4);
    r.c1 = t;
}

// a * (b0 + b1 v) (the sparse factor of a line).
__device__ __noinline__ void fp6_mul_by_01(fp6_t& r, const fp6_t& a, const fp2_t& b0,
                                           const fp2_t& b1) {
    fp2_t aa, bb, t1, t2, t3, s;
    fp2_mul(aa, a.c0, b0);
    fp2_mul(bb, a.c1, b1);
    fp2_mul(t1, a.c2, b1);
    fp2_mul_by_nonresidue(t1, t1);
    fp2_add(t1, t1, aa);
    fp2_add(s, b0, b1);
    fp2_add(t2, a.c0, a.c1);
    fp2_mul(t2, t2, s);
    fp2_sub(t2, t2, aa);
    fp2_sub(t2, t2, bb);
    fp2_mul(t3, a.c2, b0);
    fp2_add(t3, t3, bb);
    r.c0 = t1;
    r.c1 = t2;
    r.c2 = t3;
}

// a * (b1 v).
__device__ __forceinline__ void fp6_mul_by_1(fp6_t& r, const fp6_t& a, const fp2_t& b1) {
    fp2_t t0, t1, t2;
    fp2_mul(t0, a.c2, b1);
    fp2_mul_by_nonresidue(t0, t0);
    fp2_mul(t1, a.c0, b1);
    fp2_mul(t2, a.c1, b1);
    r.c0 = t0;
    r.c1 = t1;
    r.c2 = t2;
}

__device__ __noinline__ void fp6_frobenius(fp6_t& r, const fp6_t& a) {
    fp2_t k, c1, c2;
    fp2_conj(r.c0, a.c0);
    fp2_conj(c1, a.c1);
    fp2_conj(c2, a.c2);
    fp_zero(k.c0);
    fp_load_const(k.c1, FP6_FROB_C1_U);
    fp2_mul(r.c1, c1, k);
    fp_t c;
    fp_load_const(c, FP6_FROB_C2);
    fp2_mul_fp(r.c2, c2, c);
}

__device__ __noinline__ void fp6_inv(fp6_t& r, const fp6_t& a) {
    fp2_t c0, c1, c2, t, s;
    fp2_mul(t, a.c1, a.c2);
    fp2_mul_by_nonresidue(t, t);
    fp2_sqr(c0, a.c0);
    fp2_sub(c0, c0, t);
    fp2_sqr(t, a.c2);
    fp2_mul_by_nonresidue(t, t);
    fp2_mul(s, a.c0, a.c1);
    fp2_sub(c1, t, s);
    fp2_sqr(t, a.c1);
    fp2_mul(s, a.c0, a.c2);
    fp2_sub(c2, t, s);
    fp2_mul(t, a.c1, c2);
    fp2_mul(s, a.c2, c1);
    fp2_add(t, t, s);
    fp2_mul_by_nonresidue(t, t);
    fp2_mul(s, a.c0, c0);
    fp2_add(t, t, s);
    fp2_inv(t, t);
    fp2_mul(r.c0, c0, t);
    fp2_mul(r.c1, c1, t);
    fp2_mul(r.c2, c2, t);
}

#endif
