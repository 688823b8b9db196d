// Experiment (issue 3, session 6): BLS12-381 Fp in a residue number system, one element
// per warp. Lane l < 28 holds the element modulo the prime m_l = 2^30 - c_l, times a lane
// constant ("lane form"; rns_model.py picks the primes and constants and checks every bound
// used here); base B is lanes 0-13, base B' lanes 14-27, lanes 28-31 idle. Values are
// Montgomery residues for M = prod(B) ~ 2^420; a product returns below 15p + p/2^20 for
// inputs below 2^19 p, so sums of a few products need no reduction.
//
// A product is one modular multiplication per lane, then two base extensions (B -> B'
// without a quotient estimate, B' -> B exact with Kawamura's), each one broadcast of 14
// residues through shared memory and a 15-term dot product per lane. Unlike a radix product
// spread over lanes, no carry crosses lanes.
//
// Every lane runs the same instructions with its own constants (lanes of the other base
// compute values they then ignore), so the warp never splits.
#ifndef RUN19_FP_RNS_CUH
#define RUN19_FP_RNS_CUH

#include "common.cuh"
#include "rns_tables.inc"

#define RNS_LANES (2 * RNS_N)
#define RNS_MASK ((1u << RNS_W) - 1)
#define RNS_SLOT 32  // shared words per product in flight: xi at [0, 14), xi' at [16, 30)

struct rns_ctx {
    u32 lane, m, c, k0, k1, k2, f, pmod;
    bool in_b, in_b2;
    u32 row[RNS_N];
    u32* smem;  // RNS_SLOT words per product in flight, 16-byte aligned
};

__device__ __forceinline__ void rns_ctx_init(rns_ctx& x, u32* smem) {
    x.lane = threadIdx.x & 31;
    const u32 l = x.lane < RNS_LANES ? x.lane : 0;
    x.m = RNS_M[l];
    x.c = RNS_C[l];
    x.k0 = RNS_K0[l];
    x.k1 = RNS_K1[l];
    x.k2 = RNS_K2[l];
    x.f = RNS_F[l];
    x.pmod = RNS_PMOD[l];
#pragma unroll
    for (int i = 0; i < RNS_N; i++) x.row[i] = RNS_ROW[l * RNS_N + i];
    x.in_b = x.lane < RNS_N;
    x.in_b2 = x.lane >= RNS_N && x.lane < RNS_LANES;
    x.smem = smem;
}

// acc + a b in one IMAD.WIDE.U32 (written out: the compiler otherwise adds the high words of
// zero constants after each one).
__device__ __forceinline__ u64 rns_mad_wide(u32 a, u32 b, u64 acc) {
    u64 r;
    asm("mad.wide.u32 %0, %1, %2, %3;" : "=l"(r) : "r"(a), "r"(b), "l"(acc));
    return r;
}

// v mod m for v < 2^64 (m = 2^30 - c, c < 2^10): fold the bits above 30 twice, subtract once.
__device__ __forceinline__ u32 rns_reduce64(u64 v, const rns_ctx& x) {
    const u32 lo = (u32)v, hi = (u32)(v >> 32);
    const u32 h_lo = __funnelshift_r(lo, hi, RNS_W);
    const u64 v1 = rns_mad_wide(h_lo, x.c, ((u64)((hi >> RNS_W) * x.c) << 32) | (lo & RNS_MASK));
    const u32 l1 = (u32)v1;
    const u32 v2 = __funnelshift_r(l1, (u32)(v1 >> 32), RNS_W) * x.c + (l1 & RNS_MASK);
    return min(v2, v2 - x.m);
}

// a b mod m for a, b < 2^30 (the product's bits above 60 are zero: one fold is 32-bit).
__device__ __forceinline__ u32 rns_mulmod(u32 a, u32 b, const rns_ctx& x) {
    const u64 v = rns_mad_wide(a, b, 0);
    const u32 lo = (u32)v;
    const u64 v1 = rns_mad_wide(__funnelshift_r(lo, (u32)(v >> 32), RNS_W), x.c, lo & RNS_MASK);
    const u32 l1 = (u32)v1;
    const u32 v2 = __funnelshift_r(l1, (u32)(v1 >> 32), RNS_W) * x.c + (l1 & RNS_MASK);
    return min(v2, v2 - x.m);
}

__device__ __forceinline__ u32 rns_add(u32 a, u32 b, const rns_ctx& x) {
    const u32 s = a + b;
    return min(s, s - x.m);
}

// a - b + k p: non-negative as an integer when b < k p.
__device__ __forceinline__ u32 rns_sub(u32 a, u32 b, u32 kp, const rns_ctx& x) {
    return rns_add(rns_add(a, kp, x), x.m - b, x);
}

// Residue of k p (k < 2^30).
__device__ __forceinline__ u32 rns_kp(u32 k, const rns_ctx& x) { return rns_mulmod(k, x.pmod, x); }

