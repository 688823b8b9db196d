// Benchmark-only: the latency of one dependent chain of Fp operations, the bound of the
// small-batch decompression kernel (one point's square root is ~380 dependent squarings).
// Launched as one warp; each lane runs `steps` dependent steps and stores its result (so
// nothing is dead code). Per-step latency = kernel time / steps.
#define FP_INLINE_MUL
#include "ff/fp.cuh"
#include "ec/g1_subgroup_team.cuh"

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

// One level of a 4-lane team (ec/g1_subgroup_team.cuh) per step: operand picks, one
// product per lane, 3 products gathered by shuffles.
extern "C" __global__ void fp_chain_team_level(u32* out, u32 steps) {
    fp_t a, b, c;
    chain_seed(a, 1);
    chain_seed(b, 2);
    chain_seed(c, 3);
    const u32 role = threadIdx.x % G1_TEAM;
#pragma unroll 1
    for (u32 s = 0; s < steps; s++) {
        fp_t m, g[3];
        fp_mul(m, fp_pick(role, a, b, c, c), fp_pick(role, b, c, a, a));
        fp_team_gather<3>(g, m);
        a = g[0];
        b = g[1];
        c = g[2];
    }
    fp_add(a, a, b);
    fp_add(a, a, c);
    chain_store(out, a);
}

// One Jacobian doubling by a team per step (3 dependent levels).
extern "C" __global__ void fp_chain_team_double(u32* out, u32 steps) {
    g1_jac_t p;
    chain_seed(p.x, 1);
    chain_seed(p.y, 2);
    chain_seed(p.z, 3);
    const u32 role = threadIdx.x % G1_TEAM;
#pragma unroll 1
    for (u32 s = 0; s < steps; s++) g1_team_double(p, p, role);
    fp_add(p.x, p.x, p.y);
    fp_add(p.x, p.x, p.z);
    chain_store(out, p.x);
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
