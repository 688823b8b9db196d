// Prime-order subgroup test of G1 for the small-batch ("latency") decompression kernel:
// the same test as ec/g1_subgroup.cuh (phi(P) == -[z^2]P, eprint 2021/1130 section 6,
// proof in 2022/352; Jacobian coordinates, left to right), with one point's independent
// field multiplications spread over a team of 4 lanes of one warp.
// A small batch leaves most of the GPU idle and one point's chain of ~1,000 dependent
// multiplications is its whole latency; a team cuts the doubling from 7 dependent
// products to 3 and the addition from 16 to 5 (one product per lane per level, then
// every lane receives every product by shuffles, so all lanes hold the same state).
// Every lane of a team runs the same instructions on lane-selected operands: lanes of a
// warp that took different paths would run one after the other.
#ifndef SOVEREIGN_EC_G1_SUBGROUP_TEAM_CUH
#define SOVEREIGN_EC_G1_SUBGROUP_TEAM_CUH

#include "ec/g1_jacobian.cuh"
#include "ec/g1_subgroup.cuh"

#define G1_TEAM 4

// Lane `k` of the caller's team's copy of a (all 32 lanes of the warp take part).
__device__ __forceinline__ fp_t fp_team_shfl(const fp_t& a, int k) {
    fp_t r;
#pragma unroll
    for (int i = 0; i < FP_LIMBS; i++) r.l[i] = __shfl_sync(0xffffffffu, a.l[i], k, G1_TEAM);
    return r;
}

// v[role]: each lane's own operand of a level.
__device__ __forceinline__ fp_t fp_pick(u32 role, const fp_t& v0, const fp_t& v1,
                                        const fp_t& v2, const fp_t& v3) {
    fp_t r;
#pragma unroll
    for (int i = 0; i < FP_LIMBS; i++)
        r.l[i] = role == 0 ? v0.l[i] : role == 1 ? v1.l[i] : role == 2 ? v2.l[i] : v3.l[i];
    return r;
}

// out[k] = lane k's `mine`, for k < COUNT.
template <int COUNT>
__device__ __forceinline__ void fp_team_gather(fp_t* out, const fp_t& mine) {
#pragma unroll
    for (int k = 0; k < COUNT; k++) out[k] = fp_team_shfl(mine, k);
}

// r = 2p ("dbl-2009-l", as g1_jac_double): 3 dependent levels. r may alias p.
__device__ __forceinline__ void g1_team_double(g1_jac_t& r, const g1_jac_t& p, u32 role) {
    fp_t g[3], m;
    // A = X^2, B = Y^2, W = YZ.
    fp_mul(m, fp_pick(role, p.x, p.y, p.y, p.y), fp_pick(role, p.x, p.y, p.z, p.z));
    fp_team_gather<3>(g, m);
    const fp_t a = g[0], b = g[1], w = g[2];
    fp_t e, xb;
    fp_add(e, a, a);
    fp_add(e, e, a);  // E = 3A
    fp_add(xb, p.x, b);
    // F = E^2, C = B^2, T = (X + B)^2.
    fp_sqr(m, fp_pick(role, e, b, xb, xb));
    fp_team_gather<3>(g, m);
    const fp_t f = g[0], c = g[1], t = g[2];
    fp_t d, x3, z3, c8, y3;
    fp_sub(d, t, a);
    fp_sub(d, d, c);
    fp_add(d, d, d);  // D = 2((X + B)^2 - A - C)
    fp_sub(x3, f, d);
    fp_sub(x3, x3, d);  // X3 = F - 2D
    fp_add(z3, w, w);   // Z3 = 2YZ
    fp_add(c8, c, c);
    fp_add(c8, c8, c8);
    fp_add(c8, c8, c8);
    fp_sub(d, d, x3);
    // The last product has nothing beside it: every lane computes it (no shuffles).
    fp_mul(y3, e, d);
    fp_sub(r.y, y3, c8);  // Y3 = E(D - X3) - 8C
    r.x = x3;
    r.z = z3;
}

