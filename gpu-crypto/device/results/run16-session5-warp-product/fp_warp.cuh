// EXPERIMENT (session 5, issue 3; not used by any kernel, see README.txt beside it):
// arithmetic in the BLS12-381 base field with one element spread over a whole warp, for
// chains whose latency matters more than their throughput (the square root and subgroup
// test of a small decompression batch, kernels/ops/g1_decompress_latency.cu).
// One lane multiplying alone is bound by its own instruction issue (~290 multiply-adds
// per product, 936 ns on an H200, kernels/README.md); here 32 lanes share a product.
//
// Representation: radix 2^28, 14 limbs, limb k on lane k; lanes 14..31 hold 0 (the
// zero padding lets a lane fetch "limb k - i" by a shuffle from lane (k - i) mod 32).
// Limbs are redundant: each below 2^29.02 after every operation here, values below
// 2^392 and congruent to the element in Montgomery form with R = 2^392 (values are not
// kept below p; fpw_to_words reduces them). Column sums of 14 products of such limbs stay
// below 2^62, so a lane accumulates its column in 64 bits without carries.
//
// A product a * b / R mod p (Montgomery, the whole product then the whole reduction):
//   T = a * b:            lane k sums column k (a broadcast through shared memory, b's
//                          limbs by shuffles), then one carry step (below);
//   m = T * (-p^-1) mod R: lanes 0..13 sum columns 0..13 of T's low limbs times the
//                          constant, one carry step, the carries out of limb 13 dropped;
//   U = T + m * p:         lane k sums column k; after one carry step U's limbs 0..13
//                          are e 2^392 exactly, e = ceil(limb 13 / 2^28) (limbs below
//                          13 add less than 2.03 units of 2^364);
//   result = U / R:        carried limbs 14..27 plus e, moved down 14 lanes.
// (mul_v1.inc, the first version, carried between the phases with shuffles and took the
// low half's carry from columns 11..13; fp_warp_model.py models that one.)
// A carry step splits each 64-bit column into 28 + 28 + 8 bits and adds the middle part
// to the next lane and the top part to the one after: limbs end below 2^28 + 2^28 + 2^8.
// With inputs below 2^389 the result is below ab/R + 2.03p (fp_warp_model.py checks
// these bounds on random and extreme inputs for the first version).
#ifndef SOVEREIGN_FF_FP_WARP_CUH
#define SOVEREIGN_FF_FP_WARP_CUH

#include "ff/fp.cuh"

#define FPW_LIMBS 14
#define FPW_MASK 0x0fffffffu
#define FPW_FULL 0xffffffffu

// p, -p^-1 mod 2^392, and the Montgomery constants for R = 2^392, radix 2^28.
__device__ __constant__ u32 FPW_P[FPW_LIMBS] = {
    0xfffaaabu, 0xfefffffu, 0x3ffffb9u, 0xfffeb15u, 0x6241eabu, 0xa0f6b0fu, 0xf6730d2u,
    0xf38512bu, 0x4774b84u, 0x4bacd76u, 0xba7b643u, 0xe69a4b1u, 0x1ea397fu, 0x001a011u};
__device__ __constant__ u32 FPW_NPRIME[FPW_LIMBS] = {
    0xffcfffdu, 0xf3fffcfu, 0x113e889u, 0xdb92d9du, 0xb48286au, 0xf0c8e30u, 0xc16ef2eu,
    0x8eb2db4u, 0x9ecca0eu, 0x68cf581u, 0x316fee2u, 0xfc9468bu, 0x106feaau, 0xa0ceb06u};
// R^2 mod p (into Montgomery form).
__device__ __constant__ u32 FPW_R2[FPW_LIMBS] = {
    0x10370edu, 0x6d1c345u, 0xe243d62u, 0xec45c53u, 0x3b1d65au, 0x093317du, 0xb4f36a0u,
    0x5d74088u, 0xc10ea72u, 0x865d118u, 0x7320a75u, 0xfd5cd50u, 0xcc8a759u, 0x000c8d4u};
// b = 4 of y^2 = x^3 + 4 and the cube root of unity BETA (ff/bls12_381_params.cuh's), in
// this Montgomery form.
__device__ __constant__ u32 FPW_B4[FPW_LIMBS] = {
    0xd1ff2e0u, 0x6000000u, 0x00ac467u, 0x3379b48u, 0x1c84b80u, 0x0e88243u, 0x0dd9a7eu,
    0x683dcf8u, 0x6c26d0bu, 0x4a5eec2u, 0x457663cu, 0x04b29f1u, 0x967f3e8u, 0x0015de9u};
__device__ __constant__ u32 FPW_BETA[FPW_LIMBS] = {
    0xa75929au, 0x681b798u, 0x22a3e9du, 0xabc02bfu, 0x4e5bb45u, 0x55e6e7eu, 0x4814117u,
    0x6d04f1bu, 0xae3387du, 0x54acb0cu, 0x0a4c74bu, 0x56138b5u, 0xb64e066u, 0x00076f2u};

__device__ __forceinline__ u32 fpw_lane() { return threadIdx.x & 31; }

