// The optimal ate Miller loop of BLS12-381 with G2 in projective coordinates and the line
// coefficients computed on the fly (every public key differs, so nothing is precomputed),
// a direct port of ic_bls12_381's miller_loop / doubling_step / addition_step / ell, so a
// term with an affine P gives exactly ic_bls12_381's Miller loop value.
//
// P may also be projective (X : Y : Z): each line is then scaled by Z (c0 by Y, c1 by X,
// c2 by Z instead of y, x, 1), a factor in Fp* that the final exponentiation removes, so
// scalar multiples of G1 points need no inversion. Terms whose P or Q is the identity
// contribute 1 and must not be passed (the callers drop them, as ic_bls12_381 skips them).
#ifndef SOVEREIGN_PAIRING_MILLER_LOOP_CUH
#define SOVEREIGN_PAIRING_MILLER_LOOP_CUH

#include "ff/fp12.cuh"

// |x| >> 1 for the BLS parameter x = -0xd201000000010000: the loop walks its bits below
// the top one; x < 0, so the result is conjugated at the end.
#define BLS_X_ABS_SHR1 0x6900800000008000ull

struct g2_affine_t {
    fp2_t x, y;
};

struct g2_proj_t {
    fp2_t x, y, z;
};

// One Miller-loop term: P = (x : y : z) in G1, Q affine in G2, R the running multiple of Q.
struct pairing_term_t {
    fp_t px, py, pz;
    g2_affine_t q;
    g2_proj_t r;
};

// A line's coefficients (ic_bls12_381's (Fp2, Fp2, Fp2) triple).
struct line_t {
    fp2_t c0, c1, c2;
};

// R = 2R and the tangent line (eprint 2010/354, algorithm 26, as ic_bls12_381).
__device__ __noinline__ void g2_doubling_step(line_t& l, g2_proj_t& r) {
    fp2_t t0, t1, t2, t3, t4, t5, t6, zz, s;
    fp2_sqr(t0, r.x);
    fp2_sqr(t1, r.y);
    fp2_sqr(t2, t1);
    fp2_add(t3, t1, r.x);
    fp2_sqr(t3, t3);
    fp2_sub(t3, t3, t0);
    fp2_sub(t3, t3, t2);
    fp2_dbl(t3, t3);
    fp2_dbl(t4, t0);
    fp2_add(t4, t4, t0);
    fp2_add(t6, r.x, t4);
    fp2_sqr(t5, t4);
    fp2_sqr(zz, r.z);
    fp2_sub(r.x, t5, t3);
    fp2_sub(r.x, r.x, t3);
    fp2_add(s, r.z, r.y);
    fp2_sqr(s, s);
    fp2_sub(s, s, t1);
    fp2_sub(r.z, s, zz);
    fp2_sub(s, t3, r.x);
    fp2_mul(s, s, t4);
    fp2_dbl(t2, t2);
    fp2_dbl(t2, t2);
    fp2_dbl(t2, t2);
    fp2_sub(r.y, s, t2);
    fp2_mul(t3, t4, zz);
    fp2_dbl(t3, t3);
    fp2_neg(l.c1, t3);
    fp2_sqr(t6, t6);
    fp2_sub(t6, t6, t0);
    fp2_sub(t6, t6, t5);
    fp2_dbl(t1, t1);
    fp2_dbl(t1, t1);
    fp2_sub(l.c2, t6, t1);
    fp2_mul(t0, r.z, zz);
    fp2_dbl(l.c0, t0);
}

// R = R + Q and the line through them (eprint 2010/354, algorithm 27, as ic_bls12_381).
__device__ __noinline__ void g2_addition_step(line_t& l, g2_proj_t& r, const g2_affine_t& q) {
    fp2_t zz, yy, t0, t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, s;
    fp2_sqr(zz, r.z);
    fp2_sqr(yy, q.y);
    fp2_mul(t0, zz, q.x);
    fp2_add(t1, q.y, r.z);
    fp2_sqr(t1, t1);
    fp2_sub(t1, t1, yy);
    fp2_sub(t1, t1, zz);
    fp2_mul(t1, t1, zz);
    fp2_sub(t2, t0, r.x);
    fp2_sqr(t3, t2);
    fp2_dbl(t4, t3);
    fp2_dbl(t4, t4);
    fp2_mul(t5, t4, t2);
    fp2_sub(t6, t1, r.y);
    fp2_sub(t6, t6, r.y);
    fp2_mul(t9, t6, q.x);
    fp2_mul(t7, t4, r.x);
    fp2_sqr(s, t6);
    fp2_sub(s, s, t5);
    fp2_sub(s, s, t7);
    fp2_sub(r.x, s, t7);
    fp2_add(s, r.z, t2);
    fp2_sqr(s, s);
    fp2_sub(s, s, zz);
    fp2_sub(r.z, s, t3);
    fp2_add(t10, q.y, r.z);
    fp2_sub(t8, t7, r.x);
    fp2_mul(t8, t8, t6);
    fp2_mul(t0, r.y, t5);
    fp2_dbl(t0, t0);
    fp2_sub(r.y, t8, t0);
    fp2_sqr(t10, t10);
    fp2_sub(t10, t10, yy);
    fp2_sqr(s, r.z);
    fp2_sub(t10, t10, s);
    fp2_dbl(t9, t9);
    fp2_sub(l.c2, t9, t10);
    fp2_dbl(l.c0, r.z);
    fp2_neg(t6, t6);
    fp2_dbl(l.c1, t6);
}

