// Shared by the BLS kernels: decoding the host's point encodings into Montgomery form,
// one shared copy of the G1 formulas, the 128-bit scalar multiplication of the random
// combination, and building Miller-loop terms (identity terms left out).
//
// Host formats (big-endian coordinates as ic_bls12_381's to_uncompressed, bit 6 of the
// first byte set for the identity): G1 96 bytes, G2 192 bytes (x.c1, x.c0, y.c1, y.c0);
// scalars 16 bytes little-endian.
#ifndef SOVEREIGN_PAIRING_BLS_IO_CUH
#define SOVEREIGN_PAIRING_BLS_IO_CUH

#include "common.cuh"
#include "ff/fp12.cuh"
#include "ec/g1_projective.cuh"
#include "pairing/miller_loop.cuh"

#define BLS_ITEM_BYTES 400  // signature 96, message point 96, public key 192, scalar 16
#define BLS_PAIR_BYTES 288  // G1 96, G2 192

__device__ __forceinline__ bool is_infinity(const u8* enc) { return (enc[0] >> 6) & 1; }

// A 48-byte big-endian coordinate (flag bits masked) to Montgomery form.
__device__ __forceinline__ void load_coordinate(fp_t& r, const u8* be, bool first) {
    u8 b[48];
    for (int i = 0; i < 48; i++) b[i] = be[i];
    if (first) b[0] &= 0x1f;
    fp_t v;
    fp_from_be_bytes(v, b);
    fp_to_mont(r, v);
}

// G1: projective (x : y : 1), or the identity (0 : 1 : 0).
__device__ __forceinline__ void load_g1(g1_proj_t& p, const u8* enc) {
    if (is_infinity(enc)) {
        g1_identity(p);
        return;
    }
    load_coordinate(p.x, enc, true);
    load_coordinate(p.y, enc + 48, false);
    fp_load_const(p.z, FP_ONE);
}

__device__ __forceinline__ void load_g2(g2_affine_t& q, const u8* enc) {
    load_coordinate(q.x.c1, enc, true);
    load_coordinate(q.x.c0, enc + 48, false);
    load_coordinate(q.y.c1, enc + 96, false);
    load_coordinate(q.y.c0, enc + 144, false);
}

// One shared copy of the complete doubling (g1_projective.cuh) for the loops below.
__device__ __noinline__ void bls_g1_double(g1_proj_t& r, const g1_proj_t& a) { g1_double(r, a); }

// r = k * p for a 128-bit little-endian k: fixed 4-bit windows (128 doublings, 32
// additions of a table entry; the complete formulas cover identity entries), so every
// thread of a warp follows the same path whatever its scalar.
__device__ __noinline__ void g1_mul_u128(g1_proj_t& r, const g1_proj_t& p, const u8* k) {
    g1_proj_t table[16];
    g1_identity(table[0]);
    table[1] = p;
    for (int i = 2; i < 16; i++) g1_add_shared(table[i], table[i - 1], p);
    g1_proj_t acc;
    g1_identity(acc);
    for (int nib = 31; nib >= 0; nib--) {
        for (int d = 0; d < 4; d++) bls_g1_double(acc, acc);
        const u32 digit = (k[nib >> 1] >> ((nib & 1) * 4)) & 15;
        g1_add_shared(acc, acc, table[digit]);
    }
    r = acc;
}

// Fills a Miller-loop term from a projective G1 point and an affine G2 point; false when
// either is the identity (the term is then 1 and left out).
__device__ __forceinline__ bool make_term(pairing_term_t& t, const g1_proj_t& p, const u8* q_enc) {
    if (fp_is_zero(p.z) || is_infinity(q_enc)) return false;
    t.px = p.x;
    t.py = p.y;
    t.pz = p.z;
    load_g2(t.q, q_enc);
    return true;
}

#endif
