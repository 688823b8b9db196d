// Decompression and full validation of one 96-byte compressed G2 point per thread; its
// decoding, output and loads are shared with the RNS latency kernel
// (ops/g2_decompress_latency.cu).
// Accepts and rejects exactly what ic_bls12_381's G2Affine::from_compressed does and
// assigns the reason with gpu_crypto::DecodeError's precedence (as ops/g1_decompress.cuh):
//   1 compression flag clear; 2 infinity flag with the sort flag or any x bit set;
//   3 x.c1 >= p or x.c0 >= p; 4 x^3 + 4(u + 1) has no square root in Fp2;
//   5 not in the prime-order subgroup.
// The encoding is x.c1 (bytes 0..48, flags in the top 3 bits) then x.c0. The sort flag
// says whether y is the lexicographically largest root, over Fp2 as ic_bls12_381 defines
// it: y.c1 > (p-1)/2, or y.c1 = 0 and y.c0 > (p-1)/2.
// Output per point: codes[i] (0 = valid) and, when valid, the 192-byte uncompressed
// encoding (ic_bls12_381's to_uncompressed: x.c1, x.c0, y.c1, y.c0); zeros when invalid.
#ifndef SOVEREIGN_OPS_G2_DECOMPRESS_CUH
#define SOVEREIGN_OPS_G2_DECOMPRESS_CUH

#include "common.cuh"
#include "ff/fp.cuh"
#include "ff/fp2.cuh"
#include "ff/fp2_sqrt.cuh"
#include "ec/g2_subgroup.cuh"

#define DECODE_OK 0
#define DECODE_NOT_COMPRESSED 1
#define DECODE_BAD_INFINITY 2
#define DECODE_NON_CANONICAL 3
#define DECODE_NOT_ON_CURVE 4
#define DECODE_NOT_IN_SUBGROUP 5

__device__ __forceinline__ u32 g2_bswap32(u32 w) { return __byte_perm(w, 0, 0x0123); }

// Limb j of a big-endian 48-byte integer held as 12 little-endian memory words.
__device__ __forceinline__ void g2_fp_from_be_words(fp_t& r, const u32* w) {
#pragma unroll
    for (int j = 0; j < FP_LIMBS; j++) r.l[j] = g2_bswap32(w[FP_LIMBS - 1 - j]);
}

__device__ __forceinline__ void g2_fp_to_be_words(u32* w, const fp_t& a) {
#pragma unroll
    for (int j = 0; j < FP_LIMBS; j++) w[FP_LIMBS - 1 - j] = g2_bswap32(a.l[j]);
}

// ic_bls12_381's Fp2::lexicographically_largest of a canonical (non-Montgomery) value.
__device__ __forceinline__ bool g2_lexicographically_largest(const fp2_t& y) {
    fp_t half;
    fp_load_const(half, FP_HALF);
    return fp_gt(y.c1, half) || (fp_is_zero(y.c1) && fp_gt(y.c0, half));
}

// What g2_decode_flags leaves to the arithmetic: x is canonical and y must be solved for.
#define G2_DECODE_SOLVE 0xffu

// The checks before any arithmetic, on in[0..24) (the encoding's memory words): zeroes
// out[0..48), reads x (flags cleared, canonical integers) and the sort flag, and returns the
// code of a rejection or of the identity (written to out), else G2_DECODE_SOLVE.
__device__ __forceinline__ u32 g2_decode_flags(fp2_t& x, bool& sort, u32 out[48],
                                               const u32 in[24]) {
#pragma unroll
    for (int i = 0; i < 48; i++) out[i] = 0;
    g2_fp_from_be_words(x.c1, in);
    g2_fp_from_be_words(x.c0, in + 12);
    const u32 flags = x.c1.l[FP_LIMBS - 1] >> 24;
    const bool compressed = (flags >> 7) & 1;
    const bool infinity = (flags >> 6) & 1;
    sort = (flags >> 5) & 1;
    x.c1.l[FP_LIMBS - 1] &= 0x1fffffffu;

    if (!compressed) return DECODE_NOT_COMPRESSED;
    if (infinity) {
        if (sort || !fp2_is_zero(x)) return DECODE_BAD_INFINITY;
        out[0] = 0x40;  // the identity: infinity flag, zero coordinates
        return DECODE_OK;
    }
    if (fp_geq_modulus(x.c1) || fp_geq_modulus(x.c0)) return DECODE_NON_CANONICAL;
    return G2_DECODE_SOLVE;
}

