// The prime-order subgroup test of ec/g1_subgroup.cuh (phi(P) == -[z^2]P, Jacobian
// coordinates, left to right, the same exceptional cases) with one point per warp in the
// residue number system of ff/fp_rns.cuh, for the small-batch decompression kernel: the
// independent products of a doubling or an addition run interleaved (rns_mul_k), so a
// doubling is 3 dependent products and an addition 5.
// Values are RNS lane form below the bounds noted at each step (in units of p); every
// subtraction adds a multiple of p above the bound of what it subtracts.
#ifndef SOVEREIGN_EC_G1_SUBGROUP_RNS_CUH
#define SOVEREIGN_EC_G1_SUBGROUP_RNS_CUH

#include "ff/fp_rns.cuh"
#include "ec/g1_subgroup.cuh"

// Shared slots (ff/fp_rns.cuh) the calling warp must provide.
#define G1_RNS_SLOTS 4

// Jacobian point, each coordinate one lane-form residue per lane. Z = 0 is the identity.
struct g1_rns_t {
    u32 x, y, z;
};

// Multiples of p the formulas subtract with, lane form.
struct g1_rns_offsets {
    u32 p16, p32, p64, p128, p192, p208;
};

__device__ __forceinline__ g1_rns_offsets g1_rns_offsets_init(const rns_ctx& c) {
    return {rns_kp(16, c), rns_kp(32, c), rns_kp(64, c), rns_kp(128, c), rns_kp(192, c),
            rns_kp(208, c)};
}

// r = 2p ("dbl-2009-l", as g1_jac_double). Outputs below (208, 144, 32) p for any inputs
// below 2^19 p (every subtrahend is a sum of products). r may alias p.
__device__ __forceinline__ void g1_rns_double(g1_rns_t& r, const g1_rns_t& p, const rns_ctx& c,
                                              const g1_rns_offsets& k) {
    u32 o[3];
    {
        const u32 a[3] = {p.x, p.y, p.y}, b[3] = {p.x, p.y, p.z};
        rns_mul_k<3>(o, a, b, c);  // A = X^2, B = Y^2, W = YZ (each below 16)
    }
    const u32 A = o[0], B = o[1], W = o[2];
    const u32 E = rns_add(rns_add(A, A, c), A, c);  // 3A < 48
    {
        const u32 a[3] = {E, B, rns_add(p.x, B, c)};
        rns_mul_k<3>(o, a, a, c);  // F = E^2, C = B^2, T = (X + B)^2
    }
    const u32 F = o[0], C = o[1], T = o[2];
    u32 D = rns_sub(rns_sub(T, A, k.p32, c), C, 0, c);  // T - A - C + 32 < 48
    D = rns_add(D, D, c);                                 // D = 2(T - A - C) < 96
    const u32 X3 = rns_sub(F, rns_add(D, D, c), k.p192, c);  // F - 2D < 208
    u32 C8 = rns_add(C, C, c);
    C8 = rns_add(C8, C8, c);
    C8 = rns_add(C8, C8, c);  // 8C < 128
    const u32 Y = rns_mul(E, rns_sub(D, X3, k.p208, c), c);  // E (D - X3)
    r.y = rns_sub(Y, C8, k.p128, c);                        // < 144
    r.z = rns_add(W, W, c);                                 // 2YZ < 32
    r.x = X3;
}

__device__ __forceinline__ void g1_rns_identity(g1_rns_t& r, const rns_ctx& c) {
    r.x = r.y = rns_lane_const(RNS_ONE, c);
    r.z = 0;
}

