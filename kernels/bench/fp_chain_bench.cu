// Benchmark-only: the latency of one dependent chain of Fp operations, the bound of the
// small-batch decompression kernel (one point's square root is ~380 dependent squarings).
// Launched as one warp; each lane runs `steps` dependent steps and stores its result (so
// nothing is dead code). Per-step latency = kernel time / steps.
#define FP_INLINE_MUL
#include "ff/fp.cuh"
#include "ec/g1_jacobian.cuh"
#include "ec/g1_subgroup_rns.cuh"

__device__ __forceinline__ void chain_seed(fp_t& a, u32 salt) {
#pragma unroll
    for (int i = 0; i < FP_LIMBS; i++) a.l[i] = (threadIdx.x + salt) * 0x9e3779b9u + 0x7f4a7c15u * i;
    a.l[FP_LIMBS - 1] &= 0x0fffffffu;  // below p
}

__device__ __forceinline__ void chain_store(u32* out, const fp_t& a) {
#pragma unroll
    for (int i = 0; i < FP_LIMBS; i++) out[threadIdx.x * FP_LIMBS + i] = a.l[i];
}

// a = a^2, `steps` times.
extern "C" __global__ void fp_chain_sqr(u32* out, u32 steps) {
    fp_t a;
    chain_seed(a, 1);
#pragma unroll 1
    for (u32 s = 0; s < steps; s++) fp_sqr(a, a);
    chain_store(out, a);
}

// a = a b, `steps` times.
extern "C" __global__ void fp_chain_mul(u32* out, u32 steps) {
    fp_t a, b;
    chain_seed(a, 1);
    chain_seed(b, 2);
#pragma unroll 1
    for (u32 s = 0; s < steps; s++) fp_mul(a, a, b);
    chain_store(out, a);
}

// Two independent chains a = a b, c = c b per step: whether one lane overlaps them (ILP).
extern "C" __global__ void fp_chain_mul_x2(u32* out, u32 steps) {
    fp_t a, b, c;
    chain_seed(a, 1);
    chain_seed(b, 2);
    chain_seed(c, 3);
#pragma unroll 1
    for (u32 s = 0; s < steps; s++) {
        fp_mul(a, a, b);
        fp_mul(c, c, b);
    }
    fp_add(a, a, c);
    chain_store(out, a);
}

// One RNS product (ff/fp_rns.cuh, one element per warp) per step: a = a^2.
extern "C" __global__ void fp_chain_rns_sqr(u32* out, u32 steps) {
    __shared__ __align__(16) u32 slots[G1_RNS_SLOTS * RNS_SLOT];
    rns_ctx c;
    rns_ctx_init(c, slots);
    u32 a = c.lane * 0x9e3779b9u % c.m;
#pragma unroll 1
    for (u32 s = 0; s < steps; s++) a = rns_mul(a, a, c);
    out[threadIdx.x] = a;
}

// One RNS Jacobian doubling (ec/g1_subgroup_rns.cuh: 3 dependent levels) per step.
extern "C" __global__ void fp_chain_rns_double(u32* out, u32 steps) {
    __shared__ __align__(16) u32 slots[G1_RNS_SLOTS * RNS_SLOT];
    rns_ctx c;
    rns_ctx_init(c, slots);
    const g1_rns_offsets k = g1_rns_offsets_init(c);
    g1_rns_t p;
    p.x = c.lane * 0x9e3779b9u % c.m;
    p.y = c.lane * 0x7f4a7c15u % c.m;
    p.z = c.lane * 0x85ebca6bu % c.m;
#pragma unroll 1
    for (u32 s = 0; s < steps; s++) g1_rns_double(p, p, c, k);
    out[threadIdx.x] = p.x ^ p.y ^ p.z;
}

// One Jacobian doubling on one lane per step (the production kernel's).
extern "C" __global__ void fp_chain_double(u32* out, u32 steps) {
    g1_jac_t p;
    chain_seed(p.x, 1);
    chain_seed(p.y, 2);
    chain_seed(p.z, 3);
#pragma unroll 1
    for (u32 s = 0; s < steps; s++) g1_jac_double(p, p);
    fp_add(p.x, p.x, p.y);
    fp_add(p.x, p.x, p.z);
    chain_store(out, p.x);
}
