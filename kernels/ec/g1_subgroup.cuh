// Prime-order subgroup membership of a G1 point, by the endomorphism test ic_bls12_381's
// G1Affine::is_torsion_free uses (eprint 2021/1130 section 6, proof in 2022/352):
// P is in G1 iff phi(P) == -[z^2]P, with phi(x, y) = (BETA x, y) and z the BLS parameter.
// Two multiplications by the 64-bit |z| instead of one by the 255-bit group order.
#ifndef SOVEREIGN_EC_G1_SUBGROUP_CUH
#define SOVEREIGN_EC_G1_SUBGROUP_CUH

#include "ec/g1_projective.cuh"

// |z| = 0xd201000000010000 (z is negative); the top bit is consumed by starting from p.
#define BLS_Z_ABS_SHR1 0x6900800000008000ull

// r = [|z|] p, double-and-add from the low bits as ic_bls12_381's mul_by_x does
// (the sign is applied by the caller).
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

// (x, y) is an affine point on the curve, Montgomery form, not the identity.
__device__ __forceinline__ bool g1_affine_is_torsion_free(const fp_t& x, const fp_t& y) {
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

#endif
