// BLS12-381 base field constants, 12 x 32-bit little-endian limbs. Montgomery form uses
// R = 2^384, the same R as ic_bls12_381's 6 x 64-bit limbs, so its Montgomery constants
// (B, BETA) split into 32-bit halves unchanged.
#ifndef SOVEREIGN_FF_BLS12_381_PARAMS_CUH
#define SOVEREIGN_FF_BLS12_381_PARAMS_CUH

#include "common.cuh"

#define FP_LIMBS 12

// The modulus p.
__device__ __forceinline__ constexpr u32 fp_p(int i) {
    return i == 0 ? 0xffffaaabu : i == 1 ? 0xb9feffffu : i == 2 ? 0xb153ffffu
         : i == 3 ? 0x1eabfffeu : i == 4 ? 0xf6b0f624u : i == 5 ? 0x6730d2a0u
         : i == 6 ? 0xf38512bfu : i == 7 ? 0x64774b84u : i == 8 ? 0x434bacd7u
         : i == 9 ? 0x4b1ba7b6u : i == 10 ? 0x397fe69au : 0x1a0111eau;
}

// -p^-1 mod 2^32.
#define FP_PINV 0xfffcfffdu

// R^2 mod p (to Montgomery form).
__device__ __constant__ u32 FP_R2[FP_LIMBS] = {
    0x1c341746u, 0xf4df1f34u, 0x09d104f1u, 0x0a76e6a6u, 0x4c95b6d5u, 0x8de5476cu,
    0x939d83c0u, 0x67eb88a9u, 0xb519952du, 0x9a793e85u, 0x92cae3aau, 0x11988fe5u};

// R mod p: one in Montgomery form.
__device__ __constant__ u32 FP_ONE[FP_LIMBS] = {
    0x0002fffdu, 0x76090000u, 0xc40c0002u, 0xebf4000bu, 0x53c758bau, 0x5f489857u,
    0x70525745u, 0x77ce5853u, 0xa256ec6du, 0x5c071a97u, 0xfa80e493u, 0x15f65ec3u};

// b = 4 of y^2 = x^3 + 4, Montgomery form.
__device__ __constant__ u32 FP_B[FP_LIMBS] = {
    0x000cfff3u, 0xaa270000u, 0xfc34000au, 0x53cc0032u, 0x6b0a807fu, 0x478fe97au,
    0xe6ba24d7u, 0xb1d37ebeu, 0xbf78ab2fu, 0x8ec9733bu, 0x3d83de7eu, 0x09d64551u};

// A non-trivial cube root of unity (ic_bls12_381's BETA), Montgomery form.
__device__ __constant__ u32 FP_BETA[FP_LIMBS] = {
    0x798a64e8u, 0x30f1361bu, 0x7ece5a2au, 0xf3b8ddabu, 0xc61577f7u, 0x16a8ca3au,
    0x74fd029bu, 0xc26a2ff8u, 0x60701c6eu, 0x3636b766u, 0x241b6160u, 0x051ba4abu};

// (p + 1) / 4, the square-root exponent (p = 3 mod 4); 379 bits.
__device__ __constant__ u32 FP_SQRT_EXP[FP_LIMBS] = {
    0xffffeaabu, 0xee7fbfffu, 0xac54ffffu, 0x07aaffffu, 0x3dac3d89u, 0xd9cc34a8u,
    0x3ce144afu, 0xd91dd2e1u, 0x90d2eb35u, 0x92c6e9edu, 0x8e5ff9a6u, 0x0680447au};
#define FP_SQRT_EXP_BITS 379

// (p - 1) / 2: y is "lexicographically largest" when its canonical value exceeds this.
__device__ __constant__ u32 FP_HALF[FP_LIMBS] = {
    0xffffd555u, 0xdcff7fffu, 0x58a9ffffu, 0x0f55ffffu, 0x7b587b12u, 0xb3986950u,
    0x79c2895fu, 0xb23ba5c2u, 0x21a5d66bu, 0x258dd3dbu, 0x1cbff34du, 0x0d0088f5u};

#endif
