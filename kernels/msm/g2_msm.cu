// G2 MSMs with full scalars over points of the prime-order subgroup, shaped for latency:
// the NI-DKG verifier's G2 MSMs have tens of points (the sharing proof's t + 2, the combined
// integrity check's 16), so the time is the longest chain of dependent point operations,
// not the work (host side: gpu-crypto/engine/src/cuda/msm_g2.rs, design: docs/msm.md).
//
// Endomorphism split: on G2, psi(P) = [z]P (ec/g2_subgroup.cuh), and r < |z|^4, so the host
// writes each scalar in base |z|, s = d0 + d1 |z| + d2 |z|^2 + d3 |z|^3 with 64-bit digits,
// and s P = sum_k d_k (-1)^k psi^k(P): four 64-bit multiplications instead of one 255-bit.
// One thread per (point, k) term runs a 64-bit double-and-add (63 doublings at most), and
// the block sums its terms by a tree in shared memory.
//
// g2_msm_blocks: one block per chunk of at most G2_MSM_BASES_PER_BLOCK bases of one MSM;
// chunk b covers bases [chunks[b], chunks[b + 1]); its partial sum leaves as one Jacobian
// point (Montgomery form) and the host adds the partials of an MSM. Bases: ic_bls12_381's
// uncompressed encodings (x.c1, x.c0, y.c1, y.c0, big-endian), never the identity (the host
// leaves those out: they add nothing). Digits: 4 x u64 per base, d0 first.
#include "common.cuh"
#include "ff/fp.cuh"
#include "ff/fp2.cuh"
#include "ec/g2_jacobian.cuh"
#include "ec/g2_subgroup.cuh"

// Must equal G2_MSM_THREADS and BASES_PER_BLOCK in msm_g2.rs: two terms per thread.
#define G2_MSM_THREADS 128
#define G2_MSM_BASES_PER_BLOCK 64
#define G2_MSM_DIGITS 4

// The affine point of an uncompressed encoding, Montgomery form.
__device__ __forceinline__ void g2_msm_load_base(fp2_t& x, fp2_t& y, const u8* __restrict__ enc) {
    fp_t v;
    fp_from_be_bytes(v, enc);
    fp_to_mont(x.c1, v);
    fp_from_be_bytes(v, enc + 48);
    fp_to_mont(x.c0, v);
    fp_from_be_bytes(v, enc + 96);
    fp_to_mont(y.c1, v);
    fp_from_be_bytes(v, enc + 144);
    fp_to_mont(y.c0, v);
}

// r = d (-1)^k psi^k(x, y) by left-to-right double-and-add over the 64-bit digit d.
__device__ __noinline__ void g2_msm_term(g2_jac_t& r, fp2_t x, fp2_t y, u32 k, u64 d) {
    g2_jac_identity(r);
    if (d == 0) return;
    for (u32 i = 0; i < k; i++) g2_affine_psi(x, y, x, y);
    if (k & 1) fp2_neg(y, y);
    r.x = x;
    r.y = y;
    fp2_one(r.z);
    const int top = 63 - __clzll(d);
#pragma unroll 1
    for (int bit = top - 1; bit >= 0; bit--) {
        g2_jac_double(r, r);
        if ((d >> bit) & 1) g2_jac_add_affine(r, r, x, y);
    }
}

extern "C" __global__ void __launch_bounds__(G2_MSM_THREADS)
g2_msm_blocks(const u8* __restrict__ bases, const u64* __restrict__ digits,
              const u32* __restrict__ chunks, g2_jac_t* __restrict__ out) {
    __shared__ g2_jac_t shares[G2_MSM_THREADS];
    const u32 first = chunks[blockIdx.x];
    const u32 terms = (chunks[blockIdx.x + 1] - first) * G2_MSM_DIGITS;
    g2_jac_t acc;
    g2_jac_identity(acc);
    for (u32 t = threadIdx.x; t < terms; t += G2_MSM_THREADS) {
        const u32 base = first + t / G2_MSM_DIGITS;
        const u32 k = t % G2_MSM_DIGITS;
        const u64 d = digits[(u64)base * G2_MSM_DIGITS + k];
        if (d == 0) continue;
        fp2_t x, y;
        g2_msm_load_base(x, y, bases + (u64)base * 192);
        g2_jac_t term;
        g2_msm_term(term, x, y, k, d);
        g2_jac_add(acc, acc, term);
    }
    shares[threadIdx.x] = acc;
    __syncthreads();
    for (u32 stride = G2_MSM_THREADS >> 1; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) {
            g2_jac_t s = shares[threadIdx.x];
            g2_jac_add(s, s, shares[threadIdx.x + stride]);
            shares[threadIdx.x] = s;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = shares[0];
}
