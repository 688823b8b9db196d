// Arithmetic in the BLS12-381 base field: Montgomery form, 12 x 32-bit limbs,
// little-endian limb order, every value fully reduced to [0, p).
// 32-bit limbs because GPUs multiply 32 x 32 -> 64 natively (see kernels/README.md).
#ifndef SOVEREIGN_FF_FP_CUH
#define SOVEREIGN_FF_FP_CUH

#include "common.cuh"
#include "ff/bls12_381_params.cuh"

struct fp_t {
    u32 l[FP_LIMBS];
};

__device__ __forceinline__ void fp_load_const(fp_t& r, const u32* c) {
#pragma unroll
    for (int i = 0; i < FP_LIMBS; i++) r.l[i] = c[i];
}

__device__ __forceinline__ void fp_zero(fp_t& r) {
#pragma unroll
    for (int i = 0; i < FP_LIMBS; i++) r.l[i] = 0;
}

__device__ __forceinline__ bool fp_is_zero(const fp_t& a) {
    u32 acc = 0;
#pragma unroll
    for (int i = 0; i < FP_LIMBS; i++) acc |= a.l[i];
    return acc == 0;
}

__device__ __forceinline__ bool fp_eq(const fp_t& a, const fp_t& b) {
    u32 acc = 0;
#pragma unroll
    for (int i = 0; i < FP_LIMBS; i++) acc |= a.l[i] ^ b.l[i];
    return acc == 0;
}

// a >= p, for a raw (non-Montgomery) 384-bit integer.
__device__ __forceinline__ bool fp_geq_modulus(const fp_t& a) {
    u64 borrow = 0;
#pragma unroll
    for (int i = 0; i < FP_LIMBS; i++) {
        u64 d = (u64)a.l[i] - fp_p(i) - borrow;
        borrow = (d >> 32) & 1;
    }
    return borrow == 0;
}

// a > b as 384-bit integers.
__device__ __forceinline__ bool fp_gt(const fp_t& a, const fp_t& b) {
    u64 borrow = 0;
#pragma unroll
    for (int i = 0; i < FP_LIMBS; i++) {
        u64 d = (u64)b.l[i] - a.l[i] - borrow;
        borrow = (d >> 32) & 1;
    }
    return borrow != 0;  // b - a underflows
}

// r = a - p when a >= p (inputs below 2p); keeps values in [0, p).
__device__ __forceinline__ void fp_reduce_once(fp_t& r, const fp_t& a, u32 carry_in) {
    fp_t t;
    u64 borrow = 0;
#pragma unroll
    for (int i = 0; i < FP_LIMBS; i++) {
        u64 d = (u64)a.l[i] - fp_p(i) - borrow;
        t.l[i] = (u32)d;
        borrow = (d >> 32) & 1;
    }
    // Keep t when a + carry_in * 2^384 >= p, i.e. no net borrow.
    bool keep_t = carry_in != 0 || borrow == 0;
#pragma unroll
    for (int i = 0; i < FP_LIMBS; i++) r.l[i] = keep_t ? t.l[i] : a.l[i];
}

__device__ __forceinline__ void fp_add(fp_t& r, const fp_t& a, const fp_t& b) {
    fp_t s;
    u64 c = 0;
#pragma unroll
    for (int i = 0; i < FP_LIMBS; i++) {
        c += (u64)a.l[i] + b.l[i];
        s.l[i] = (u32)c;
        c >>= 32;
    }
    fp_reduce_once(r, s, (u32)c);
}

__device__ __forceinline__ void fp_sub(fp_t& r, const fp_t& a, const fp_t& b) {
    fp_t d;
    u64 borrow = 0;
#pragma unroll
    for (int i = 0; i < FP_LIMBS; i++) {
        u64 t = (u64)a.l[i] - b.l[i] - borrow;
        d.l[i] = (u32)t;
        borrow = (t >> 32) & 1;
    }
    // On underflow add p back.
    u32 mask = 0u - (u32)borrow;
    u64 c = 0;
#pragma unroll
    for (int i = 0; i < FP_LIMBS; i++) {
        c += (u64)d.l[i] + (fp_p(i) & mask);
        r.l[i] = (u32)c;
        c >>= 32;
    }
}

