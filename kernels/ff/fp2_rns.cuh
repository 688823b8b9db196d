// Fp2 = Fp[u] / (u^2 + 1) in the residue number system of ff/fp_rns.cuh, one element per
// warp (each lane holds its residue of both coefficients), for the latency-bound G2
// kernels: a chain of dependent Fp2 products costs one RNS product per step.
//
// A product is Karatsuba's three Fp products; K independent Fp2 products run interleaved
// as 3K Fp products (rns_mul_k), so the products of one step of a point formula cost one
// dependent step together. Bounds, in units of p as in ff/fp_rns.cuh: inputs below 2^18 p
// per coefficient (their sum enters a product); outputs below 48p per coefficient.
#ifndef SOVEREIGN_FF_FP2_RNS_CUH
#define SOVEREIGN_FF_FP2_RNS_CUH

#include "ff/fp_rns.cuh"

struct fp2_rns_t {
    u32 c0, c1;
};

__device__ __forceinline__ fp2_rns_t fp2_rns_add(const fp2_rns_t& a, const fp2_rns_t& b,
                                                 const rns_ctx& x) {
    return {rns_add(a.c0, b.c0, x), rns_add(a.c1, b.c1, x)};
}

__device__ __forceinline__ fp2_rns_t fp2_rns_dbl(const fp2_rns_t& a, const rns_ctx& x) {
    return fp2_rns_add(a, a, x);
}

// a - b + kp per coefficient, where kp = rns_kp(k) with k p above both of b's.
__device__ __forceinline__ fp2_rns_t fp2_rns_sub(const fp2_rns_t& a, const fp2_rns_t& b, u32 kp,
                                                 const rns_ctx& x) {
    return {rns_sub(a.c0, b.c0, kp, x), rns_sub(a.c1, b.c1, kp, x)};
}

// Whether a = 0 in Fp2 (coefficients below 2^19 p), on every lane.
__device__ __forceinline__ bool fp2_rns_is_zero(const fp2_rns_t& a, const rns_ctx& x) {
    return rns_is_zero(a.c0, x) && rns_is_zero(a.c1, x);
}

// r[k] = a[k] b[k] for K independent products in one interleaved step. p16 = rns_kp(16):
// every Fp product is below 16p, so c0 = t0 - t1 + 16p < 32p and c1 = t2 - t0 - t1 + 32p
// < 48p. r may alias a or b.
template <int K>
__device__ __forceinline__ void fp2_rns_mul_k(fp2_rns_t* r, const fp2_rns_t* a,
                                              const fp2_rns_t* b, u32 p16, const rns_ctx& x) {
    u32 s[3 * K], t[3 * K], o[3 * K];
#pragma unroll
    for (int k = 0; k < K; k++) {
        s[3 * k] = a[k].c0;
        t[3 * k] = b[k].c0;
        s[3 * k + 1] = a[k].c1;
        t[3 * k + 1] = b[k].c1;
        s[3 * k + 2] = rns_add(a[k].c0, a[k].c1, x);
        t[3 * k + 2] = rns_add(b[k].c0, b[k].c1, x);
    }
    rns_mul_k<3 * K>(o, s, t, x);
#pragma unroll
    for (int k = 0; k < K; k++) {
        const u32 t0 = o[3 * k], t1 = o[3 * k + 1], t2 = o[3 * k + 2];
        r[k] = {rns_sub(t0, t1, p16, x), rns_sub(rns_sub(t2, t0, p16, x), t1, p16, x)};
    }
}

// The Montgomery lane form of an Fp2 element given as two 12-word canonical integers (the
// same on every lane).
__device__ __forceinline__ fp2_rns_t fp2_rns_from_words(const u32* c0, const u32* c1,
                                                        const rns_ctx& x) {
    return {rns_from_words(c0, x), rns_from_words(c1, x)};
}

#endif
