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

// FP_INLINE_MUL (defined by a program before it includes this file): multiplication and
// squaring inlined at every use instead of one shared (called) copy each; the decompression
// kernel is faster inlined, the MSM and pairing programs stay compact for NVRTC called.

#ifdef FP_INLINE_MUL
#define FP_MUL_LINKAGE __device__ __forceinline__
#else
#define FP_MUL_LINKAGE __device__ __noinline__
#endif

// The modulus as an array, for loops that index it with unrolled (constant) indices.
#define FP_P_ARRAY                                                                        \
    {fp_p(0), fp_p(1), fp_p(2), fp_p(3), fp_p(4),  fp_p(5),                              \
     fp_p(6), fp_p(7), fp_p(8), fp_p(9), fp_p(10), fp_p(11)}

// Carry chains in PTX: one add/sub-with-carry per limb, the carry riding the condition
// code between the statements of one chain (nothing in between writes it: only .cc
// instructions do, as sppark's mont_t relies on too).

// r = a - p when a >= p, for a < 2p (p < 2^381, so a fits in 12 limbs with no carry).
// The modulus limbs go into the instructions as immediates ("n"), so they take no registers.
#define FP_SUBC_P(i) \
    asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(t.l[i]) : "r"(a.l[i]), "n"(fp_p(i)))

__device__ __forceinline__ void fp_reduce_once(fp_t& r, const fp_t& a) {
    fp_t t;
    u32 borrow;
    asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(t.l[0]) : "r"(a.l[0]), "n"(fp_p(0)));
    FP_SUBC_P(1); FP_SUBC_P(2); FP_SUBC_P(3); FP_SUBC_P(4); FP_SUBC_P(5); FP_SUBC_P(6);
    FP_SUBC_P(7); FP_SUBC_P(8); FP_SUBC_P(9); FP_SUBC_P(10); FP_SUBC_P(11);
    asm volatile("subc.u32 %0, 0, 0;" : "=r"(borrow));
#pragma unroll
    for (int i = 0; i < FP_LIMBS; i++) r.l[i] = borrow ? a.l[i] : t.l[i];
}

__device__ __forceinline__ void fp_add(fp_t& r, const fp_t& a, const fp_t& b) {
    fp_t s;
    asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(s.l[0]) : "r"(a.l[0]), "r"(b.l[0]));
#pragma unroll
    for (int i = 1; i < FP_LIMBS - 1; i++)
        asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(s.l[i]) : "r"(a.l[i]), "r"(b.l[i]));
    asm volatile("addc.u32 %0, %1, %2;" : "=r"(s.l[FP_LIMBS - 1]) : "r"(a.l[FP_LIMBS - 1]),
                 "r"(b.l[FP_LIMBS - 1]));
    fp_reduce_once(r, s);
}

__device__ __forceinline__ void fp_sub(fp_t& r, const fp_t& a, const fp_t& b) {
    const u32 P[FP_LIMBS] = FP_P_ARRAY;
    fp_t d;
    u32 mask;
    asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(d.l[0]) : "r"(a.l[0]), "r"(b.l[0]));
#pragma unroll
    for (int i = 1; i < FP_LIMBS; i++)
        asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(d.l[i]) : "r"(a.l[i]), "r"(b.l[i]));
    asm volatile("subc.u32 %0, 0, 0;" : "=r"(mask));  // all ones on underflow
    // On underflow add p back.
    asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(r.l[0]) : "r"(d.l[0]), "r"(P[0] & mask));
#pragma unroll
    for (int i = 1; i < FP_LIMBS - 1; i++)
        asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(r.l[i]) : "r"(d.l[i]), "r"(P[i] & mask));
    asm volatile("addc.u32 %0, %1, %2;" : "=r"(r.l[FP_LIMBS - 1]) : "r"(d.l[FP_LIMBS - 1]),
                 "r"(P[FP_LIMBS - 1] & mask));
}

__device__ __forceinline__ void fp_neg(fp_t& r, const fp_t& a) {
    fp_t z;
    fp_zero(z);
    fp_sub(r, z, a);
}

