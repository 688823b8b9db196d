// Chunk recombinations (the NI-DKG sharing proof's combined ciphertexts and randomizer):
// sum_j 2^(16 (L - 1 - j)) P_j for each row of L <= 16 G1 points, big-endian chunks first.
// Shaped for latency: a dealing has n + 1 rows, a DKG round 2n (n + 1), and each row is one
// chain of 15 x 16 doublings and 16 additions, so one warp per row runs Horner in the
// residue number system of ec/g1_subgroup_rns.cuh (a doubling is 3 dependent RNS products,
// an addition 5), and the host gets the rows' sums directly: no Pippenger buckets and no
// window combination on the host (host side: gpu-crypto/engine/src/cuda/recombine.rs).
//
// g1_recombine_rows: row r covers points [rows[r], rows[r + 1]); points are ic_bls12_381's
// uncompressed encodings (96 bytes, x then y, big-endian; the identity carries the infinity
// flag); row r's sum leaves as one Jacobian point at out + 36 r (x, y, z, each 12
// little-endian words of the Montgomery form with R = 2^384).
#include "common.cuh"
#include "ff/fp.cuh"
#include "ec/g1_subgroup_rns.cuh"

// Must equal WARPS_PER_BLOCK in recombine.rs.
#define G1_RECOMBINE_WARPS 4
#define G1_RECOMBINE_CHUNK_BITS 16

// The point of an uncompressed encoding in Montgomery lane form (below 16p), z = one; the
// identity for the infinity flag. Every lane reads the same bytes, so the branch is uniform.
__device__ __forceinline__ void g1_recombine_load(g1_rns_t& p, const u8* __restrict__ enc,
                                                  u32 one, const rns_ctx& c) {
    if (enc[0] & 0x40) {
        g1_rns_identity(p, c);
        return;
    }
    fp_t x, y;
    fp_from_be_bytes(x, enc);
    x.l[FP_LIMBS - 1] &= 0x1fffffffu;  // the flag bits
    fp_from_be_bytes(y, enc + 48);
    p.x = rns_from_words(x.l, c);
    p.y = rns_from_words(y.l, c);
    p.z = one;
}

extern "C" __global__ void __launch_bounds__(G1_RECOMBINE_WARPS * 32)
g1_recombine_rows(const u8* __restrict__ points, const u32* __restrict__ rows, u32 count,
                  u32* __restrict__ out) {
    __shared__ __align__(16) u32 slots[G1_RECOMBINE_WARPS][G1_RNS_SLOTS * RNS_SLOT];
    const u32 warp = threadIdx.x >> 5;
    const u32 row = blockIdx.x * G1_RECOMBINE_WARPS + warp;
    if (row >= count) return;  // the whole warp; no block barrier follows
    rns_ctx c;
    rns_ctx_init(c, slots[warp]);
    const g1_rns_offsets k = g1_rns_offsets_init(c);
    // One in Montgomery form is M mod p: the product of 1 and M^2 mod p.
    const u32 one = rns_mul(rns_lane_const(RNS_ONE, c), rns_lane_const(RNS_M2P, c), c);
    g1_rns_t acc;
    g1_rns_identity(acc, c);
    const u32 first = rows[row], end = rows[row + 1];
#pragma unroll 1
    for (u32 i = first; i < end; i++) {
        if (i > first) {
#pragma unroll 1
            for (int b = 0; b < G1_RECOMBINE_CHUNK_BITS; b++) g1_rns_double(acc, acc, c, k);
        }
        g1_rns_t p;
        g1_recombine_load(p, points + (u64)i * 96, one, c);
        g1_rns_add(acc, acc, p, c, k);
    }
    const u32 coords[3] = {acc.x, acc.y, acc.z};
    rns_store_mont<3>(out + (u64)row * 3 * FP_LIMBS, coords, c);
}