__device__ __forceinline__ void fp_neg(fp_t& r, const fp_t& a) {
    fp_t z;
    fp_zero(z);
    fp_sub(r, z, a);
}

// Montgomery product a * b / R mod p (CIOS, 64-bit accumulators). Not inlined: one shared
// copy keeps kernels compact enough for NVRTC to build them in seconds at start-up.
// Arguments and result by value, so they travel in registers rather than local memory.
__device__ __noinline__ fp_t fp_mul_v(const fp_t a, const fp_t b) {
    fp_t r;
    u32 t[FP_LIMBS + 2];
#pragma unroll
    for (int i = 0; i < FP_LIMBS + 2; i++) t[i] = 0;
#pragma unroll
    for (int i = 0; i < FP_LIMBS; i++) {
        u64 c = 0;
#pragma unroll
        for (int j = 0; j < FP_LIMBS; j++) {
            c += (u64)a.l[j] * b.l[i] + t[j];
            t[j] = (u32)c;
            c >>= 32;
        }
        c += t[FP_LIMBS];
        t[FP_LIMBS] = (u32)c;
        t[FP_LIMBS + 1] = (u32)(c >> 32);

        u32 m = t[0] * FP_PINV;
        c = (u64)m * fp_p(0) + t[0];
        c >>= 32;
#pragma unroll
        for (int j = 1; j < FP_LIMBS; j++) {
            c += (u64)m * fp_p(j) + t[j];
            t[j - 1] = (u32)c;
            c >>= 32;
        }
        c += t[FP_LIMBS];
        t[FP_LIMBS - 1] = (u32)c;
        t[FP_LIMBS] = t[FP_LIMBS + 1] + (u32)(c >> 32);
    }
    fp_t s;
#pragma unroll
    for (int i = 0; i < FP_LIMBS; i++) s.l[i] = t[i];
    fp_reduce_once(r, s, t[FP_LIMBS]);
    return r;
}
__device__ __forceinline__ void fp_mul(fp_t& r, const fp_t& a, const fp_t& b) {
    r = fp_mul_v(a, b);
}


__device__ __forceinline__ void fp_sqr(fp_t& r, const fp_t& a) { fp_mul(r, a, a); }

// Montgomery form of a canonical integer a < p.
__device__ __forceinline__ void fp_to_mont(fp_t& r, const fp_t& a) {
    fp_t r2;
    fp_load_const(r2, FP_R2);
    fp_mul(r, a, r2);
}

// Canonical integer of a Montgomery value.
__device__ __forceinline__ void fp_from_mont(fp_t& r, const fp_t& a) {
    fp_t one;
    fp_zero(one);
    one.l[0] = 1;
    fp_mul(r, a, one);
}

// 48 big-endian bytes -> integer limbs (no reduction; check with fp_geq_modulus).
__device__ __forceinline__ void fp_from_be_bytes(fp_t& r, const u8* b) {
#pragma unroll
    for (int i = 0; i < FP_LIMBS; i++) {
        const u8* w = b + 4 * (FP_LIMBS - 1 - i);
        r.l[i] = ((u32)w[0] << 24) | ((u32)w[1] << 16) | ((u32)w[2] << 8) | (u32)w[3];
    }
}

__device__ __forceinline__ void fp_to_be_bytes(u8* b, const fp_t& a) {
#pragma unroll
    for (int i = 0; i < FP_LIMBS; i++) {
        u8* w = b + 4 * (FP_LIMBS - 1 - i);
        w[0] = (u8)(a.l[i] >> 24);
        w[1] = (u8)(a.l[i] >> 16);
        w[2] = (u8)(a.l[i] >> 8);
        w[3] = (u8)a.l[i];
    }
}

#endif
