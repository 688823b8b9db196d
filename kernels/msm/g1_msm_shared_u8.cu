// Many G1 MSMs with 8-bit scalars over one shared set of bases: result k is
// sum_p scalars[k * n + p] * bases[p] (the NI-DKG chunking proof's 32 MSMs of 16n points;
// host side: gpu-crypto/engine/src/cuda/msm_shared_u8.rs, design: docs/msm.md).
//
// Bit planes: result_k = sum_{b<8} 2^b S_{k,b}, S_{k,b} the sum of the bases whose scalar in
// row k has bit b set. The 8 * rows subset sums are independent:
//   msm_u8_planes:  one block per (row, bit); each thread adds a strided share of the bases
//                   (XYZZ mixed additions), the block sums the shares by a tree in shared memory.
//   msm_u8_combine: one block of 8 threads per row; thread b doubles S_{k,b} b times, a tree
//                   sums the 8 terms, and the row's result leaves as a Jacobian point.
// A per-row 8-bit bucket window would add fewer points (n + 2 * 255 per row against about
// 4n here), but its bucket reduction is a serial chain of 510 additions; the planes' longest
// chain is n / threads + log2(threads) additions, and for a few hundred bases per row that
// chain, not the total work, is the time.
// Bases: affine, Montgomery form, 96 bytes each (the layout msm_load_points writes). The host
// zeroes the scalars of identity bases, so no kernel meets the identity as an affine point.
#include "common.cuh"
#include "ff/fp.cuh"
#include "ec/g1_xyzz.cuh"

// Threads of msm_u8_planes (a power of two; the host picks at most this many).
#define U8_PLANE_THREADS_MAX 128

extern "C" __global__ void __launch_bounds__(U8_PLANE_THREADS_MAX)
msm_u8_planes(const g1_affine_t* __restrict__ bases, u32 n, const u8* __restrict__ scalars,
              g1_xyzz_t* __restrict__ planes) {
    __shared__ g1_xyzz_t shares[U8_PLANE_THREADS_MAX];
    const u32 plane = blockIdx.x;  // row * 8 + bit
    const u32 bit = plane & 7;
    const u8* __restrict__ row = scalars + (u64)(plane >> 3) * n;
    g1_xyzz_t acc;
    xyzz_set_identity(acc);
    // Strided, so that a warp reads 32 consecutive scalar bytes and bases.
    for (u32 p = threadIdx.x; p < n; p += blockDim.x) {
        if ((row[p] >> bit) & 1) {
            g1_affine_t a;
            load_affine(a, bases, p);
            xyzz_add_affine(acc, acc, a);
        }
    }
    shares[threadIdx.x] = acc;
    __syncthreads();
    for (u32 stride = blockDim.x >> 1; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) {
            g1_xyzz_t s = shares[threadIdx.x];
            xyzz_add(s, s, shares[threadIdx.x + stride]);
            shares[threadIdx.x] = s;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) store_xyzz(planes + plane, shares[0]);
}

// 2^b S_{k,b} summed over the 8 planes of row k = blockIdx.x: 7 doublings then 3 additions
// deep, against 14 for Horner on one thread.
extern "C" __global__ void __launch_bounds__(8)
msm_u8_combine(const g1_xyzz_t* __restrict__ planes, g1_jac_t* __restrict__ out) {
    __shared__ g1_xyzz_t terms[8];
    const u32 b = threadIdx.x;
    g1_xyzz_t t;
    load_xyzz(t, planes + (u64)blockIdx.x * 8 + b);
    for (u32 i = 0; i < b; i++) xyzz_double(t, t);
    terms[b] = t;
    __syncthreads();
    for (u32 stride = 4; stride > 0; stride >>= 1) {
        if (b < stride) {
            g1_xyzz_t s = terms[b];
            xyzz_add(s, s, terms[b + stride]);
            terms[b] = s;
        }
        __syncthreads();
    }
    if (b == 0) {
        g1_jac_t r;
        xyzz_to_jacobian(r, terms[0]);
        out[blockIdx.x] = r;
    }
}
