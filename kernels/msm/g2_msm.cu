// G2 MSMs with full scalars over points of the prime-order subgroup, shaped for latency:
// the NI-DKG verifier's G2 MSMs have tens of points (the sharing proof's t + 2, the combined
// integrity check's 16), so the time is the longest chain of dependent point operations,
// not the work (host side: gpu-crypto/engine/src/cuda/msm_g2.rs, design: docs/msm.md).
//
// Endomorphism split: on G2, psi(P) = [z]P (ec/g2_subgroup.cuh), and r < |z|^4, so the host
// writes each scalar in base |z|, s = d0 + d1 |z| + d2 |z|^2 + d3 |z|^3 with 64-bit digits,
// and s P = sum_k d_k (-1)^k psi^k(P): four 64-bit multiplications instead of one 255-bit.
// One warp per (point, k) term runs a 64-bit double-and-add (63 doublings at most) in the
// residue number system of ec/g2_jacobian_rns.cuh, where a doubling is 3 dependent steps
// of interleaved RNS products, where one lane runs its 7 Fp2 products (17 Fp products) one
// after another; the block sums its terms by a tree of warps, and warp 0 stores the sum
// (rns_store_mont). Measured: docs/results/nidkg-overlap-h200 (1.3 ms for 16 to 64 bases,
// 4.2 ms with one lane per term).
//
// g2_msm_blocks: one block per chunk of at most G2_MSM_BASES_PER_BLOCK bases of one MSM;
// chunk b covers bases [chunks[b], chunks[b + 1]); its partial sum leaves as one Jacobian
// point (x.c0, x.c1, y.c0, y.c1, z.c0, z.c1, each 12 little-endian words of the Montgomery
// form with R = 2^384) and the host adds the partials of an MSM. Bases: ic_bls12_381's
// uncompressed encodings (x.c1, x.c0, y.c1, y.c0, big-endian, canonical), never the identity
// (the host leaves those out: they add nothing). Digits: 4 x u64 per base, d0 first.
#include "common.cuh"
#include "ff/fp.cuh"
#include "ec/g2_jacobian_rns.cuh"

// Must equal WARPS and BASES_PER_BLOCK in msm_g2.rs: one term per warp.
#define G2_MSM_DIGITS 4
#define G2_MSM_BASES_PER_BLOCK 4
#define G2_MSM_WARPS (G2_MSM_BASES_PER_BLOCK * G2_MSM_DIGITS)

// The affine point of an uncompressed encoding, Montgomery lane form (below 16p).
__device__ __forceinline__ void g2_msm_load_base(fp2_rns_t& x, fp2_rns_t& y,
                                                 const u8* __restrict__ enc, const rns_ctx& c) {
    fp_t x1, x0, y1, y0;
    fp_from_be_bytes(x1, enc);
    fp_from_be_bytes(x0, enc + 48);
    fp_from_be_bytes(y1, enc + 96);
    fp_from_be_bytes(y0, enc + 144);
    x = fp2_rns_from_words(x0.l, x1.l, c);
    y = fp2_rns_from_words(y0.l, y1.l, c);
}

// r = d (-1)^k psi^k(x, y) by left-to-right double-and-add over the 64-bit digit d != 0.
// Inlined: a non-inlined callee would receive the constants (rns_ctx) through local memory.
__device__ __forceinline__ void g2_msm_term(g2_rns_t& r, fp2_rns_t x, fp2_rns_t y, u32 k, u64 d,
                                            const rns_ctx& c, const g2_rns_offsets& o) {
    if (k > 0) {
        const g2_rns_psi_consts psi = g2_rns_psi_consts_init(c);
#pragma unroll 1
        for (u32 i = 0; i < k; i++) g2_rns_affine_psi(x, y, psi, c, o);
    }
    if (k & 1) y = fp2_rns_sub({0, 0}, y, o.p48, c);
    r.x = x;
    r.y = y;
    r.z = {g2_rns_mont_one(c), 0};
    const int top = 63 - __clzll(d);
#pragma unroll 1
    for (int bit = top - 1; bit >= 0; bit--) {
        g2_rns_double(r, r, c, o);
        if ((d >> bit) & 1) g2_rns_add_affine(r, r, x, y, c, o);
    }
}

extern "C" __global__ void __launch_bounds__(G2_MSM_WARPS * 32)
g2_msm_blocks(const u8* __restrict__ bases, const u64* __restrict__ digits,
              const u32* __restrict__ chunks, u32* __restrict__ out) {
    __shared__ __align__(16) u32 slots[G2_MSM_WARPS][G2_RNS_SLOTS * RNS_SLOT];
    __shared__ g2_rns_t sums[G2_MSM_WARPS][32];
    const u32 warp = threadIdx.x >> 5;
    rns_ctx c;
    rns_ctx_init(c, slots[warp]);
    const g2_rns_offsets o = g2_rns_offsets_init(c);
    const u32 first = chunks[blockIdx.x];
    const u32 terms = (chunks[blockIdx.x + 1] - first) * G2_MSM_DIGITS;
    g2_rns_t acc;
    g2_rns_identity(acc, c);
    if (warp < terms) {
        const u32 base = first + warp / G2_MSM_DIGITS;
        const u32 k = warp % G2_MSM_DIGITS;
        const u64 d = digits[(u64)base * G2_MSM_DIGITS + k];
        if (d != 0) {
            fp2_rns_t x, y;
            g2_msm_load_base(x, y, bases + (u64)base * 192, c);
            g2_msm_term(acc, x, y, k, d, c, o);
        }
    }
    sums[warp][c.lane] = acc;
    __syncthreads();
#pragma unroll 1
    for (u32 stride = G2_MSM_WARPS >> 1; stride > 0; stride >>= 1) {
        if (warp < stride) {
            g2_rns_t s = sums[warp][c.lane];
            g2_rns_add(s, s, sums[warp + stride][c.lane], c, o);
            sums[warp][c.lane] = s;
        }
        __syncthreads();
    }
    if (warp == 0) {
        const g2_rns_t& s = sums[0][c.lane];
        const u32 coords[6] = {s.x.c0, s.x.c1, s.y.c0, s.y.c1, s.z.c0, s.z.c1};
        rns_store_mont<6>(out + (u64)blockIdx.x * 6 * FP_LIMBS, coords, c);
    }
}
