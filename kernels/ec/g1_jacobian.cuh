// G1 of BLS12-381 (y^2 = x^3 + 4 over Fp) in Jacobian coordinates: (X, Y, Z) is the affine
// point (X/Z^2, Y/Z^3), Z = 0 the identity. Cheaper than the complete projective formulas
// (doubling 2M + 5S against 6M + 2S and far fewer additions) and fewer live registers,
// which is what the one-thread-per-point decompression kernel is bound by. The addition
// formula is incomplete, so its exceptional cases (an identity operand, P = Q, P = -Q)
// are branched on explicitly: adversarial points outside G1 can hit them.
#ifndef SOVEREIGN_EC_G1_JACOBIAN_CUH
#define SOVEREIGN_EC_G1_JACOBIAN_CUH

#include "ff/fp.cuh"

struct g1_jac_t {
    fp_t x, y, z;
};

// The identity (Z = 0).
__device__ __forceinline__ void g1_jac_identity(g1_jac_t& r) {
    fp_zero(r.x);
    fp_load_const(r.y, FP_ONE);
    fp_zero(r.z);
}

// r = 2p ("dbl-2009-l", a = 0). Needs no case split: the curve has no point of order 2
// (its order is odd), so y = 0 never occurs, and Z3 = 2YZ keeps the identity at Z = 0.
// r may alias p.
__device__ __forceinline__ void g1_jac_double(g1_jac_t& r, const g1_jac_t& p) {
    fp_t a, b, c, d, e, f;
    fp_sqr(a, p.x);
    fp_sqr(b, p.y);
    fp_sqr(c, b);
    fp_add(d, p.x, b);
    fp_sqr(d, d);
    fp_sub(d, d, a);
    fp_sub(d, d, c);
    fp_add(d, d, d);       // D = 2((X + B)^2 - A - C)
    fp_add(e, a, a);
    fp_add(e, e, a);       // E = 3A
    fp_sqr(f, e);          // F = E^2
    fp_mul(r.z, p.y, p.z);
    fp_add(r.z, r.z, r.z); // Z3 = 2YZ (before X, Y are overwritten when r aliases p)
    fp_sub(r.x, f, d);
    fp_sub(r.x, r.x, d);   // X3 = F - 2D
    fp_add(c, c, c);
    fp_add(c, c, c);
    fp_add(c, c, c);       // 8C
    fp_sub(d, d, r.x);
    fp_mul(r.y, e, d);
    fp_sub(r.y, r.y, c);   // Y3 = E(D - X3) - 8C
}

// r = p + q ("add-2007-bl") with the exceptional cases handled: an identity operand
// returns the other, p = q doubles, p = -q gives the identity. r may alias p.
__device__ __forceinline__ void g1_jac_add(g1_jac_t& r, const g1_jac_t& p, const g1_jac_t& q) {
    if (fp_is_zero(q.z)) {
        r = p;
        return;
    }
    if (fp_is_zero(p.z)) {
        r = q;
        return;
    }
    fp_t z1z1, z2z2, u1, u2, s1, s2, h, i, j, rr, v;
    fp_sqr(z1z1, p.z);
    fp_sqr(z2z2, q.z);
    fp_mul(u1, p.x, z2z2);
    fp_mul(u2, q.x, z1z1);
    fp_mul(s1, p.y, q.z);
    fp_mul(s1, s1, z2z2);
    fp_mul(s2, q.y, p.z);
    fp_mul(s2, s2, z1z1);
    fp_sub(h, u2, u1);
    fp_sub(rr, s2, s1);
    if (fp_is_zero(h)) {
        if (fp_is_zero(rr)) {
            g1_jac_double(r, p);
        } else {
            g1_jac_identity(r);
        }
        return;
    }
    fp_add(rr, rr, rr);     // r = 2(S2 - S1)
    fp_add(i, h, h);
    fp_sqr(i, i);           // I = (2H)^2
    fp_mul(j, h, i);        // J = H I
    fp_mul(v, u1, i);       // V = U1 I
    fp_add(u2, p.z, q.z);
    fp_sqr(u2, u2);
    fp_sub(u2, u2, z1z1);
    fp_sub(u2, u2, z2z2);
    fp_mul(r.z, u2, h);     // Z3 = ((Z1 + Z2)^2 - Z1Z1 - Z2Z2) H
    fp_sqr(r.x, rr);
    fp_sub(r.x, r.x, j);
    fp_sub(r.x, r.x, v);
    fp_sub(r.x, r.x, v);    // X3 = r^2 - J - 2V
    fp_mul(s1, s1, j);
    fp_add(s1, s1, s1);     // 2 S1 J
    fp_sub(v, v, r.x);
    fp_mul(r.y, rr, v);
    fp_sub(r.y, r.y, s1);   // Y3 = r(V - X3) - 2 S1 J
}

#endif
