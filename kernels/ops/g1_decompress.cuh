// Decompression and full validation of one 48-byte compressed G1 point per thread.
// Accepts and rejects exactly what ic_bls12_381's G1Affine::from_compressed does and
// assigns the reason with gpu_crypto::DecodeError's precedence:
//   1 compression flag clear; 2 infinity flag with the sort flag or x bits set;
//   3 x >= p; 4 x^3 + 4 has no square root; 5 not in the prime-order subgroup.
// Output per point: codes[i] (0 = valid) and, when valid, the 96-byte uncompressed
// encoding (ic_bls12_381's to_uncompressed); zeros when invalid.
// Encodings move as 32-bit words (a big-endian limb is one byte-permute of a word), so no
// byte array lands in local memory.
#ifndef SOVEREIGN_OPS_G1_DECOMPRESS_CUH
#define SOVEREIGN_OPS_G1_DECOMPRESS_CUH

#include "common.cuh"
#include "ff/fp.cuh"
#include "ff/fp_sqrt.cuh"
#include "ec/g1_subgroup.cuh"

#define DECODE_OK 0
#define DECODE_NOT_COMPRESSED 1
#define DECODE_BAD_INFINITY 2
#define DECODE_NON_CANONICAL 3
#define DECODE_NOT_ON_CURVE 4
#define DECODE_NOT_IN_SUBGROUP 5

// Which formulas a kernel instance uses; the production kernel takes the fastest the
// benchmark measured, the others stay for the benchmark's comparison.
enum g1_decompress_method { DECOMPRESS_JACOBIAN_WINDOW, DECOMPRESS_PROJECTIVE_PLAIN };

__device__ __forceinline__ u32 bswap32(u32 w) { return __byte_perm(w, 0, 0x0123); }

// Limb j of a big-endian 48-byte integer held as 12 little-endian memory words.
__device__ __forceinline__ void fp_from_be_words(fp_t& r, const u32 w[12]) {
#pragma unroll
    for (int j = 0; j < FP_LIMBS; j++) r.l[j] = bswap32(w[FP_LIMBS - 1 - j]);
}

__device__ __forceinline__ void fp_to_be_words(u32 w[12], const fp_t& a) {
#pragma unroll
    for (int j = 0; j < FP_LIMBS; j++) w[FP_LIMBS - 1 - j] = bswap32(a.l[j]);
}

// Decodes in[0..12) (the encoding's memory words); writes out[0..24) and returns the code.
template <g1_decompress_method M>
__device__ __forceinline__ u32 g1_decompress_words(u32 out[24], const u32 in[12]) {
#pragma unroll
    for (int i = 0; i < 24; i++) out[i] = 0;
    fp_t x;
    fp_from_be_words(x, in);
    const u32 flags = x.l[FP_LIMBS - 1] >> 24;
    const bool compressed = (flags >> 7) & 1;
    const bool infinity = (flags >> 6) & 1;
    const bool sort = (flags >> 5) & 1;
    x.l[FP_LIMBS - 1] &= 0x1fffffffu;

    if (!compressed) return DECODE_NOT_COMPRESSED;
    if (infinity) {
        if (sort || !fp_is_zero(x)) return DECODE_BAD_INFINITY;
        out[0] = 0x40;  // the identity: infinity flag, zero coordinates
        return DECODE_OK;
    }
    if (fp_geq_modulus(x)) return DECODE_NON_CANONICAL;

    fp_t xm, rhs, b, y;
    fp_to_mont(xm, x);
    fp_sqr(rhs, xm);
    fp_mul(rhs, rhs, xm);
    fp_load_const(b, FP_B);
    fp_add(rhs, rhs, b);
    const bool root = M == DECOMPRESS_JACOBIAN_WINDOW ? fp_sqrt(y, rhs) : fp_sqrt_plain(y, rhs);
    if (!root) return DECODE_NOT_ON_CURVE;

    // Pick the root whose "lexicographically largest" property matches the sort flag.
    fp_t y_int, half;
    fp_from_mont(y_int, y);
    fp_load_const(half, FP_HALF);
    if (fp_gt(y_int, half) != sort) {
        fp_neg(y, y);
        fp_neg(y_int, y_int);
    }

    const bool in_g1 = M == DECOMPRESS_JACOBIAN_WINDOW ? g1_affine_is_torsion_free(xm, y)
                                                       : g1_affine_is_torsion_free_proj(xm, y);
    if (!in_g1) return DECODE_NOT_IN_SUBGROUP;

    fp_to_be_words(out, x);
    fp_to_be_words(out + 12, y_int);
    return DECODE_OK;
}

// Point i's 48 bytes as 12 big-endian words. Records are 16-byte aligned (the host
// allocates 256-byte aligned buffers), so each moves as three uint4 vectors.
__device__ __forceinline__ void g1_load_compressed(u32 words[12], const u8* __restrict__ in,
                                                   u32 i) {
    const uint4* src = reinterpret_cast<const uint4*>(in + (u64)i * 48);
#pragma unroll
    for (int v = 0; v < 3; v++) {
        const uint4 q = src[v];
        words[4 * v] = q.x;
        words[4 * v + 1] = q.y;
        words[4 * v + 2] = q.z;
        words[4 * v + 3] = q.w;
    }
}

// Item i's result: 96 bytes of encoding (24 big-endian words) and its code.
__device__ __forceinline__ void g1_store_decompressed(u8* __restrict__ out,
                                                      u8* __restrict__ codes, u32 i,
                                                      const u32 (&result)[24], u32 code) {
    uint4* dst = reinterpret_cast<uint4*>(out + (u64)i * 96);
#pragma unroll
    for (int v = 0; v < 6; v++)
        dst[v] = make_uint4(result[4 * v], result[4 * v + 1], result[4 * v + 2],
                            result[4 * v + 3]);
    codes[i] = (u8)code;
}

// One point per thread: the body shared by every kernel instance.
template <g1_decompress_method M>
__device__ __forceinline__ void g1_decompress_batch(const u8* __restrict__ in, u32 n,
                                                    u8* __restrict__ out,
                                                    u8* __restrict__ codes) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    u32 words[12];
    g1_load_compressed(words, in, i);
    u32 result[24];
    const u32 code = g1_decompress_words<M>(result, words);
    g1_store_decompressed(out, codes, i, result, code);
}

#endif