// r = a / 2 (the same in Montgomery form: (aR)/2 = (a/2)R): a + p when a is odd, then a
// shift right. a < p < 2^381, so a + p fits in the 12 limbs.
__device__ __forceinline__ void fp_half(fp_t& r, const fp_t& a) {
    const u32 P[FP_LIMBS] = FP_P_ARRAY;
    const u32 mask = 0u - (a.l[0] & 1);
    fp_t s;
    asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(s.l[0]) : "r"(a.l[0]), "r"(P[0] & mask));
#pragma unroll
    for (int i = 1; i < FP_LIMBS - 1; i++)
        asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(s.l[i]) : "r"(a.l[i]), "r"(P[i] & mask));
    asm volatile("addc.u32 %0, %1, %2;" : "=r"(s.l[FP_LIMBS - 1]) : "r"(a.l[FP_LIMBS - 1]),
                 "r"(P[FP_LIMBS - 1] & mask));
#pragma unroll
    for (int i = 0; i < FP_LIMBS - 1; i++) r.l[i] = __funnelshift_r(s.l[i], s.l[i + 1], 1);
    r.l[FP_LIMBS - 1] = s.l[FP_LIMBS - 1] >> 1;
}

// Montgomery multiplication with two independent carry chains (the even/odd-limb scheme
// of sppark's mont_t): a * b[i] is split into the products of a's even limbs, whose
// halves land on `even`, and of its odd limbs, on `odd` (one limb up), and the same for
// m * p. The two chains carry no dependency on each other: ptxas gives each its own
// predicate carry and interleaves them, fusing every (lo, hi) pair into one
// IMAD.WIDE.U32.X (371 SASS instructions per product against 1,421 for the one-chain
// version). The kernels run one point per thread with few warps per scheduler, so the
// latency of one long chain is what they pay.
// Layout between rows: value = sum even[k] 2^(32k) + sum odd[k] 2^(32(k+1)).
// The BLS12-381 modulus leaves 3 bits of headroom (p < 2^381), which bounds every row
// below 2^(32*13) so the carries dropped at the top are zero.

// acc[j], acc[j+1] = lo, hi of a[j] * b for even j < len.
__device__ __forceinline__ void fp_mul_pairs(u32* acc, const u32* a, u32 b, int len) {
#pragma unroll
    for (int j = 0; j < len; j += 2)
        asm volatile("mul.lo.u32 %0, %2, %3; mul.hi.u32 %1, %2, %3;"
                     : "=r"(acc[j]), "=r"(acc[j + 1])
                     : "r"(a[j]), "r"(b));
}

// acc[j], acc[j+1] += lo, hi of a[j] * b for even j < len, as one new carry chain whose
// carry out is left in the condition code.
__device__ __forceinline__ void fp_mad_pairs_cc(u32* acc, const u32* a, u32 b, int len) {
    asm volatile("mad.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;"
                 : "+r"(acc[0]), "+r"(acc[1])
                 : "r"(a[0]), "r"(b));
#pragma unroll
    for (int j = 2; j < len; j += 2)
        asm volatile("madc.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;"
                     : "+r"(acc[j]), "+r"(acc[j + 1])
                     : "r"(a[j]), "r"(b));
}

// odd[j], odd[j+1] = odd[j+2], odd[j+3] + lo, hi of a[j] * b (the shift by one limb that
// ends a row), continuing the carry chain already in the condition code.
__device__ __forceinline__ void fp_mad_pairs_shift(u32* odd, const u32* a, u32 b) {
#pragma unroll
    for (int j = 0; j < FP_LIMBS - 2; j += 2)
        asm volatile("madc.lo.cc.u32 %0, %2, %3, %4; madc.hi.cc.u32 %1, %2, %3, %5;"
                     : "=r"(odd[j]), "=r"(odd[j + 1])
                     : "r"(a[j]), "r"(b), "r"(odd[j + 2]), "r"(odd[j + 3]));
    asm volatile("madc.lo.cc.u32 %0, %2, %3, 0; madc.hi.u32 %1, %2, %3, 0;"
                 : "=r"(odd[FP_LIMBS - 2]), "=r"(odd[FP_LIMBS - 1])
                 : "r"(a[FP_LIMBS - 2]), "r"(b));
}

// The same three shapes with the modulus as the multiplicand, its limbs as immediates:
// p's even limbs (p[0], p[2], ..) or odd limbs (p[1], p[3], ..).
#define FP_MADC_P(insn, lo_acc, hi_acc, pj)                                                \
    asm volatile(insn ".lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;"         \
                 : "+r"(lo_acc), "+r"(hi_acc)                                              \
                 : "r"(m), "n"(pj))

