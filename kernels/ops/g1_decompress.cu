// Batch decompression and full validation of 48-byte compressed G1 points, one thread per
// point. Accepts and rejects exactly what ic_bls12_381's G1Affine::from_compressed does and
// assigns the reason with gpu_crypto::DecodeError's precedence:
//   1 compression flag clear; 2 infinity flag with the sort flag or x bits set;
//   3 x >= p; 4 x^3 + 4 has no square root; 5 not in the prime-order subgroup.
// Output per point: codes[i] (0 = valid) and, when valid, the 96-byte uncompressed
// encoding (ic_bls12_381's to_uncompressed); zeros when invalid.
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

__device__ __forceinline__ u8 g1_decompress_one(u8 out[96], const u8 in[48]) {
#pragma unroll
    for (int i = 0; i < 96; i++) out[i] = 0;
    const u8 flags = in[0];
    const bool compressed = (flags >> 7) & 1;
    const bool infinity = (flags >> 6) & 1;
    const bool sort = (flags >> 5) & 1;

    u8 xb[48];
#pragma unroll
    for (int i = 0; i < 48; i++) xb[i] = in[i];
    xb[0] &= 0x1f;

    if (!compressed) return DECODE_NOT_COMPRESSED;

    fp_t x;
    fp_from_be_bytes(x, xb);
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
    if (!fp_sqrt(y, rhs)) return DECODE_NOT_ON_CURVE;

    // Pick the root whose "lexicographically largest" property matches the sort flag.
    fp_t y_int, half;
    fp_from_mont(y_int, y);
    fp_load_const(half, FP_HALF);
    const bool largest = fp_gt(y_int, half);
    if (largest != sort) {
        fp_neg(y, y);
        fp_neg(y_int, y_int);
    }

    if (!g1_affine_is_torsion_free(xm, y)) return DECODE_NOT_IN_SUBGROUP;

#pragma unroll
    for (int i = 0; i < 48; i++) out[i] = xb[i];
    fp_to_be_bytes(out + 48, y_int);
    return DECODE_OK;
}

extern "C" __global__ void __launch_bounds__(128)
g1_decompress(const u8* __restrict__ in, u32 n, u8* __restrict__ out, u8* __restrict__ codes) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    u8 point[48];
    // 48-byte records are 16-byte aligned (the host allocates 256-byte aligned buffers).
    const uint4* src = reinterpret_cast<const uint4*>(in + (u64)i * 48);
#pragma unroll
    for (int v = 0; v < 3; v++) {
        uint4 w = src[v];
        u32 words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
        for (int k = 0; k < 16; k++) point[16 * v + k] = (u8)(words[k >> 2] >> (8 * (k & 3)));
    }
    u8 result[96];
    const u8 code = g1_decompress_one(result, point);
    uint4* dst = reinterpret_cast<uint4*>(out + (u64)i * 96);
#pragma unroll
    for (int v = 0; v < 6; v++) {
        u32 words[4];
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const u8* b = result + 16 * v + 4 * k;
            words[k] = (u32)b[0] | ((u32)b[1] << 8) | ((u32)b[2] << 16) | ((u32)b[3] << 24);
        }
        dst[v] = make_uint4(words[0], words[1], words[2], words[3]);
    }
    codes[i] = code;
}
