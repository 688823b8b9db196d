// BLS12-381 Fp in a residue number system (RNS), one element per warp, for the small-batch
// kernels, whose time is one point's chain of dependent products: an RNS product has no
// carry crossing lanes, and takes 206 ns on the H200 against 751 ns for one lane's squaring
// (docs/benchmarks.md; docs/results/fp-chain-latency-h200).
//
// Lane l < 28 keeps the element modulo the prime m_l = 2^30 - c_l, times a lane constant
// ("lane form"); base B is lanes 0-13, base B' lanes 14-27, lanes 28-31 idle.
// kernels/ff/fp_rns_tables.py picks the primes and constants, models the product lane by
// lane and checks every bound used here. Values are Montgomery residues for M = prod(B)
// ~ 2^420 and stay non-negative integers: a product returns below 16p for inputs below
// 2^19 p, and a subtraction adds a multiple of p above what it subtracts.
//
// A product is one modular multiplication per lane, then two base extensions (B -> B'
// without a quotient estimate, B' -> B exact with Kawamura's), each one broadcast of 14
// residues through shared memory and a 15-term dot product per lane.
// Every lane runs the same instructions with its own constants (lanes of the other base
// compute values they then ignore), so a warp never splits. Needs sm_80 or newer
// (__reduce_add_sync); the targets are sm_90 and sm_120.
#ifndef SOVEREIGN_FF_FP_RNS_CUH
#define SOVEREIGN_FF_FP_RNS_CUH

#include "ff/bls12_381_params.cuh"
#include "ff/fp.cuh"
#include "ff/fp_rns_tables.cuh"

#define RNS_LANES (2 * RNS_N)
#define RNS_MASK ((1u << RNS_W) - 1)
// Shared words per product in flight: xi at [0, 14), xi' at [16, 30).
#define RNS_SLOT 32

struct rns_ctx {
    u32 lane, m, c, k0, k1, k2, f, pmod, zero;
    bool in_b, in_b2;
    u32 row[RNS_N];
    u32* smem;  // RNS_SLOT words per product in flight, 16-byte aligned, one per warp
};

// The calling warp's constants; every lane of the warp must call it.
__device__ __forceinline__ void rns_ctx_init(rns_ctx& x, u32* smem) {
    x.lane = threadIdx.x & 31;
    const u32 l = x.lane < RNS_LANES ? x.lane : 0;  // idle lanes shadow lane 0
    x.m = RNS_M[l];
    x.c = RNS_C[l];
    x.k0 = RNS_K0[l];
    x.k1 = RNS_K1[l];
    x.k2 = RNS_K2[l];
    x.f = RNS_F[l];
    x.pmod = RNS_PMOD[l];
    x.zero = RNS_ZERO[l];
#pragma unroll
    for (int i = 0; i < RNS_N; i++) x.row[i] = RNS_ROW[l * RNS_N + i];
    x.in_b = x.lane < RNS_N;
    x.in_b2 = x.lane >= RNS_N && x.lane < RNS_LANES;
    x.smem = smem;
}

// The lane's entry of a per-lane lane-form table.
__device__ __forceinline__ u32 rns_lane_const(const u32* table, const rns_ctx& x) {
    return table[x.lane < RNS_LANES ? x.lane : 0];
}

// acc + a b in one IMAD.WIDE.U32.
__device__ __forceinline__ u64 rns_mad_wide(u32 a, u32 b, u64 acc) {
    u64 r;
    asm("mad.wide.u32 %0, %1, %2, %3;" : "=l"(r) : "r"(a), "r"(b), "l"(acc));
    return r;
}

// v mod m for v < 2^64 (c < 2^11): fold the bits above 30 twice, subtract once.
__device__ __forceinline__ u32 rns_reduce64(u64 v, const rns_ctx& x) {
    const u32 lo = (u32)v, hi = (u32)(v >> 32);
    const u64 v1 = rns_mad_wide(__funnelshift_r(lo, hi, RNS_W), x.c,
                                ((u64)((hi >> RNS_W) * x.c) << 32) | (lo & RNS_MASK));
    const u32 l1 = (u32)v1;
    const u32 v2 = __funnelshift_r(l1, (u32)(v1 >> 32), RNS_W) * x.c + (l1 & RNS_MASK);
    return min(v2, v2 - x.m);
}

// a b mod m for a, b < m: as rns_reduce64, without the first fold's term for bits 62-63
// (the product is below 2^60).
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

// a - b + kp, where kp = rns_kp(k) with k p above b.
__device__ __forceinline__ u32 rns_sub(u32 a, u32 b, u32 kp, const rns_ctx& x) {
    return rns_add(rns_add(a, kp, x), x.m - b, x);
}

// k p (k < m), lane form.
__device__ __forceinline__ u32 rns_kp(u32 k, const rns_ctx& x) { return rns_mulmod(k, x.pmod, x); }

// The weighted sum of the 14 residues broadcast at s (16-byte aligned), plus acc: one
// carry chain of multiply-adds (the 64-bit sum cannot overflow: rns_mul_k's bound).
__device__ __forceinline__ u64 rns_dot(u64 acc, const u32* s, const rns_ctx& x) {
    const uint4* s4 = reinterpret_cast<const uint4*>(s);
    const uint4 a = s4[0], b = s4[1], c = s4[2], d = s4[3];
    const u32 v[RNS_N] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w, c.x, c.y, c.z, c.w, d.x, d.y};
    u32 lo = (u32)acc, hi = (u32)(acc >> 32);
#pragma unroll
    for (int i = 0; i < RNS_N; i++)
        asm("mad.lo.cc.u32 %0, %2, %3, %0;\n\tmadc.hi.u32 %1, %2, %3, %1;"
            : "+r"(lo), "+r"(hi)
            : "r"(v[i]), "r"(x.row[i]));
    return ((u64)hi << 32) | lo;
}