// acc += (p's limbs of parity `odd`) * m as pairs, one new carry chain (carry left in CC).
__device__ __forceinline__ void fp_mad_p_cc(u32* acc, u32 m, bool odd) {
    if (odd) {
        FP_MADC_P("mad", acc[0], acc[1], fp_p(1));
        FP_MADC_P("madc", acc[2], acc[3], fp_p(3));
        FP_MADC_P("madc", acc[4], acc[5], fp_p(5));
        FP_MADC_P("madc", acc[6], acc[7], fp_p(7));
        FP_MADC_P("madc", acc[8], acc[9], fp_p(9));
        FP_MADC_P("madc", acc[10], acc[11], fp_p(11));
    } else {
        FP_MADC_P("mad", acc[0], acc[1], fp_p(0));
        FP_MADC_P("madc", acc[2], acc[3], fp_p(2));
        FP_MADC_P("madc", acc[4], acc[5], fp_p(4));
        FP_MADC_P("madc", acc[6], acc[7], fp_p(6));
        FP_MADC_P("madc", acc[8], acc[9], fp_p(8));
        FP_MADC_P("madc", acc[10], acc[11], fp_p(10));
    }
}

#define FP_MUL_P(j, pj)                                                                     \
    asm volatile("mul.lo.u32 %0, %2, %3; mul.hi.u32 %1, %2, %3;"                          \
                 : "=r"(odd[j]), "=r"(odd[j + 1])                                          \
                 : "r"(m), "n"(pj))
#define FP_MADC_P_SHIFT(j, pj)                                                              \
    asm volatile("madc.lo.cc.u32 %0, %2, %3, %4; madc.hi.cc.u32 %1, %2, %3, %5;"          \
                 : "=r"(odd[j]), "=r"(odd[j + 1])                                          \
                 : "r"(m), "n"(pj), "r"(odd[j + 2]), "r"(odd[j + 3]))

// One row of the reduction: add m * p with m = even[0] * -p^-1 (which clears even[0]).
// `first`: odd holds nothing yet. Otherwise even[0] first takes odd[1] and odd shifts.
__device__ __forceinline__ void fp_redc_row(u32* even, u32* odd, bool first) {
    u32 m;
    if (first) {
        m = even[0] * FP_PINV;
        FP_MUL_P(0, fp_p(1)); FP_MUL_P(2, fp_p(3)); FP_MUL_P(4, fp_p(5));
        FP_MUL_P(6, fp_p(7)); FP_MUL_P(8, fp_p(9)); FP_MUL_P(10, fp_p(11));
    } else {
        asm volatile("add.cc.u32 %0, %0, %1;" : "+r"(even[0]) : "r"(odd[1]));
        m = even[0] * FP_PINV;  // a plain multiply: the chain's carry survives it
        FP_MADC_P_SHIFT(0, fp_p(1)); FP_MADC_P_SHIFT(2, fp_p(3)); FP_MADC_P_SHIFT(4, fp_p(5));
        FP_MADC_P_SHIFT(6, fp_p(7)); FP_MADC_P_SHIFT(8, fp_p(9));
        asm volatile("madc.lo.cc.u32 %0, %2, %3, 0; madc.hi.u32 %1, %2, %3, 0;"
                     : "=r"(odd[10]), "=r"(odd[11])
                     : "r"(m), "n"(fp_p(11)));
    }
    fp_mad_p_cc(even, m, false);
    asm volatile("addc.u32 %0, %0, 0;" : "+r"(odd[FP_LIMBS - 1]));
}

// One row of the product: add a * b, then reduce.
__device__ __forceinline__ void fp_mul_row(u32* even, u32* odd, const u32* a, u32 b,
                                           bool first) {
    if (first) {
        fp_mul_pairs(odd, a + 1, b, FP_LIMBS);
        fp_mul_pairs(even, a, b, FP_LIMBS);
    } else {
        asm volatile("add.cc.u32 %0, %0, %1;" : "+r"(even[0]) : "r"(odd[1]));
        fp_mad_pairs_shift(odd, a + 1, b);
        fp_mad_pairs_cc(even, a, b, FP_LIMBS);
        asm volatile("addc.u32 %0, %0, 0;" : "+r"(odd[FP_LIMBS - 1]));
    }
    const u32 m = even[0] * FP_PINV;
    fp_mad_p_cc(odd, m, true);  // its carry out is zero (headroom)
    fp_mad_p_cc(even, m, false);
    asm volatile("addc.u32 %0, %0, 0;" : "+r"(odd[FP_LIMBS - 1]));
}

