// G1 of BLS12-381 (y^2 = x^3 + 4 over Fp) in homogeneous projective coordinates with the
// complete formulas of Renes-Costello-Batina 2015 (algorithms 7 and 9), as ic_bls12_381
// uses: no exceptional cases, so adversarial points (small-order components, identity
// intermediates) need no special handling.
#ifndef SOVEREIGN_EC_G1_PROJECTIVE_CUH
#define SOVEREIGN_EC_G1_PROJECTIVE_CUH

#include "ff/fp.cuh"

struct g1_proj_t {
    fp_t x, y, z;
};

__device__ __forceinline__ void g1_identity(g1_proj_t& r) {
    fp_zero(r.x);
    fp_load_const(r.y, FP_ONE);
    fp_zero(r.z);
}

// r = 3b * a = 12a, by additions (as ic_bls12_381's mul_by_3b): cheaper than a product.
__device__ __forceinline__ void fp_mul_b3(fp_t& r, const fp_t& a) {
    fp_t a2, a4, a8;
    fp_add(a2, a, a);
    fp_add(a4, a2, a2);
    fp_add(a8, a4, a4);
    fp_add(r, a8, a4);
}

// r = 2p (algorithm 9). r may alias p.
__device__ __forceinline__ void g1_double(g1_proj_t& r, const g1_proj_t& p) {
    fp_t t0, t1, t2, x3, y3, z3;
    fp_sqr(t0, p.y);
    fp_add(z3, t0, t0);
    fp_add(z3, z3, z3);
    fp_add(z3, z3, z3);
    fp_mul(t1, p.y, p.z);
    fp_sqr(t2, p.z);
    fp_mul_b3(t2, t2);
    fp_mul(x3, t2, z3);
    fp_add(y3, t0, t2);
    fp_mul(z3, t1, z3);
    fp_add(t1, t2, t2);
    fp_add(t2, t1, t2);
    fp_sub(t0, t0, t2);
    fp_mul(y3, t0, y3);
    fp_add(y3, x3, y3);
    fp_mul(t1, p.x, p.y);
    fp_mul(x3, t0, t1);
    fp_add(x3, x3, x3);
    r.x = x3;
    r.y = y3;
    r.z = z3;
}

// r = p + q (algorithm 7). r may alias p or q.
__device__ __forceinline__ void g1_add(g1_proj_t& r, const g1_proj_t& p, const g1_proj_t& q) {
    fp_t t0, t1, t2, t3, t4, x3, y3, z3;
    fp_mul(t0, p.x, q.x);
    fp_mul(t1, p.y, q.y);
    fp_mul(t2, p.z, q.z);
    fp_add(t3, p.x, p.y);
    fp_add(t4, q.x, q.y);
    fp_mul(t3, t3, t4);
    fp_add(t4, t0, t1);
    fp_sub(t3, t3, t4);
    fp_add(t4, p.y, p.z);
    fp_add(x3, q.y, q.z);
    fp_mul(t4, t4, x3);
    fp_add(x3, t1, t2);
    fp_sub(t4, t4, x3);
    fp_add(x3, p.x, p.z);
    fp_add(y3, q.x, q.z);
    fp_mul(x3, x3, y3);
    fp_add(y3, t0, t2);
    fp_sub(y3, x3, y3);
    fp_add(x3, t0, t0);
    fp_add(t0, x3, t0);
    fp_mul_b3(t2, t2);
    fp_add(z3, t1, t2);
    fp_sub(t1, t1, t2);
    fp_mul_b3(y3, y3);
    fp_mul(x3, t4, y3);
    fp_mul(t2, t3, t1);
    fp_sub(x3, t2, x3);
    fp_mul(y3, y3, t0);
    fp_mul(t1, t1, z3);
    fp_add(y3, t1, y3);
    fp_mul(t0, t0, t3);
    fp_mul(z3, z3, t4);
    fp_add(z3, z3, t0);
    r.x = x3;
    r.y = y3;
    r.z = z3;
}

// One shared (called) copy of the complete addition, for code that adds in loops or in
// several places: inlining every use would multiply the formula's ~40 operations.
__device__ __noinline__ void g1_add_shared(g1_proj_t& r, const g1_proj_t& a, const g1_proj_t& b) {
    g1_add(r, a, b);
}

#endif