// r[k] = a[k] b[k] / M (mod p) for K independent products, whose steps interleave (K
// shared slots). r may alias a or b.
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
        // xi'_j, both B' lanes' lane form and the second extension's input.
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
    // No barrier at the end: the next product stores to [0, 14) only after these loads of
    // it (ordered by the second barrier), and to [16, 30) only after its own first one.
}

__device__ __forceinline__ u32 rns_mul(u32 a, u32 b, const rns_ctx& x) {
    u32 r;
    rns_mul_k<1>(&r, &a, &b, x);
    return r;
}

// Whether a = 0 (mod p), for a below 2^19 p: then a = k p, and a / p is k on every lane.
__device__ __forceinline__ bool rns_is_zero(u32 a, const rns_ctx& x) {
    const u32 k = rns_mulmod(a, x.zero, x);
    const u32 k0 = __shfl_sync(0xffffffffu, k, 0);
    return __all_sync(0xffffffffu, k == k0 || x.lane >= RNS_LANES) && k0 < (1u << 20);
}

// Montgomery lane form of the integer in 12 little-endian words (below 2^384, the same on
// every lane).
__device__ __forceinline__ u32 rns_from_words(const u32* w, const rns_ctx& x) {
    const u32 l = x.lane < RNS_LANES ? x.lane : 0;
    u32 acc = 0;
#pragma unroll
    for (int k = 0; k < 12; k += 3) {
        u64 s = acc;  // three 62-bit terms and a residue stay below 2^64
#pragma unroll
        for (int j = k; j < k + 3; j++) s = rns_mad_wide(w[j], RNS_POW32[l * 12 + j], s);
        acc = rns_reduce64(s, x);
    }
    return rns_mul(rns_mulmod(acc, x.f, x), rns_lane_const(RNS_M2P, x), x);
}

// The canonical integer (12 little-endian words, on every lane) of a Montgomery lane-form
// value: out of the Montgomery domain (below 16p), the CRT over base B, then p subtracted
// while it fits.
__device__ __forceinline__ void rns_to_words(u32* out, u32 a, const rns_ctx& x) {
    const u32 v = rns_mul(a, rns_lane_const(RNS_ONE, x), x);
    const u32 xi = rns_mulmod(v, RNS_CRT_INV[x.in_b ? x.lane : 0], x);
    if (x.in_b) x.smem[x.lane] = xi;
    const u32 q = (__reduce_add_sync(0xffffffffu, x.in_b ? xi >> (RNS_W - RNS_TOP) : 0) +
                   (1u << (RNS_TOP - 1))) >> RNS_TOP;
    __syncwarp();
    u32 acc[15];
#pragma unroll
    for (int w = 0; w < 15; w++) acc[w] = 0;
#pragma unroll 1
    for (int i = 0; i < RNS_N; i++) {
        const u32 s = x.smem[i];
        u32 carry = 0;
#pragma unroll
        for (int w = 0; w < 14; w++) {
            const u64 t = rns_mad_wide(s, RNS_CRT_MI[i * 14 + w], (u64)acc[w] + carry);
            acc[w] = (u32)t;
            carry = (u32)(t >> 32);
        }
        acc[14] += carry;
    }
    __syncwarp();
    // Minus q M: below 16p, 13 words.
    u32 carry = 0, borrow = 0;
#pragma unroll
    for (int w = 0; w < 13; w++) {
        const u64 t = rns_mad_wide(q, RNS_CRT_M[w], carry);
        carry = (u32)(t >> 32);
        const u64 d = (u64)acc[w] - (u32)t - borrow;
        acc[w] = (u32)d;
        borrow = (u32)(d >> 63);
    }
    // Minus 8p, 4p, 2p, p where they fit.
#pragma unroll
    for (int s = 3; s >= 0; s--) {
        u32 t[13];
        borrow = 0;
#pragma unroll
        for (int w = 0; w < 13; w++) {
            const u32 pw = (w < 12 ? fp_p(w) << s : 0) | (w > 0 && s > 0 ? fp_p(w - 1) >> (32 - s) : 0);
            const u64 d = (u64)acc[w] - pw - borrow;
            t[w] = (u32)d;
            borrow = (u32)(d >> 63);
        }
#pragma unroll
        for (int w = 0; w < 13; w++) acc[w] = borrow ? acc[w] : t[w];
    }
#pragma unroll
    for (int w = 0; w < 12; w++) out[w] = acc[w];
}

// Stores N lane-form values (below 2^19 p) as canonical Montgomery words (R = 2^384), value j
// at out + 12 j: each leaves the RNS on the whole warp, then lane j converts value j (a
// one-lane product, the N lanes at once). N <= 32; every lane of the warp must call it.
template <int N>
__device__ __forceinline__ void rns_store_mont(u32* __restrict__ out, const u32* values,
                                               const rns_ctx& x) {
    fp_t mine;
    fp_zero(mine);
#pragma unroll 1
    for (int j = 0; j < N; j++) {
        u32 words[FP_LIMBS];
        rns_to_words(words, values[j], x);
        if (x.lane == (u32)j) {
#pragma unroll
            for (int w = 0; w < FP_LIMBS; w++) mine.l[w] = words[w];
        }
        __syncwarp();  // rns_to_words reuses the warp's first shared slot
    }
    if (x.lane < (u32)N) {
        fp_t m;
        fp_to_mont(m, mine);
#pragma unroll
        for (int w = 0; w < FP_LIMBS; w++) out[x.lane * FP_LIMBS + w] = m.l[w];
    }
}

#endif