// f = f * l(P): ic_bls12_381's ell, with the projective scaling described above.
__device__ __forceinline__ void pairing_ell(fp12_t& f, const line_t& l, const pairing_term_t& t) {
    fp2_t c0, c1, c2;
    fp2_mul_fp(c0, l.c0, t.py);
    fp2_mul_fp(c1, l.c1, t.px);
    fp2_mul_fp(c2, l.c2, t.pz);
    fp12_mul_by_014(f, f, c2, c1, c0);
}

__device__ __forceinline__ void pairing_term_init(pairing_term_t& t) {
    t.r.x = t.q.x;
    t.r.y = t.q.y;
    fp2_one(t.r.z);
}

// f = prod over terms of the Miller loop value (then conjugated as x < 0). The n terms
// share one squaring chain: the multi-Miller loop. n may be 0 (f = 1).
__device__ __noinline__ void miller_loop_multi(fp12_t& f, pairing_term_t* terms, int n) {
    line_t l;
    fp12_one(f);
    for (int k = 0; k < n; k++) pairing_term_init(terms[k]);
    // Bits of |x| >> 1 below its leading one (bit 62), from the top.
    for (int bit = 61; bit >= 0; bit--) {
        for (int k = 0; k < n; k++) {
            g2_doubling_step(l, terms[k].r);
            pairing_ell(f, l, terms[k]);
        }
        if ((BLS_X_ABS_SHR1 >> bit) & 1) {
            for (int k = 0; k < n; k++) {
                g2_addition_step(l, terms[k].r, terms[k].q);
                pairing_ell(f, l, terms[k]);
            }
        }
        fp12_sqr(f, f);
    }
    for (int k = 0; k < n; k++) {
        g2_doubling_step(l, terms[k].r);
        pairing_ell(f, l, terms[k]);
    }
    fp12_conj(f, f);
}

// The same loop for one term cut in two at bit BLS_ML_SPLIT_BIT, for two threads (two
// warps: they run different code) to compute at once. With f_head from the bits above the
// cut (each iteration ends with f = f^2) and g from the bits at and below it started
// from f = 1 and R = [the head's multiple of Q], the loop gives
//   f = conj(f_head^(2^(cut + 1)) * g * l_final),
// because every later iteration squares what came before: the same value exactly, so
// conj(head) * conj(tail) = miller_loop_multi of the term. The tail first walks R up the
// head's bits with the same doubling and addition steps (lines unused), so its R and its
// lines are the head's bit for bit. Cut at bit 33: 28 full iterations (four additions)
// plus 34 squarings against 28 line-free steps plus 34 full iterations, about even.
#define BLS_ML_SPLIT_BIT 33

// One iteration of the cut loops: f = (f * l_double [* l_add])^2 for `bit` of |x| >> 1.
__device__ __forceinline__ void miller_split_iteration(fp12_t& f, line_t& l, pairing_term_t& t,
                                                       int bit) {
    g2_doubling_step(l, t.r);
    pairing_ell(f, l, t);
    if ((BLS_X_ABS_SHR1 >> bit) & 1) {
        g2_addition_step(l, t.r, t.q);
        pairing_ell(f, l, t);
    }
    fp12_sqr(f, f);
}

__device__ __noinline__ void miller_loop_head(fp12_t& f, pairing_term_t& t) {
    line_t l;
    fp12_one(f);
    pairing_term_init(t);
    for (int bit = 61; bit > BLS_ML_SPLIT_BIT; bit--) miller_split_iteration(f, l, t, bit);
    for (int bit = BLS_ML_SPLIT_BIT; bit >= 0; bit--) fp12_sqr(f, f);
    fp12_conj(f, f);
}

__device__ __noinline__ void miller_loop_tail(fp12_t& f, pairing_term_t& t) {
    line_t l;
    pairing_term_init(t);
    for (int bit = 61; bit > BLS_ML_SPLIT_BIT; bit--) {
        g2_doubling_step(l, t.r);
        if ((BLS_X_ABS_SHR1 >> bit) & 1) g2_addition_step(l, t.r, t.q);
    }
    fp12_one(f);
    for (int bit = BLS_ML_SPLIT_BIT; bit >= 0; bit--) miller_split_iteration(f, l, t, bit);
    g2_doubling_step(l, t.r);
    pairing_ell(f, l, t);
    fp12_conj(f, f);
}

#endif