// r = p + q ("add-2007-bl", as g1_jac_add, with its exceptional cases: an identity operand
// returns the other, p = q doubles, p = -q gives the identity). Inputs below
// (208, 144, 32) p give outputs below (64, 48, 16) p, or those of a doubling.
// r may alias p or q.
__device__ __forceinline__ void g1_rns_add(g1_rns_t& r, const g1_rns_t& p, const g1_rns_t& q,
                                           const rns_ctx& c, const g1_rns_offsets& k) {
    u32 o[4];
    {
        const u32 a[4] = {p.z, q.z, p.y, q.y}, b[4] = {p.z, q.z, q.z, p.z};
        rns_mul_k<4>(o, a, b, c);
    }
    const u32 z1z1 = o[0], z2z2 = o[1];
    {
        const u32 a[4] = {p.x, q.x, o[2], o[3]}, b[4] = {z2z2, z1z1, z2z2, z1z1};
        rns_mul_k<4>(o, a, b, c);  // U1, U2, S1, S2 (each below 16)
    }
    const u32 u1 = o[0], s1 = o[2];
    const u32 h = rns_sub(o[1], u1, k.p16, c);   // U2 - U1 < 32
    u32 rr = rns_sub(o[3], s1, k.p16, c);        // S2 - S1 < 32
    const bool h_zero = rns_is_zero(h, c), rr_zero = rns_is_zero(rr, c);
    rr = rns_add(rr, rr, c);                     // r = 2(S2 - S1) < 64
    {
        const u32 a[3] = {rns_add(h, h, c), rr, rns_add(p.z, q.z, c)};
        rns_mul_k<3>(o, a, a, c);  // I = (2H)^2, r^2, (Z1 + Z2)^2
    }
    const u32 i = o[0], rr_sq = o[1];
    const u32 zz = rns_sub(rns_sub(o[2], z1z1, k.p16, c), z2z2, k.p16, c);  // < 48
    {
        const u32 a[3] = {h, u1, zz}, b[3] = {i, i, h};
        rns_mul_k<3>(o, a, b, c);  // J = H I, V = U1 I, Z3 = ((Z1 + Z2)^2 - Z1Z1 - Z2Z2) H
    }
    const u32 j = o[0], v = o[1], z3 = o[2];
    const u32 x3 = rns_sub(rns_sub(rns_sub(rr_sq, j, k.p16, c), v, k.p16, c), v, k.p16, c);  // < 64
    {
        const u32 a[2] = {rr, s1}, b[2] = {rns_sub(v, x3, k.p64, c), j};
        rns_mul_k<2>(o, a, b, c);  // r (V - X3), S1 J
    }
    const u32 y3 = rns_sub(rns_sub(o[0], o[1], k.p16, c), o[1], k.p16, c);  // < 48
    if (rns_is_zero(q.z, c)) {
        r = p;
    } else if (rns_is_zero(p.z, c)) {
        r = q;
    } else if (h_zero) {
        if (rr_zero) {
            g1_rns_double(r, p, c, k);
        } else {
            g1_rns_identity(r, c);
        }
    } else {
        r.x = x3;
        r.y = y3;
        r.z = z3;
    }
}

// g1_affine_is_torsion_free(x, y) for an affine point given in Montgomery lane form (not
// the identity; below 16p each), on every lane of the warp. Everything is inlined into the
// kernel: a non-inlined callee would receive the constants (rns_ctx) through local memory.
__device__ __forceinline__ bool g1_rns_affine_is_torsion_free(u32 x, u32 y, const rns_ctx& c) {
    const g1_rns_offsets k = g1_rns_offsets_init(c);
    g1_rns_t q;
    q.x = x;
    q.y = y;
    // One in Montgomery form is M mod p: the product of 1 and M^2 mod p.
    q.z = rns_mul(rns_lane_const(RNS_ONE, c), rns_lane_const(RNS_M2P, c), c);
    // [z^2]P = [|z|][|z|]P (the two signs cancel), as two passes of g1_jac_mul_by_abs_z
    // (63 doublings and 5 additions of the pass's base, left to right): one copy of the
    // loop.
#pragma unroll 1
    for (int pass = 0; pass < 2; pass++) {
        const g1_rns_t base = q;
#pragma unroll 1
        for (int bit = 62; bit >= 0; bit--) {
            g1_rns_double(q, q, c, k);
            if ((BLS_Z_ABS >> bit) & 1) g1_rns_add(q, q, base, c, k);
        }
    }
    // [z^2]P = (X, Y, Z) equals (BETA x, -y) iff Z != 0, X = BETA x Z^2 and Y = -y Z^3.
    u32 o[2];
    {
        const u32 a[2] = {q.z, x}, b[2] = {q.z, rns_lane_const(RNS_BETA, c)};
        rns_mul_k<2>(o, a, b, c);  // Z^2, BETA x
    }
    {
        const u32 a[2] = {o[1], o[0]}, b[2] = {o[0], q.z};
        rns_mul_k<2>(o, a, b, c);  // BETA x Z^2, Z^3
    }
    const u32 lhs_y = rns_mul(rns_sub(0, y, k.p16, c), o[1], c);  // -y Z^3
    return !rns_is_zero(q.z, c) && rns_is_zero(rns_sub(o[0], q.x, k.p208, c), c) &&
           rns_is_zero(rns_sub(lhs_y, q.y, k.p208, c), c);
}

#endif
