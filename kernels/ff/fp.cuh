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

// Montgomery product a * b / R mod p: CIOS with PTX multiply-add carry chains
// (mad.lo.cc / madc.hi.cc, as sppark's mont_t): one 32 x 32 multiply-add per partial
// product half and the carries ride the flag. Not inlined: one shared copy keeps kernels
// compact enough for NVRTC to build them in seconds at start-up. Arguments and result by
// value, so they travel in registers rather than local memory.
__device__ __noinline__ fp_t fp_mul_v(const fp_t a, const fp_t b) {
    u32 t0 = 0, t1 = 0, t2 = 0, t3 = 0, t4 = 0, t5 = 0, t6 = 0, t7 = 0, t8 = 0, t9 = 0,
        t10 = 0, t11 = 0, t12 = 0, t13 = 0;
#pragma unroll
    for (int i = 0; i < FP_LIMBS; i++) {
        const u32 bi = b.l[i];
        // t += a * b[i]: low halves into t0..t11, high halves into t1..t12; carries to t13.
        asm("{\n\t"
            "mad.lo.cc.u32 %0, %14, %26, %0;\n\t"
            "madc.lo.cc.u32 %1, %15, %26, %1;\n\t"
            "madc.lo.cc.u32 %2, %16, %26, %2;\n\t"
            "madc.lo.cc.u32 %3, %17, %26, %3;\n\t"
            "madc.lo.cc.u32 %4, %18, %26, %4;\n\t"
            "madc.lo.cc.u32 %5, %19, %26, %5;\n\t"
            "madc.lo.cc.u32 %6, %20, %26, %6;\n\t"
            "madc.lo.cc.u32 %7, %21, %26, %7;\n\t"
            "madc.lo.cc.u32 %8, %22, %26, %8;\n\t"
            "madc.lo.cc.u32 %9, %23, %26, %9;\n\t"
            "madc.lo.cc.u32 %10, %24, %26, %10;\n\t"
            "madc.lo.cc.u32 %11, %25, %26, %11;\n\t"
            "addc.cc.u32 %12, %12, 0;\n\t"
            "addc.u32 %13, 0, 0;\n\t"
            "mad.hi.cc.u32 %1, %14, %26, %1;\n\t"
            "madc.hi.cc.u32 %2, %15, %26, %2;\n\t"
            "madc.hi.cc.u32 %3, %16, %26, %3;\n\t"
            "madc.hi.cc.u32 %4, %17, %26, %4;\n\t"
            "madc.hi.cc.u32 %5, %18, %26, %5;\n\t"
            "madc.hi.cc.u32 %6, %19, %26, %6;\n\t"
            "madc.hi.cc.u32 %7, %20, %26, %7;\n\t"
            "madc.hi.cc.u32 %8, %21, %26, %8;\n\t"
            "madc.hi.cc.u32 %9, %22, %26, %9;\n\t"
            "madc.hi.cc.u32 %10, %23, %26, %10;\n\t"
            "madc.hi.cc.u32 %11, %24, %26, %11;\n\t"
            "madc.hi.cc.u32 %12, %25, %26, %12;\n\t"
            "addc.u32 %13, %13, 0;\n\t"
            "}"
            : "+r"(t0), "+r"(t1), "+r"(t2), "+r"(t3), "+r"(t4), "+r"(t5), "+r"(t6),
              "+r"(t7), "+r"(t8), "+r"(t9), "+r"(t10), "+r"(t11), "+r"(t12), "+r"(t13)
            : "r"(a.l[0]), "r"(a.l[1]), "r"(a.l[2]), "r"(a.l[3]), "r"(a.l[4]), "r"(a.l[5]),
              "r"(a.l[6]), "r"(a.l[7]), "r"(a.l[8]), "r"(a.l[9]), "r"(a.l[10]), "r"(a.l[11]),
              "r"(bi));
        // t += m * p with m = t0 * -p^-1, which zeroes t0; then t >>= 32.
        const u32 m = t0 * FP_PINV;
        asm("{\n\t"
            "mad.lo.cc.u32 %0, %14, 0xffffaaab, %0;\n\t"
            "madc.lo.cc.u32 %1, %14, 0xb9feffff, %1;\n\t"
            "madc.lo.cc.u32 %2, %14, 0xb153ffff, %2;\n\t"
            "madc.lo.cc.u32 %3, %14, 0x1eabfffe, %3;\n\t"
            "madc.lo.cc.u32 %4, %14, 0xf6b0f624, %4;\n\t"
            "madc.lo.cc.u32 %5, %14, 0x6730d2a0, %5;\n\t"
            "madc.lo.cc.u32 %6, %14, 0xf38512bf, %6;\n\t"
            "madc.lo.cc.u32 %7, %14, 0x64774b84, %7;\n\t"
            "madc.lo.cc.u32 %8, %14, 0x434bacd7, %8;\n\t"
            "madc.lo.cc.u32 %9, %14, 0x4b1ba7b6, %9;\n\t"
            "madc.lo.cc.u32 %10, %14, 0x397fe69a, %10;\n\t"
            "madc.lo.cc.u32 %11, %14, 0x1a0111ea, %11;\n\t"
            "addc.cc.u32 %12, %12, 0;\n\t"
            "addc.u32 %13, %13, 0;\n\t"
            "mad.hi.cc.u32 %1, %14, 0xffffaaab, %1;\n\t"
            "madc.hi.cc.u32 %2, %14, 0xb9feffff, %2;\n\t"
            "madc.hi.cc.u32 %3, %14, 0xb153ffff, %3;\n\t"
            "madc.hi.cc.u32 %4, %14, 0x1eabfffe, %4;\n\t"
            "madc.hi.cc.u32 %5, %14, 0xf6b0f624, %5;\n\t"
            "madc.hi.cc.u32 %6, %14, 0x6730d2a0, %6;\n\t"
            "madc.hi.cc.u32 %7, %14, 0xf38512bf, %7;\n\t"
            "madc.hi.cc.u32 %8, %14, 0x64774b84, %8;\n\t"
            "madc.hi.cc.u32 %9, %14, 0x434bacd7, %9;\n\t"
            "madc.hi.cc.u32 %10, %14, 0x4b1ba7b6, %10;\n\t"
            "madc.hi.cc.u32 %11, %14, 0x397fe69a, %11;\n\t"
            "madc.hi.cc.u32 %12, %14, 0x1a0111ea, %12;\n\t"
            "addc.u32 %13, %13, 0;\n\t"
            "}"
            : "+r"(t0), "+r"(t1), "+r"(t2), "+r"(t3), "+r"(t4), "+r"(t5), "+r"(t6),
              "+r"(t7), "+r"(t8), "+r"(t9), "+r"(t10), "+r"(t11), "+r"(t12), "+r"(t13)
            : "r"(m));
        t0 = t1; t1 = t2; t2 = t3; t3 = t4; t4 = t5; t5 = t6; t6 = t7; t7 = t8; t8 = t9;
        t9 = t10; t10 = t11; t11 = t12; t12 = t13;
    }
    fp_t s, r;
    s.l[0] = t0; s.l[1] = t1; s.l[2] = t2; s.l[3] = t3; s.l[4] = t4; s.l[5] = t5;
    s.l[6] = t6; s.l[7] = t7; s.l[8] = t8; s.l[9] = t9; s.l[10] = t10; s.l[11] = t11;
    fp_reduce_once(r, s, t12);
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