// Sum of w[i] * v[i] over the 14 broadcast residues at s (16-byte aligned), plus acc.
__device__ __forceinline__ u64 rns_dot(u64 acc, const u32* s, const rns_ctx& x) {
    const uint4* s4 = reinterpret_cast<const uint4*>(s);
    const uint4 a = s4[0], b = s4[1], c = s4[2], d = s4[3];
    const u32 v[RNS_N] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w, c.x, c.y, c.z, c.w, d.x, d.y};
#pragma unroll
    for (int i = 0; i < RNS_N; i++) acc = rns_mad_wide(v[i], x.row[i], acc);
    return acc;
}

// r[k] = x[k] y[k] / M (mod p) for K independent products; their steps interleave.
template <int K>
__device__ __forceinline__ void rns_mul_k(u32* r, const u32* a, const u32* b, const rns_ctx& x) {
    u32 v[K], r2[K], top[K];
#pragma unroll
    for (int k = 0; k < K; k++) {
        // B: +-xi_i (the sign is in B' lanes' constants); B': t_j in lane form.
        v[k] = rns_mulmod(a[k], b[k], x);
        if (x.in_b) x.smem[k * RNS_SLOT + x.lane] = v[k];
    }
    __syncwarp();
#pragma unroll
    for (int k = 0; k < K; k++) {
        // B -> B': q + a M (0 <= a <= 14), a valid Montgomery quotient. The result is
        // xi'_j, B' lanes' lane form and the second extension's input.
        r2[k] = rns_reduce64(rns_dot(rns_mad_wide(v[k], x.k1, x.k0), x.smem + k * RNS_SLOT, x), x);
        if (x.in_b2) x.smem[k * RNS_SLOT + 16 + x.lane - RNS_N] = r2[k];
        top[k] = x.in_b2 ? r2[k] >> (RNS_W - RNS_TOP) : 0;
    }
    __syncwarp();
#pragma unroll
    for (int k = 0; k < K; k++) {
        // B' -> B, offset 1/2: exact, as the value is far below M'/2.
        const u32 q = (__reduce_add_sync(0xffffffffu, top[k]) + (1u << (RNS_TOP - 1))) >> RNS_TOP;
        const u32 r1 = rns_reduce64(rns_dot(rns_mad_wide(q, x.k2, 0), x.smem + k * RNS_SLOT + 16, x), x);
        r[k] = x.in_b ? r1 : r2[k];
    }
}

__device__ __forceinline__ u32 rns_mul(u32 a, u32 b, const rns_ctx& x) {
    u32 r;
    rns_mul_k<1>(&r, &a, &b, x);
    return r;
}

// Lane form of the integer in 12 little-endian words (the same on every lane), times M mod p.
__device__ __forceinline__ u32 rns_from_integer(const u32* w, const rns_ctx& x) {
    const u32 l = x.lane < RNS_LANES ? x.lane : 0;
    u32 acc = 0;
#pragma unroll
    for (int k = 0; k < 12; k += 3) {
        u64 s = acc;
        for (int j = k; j < k + 3; j++) s += (u64)w[j] * RNS_POW32[l * 12 + j];
        acc = rns_reduce64(s, x);
    }
    return rns_mul(rns_mulmod(acc, x.f, x), RNS_M2P[l], x);
}

// The integer (below 16p; 13 words, on every lane) of a Montgomery lane-form value.
__device__ __forceinline__ void rns_to_integer(u32* out, u32 a, const rns_ctx& x) {
    const u32 l = x.lane < RNS_LANES ? x.lane : 0;
    const u32 v = rns_mul(a, RNS_ONE[l], x);  // below 15p + p/2^20
    const u32 xi = rns_mulmod(v, RNS_CRT_INV[x.in_b ? l : 0], x);
    if (x.in_b) x.smem[x.lane] = xi;
    const u32 q = (__reduce_add_sync(0xffffffffu, x.in_b ? xi >> (RNS_W - RNS_TOP) : 0) +
                   (1u << (RNS_TOP - 1))) >> RNS_TOP;
    __syncwarp();
    u32 acc[15] = {0};
    for (int i = 0; i < RNS_N; i++) {
        const u32 s = x.smem[i];
        u32 carry = 0;
        for (int w = 0; w < 14; w++) {
            const u64 t = (u64)s * RNS_CRT_MI[i * 14 + w] + acc[w] + carry;
            acc[w] = (u32)t;
            carry = (u32)(t >> 32);
        }
        acc[14] += carry;
    }
    u32 carry = 0, borrow = 0;
    for (int w = 0; w < 15; w++) {
        const u64 t = (u64)q * RNS_CRT_M[w] + carry;
        carry = (u32)(t >> 32);
        const u64 d = (u64)acc[w] - (u32)t - borrow;
        acc[w] = (u32)d;
        borrow = (u32)(d >> 63);
    }
    __syncwarp();
    for (int w = 0; w < 13; w++) out[w] = acc[w];
}

#endif