// After a row that cleared odd[0] (value = odd + even one limb up): r = value / 2^32,
// i.e. r[k] = even[k] + odd[k + 1].
__device__ __forceinline__ void fp_merge_rows(fp_t& r, const u32* even, const u32* odd) {
    asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(r.l[0]) : "r"(even[0]), "r"(odd[1]));
#pragma unroll
    for (int i = 1; i < FP_LIMBS - 1; i++)
        asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(r.l[i]) : "r"(even[i]), "r"(odd[i + 1]));
    asm volatile("addc.u32 %0, %1, 0;" : "=r"(r.l[FP_LIMBS - 1]) : "r"(even[FP_LIMBS - 1]));
}

// Montgomery product a * b / R mod p, fully reduced. Not inlined unless FP_INLINE_MUL: one
// shared copy keeps the MSM and pairing programs compact for NVRTC. Arguments and result
// by value, so they travel in registers rather than local memory.
FP_MUL_LINKAGE fp_t fp_mul_v(const fp_t a, const fp_t b) {
    u32 even[FP_LIMBS], odd[FP_LIMBS];
#pragma unroll
    for (int i = 0; i < FP_LIMBS; i += 2) {
        fp_mul_row(even, odd, a.l, b.l[i], i == 0);
        fp_mul_row(odd, even, a.l, b.l[i + 1], false);
    }
    // The last row ran with the arrays swapped (odd, even): it cleared odd[0].
    fp_t s, r;
    fp_merge_rows(s, even, odd);
    fp_reduce_once(r, s);
    return r;
}

__device__ __forceinline__ void fp_mul(fp_t& r, const fp_t& a, const fp_t& b) {
    r = fp_mul_v(a, b);
}

// Montgomery square: the 768-bit square with each cross product a[i] a[j] (i < j) computed
// once and doubled (66 products instead of 144), then the Montgomery reduction of its low
// half (two carry chains, as above) plus its high half. The decompression kernel does about
// 1,000 squarings against 500 multiplications per point.
// Products move as (lo, hi) pairs of one multiplicand pair, the shape ptxas fuses into one
// wide multiply-add: row i's products with i + j odd accumulate on `odd_acc`, those with
// i + j even on `even_acc` (two independent chains), both indexed by limb position.
// A row's two chains end with their carries at limbs i + 12 and i + 13, which no earlier
// row's products reached: each holds at most one earlier carry (0 or 1), so adding this
// row's never overflows (checked by ff/fp_carry_emulation.py).
FP_MUL_LINKAGE fp_t fp_sqr_v(const fp_t a) {
    u32 even_acc[2 * FP_LIMBS], odd_acc[2 * FP_LIMBS];
#pragma unroll
    for (int k = 0; k < 2 * FP_LIMBS; k++) even_acc[k] = odd_acc[k] = 0;
#pragma unroll
    for (int i = 0; i < FP_LIMBS - 1; i++) {
        const u32 ai = a.l[i];
        // j = i + 1, i + 3, ..: positions i + j odd.
        asm volatile("mad.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;"
                     : "+r"(odd_acc[2 * i + 1]), "+r"(odd_acc[2 * i + 2])
                     : "r"(ai), "r"(a.l[i + 1]));
        int j = i + 3;
#pragma unroll
        for (; j < FP_LIMBS; j += 2)
            asm volatile("madc.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;"
                         : "+r"(odd_acc[i + j]), "+r"(odd_acc[i + j + 1])
                         : "r"(ai), "r"(a.l[j]));
        asm volatile("addc.u32 %0, %0, 0;" : "+r"(odd_acc[i + j]));
        // j = i + 2, i + 4, ..: positions i + j even.
        if (i + 2 < FP_LIMBS) {
            asm volatile("mad.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;"
                         : "+r"(even_acc[2 * i + 2]), "+r"(even_acc[2 * i + 3])
                         : "r"(ai), "r"(a.l[i + 2]));
            int k = i + 4;
#pragma unroll
            for (; k < FP_LIMBS; k += 2)
                asm volatile("madc.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;"
                             : "+r"(even_acc[i + k]), "+r"(even_acc[i + k + 1])
                             : "r"(ai), "r"(a.l[k]));
            asm volatile("addc.u32 %0, %0, 0;" : "+r"(even_acc[i + k]));
        }
    }
    // t = 2 (even_acc + odd_acc) + sum a[i]^2 2^(64 i). The cross products sum below 2^767.
    u32 t[2 * FP_LIMBS];
    asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(t[0]) : "r"(even_acc[0]), "r"(odd_acc[0]));