// r = p + q ("add-2007-bl", as g1_jac_add, with the same exceptional cases: an identity
// operand returns the other, p = q doubles, p = -q gives the identity): 5 levels.
// The exceptional cases are decided after the shuffles (all lanes of a team agree on
// them, so a team never splits; the rare p = q case doubles on each lane alone).
// r may alias p or q.
__device__ __forceinline__ void g1_team_add(g1_jac_t& r, const g1_jac_t& p, const g1_jac_t& q,
                                            u32 role) {
    fp_t g[4], m;
    // Z1Z1, Z2Z2, Y1 Z2, Y2 Z1.
    fp_mul(m, fp_pick(role, p.z, q.z, p.y, q.y), fp_pick(role, p.z, q.z, q.z, p.z));
    fp_team_gather<4>(g, m);
    const fp_t z1z1 = g[0], z2z2 = g[1], y1z2 = g[2], y2z1 = g[3];
    // U1 = X1 Z2Z2, U2 = X2 Z1Z1, S1 = Y1 Z2 Z2Z2, S2 = Y2 Z1 Z1Z1.
    fp_mul(m, fp_pick(role, p.x, q.x, y1z2, y2z1), fp_pick(role, z2z2, z1z1, z2z2, z1z1));
    fp_team_gather<4>(g, m);
    const fp_t u1 = g[0], u2 = g[1], s1 = g[2], s2 = g[3];
    fp_t h, rr, h2, zs;
    fp_sub(h, u2, u1);
    fp_sub(rr, s2, s1);
    const bool h_zero = fp_is_zero(h), rr_zero = fp_is_zero(rr);
    fp_add(rr, rr, rr);  // r = 2(S2 - S1)
    fp_add(h2, h, h);
    fp_add(zs, p.z, q.z);
    // I = (2H)^2, r^2, (Z1 + Z2)^2.
    fp_sqr(m, fp_pick(role, h2, rr, zs, zs));
    fp_team_gather<3>(g, m);
    const fp_t i = g[0], rr_sq = g[1];
    fp_t zz;
    fp_sub(zz, g[2], z1z1);
    fp_sub(zz, zz, z2z2);
    // J = H I, V = U1 I, Z3 = ((Z1 + Z2)^2 - Z1Z1 - Z2Z2) H.
    fp_mul(m, fp_pick(role, h, u1, zz, zz), fp_pick(role, i, i, h, h));
    fp_team_gather<3>(g, m);
    const fp_t j = g[0], v = g[1], z3 = g[2];
    fp_t x3, vx;
    fp_sub(x3, rr_sq, j);
    fp_sub(x3, x3, v);
    fp_sub(x3, x3, v);  // X3 = r^2 - J - 2V
    fp_sub(vx, v, x3);
    // r (V - X3), S1 J.
    fp_mul(m, fp_pick(role, rr, s1, s1, s1), fp_pick(role, vx, j, j, j));
    fp_team_gather<2>(g, m);
    fp_t y3;
    fp_sub(y3, g[0], g[1]);
    fp_sub(y3, y3, g[1]);  // Y3 = r(V - X3) - 2 S1 J
    if (fp_is_zero(q.z)) {
        r = p;
    } else if (fp_is_zero(p.z)) {
        r = q;
    } else if (h_zero) {
        if (rr_zero) {
            g1_jac_double(r, p);
        } else {
            g1_jac_identity(r);
        }
    } else {
        r.x = x3;
        r.y = y3;
        r.z = z3;
    }
}

// r = [|z|] p, as g1_jac_mul_by_abs_z: 63 doublings and 5 additions of p.
// Not inlined: one copy of the loop serves both calls.
__device__ __noinline__ void g1_team_mul_by_abs_z(g1_jac_t& r, const g1_jac_t& p, u32 role) {
    g1_jac_t acc = p;
#pragma unroll 1
    for (int bit = 62; bit >= 0; bit--) {
        g1_team_double(acc, acc, role);
        if ((BLS_Z_ABS >> bit) & 1) g1_team_add(acc, acc, p, role);
    }
    r = acc;
}

// The verdict of g1_affine_is_torsion_free(x, y), on every lane of the team; every lane
// must pass the same (x, y). role = the lane's index in its team.
__device__ __forceinline__ bool g1_team_affine_is_torsion_free(const fp_t& x, const fp_t& y,
                                                               u32 role) {
    g1_jac_t p, q;
    p.x = x;
    p.y = y;
    fp_load_const(p.z, FP_ONE);
    g1_team_mul_by_abs_z(q, p, role);
    g1_team_mul_by_abs_z(q, q, role);
    // [z^2]P = (X, Y, Z) equals (BETA x, -y) iff Z != 0, X = BETA x Z^2 and Y = -y Z^3.
    fp_t beta, g[2], m, ny, lhs_x, lhs_y;
    fp_load_const(beta, FP_BETA);
    fp_mul(m, fp_pick(role, q.z, x, x, x), fp_pick(role, q.z, beta, beta, beta));
    fp_team_gather<2>(g, m);
    const fp_t zz = g[0], bx = g[1];
    fp_mul(m, fp_pick(role, bx, zz, zz, zz), fp_pick(role, zz, q.z, q.z, q.z));
    fp_team_gather<2>(g, m);
    lhs_x = g[0];
    fp_neg(ny, y);
    fp_mul(lhs_y, ny, g[1]);
    return !fp_is_zero(q.z) && fp_eq(lhs_x, q.x) && fp_eq(lhs_y, q.y);
}

#endif
