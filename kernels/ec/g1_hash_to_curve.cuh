// hash_to_curve for BLS12-381 G1 (RFC 9380 section 3, suite
// BLS12381G1_XMD:SHA-256_SSWU_RO_ with the caller's DST), as ic_bls12_381's
// HashToCurve<ExpandMsgXmd<Sha256>> for G1Projective:
//   u0, u1 = hash_to_field(msg, 2)          (expand_message_xmd, 64 bytes each, mod p)
//   P = iso_map(sswu(u0)) + iso_map(sswu(u1))
//   clear_cofactor(P) = (1 - x) P = P + [|x|] P   (h_eff, x < 0)
// and the result's uncompressed encoding (G1Affine::to_uncompressed). The pieces, not one
// function: ops/hash_to_g1.cu runs the two maps on two warps and adds on one.
#ifndef SOVEREIGN_EC_G1_HASH_TO_CURVE_CUH
#define SOVEREIGN_EC_G1_HASH_TO_CURVE_CUH

#include "hash/expand_message_xmd.cuh"
#include "ff/fp2.cuh"
#include "ec/g1_projective.cuh"
#include "ec/g1_subgroup.cuh"
#include "ec/g1_sswu.cuh"
#include "ec/g1_isogeny.cuh"

// map_to_curve of RFC 9380 for G1: the SSWU image of u on E', then the isogeny to E.
__device__ __forceinline__ void g1_map_to_curve(g1_proj_t& r, const fp_t& u) {
    g1_map_to_curve_sswu(r, u);
    g1_iso_map(r, r);
}

// clear_cofactor(P) = (1 - x) P = P + [|x|] P (h_eff; x < 0), as ic_bls12_381.
__device__ __forceinline__ void g1_clear_cofactor(g1_proj_t& r, const g1_proj_t& p) {
    g1_proj_t q;
    g1_mul_by_abs_z(q, p);
    g1_add_shared(r, p, q);
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