#pragma unroll
    for (int k = 1; k < 2 * FP_LIMBS - 1; k++)
        asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(t[k]) : "r"(even_acc[k]), "r"(odd_acc[k]));
    asm volatile("addc.u32 %0, %1, %2;" : "=r"(t[2 * FP_LIMBS - 1])
                 : "r"(even_acc[2 * FP_LIMBS - 1]), "r"(odd_acc[2 * FP_LIMBS - 1]));
    asm volatile("add.cc.u32 %0, %0, %0;" : "+r"(t[0]));
#pragma unroll
    for (int k = 1; k < 2 * FP_LIMBS - 1; k++)
        asm volatile("addc.cc.u32 %0, %0, %0;" : "+r"(t[k]));
    asm volatile("addc.u32 %0, %0, %0;" : "+r"(t[2 * FP_LIMBS - 1]));
    asm volatile("mad.lo.cc.u32 %0, %2, %2, %0; madc.hi.cc.u32 %1, %2, %2, %1;"
                 : "+r"(t[0]), "+r"(t[1])
                 : "r"(a.l[0]));
#pragma unroll
    for (int i = 1; i < FP_LIMBS - 1; i++)
        asm volatile("madc.lo.cc.u32 %0, %2, %2, %0; madc.hi.cc.u32 %1, %2, %2, %1;"
                     : "+r"(t[2 * i]), "+r"(t[2 * i + 1])
                     : "r"(a.l[i]));
    asm volatile("madc.lo.cc.u32 %0, %2, %2, %0; madc.hi.u32 %1, %2, %2, %1;"
                 : "+r"(t[2 * FP_LIMBS - 2]), "+r"(t[2 * FP_LIMBS - 1])
                 : "r"(a.l[FP_LIMBS - 1]));
    // Montgomery-reduce the low half: lo / R mod p, at most p (not yet reduced).
    u32 even[FP_LIMBS], odd[FP_LIMBS];
#pragma unroll
    for (int k = 0; k < FP_LIMBS; k++) even[k] = t[k];
#pragma unroll
    for (int i = 0; i < FP_LIMBS; i += 2) {
        fp_redc_row(even, odd, i == 0);
        fp_redc_row(odd, even, false);
    }
    fp_t lo, s, r;
    fp_merge_rows(lo, even, odd);
    // a^2 / R = lo / R + hi with hi < p / 8: the sum is below 2p.
    asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(s.l[0]) : "r"(lo.l[0]), "r"(t[FP_LIMBS]));
#pragma unroll
    for (int i = 1; i < FP_LIMBS - 1; i++)
        asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(s.l[i]) : "r"(lo.l[i]), "r"(t[FP_LIMBS + i]));
    asm volatile("addc.u32 %0, %1, %2;" : "=r"(s.l[FP_LIMBS - 1]) : "r"(lo.l[FP_LIMBS - 1]),
                 "r"(t[2 * FP_LIMBS - 1]));
    fp_reduce_once(r, s);
    return r;
}

__device__ __forceinline__ void fp_sqr(fp_t& r, const fp_t& a) { r = fp_sqr_v(a); }

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

// sgn0 (RFC 9380 section 4.1, m = 1): the parity of the canonical value.
__device__ __forceinline__ u32 fp_sgn0(const fp_t& a) {
    fp_t c;
    fp_from_mont(c, a);
    return c.l[0] & 1;
}

// r = pick_b ? b : a, limb by limb (no branch around the operands' computation).
__device__ __forceinline__ void fp_select(fp_t& r, bool pick_b, const fp_t& a, const fp_t& b) {
#pragma unroll
    for (int i = 0; i < FP_LIMBS; i++) r.l[i] = pick_b ? b.l[i] : a.l[i];
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
