// Batch G1 decompression for small batches ("latency" kernel): the same decoding, checks
// and output as ops/g1_decompress.cu (g1_decompress_words), with one point spread over
// two warps of its block so that its two long dependent chains run side by side:
//   - warp 0, one lane per point: flags, x < p, y = sqrt(x^3 + 4) (~490 dependent field
//     operations), the sign of y, and the output;
//   - warp 1, a team of 4 lanes per point (ec/g1_subgroup_team.cuh): the subgroup test,
//     at the same time as the square root, without y: see below.
// The subgroup test needs a point, and y is only known after the square root. It runs
// instead on P' = (y^2 x, y^4) = (rhs x, rhs^2) with rhs = x^3 + 4, computed without y:
// the map (x, y) -> (u^2 x, u^3 y) with u = y is an isomorphism from E: y^2 = x^3 + 4 onto
// E': y^2 = x^3 + 4 u^6 over Fp (u != 0: E has odd order, so no point with y = 0), it
// commutes with scalar multiplication and with phi(x, y) = (BETA x, y), and the Jacobian
// formulas for a = 0 never use b. So P is in G1 iff phi(P') == -[z^2]P' on E', which is the
// same computation. When rhs is not a square there is no point; the verdict is unused
// (the item is DECODE_NOT_ON_CURVE, which takes precedence).
// A block handles 8 points (2 warps): small batches spread over many SMs, one warp per
// scheduler. The host uses this kernel below a measured batch size
// (gpu-crypto/src/cuda/decompress.rs) and the one-thread-per-point kernel above it.
#define FP_INLINE_MUL
#include "ops/g1_decompress.cuh"
#include "ec/g1_subgroup_team.cuh"

#define LATENCY_POINTS (32 / G1_TEAM)  // the teams of warp 1

extern "C" __global__ void __launch_bounds__(64)
g1_decompress_latency(const u8* __restrict__ in, u32 n, u8* __restrict__ out,
                      u8* __restrict__ codes) {
    __shared__ u32 in_g1[LATENCY_POINTS];
    const u32 warp = threadIdx.x >> 5;
    const u32 lane = threadIdx.x & 31;
    // Warp 0: lane k is point k (lanes 8..31 run along on dummy input); warp 1: team k.
    const u32 slot = warp == 0 ? lane : lane / G1_TEAM;
    const u32 i = blockIdx.x * LATENCY_POINTS + slot;
    const bool live = slot < LATENCY_POINTS && i < n;
    u32 words[12];
#pragma unroll
    for (int w = 0; w < 12; w++) words[w] = 0;
    if (live) g1_load_compressed(words, in, i);
    fp_t x;
    fp_from_be_words(x, words);
    const u32 flags = x.l[FP_LIMBS - 1] >> 24;
    x.l[FP_LIMBS - 1] &= 0x1fffffffu;
    // Every lane computes rhs = x^3 + 4 (x below 2^381 even when not canonical, so the
    // arithmetic stays in range; such items are rejected before their values are used).
    fp_t xm, rhs, b;
    fp_to_mont(xm, x);
    fp_sqr(rhs, xm);
    fp_mul(rhs, rhs, xm);
    fp_load_const(b, FP_B);
    fp_add(rhs, rhs, b);

    fp_t y;
    bool root = false;
    if (warp == 0) {
        root = fp_sqrt(y, rhs);
    } else {
        const u32 role = lane % G1_TEAM;
        fp_t g[2], m;
        // P' = (rhs x, rhs^2).
        fp_mul(m, rhs, fp_pick(role, xm, rhs, rhs, rhs));
        fp_team_gather<2>(g, m);
        const bool ok = g1_team_affine_is_torsion_free(g[0], g[1], role);
        if (role == 0 && slot < LATENCY_POINTS) in_g1[slot] = ok;
    }
    __syncthreads();
    if (warp != 0 || !live) return;

    u32 result[24];
#pragma unroll
    for (int k = 0; k < 24; k++) result[k] = 0;
    const bool compressed = (flags >> 7) & 1;
    const bool infinity = (flags >> 6) & 1;
    const bool sort = (flags >> 5) & 1;
    u32 code;
    if (!compressed) {
        code = DECODE_NOT_COMPRESSED;
    } else if (infinity) {
        code = sort || !fp_is_zero(x) ? DECODE_BAD_INFINITY : DECODE_OK;
        if (code == DECODE_OK) result[0] = 0x40;  // the identity
    } else if (fp_geq_modulus(x)) {
        code = DECODE_NON_CANONICAL;
    } else if (!root) {
        code = DECODE_NOT_ON_CURVE;
    } else if (!in_g1[slot]) {
        code = DECODE_NOT_IN_SUBGROUP;
    } else {
        // The root whose "lexicographically largest" property matches the sort flag.
        fp_t y_int, half;
        fp_from_mont(y_int, y);
        fp_load_const(half, FP_HALF);
        if (fp_gt(y_int, half) != sort) fp_neg(y_int, y_int);
        fp_to_be_words(result, x);
        fp_to_be_words(result + 12, y_int);
        code = DECODE_OK;
    }
    g1_store_decompressed(out, codes, i, result, code);
}