// The output of a valid point: x and y (canonical) as the uncompressed encoding's words.
__device__ __forceinline__ void g2_store_words(u32 out[48], const fp2_t& x, const fp2_t& y) {
    g2_fp_to_be_words(out, x.c1);
    g2_fp_to_be_words(out + 12, x.c0);
    g2_fp_to_be_words(out + 24, y.c1);
    g2_fp_to_be_words(out + 36, y.c0);
}

// Decodes in[0..24) (the encoding's memory words); writes out[0..48) and returns the code.
__device__ __forceinline__ u32 g2_decompress_words(u32 out[48], const u32 in[24]) {
    fp2_t x;
    bool sort;
    const u32 early = g2_decode_flags(x, sort, out, in);
    if (early != G2_DECODE_SOLVE) return early;

    fp2_t xm, rhs, b, y;
    fp_to_mont(xm.c0, x.c0);
    fp_to_mont(xm.c1, x.c1);
    fp2_sqr(rhs, xm);
    fp2_mul(rhs, rhs, xm);
    fp_load_const(b.c0, FP_B);  // 4 + 4u
    fp_load_const(b.c1, FP_B);
    fp2_add(rhs, rhs, b);
    if (!fp2_sqrt(y, rhs)) return DECODE_NOT_ON_CURVE;

    // Pick the root whose "lexicographically largest" property matches the sort flag.
    fp2_t y_int;
    fp_from_mont(y_int.c0, y.c0);
    fp_from_mont(y_int.c1, y.c1);
    if (g2_lexicographically_largest(y_int) != sort) {
        fp2_neg(y, y);
        fp2_neg(y_int, y_int);
    }

    if (!g2_affine_is_torsion_free(xm, y)) return DECODE_NOT_IN_SUBGROUP;

    g2_store_words(out, x, y_int);
    return DECODE_OK;
}

// Point i's 96-byte encoding as 24 memory words, in six 16-byte loads (records are 16-byte
// aligned: the host allocates 256-byte aligned buffers).
__device__ __forceinline__ void g2_load_compressed(u32 words[24], const u8* __restrict__ in,
                                                   u32 i) {
    const uint4* src = reinterpret_cast<const uint4*>(in + (u64)i * 96);
#pragma unroll
    for (int v = 0; v < 6; v++) {
        const uint4 q = src[v];
        words[4 * v] = q.x;
        words[4 * v + 1] = q.y;
        words[4 * v + 2] = q.z;
        words[4 * v + 3] = q.w;
    }
}

// One point per thread. Records are 16-byte aligned (the host allocates 256-byte aligned
// buffers), so a point moves in as six uint4 vectors and out as twelve.
__device__ __forceinline__ void g2_decompress_batch(const u8* __restrict__ in, u32 n,
                                                    u8* __restrict__ out,
                                                    u8* __restrict__ codes) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    u32 words[24];
    g2_load_compressed(words, in, i);
    u32 result[48];
    const u32 code = g2_decompress_words(result, words);
    uint4* dst = reinterpret_cast<uint4*>(out + (u64)i * 192);
#pragma unroll
    for (int v = 0; v < 12; v++)
        dst[v] = make_uint4(result[4 * v], result[4 * v + 1], result[4 * v + 2],
                            result[4 * v + 3]);
    codes[i] = (u8)code;
}

#endif
