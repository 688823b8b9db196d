// The simplified SWU map (RFC 9380 section 6.6.2) onto E': y^2 = x^3 + A' x + B', the
// curve 11-isogenous to BLS12-381's G1 (suite BLS12381G1_XMD:SHA-256_SSWU_RO_, Z = 11),
// with sqrt_ratio for p = 3 mod 4 (appendix F.2.1.2) folded in. A port of ic_bls12_381's
// map_to_curve_simple_swu (one exponentiation by (p - 3) / 4, no inversion: the result is
// projective), so its points are the same. Also hash_to_field's reduction of 64 bytes.
// Constants in Montgomery form (R = 2^384): ic_bls12_381's 64-bit limbs split in halves.
#ifndef SOVEREIGN_EC_G1_SSWU_CUH
#define SOVEREIGN_EC_G1_SSWU_CUH

#include "ff/fp.cuh"
#include "ff/fp_sqrt.cuh"
#include "ec/g1_projective.cuh"

__device__ __constant__ u32 G1_SSWU_ELLP_A[FP_LIMBS] = {
    0x9af5aa51u, 0x2f65aa0eu, 0x1e8416c3u, 0x86464c2du, 0xb7bd31e2u, 0xb85ce591u,
    0xb5f24e7cu, 0x27e11c91u, 0x6bfc1835u, 0x28376edau, 0xe5071d85u, 0x155455c3u};
__device__ __constant__ u32 G1_SSWU_ELLP_B[FP_LIMBS] = {
    0xfe22a1e0u, 0xfb996971u, 0x5b742d6fu, 0x9aa93eb3u, 0xde99c5c4u, 0x8c476013u,
    0xa221e571u, 0x873e27c3u, 0x5a52d888u, 0xca72b5e4u, 0x418a386bu, 0x06824061u};
__device__ __constant__ u32 G1_SSWU_XI[FP_LIMBS] = {
    0x0023ffdcu, 0x886c0000u, 0x3090001du, 0x0f70008du, 0xed5828c3u, 0x77672417u,
    0x43dc1740u, 0x9dac23e9u, 0x9c131521u, 0x50553f1bu, 0xbe0ab6e8u, 0x078c712fu};
__device__ __constant__ u32 G1_SQRT_M_XI_CUBED[FP_LIMBS] = {
    0xd3215f1fu, 0x43b571cau, 0x1c702dc2u, 0xccb460efu, 0x4f97100bu, 0x742d884fu,
    0x38a3382bu, 0xdb2c3e32u, 0x3fce8f88u, 0xe40f3fa1u, 0x9892a2ffu, 0x0073a2afu};

// 2^256 mod p, Montgomery form (hash_to_field: a 64-byte value is hi * 2^256 + lo).
__device__ __constant__ u32 G1_H2F_2_256[FP_LIMBS] = {
    0xc5ce820fu, 0x075b3cd7u, 0x1c3edb0bu, 0x3ec6ba62u, 0x2bff6bceu, 0x168a13d8u,
    0xf8c449d2u, 0x87663c4bu, 0xddc8d830u, 0x15f34c83u, 0x9caa2e85u, 0x0f9628b4u};

// r = a^((p - 3) / 4) = a^((p + 1) / 4 - 1): fp_sqrt's window without the product by a that
// ends it (its last digit is 1, which gpu-crypto's tests/kernel_tables.rs checks). Not
// inlined: one copy of the ladder.
__device__ __noinline__ fp_t fp_pow_pm3div4(const fp_t a) { return fp_pow_sqrt_window(a, false); }

// hash_to_field's OS2IP(64 bytes) mod p, from 16 big-endian words: hi * 2^256 + lo with
// hi, lo the two 32-byte halves (each below p, so each converts to Montgomery directly).
__device__ __forceinline__ void fp_from_be_words_64(fp_t& r, const u32 words[16]) {
    fp_t hi, lo, t;
#pragma unroll
    for (int i = 0; i < FP_LIMBS; i++) {
        hi.l[i] = i < 8 ? words[7 - i] : 0;
        lo.l[i] = i < 8 ? words[15 - i] : 0;
    }
    fp_to_mont(hi, hi);
    fp_to_mont(lo, lo);
    fp_load_const(t, G1_H2F_2_256);
    fp_mul(hi, hi, t);
    fp_add(r, hi, lo);
}

// The SSWU image of u on E', projective (X : Y : Z) with Z = x_den != 0.
__device__ __noinline__ void g1_map_to_curve_sswu(g1_proj_t& r, const fp_t& u) {
    fp_t A, B, xi, one, t;
    fp_load_const(A, G1_SSWU_ELLP_A);
    fp_load_const(B, G1_SSWU_ELLP_B);
    fp_load_const(xi, G1_SSWU_XI);
    fp_load_const(one, FP_ONE);

    fp_t usq, xi_usq, nd_common, x_den, x0_num;
    fp_sqr(usq, u);
    fp_mul(xi_usq, xi, usq);
    fp_sqr(t, xi_usq);
    fp_add(nd_common, t, xi_usq);  // XI^2 u^4 + XI u^2
    fp_neg(t, nd_common);
    fp_select(t, fp_is_zero(nd_common), t, xi);  // exceptional case: x_den = A * XI
    fp_mul(x_den, A, t);
    fp_add(t, one, nd_common);
    fp_mul(x0_num, B, t);

    // g(x0) = gx0_num / gx_den with gx_den = x_den^3.
    fp_t x_densq, gx_den, gx0_num;
    fp_sqr(x_densq, x_den);
    fp_mul(gx_den, x_densq, x_den);
    fp_sqr(gx0_num, x0_num);
    fp_mul(t, A, x_densq);
    fp_add(gx0_num, gx0_num, t);
    fp_mul(gx0_num, gx0_num, x0_num);
    fp_mul(t, B, gx_den);
    fp_add(gx0_num, gx0_num, t);

    // sqrt_candidate = u v (u v^3)^((p - 3) / 4) with u = gx0_num, v = gx_den.
    fp_t u_v, sqrt_candidate;
    fp_mul(u_v, gx0_num, gx_den);
    fp_sqr(t, gx_den);
    fp_mul(t, u_v, t);
    t = fp_pow_pm3div4(t);
    fp_mul(sqrt_candidate, u_v, t);

    fp_sqr(t, sqrt_candidate);
    fp_mul(t, t, gx_den);
    const bool gx0_square = fp_eq(t, gx0_num);

    fp_t x1_num, y1, x_num, y;
    fp_mul(x1_num, x0_num, xi_usq);
    fp_load_const(t, G1_SQRT_M_XI_CUBED);
    fp_mul(y1, t, usq);
    fp_mul(y1, y1, u);
    fp_mul(y1, y1, sqrt_candidate);
    fp_select(x_num, gx0_square, x1_num, x0_num);
    fp_select(y, gx0_square, y1, sqrt_candidate);
    // sgn0(y) = sgn0(u)
    fp_neg(t, y);
    fp_select(y, fp_sgn0(y) != fp_sgn0(u), y, t);

    r.x = x_num;
    fp_mul(r.y, y, x_den);
    r.z = x_den;
}

#endif
