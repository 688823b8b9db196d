// Fp12 = Fp6[w] / (w^2 - v) (as ic_bls12_381's Fp12), the pairing's target field, with the
// sparse product by a line (mul_by_014) and the cyclotomic squaring of the final
// exponentiation. Every function allows its output to alias its inputs.
#ifndef SOVEREIGN_FF_FP12_CUH
#define SOVEREIGN_FF_FP12_CUH

#include "ff/fp6.cuh"

struct fp12_t {
    fp6_t c0, c1;
};

// Frobenius coefficient of c1 (ic_bls12_381's fp12.rs), Montgomery form.
__device__ __constant__ u32 FP12_FROB_C0[FP_LIMBS] = {
    0xb319d465u, 0x07089552u, 0xb50a8313u, 0xc6695f92u, 0xd117228fu, 0x97e83cccu,
    0xb2dc29eeu, 0xa35baecau, 0x5daace4du, 0x1ce393eau, 0xb0fb66ebu, 0x08f2220fu};
__device__ __constant__ u32 FP12_FROB_C1[FP_LIMBS] = {
    0x4ce5d646u, 0xb2f66aadu, 0xfc497cecu, 0x5842a06bu, 0x2599d394u, 0xcf4895d4u,
    0x40a8e8d0u, 0xc11b9cbau, 0xe5a0de89u, 0x2e3813cbu, 0x88847fafu, 0x110eefdau};

__device__ __forceinline__ void fp12_one(fp12_t& r) {
    fp6_one(r.c0);
    fp6_zero(r.c1);
}

__device__ __forceinline__ bool fp12_is_one(const fp12_t& a) {
    fp12_t one;
    fp12_one(one);
    return fp6_eq(a.c0, one.c0) && fp6_eq(a.c1, one.c1);
}

// The inverse of a unitary element (norm 1, e.g. after the easy part): c1 negated.
__device__ __forceinline__ void fp12_conj(fp12_t& r, const fp12_t& a) {
    r.c0 = a.c0;
    fp6_neg(r.c1, a.c1);
}

// Karatsuba over Fp6: three Fp6 products.
__device__ __noinline__ void fp12_mul(fp12_t& r, const fp12_t& a, const fp12_t& b) {
    fp6_t aa, bb, s, t;
    fp6_mul(aa, a.c0, b.c0);
    fp6_mul(bb, a.c1, b.c1);
    fp6_add(s, a.c0, a.c1);
    fp6_add(t, b.c0, b.c1);
    fp6_mul(s, s, t);
    fp6_sub(s, s, aa);
    fp6_sub(r.c1, s, bb);
    fp6_mul_by_nonresidue(bb, bb);
    fp6_add(r.c0, aa, bb);
}

// Complex squaring over Fp6: two Fp6 products.
__device__ __noinline__ void fp12_sqr(fp12_t& r, const fp12_t& a) {
    fp6_t ab, s, t;
    fp6_mul(ab, a.c0, a.c1);
    fp6_add(s, a.c0, a.c1);
    fp6_mul_by_nonresidue(t, a.c1);
    fp6_add(t, t, a.c0);
    fp6_mul(t, t, s);
    fp6_sub(t, t, ab);
    fp6_add(r.c1, ab, ab);
    fp6_mul_by_nonresidue(ab, ab);
    fp6_sub(r.c0, t, ab);
}

// a * (c0 + c1 w + c4 v w): the product by a line value (ic_bls12_381's mul_by_014).
__device__ __noinline__ void fp12_mul_by_014(fp12_t& r, const fp12_t& a, const fp2_t& c0,
                                             const fp2_t& c1, const fp2_t& c4) {
    fp6_t aa, bb, s;
    fp2_t o;
    fp6_mul_by_01(aa, a.c0, c0, c1);
    fp6_mul_by_1(bb, a.c1, c4);
    fp2_add(o, c1, c4);
    fp6_add(s, a.c1, a.c0);
    fp6_mul_by_01(s, s, c0, o);
    fp6_sub(s, s, aa);
    fp6_sub(r.c1, s, bb);
    fp6_mul_by_nonresidue(bb, bb);
    fp6_add(r.c0, bb, aa);
}