// Lane k's limb of a constant table (0 on lanes 14..31).
__device__ __forceinline__ u32 fpw_const(const u32* table) {
    const u32 lane = fpw_lane();
    return lane < FPW_LIMBS ? table[lane] : 0;
}

// What one warp keeps for its products: the columns of p and -p^-1 that its lane sums
// (p[k - i] and n[k - i], 0 outside the limbs), and FPW_SCRATCH_WORDS words of the block's
// shared memory (3 buffers, so a buffer is rewritten only after two barriers have passed).
#define FPW_SCRATCH_WORDS 112
struct fpw_ctx {
    u32 p_col[FPW_LIMBS];
    u32 n_col[FPW_LIMBS];
    uint4* scratch;
};

// scratch: FPW_SCRATCH_WORDS words (16-byte aligned) of shared memory owned by the warp.
__device__ __forceinline__ void fpw_ctx_init(fpw_ctx& c, uint4* scratch) {
    const u32 lane = fpw_lane();
    const u32 p = fpw_const(FPW_P), n = fpw_const(FPW_NPRIME);
#pragma unroll
    for (int i = 0; i < FPW_LIMBS; i++) {
        const u32 src = (lane - i) & 31;  // lanes 18..31 hold 0: k - i < 0 reads 0
        c.p_col[i] = __shfl_sync(FPW_FULL, p, src);
        const u32 n_i = __shfl_sync(FPW_FULL, n, src);
        c.n_col[i] = lane < FPW_LIMBS ? n_i : 0;
    }
    c.scratch = scratch;
}

// out[i] = lane i's `mine` for i < 16, through one shared-memory buffer.
__device__ __forceinline__ void fpw_broadcast(u32 (&out)[16], uint4* buf, u32 mine) {
    const u32 lane = fpw_lane();
    if (lane < 16) reinterpret_cast<u32*>(buf)[lane] = mine;
    __syncwarp();
#pragma unroll
    for (int q = 0; q < 4; q++) {
        const uint4 v = buf[q];
        out[4 * q] = v.x;
        out[4 * q + 1] = v.y;
        out[4 * q + 2] = v.z;
        out[4 * q + 3] = v.w;
    }
}

// One carry step over the warp's columns (column k on lane k).
__device__ __forceinline__ u32 fpw_carry(u64 col) {
    const u32 lane = fpw_lane();
    const u32 lo = (u32)col & FPW_MASK;
    const u32 mid = (u32)(col >> 28) & FPW_MASK;
    const u32 top = (u32)(col >> 56);
    const u32 mid_in = __shfl_up_sync(FPW_FULL, mid, 1);
    const u32 top_in = __shfl_up_sync(FPW_FULL, top, 2);
    return lo + (lane >= 1 ? mid_in : 0) + (lane >= 2 ? top_in : 0);
}

// The three 64-bit column parts of a carry step, each on its own: 28 + 28 + 8 bits.
struct fpw_parts {
    u32 lo, mid, top;
};

__device__ __forceinline__ fpw_parts fpw_split(u64 col) {
    return {(u32)col & FPW_MASK, (u32)(col >> 28) & FPW_MASK, (u32)(col >> 56)};
}

// Lanes 0..15 publish their column parts into `buf` (48 words); every lane then reads the
// first 14 limbs of the carried value, limb i = lo[i] + mid[i - 1] + top[i - 2]. One
// shared-memory round trip replaces a carry step's shuffles before a broadcast.
__device__ __forceinline__ void fpw_broadcast_carried(u32 (&out)[16], uint4* buf,
                                                      fpw_parts mine) {
    const u32 lane = fpw_lane();
    u32* w = reinterpret_cast<u32*>(buf);
    if (lane < 16) {
        w[lane] = mine.lo;
        w[16 + lane] = mine.mid;
        w[32 + lane] = mine.top;
    }
    __syncwarp();
    u32 mid[16], top[16];
#pragma unroll
    for (int q = 0; q < 4; q++) {
        const uint4 l = buf[q], m = buf[4 + q], t = buf[8 + q];
        out[4 * q] = l.x, out[4 * q + 1] = l.y, out[4 * q + 2] = l.z, out[4 * q + 3] = l.w;
        mid[4 * q] = m.x, mid[4 * q + 1] = m.y, mid[4 * q + 2] = m.z, mid[4 * q + 3] = m.w;
        top[4 * q] = t.x, top[4 * q + 1] = t.y, top[4 * q + 2] = t.z, top[4 * q + 3] = t.w;
    }
#pragma unroll
    for (int i = FPW_LIMBS - 1; i >= 1; i--) out[i] += mid[i - 1] + (i >= 2 ? top[i - 2] : 0);
}

// Four accumulators: a column's 14 multiply-adds form four short dependent chains.
#define FPW_COLUMN(acc, value, i, operand)                                                  \
    acc[(i) & 3] += (u64)(value) * (operand)

