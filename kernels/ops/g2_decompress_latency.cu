// Batch G2 decompression for small batches ("latency" kernel): the decoding, checks, codes
// and output of ops/g2_decompress.cuh (g2_decompress_words), with one point per warp in the
// residue number system of ff/fp2_rns.cuh. A point is one chain of dependent products: the
// norm-method square root's two exponentiations in Fp (ff/fp2_rns_sqrt.cuh), then the psi
// subgroup test's 63 doublings and 5 additions (ec/g2_subgroup_rns.cuh); on one lane each
// step is a multi-limb Fp2 product, here one RNS step of interleaved products. Blocks of
// four warps take four points. The host uses this kernel below a batch size
// (gpu-crypto/engine/src/cuda/g2_decompress.rs) and the one-thread-per-point kernel above.
#include "ops/g2_decompress.cuh"
#include "ec/g2_subgroup_rns.cuh"
#include "ff/fp2_rns_sqrt.cuh"

#define G2_LATENCY_WARPS 4

// Decodes in[0..24) on the whole warp (every lane holds the same words and returns the same
// code and output, out[0..48)).
__device__ __forceinline__ u32 g2_rns_decompress_words(u32 out[48], const u32 in[24],
                                                       const rns_ctx& c) {
    fp2_t x;
    bool sort;
    const u32 early = g2_decode_flags(x, sort, out, in);
    if (early != G2_DECODE_SOLVE) return early;

    const g2_rns_offsets k = g2_rns_offsets_init(c);
    const fp2_rns_t xr = fp2_rns_from_words(x.c0.l, x.c1.l, c);  // < 16p
    fp2_rns_t rhs;
    fp2_rns_mul_k<1>(&rhs, &xr, &xr, k.p16, c);
    fp2_rns_mul_k<1>(&rhs, &rhs, &xr, k.p16, c);  // x^3 < 48p
    const u32 b4 = rns_lane_const(RNS_B4, c);    // 4, below p
    rhs = {rns_add(rhs.c0, b4, c), rns_add(rhs.c1, b4, c)};  // x^3 + 4(1 + u) < 49p
    fp2_rns_t y;
    if (!fp2_rns_sqrt(y, rhs, k.p16, k.p96, c)) return DECODE_NOT_ON_CURVE;

    // Pick the root whose "lexicographically largest" property matches the sort flag.
    fp2_t y_int;
    rns_to_words(y_int.c0.l, y.c0, c);
    rns_to_words(y_int.c1.l, y.c1, c);
    if (g2_lexicographically_largest(y_int) != sort) {
        fp2_neg(y_int, y_int);
        y = fp2_rns_sub({0, 0}, y, k.p16, c);  // y below 16p
    }

    if (!g2_rns_affine_is_torsion_free(xr, y, c, k)) return DECODE_NOT_IN_SUBGROUP;

    g2_store_words(out, x, y_int);
    return DECODE_OK;
}

extern "C" __global__ void __launch_bounds__(32 * G2_LATENCY_WARPS)
g2_decompress_latency(const u8* __restrict__ in, u32 n, u8* __restrict__ out,
                      u8* __restrict__ codes) {
    __shared__ __align__(16) u32 slots[G2_LATENCY_WARPS][G2_RNS_SLOTS * RNS_SLOT];
    const u32 warp = threadIdx.x >> 5;
    const u32 i = blockIdx.x * G2_LATENCY_WARPS + warp;
    if (i >= n) return;  // the whole warp
    rns_ctx c;
    rns_ctx_init(c, slots[warp]);
    u32 words[24];
    g2_load_compressed(words, in, i);
    u32 result[48];
    const u32 code = g2_rns_decompress_words(result, words, c);
    // Lane v < 12 stores the output's 16-byte vector v.
    uint4* dst = reinterpret_cast<uint4*>(out + (u64)i * 192);
#pragma unroll
    for (int v = 0; v < 12; v++)
        if (c.lane == (u32)v)
            dst[v] = make_uint4(result[4 * v], result[4 * v + 1], result[4 * v + 2],
                                result[4 * v + 3]);
    if (c.lane == 0) codes[i] = (u8)code;
}
