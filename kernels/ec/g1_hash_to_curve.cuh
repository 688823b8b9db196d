// hash_to_curve for BLS12-381 G1 (RFC 9380 section 3, suite
// BLS12381G1_XMD:SHA-256_SSWU_RO_ with the caller's DST), as ic_bls12_381's
// HashToCurve<ExpandMsgXmd<Sha256>> for G1Projective:
//   u0, u1 = hash_to_field(msg, 2)          (expand_message_xmd, 64 bytes each, mod p)
//   P = iso_map(sswu(u0)) + iso_map(sswu(u1))
//   clear_cofactor(P) = (1 - x) P = P + [|x|] P   (h_eff, x < 0)
// and the result's uncompressed encoding (G1Affine::to_uncompressed).
#ifndef SOVEREIGN_EC_G1_HASH_TO_CURVE_CUH
#define SOVEREIGN_EC_G1_HASH_TO_CURVE_CUH

#include "hash/expand_message_xmd.cuh"
#include "ff/fp2.cuh"
#include "ec/g1_projective.cuh"
#include "ec/g1_subgroup.cuh"
#include "ec/g1_sswu.cuh"
#include "ec/g1_isogeny.cuh"

// One shared copy of the complete addition (used twice per message).
__device__ __noinline__ void h2c_g1_add(g1_proj_t& r, const g1_proj_t& a, const g1_proj_t& b) {
    g1_add(r, a, b);
}

// map_to_curve of RFC 9380 for G1: the SSWU image of u on E', then the isogeny to E.
__device__ __forceinline__ void g1_map_to_curve(g1_proj_t& r, const fp_t& u) {
    g1_map_to_curve_sswu(r, u);
    g1_iso_map(r, r);
}

// clear_cofactor(P) = (1 - x) P = P + [|x|] P (h_eff; x < 0), as ic_bls12_381.
__device__ __forceinline__ void g1_clear_cofactor(g1_proj_t& r, const g1_proj_t& p) {
    g1_proj_t q;
    g1_mul_by_abs_z(q, p);
    h2c_g1_add(r, p, q);
}

// r = hash_to_curve(msg, dst), projective, on one thread; dst_len <= 255.
// (ops/hash_to_g1.cu runs the two maps on two threads.)
__device__ __forceinline__ void g1_hash_to_curve(g1_proj_t& r, const u8* msg, u32 msg_len,
                                                 const u8* dst, u32 dst_len) {
    u32 uniform[32];
    expand_message_xmd_128(uniform, msg, msg_len, dst, dst_len);
    fp_t u0, u1;
    fp_from_be_words_64(u0, uniform);
    fp_from_be_words_64(u1, uniform + 16);
    g1_proj_t p, q;
    g1_map_to_curve(p, u0);
    g1_map_to_curve(q, u1);
    h2c_g1_add(p, p, q);
    g1_clear_cofactor(r, p);
}

// G1Affine::to_uncompressed of a projective point: big-endian x then y, or the identity
// as 0x40 followed by zeros.
__device__ __forceinline__ void g1_proj_to_uncompressed(u8 out[96], const g1_proj_t& p) {
    if (fp_is_zero(p.z)) {
        for (int i = 0; i < 96; i++) out[i] = 0;
        out[0] = 0x40;
        return;
    }
    const fp_t z_inv = fp_inv_v(p.z);
    fp_t x, y;
    fp_mul(x, p.x, z_inv);
    fp_mul(y, p.y, z_inv);
    fp_from_mont(x, x);
    fp_from_mont(y, y);
    fp_to_be_bytes(out, x);
    fp_to_be_bytes(out + 48, y);
}

#endif
