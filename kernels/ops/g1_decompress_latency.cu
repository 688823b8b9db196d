// Batch G1 decompression for small batches ("latency" kernel): the same decoding, checks
// and output as ops/g1_decompress.cu (g1_decompress_words), with one point per block of
// two warps, each computing in the residue number system of ff/fp_rns.cuh (one field
// element per warp, a product in ~206 ns against 751-937 ns on one lane), so that the point's
// two long chains of dependent products run side by side:
//   - warp 0: y = sqrt(x^3 + 4) (~490 dependent products), then flags, x < p, the sign of
//     y and the output;
//   - warp 1: the subgroup test (ec/g1_subgroup_rns.cuh), at the same time, without y:
// the subgroup test needs a point, and y is only known after the square root. It runs
// instead on P' = (y^2 x, y^4) = (rhs x, rhs^2) with rhs = x^3 + 4, computed without y:
// the map (x, y) -> (u^2 x, u^3 y) with u = y is an isomorphism from E: y^2 = x^3 + 4 onto
// E': y^2 = x^3 + 4 u^6 over Fp (u != 0: E has odd order, so no point with y = 0), it
// commutes with scalar multiplication and with phi(x, y) = (BETA x, y), and the Jacobian
// formulas for a = 0 never use b. So P is in G1 iff phi(P') == -[z^2]P' on E', which is the
// same computation. When rhs is not a square there is no point; the verdict is unused
// (the item is DECODE_NOT_ON_CURVE, which takes precedence).
// The host uses this kernel below a measured batch size (gpu-crypto/engine/src/cuda/decompress.rs)
// and the one-thread-per-point kernel above it.
#include "ops/g1_decompress.cuh"
#include "ec/g1_subgroup_rns.cuh"
#include "ff/fp_rns_sqrt.cuh"

extern "C" __global__ void __launch_bounds__(64)
g1_decompress_latency(const u8* __restrict__ in, u32 n, u8* __restrict__ out,
                      u8* __restrict__ codes) {
    __shared__ __align__(16) u32 slots[2][G1_RNS_SLOTS * RNS_SLOT];
    __shared__ u32 in_g1;
    const u32 warp = threadIdx.x >> 5;
    const u32 i = blockIdx.x;
    if (i >= n) return;  // the whole block
    rns_ctx c;
    rns_ctx_init(c, slots[warp]);
    u32 words[12];
    g1_load_compressed(words, in, i);
    fp_t x;
    fp_from_be_words(x, words);
    const u32 flags = x.l[FP_LIMBS - 1] >> 24;
    x.l[FP_LIMBS - 1] &= 0x1fffffffu;
    // rhs = x^3 + 4 on both warps (x below 2^381 even when not canonical, so the arithmetic
    // stays in range; such items are rejected before their values are used).
    const u32 xr = rns_from_words(x.l, c);
    const u32 rhs = rns_add(rns_mul(rns_mul(xr, xr, c), xr, c), rns_lane_const(RNS_B4, c), c);

    u32 y_words[12];
    bool root = false;
    if (warp == 0) {
        const u32 y = rns_pow_sqrt(rhs, c);
        root = rns_is_zero(rns_sub(rns_mul(y, y, c), rhs, rns_kp(17, c), c), c);  // rhs < 17p
        rns_to_words(y_words, y, c);
    } else {
        // P' = (rhs x, rhs^2).
        u32 o[2];
        const u32 a[2] = {rhs, rhs}, b[2] = {xr, rhs};
        rns_mul_k<2>(o, a, b, c);
        const bool ok = g1_rns_affine_is_torsion_free(o[0], o[1], c);
        if (threadIdx.x == 32) in_g1 = ok;
    }
    __syncthreads();
    if (threadIdx.x != 0) return;

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
    } else if (!in_g1) {
        code = DECODE_NOT_IN_SUBGROUP;
    } else {
        // The root whose "lexicographically largest" property matches the sort flag.
        fp_t y_int, half;
#pragma unroll
        for (int w = 0; w < FP_LIMBS; w++) y_int.l[w] = y_words[w];
        fp_load_const(half, FP_HALF);
        if (fp_gt(y_int, half) != sort) fp_neg(y_int, y_int);
        fp_to_be_words(result, x);
        fp_to_be_words(result + 12, y_int);
        code = DECODE_OK;
    }
    g1_store_decompressed(out, codes, i, result, code);
}