// a * b / R mod p (see the top of this file).
__device__ __forceinline__ u32 fpw_mul(u32 a, u32 b, const fpw_ctx& c) {
    const u32 lane = fpw_lane();
    u32 v[16];
    u64 s[4];
    // T = a * b, column `lane`.
    fpw_broadcast(v, c.scratch, a);
    s[0] = s[1] = s[2] = s[3] = 0;
#pragma unroll
    for (int i = 0; i < FPW_LIMBS; i++)
        FPW_COLUMN(s, v[i], i, __shfl_sync(FPW_FULL, b, (lane - i) & 31));
    const fpw_parts t = fpw_split(s[0] + s[1] + s[2] + s[3]);
    // This lane's carried limb of T (for U, later: off the critical path).
    const u32 t_mid = __shfl_up_sync(FPW_FULL, t.mid, 1);
    const u32 t_top = __shfl_up_sync(FPW_FULL, t.top, 2);
    const u32 t_limb = t.lo + (lane >= 1 ? t_mid : 0) + (lane >= 2 ? t_top : 0);
    // m = T * (-p^-1) mod R, column `lane` (lanes 0..13).
    fpw_broadcast_carried(v, c.scratch + 4, t);
    s[0] = s[1] = s[2] = s[3] = 0;
#pragma unroll
    for (int i = 0; i < FPW_LIMBS; i++) FPW_COLUMN(s, v[i], i, c.n_col[i]);
    fpw_parts m = fpw_split(s[0] + s[1] + s[2] + s[3]);
    // U = T + m * p; m's limbs above 13 (mod R) are never read.
    fpw_broadcast_carried(v, c.scratch + 16, m);
    s[0] = t_limb;
    s[1] = s[2] = s[3] = 0;
#pragma unroll
    for (int i = 0; i < FPW_LIMBS; i++) FPW_COLUMN(s, v[i], i, c.p_col[i]);
    const fpw_parts u = fpw_split(s[0] + s[1] + s[2] + s[3]);
    // U's carried limbs 0..13 are 0 mod 2^392 and their sum is below 2^393.02: it is
    // e 2^392 with e = ceil(limb 13 / 2^28). Result limb j = carried limb 14 + j, plus e.
    const u32 r_lo = __shfl_sync(FPW_FULL, u.lo, (lane + 14) & 31);
    const u32 r_mid = __shfl_sync(FPW_FULL, u.mid, (lane + 13) & 31);
    const u32 r_top = __shfl_sync(FPW_FULL, u.top, (lane + 12) & 31);
    const u32 e_lo = __shfl_sync(FPW_FULL, u.lo, 13);
    const u32 e_mid = __shfl_sync(FPW_FULL, u.mid, 12);
    const u32 e_top = __shfl_sync(FPW_FULL, u.top, 11);
    const u32 e = (e_lo + e_mid + e_top + FPW_MASK) >> 28;
    const u32 r = r_lo + r_mid + r_top + (lane == 0 ? e : 0);
    return lane < FPW_LIMBS ? r : 0;
}

__device__ __forceinline__ u32 fpw_sqr(u32 a, const fpw_ctx& c) { return fpw_mul(a, a, c); }

// The element of an integer below 2^384 (12 little-endian words, the same on every lane),
// in this representation and Montgomery form.
__device__ __forceinline__ u32 fpw_from_integer(const fp_t& x, const fpw_ctx& c) {
    const u32 lane = fpw_lane();
    const u32 bit = 28 * lane, w = bit >> 5, s = bit & 31;
    u32 lo = 0, hi = 0;
#pragma unroll
    for (int k = 0; k < FP_LIMBS; k++) {
        lo = k == (int)w ? x.l[k] : lo;
        hi = k == (int)w + 1 ? x.l[k] : hi;
    }
    const u32 limb = lane < FPW_LIMBS ? __funnelshift_r(lo, hi, s) & FPW_MASK : 0;
    return fpw_mul(limb, fpw_const(FPW_R2), c);
}

// The canonical integer (fully reduced, below p) of a value out of Montgomery form, as
// 12 little-endian words on every lane.
__device__ __forceinline__ fp_t fpw_to_canonical(u32 a, const fpw_ctx& c) {
    const u32 lane = fpw_lane();
    const u32 plain = fpw_mul(a, lane == 0 ? 1u : 0u, c);  // below 2.03p
    u32 v[16];
    fpw_broadcast(v, c.scratch, plain);
    // Exact 28-bit limbs, then packed into words.
    u32 carry = 0;
#pragma unroll
    for (int k = 0; k < FPW_LIMBS; k++) {
        const u32 x = v[k] + carry;
        v[k] = x & FPW_MASK;
        carry = x >> 28;
    }
    fp_t r;
#pragma unroll
    for (int w = 0; w < FP_LIMBS; w++) {
        const int bit = 32 * w, k = bit / 28, s = bit % 28;
        u64 window = (u64)v[k] >> s;
        if (k + 1 < FPW_LIMBS) window |= (u64)v[k + 1] << (28 - s);
        if (k + 2 < FPW_LIMBS) window |= (u64)v[k + 2] << (56 - s);
        r.l[w] = (u32)window;
    }
    // Below 2.03p < 2^382: at most two subtractions of p.
    fp_reduce_once(r, r);
    fp_reduce_once(r, r);
    return r;
}

#endif