__device__ __noinline__ void fp12_frobenius(fp12_t& r, const fp12_t& a) {
    fp6_t c1;
    fp2_t k;
    fp6_frobenius(r.c0, a.c0);
    fp6_frobenius(c1, a.c1);
    fp_load_const(k.c0, FP12_FROB_C0);
    fp_load_const(k.c1, FP12_FROB_C1);
    fp2_mul(r.c1.c0, c1.c0, k);
    fp2_mul(r.c1.c1, c1.c1, k);
    fp2_mul(r.c1.c2, c1.c2, k);
}

__device__ __noinline__ void fp12_inv(fp12_t& r, const fp12_t& a) {
    fp6_t t, s;
    fp6_sqr(t, a.c0);
    fp6_sqr(s, a.c1);
    fp6_mul_by_nonresidue(s, s);
    fp6_sub(t, t, s);
    fp6_inv(t, t);
    fp6_mul(r.c0, a.c0, t);
    fp6_mul(s, a.c1, t);
    fp6_neg(r.c1, s);
}

// (a + b w')^2 in Fp4 = Fp2[w'] / (w'^2 - xi), for the cyclotomic squaring.
__device__ __forceinline__ void fp4_sqr(fp2_t& r0, fp2_t& r1, const fp2_t& a, const fp2_t& b) {
    fp2_t t0, t1, t2;
    fp2_sqr(t0, a);
    fp2_sqr(t1, b);
    fp2_mul_by_nonresidue(t2, t1);
    fp2_add(r0, t2, t0);
    fp2_add(t2, a, b);
    fp2_sqr(t2, t2);
    fp2_sub(t2, t2, t0);
    fp2_sub(r1, t2, t1);
}

// Granger-Scott squaring in the cyclotomic subgroup (eprint 2009/565), valid after the
// easy part of the final exponentiation; as ic_bls12_381's cyclotomic_square.
__device__ __noinline__ void fp12_cyclotomic_sqr(fp12_t& r, const fp12_t& f) {
    fp2_t z0 = f.c0.c0, z4 = f.c0.c1, z3 = f.c0.c2, z2 = f.c1.c0, z1 = f.c1.c1, z5 = f.c1.c2;
    fp2_t t0, t1, t2, t3;
    fp4_sqr(t0, t1, z0, z1);
    // A
    fp2_sub(z0, t0, z0);
    fp2_dbl(z0, z0);
    fp2_add(z0, z0, t0);
    fp2_add(z1, t1, z1);
    fp2_dbl(z1, z1);
    fp2_add(z1, z1, t1);
    fp4_sqr(t0, t1, z2, z3);
    fp4_sqr(t2, t3, z4, z5);
    // C
    fp2_sub(z4, t0, z4);
    fp2_dbl(z4, z4);
    fp2_add(z4, z4, t0);
    fp2_add(z5, t1, z5);
    fp2_dbl(z5, z5);
    fp2_add(z5, z5, t1);
    // B
    fp2_mul_by_nonresidue(t0, t3);
    fp2_add(z2, t0, z2);
    fp2_dbl(z2, z2);
    fp2_add(z2, z2, t0);
    fp2_sub(z3, t2, z3);
    fp2_dbl(z3, z3);
    fp2_add(z3, z3, t2);
    r.c0.c0 = z0;
    r.c0.c1 = z4;
    r.c0.c2 = z3;
    r.c1.c0 = z2;
    r.c1.c1 = z1;
    r.c1.c2 = z5;
}

// The canonical encoding ic_bls12_381's Gt::to_bytes gives: coefficients from the highest
// (c1.c2.c1) to the lowest (c0.c0.c0), each 48 bytes big-endian, out of Montgomery form.
__device__ __forceinline__ void fp12_to_bytes(u8* out, const fp12_t& a) {
    const fp6_t* halves[2] = {&a.c1, &a.c0};
    int off = 0;
    for (int h = 0; h < 2; h++) {
        const fp2_t* cs[3] = {&halves[h]->c2, &halves[h]->c1, &halves[h]->c0};
        for (int c = 0; c < 3; c++) {
            fp_t v;
            fp_from_mont(v, cs[c]->c1);
            fp_to_be_bytes(out + off, v);
            off += 48;
            fp_from_mont(v, cs[c]->c0);
            fp_to_be_bytes(out + off, v);
            off += 48;
        }
    }
}

#endif
