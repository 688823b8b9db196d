// Prime-order subgroup membership of a G1 point, by the endomorphism test ic_bls12_381's
// G1Affine::is_torsion_free uses (eprint 2021/1130 section 6, proof in 2022/352):
// P is in G1 iff phi(P) == -[z^2]P, with phi(x, y) = (BETA x, y) and z the BLS parameter.
// Two multiplications by the 64-bit |z| instead of one by the 255-bit group order; a
// 2-dimensional split cannot do better, since the short lattice vectors are ~128 bits.
#ifndef SOVEREIGN_EC_G1_SUBGROUP_CUH
#define SOVEREIGN_EC_G1_SUBGROUP_CUH

#include "ec/g1_jacobian.cuh"
#include "ec/g1_projective.cuh"

// |z| = 0xd201000000010000 (z is negative).
#define BLS_Z_ABS 0xd201000000010000ull
// |z| with its top bit consumed by starting from p (for the right-to-left ladder).
#define BLS_Z_ABS_SHR1 0x6900800000008000ull

// r = [|z|] p with the complete projective formulas, right-to-left double-and-add as
// ic_bls12_381's mul_by_x (the sign is applied by the caller).
// Not inlined: one copy of the loop (one inlined double and add) serves both calls.
__device__ __noinline__ void g1_mul_by_abs_z(g1_proj_t& r, const g1_proj_t& p) {
    g1_proj_t acc, tmp = p;
    g1_identity(acc);
    u64 z = BLS_Z_ABS_SHR1;
    while (z != 0) {
        g1_double(tmp, tmp);
        if (z & 1) g1_add(acc, acc, tmp);
        z >>= 1;
    }
    r = acc;
}

// r = [|z|] p in Jacobian coordinates, left to right: 63 doublings and 5 additions of p.
__device__ __noinline__ void g1_jac_mul_by_abs_z(g1_jac_t& r, const g1_jac_t& p) {
    g1_jac_t acc = p;
#pragma unroll 1
    for (int bit = 62; bit >= 0; bit--) {
        g1_jac_double(acc, acc);
        if ((BLS_Z_ABS >> bit) & 1) g1_jac_add(acc, acc, p);
    }
    r = acc;
}

// (x, y) is an affine point on the curve, Montgomery form, not the identity.
// Projective variant (complete formulas), kept as the benchmark's baseline.
__device__ __forceinline__ bool g1_affine_is_torsion_free_proj(const fp_t& x, const fp_t& y) {
    g1_proj_t p, q;
    p.x = x;
    p.y = y;
    fp_load_const(p.z, FP_ONE);
    // [z^2]P = [|z|][|z|]P: the two signs cancel.
    g1_mul_by_abs_z(q, p);
    g1_mul_by_abs_z(q, q);
    // -[z^2]P == (BETA x, y)  <=>  [z^2]P == (BETA x, -y), compared projectively.
    fp_t beta, ex, ey, lhs_x, lhs_y;
    fp_load_const(beta, FP_BETA);
    fp_mul(ex, x, beta);
    fp_neg(ey, y);
    fp_mul(lhs_x, ex, q.z);
    fp_mul(lhs_y, ey, q.z);
    return !fp_is_zero(q.z) && fp_eq(lhs_x, q.x) && fp_eq(lhs_y, q.y);
}

// The same test in Jacobian coordinates: [z^2]P = (X, Y, Z) equals the affine
// (BETA x, -y) iff Z != 0, X = BETA x Z^2 and Y = -y Z^3.
__device__ __forceinline__ bool g1_affine_is_torsion_free(const fp_t& x, const fp_t& y) {
    g1_jac_t p, q;
    p.x = x;
    p.y = y;
    fp_load_const(p.z, FP_ONE);
    g1_jac_mul_by_abs_z(q, p);
    g1_jac_mul_by_abs_z(q, q);
    fp_t beta, zz, lhs_x, lhs_y;
    fp_load_const(beta, FP_BETA);
    fp_sqr(zz, q.z);
    fp_mul(lhs_x, x, beta);
    fp_mul(lhs_x, lhs_x, zz);
    fp_mul(zz, zz, q.z);
    fp_neg(lhs_y, y);
    fp_mul(lhs_y, lhs_y, zz);
    return !fp_is_zero(q.z) && fp_eq(lhs_x, q.x) && fp_eq(lhs_y, q.y);
}

#endif
