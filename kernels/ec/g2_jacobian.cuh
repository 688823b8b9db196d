// G2 of BLS12-381 (the twist y^2 = x^3 + 4(u + 1) over Fp2) in Jacobian coordinates:
// (X, Y, Z) is the affine point (X/Z^2, Y/Z^3), Z = 0 the identity. The same formulas as
// ec/g1_jacobian.cuh over Fp2. The addition formula is incomplete, so its exceptional
// cases (an identity operand, P = Q, P = -Q) are branched on explicitly: points on the
// twist outside G2 have small-order components (the cofactor has factors 13 and 23) and
// hit them.
#ifndef SOVEREIGN_EC_G2_JACOBIAN_CUH
#define SOVEREIGN_EC_G2_JACOBIAN_CUH

#include "ff/fp2.cuh"

struct g2_jac_t {
    fp2_t x, y, z;
};

__device__ __forceinline__ void g2_jac_identity(g2_jac_t& r) {
    fp2_zero(r.x);
    fp2_one(r.y);
    fp2_zero(r.z);
}

// r = 2p ("dbl-2009-l", a = 0). The twist's order (cofactor times r) is odd, so no point
// has y = 0, and Z3 = 2YZ keeps the identity at Z = 0. r may alias p.
__device__ __forceinline__ void g2_jac_double(g2_jac_t& r, const g2_jac_t& p) {
    fp2_t a, b, c, d, e, f;
    fp2_sqr(a, p.x);
    fp2_sqr(b, p.y);
    fp2_sqr(c, b);
    fp2_add(d, p.x, b);
    fp2_sqr(d, d);
    fp2_sub(d, d, a);
    fp2_sub(d, d, c);
    fp2_dbl(d, d);          // D = 2((X + B)^2 - A - C)
    fp2_dbl(e, a);
    fp2_add(e, e, a);       // E = 3A
    fp2_sqr(f, e);          // F = E^2
    fp2_mul(r.z, p.y, p.z);
    fp2_dbl(r.z, r.z);      // Z3 = 2YZ (before X, Y are overwritten when r aliases p)
    fp2_sub(r.x, f, d);
    fp2_sub(r.x, r.x, d);   // X3 = F - 2D
    fp2_dbl(c, c);
    fp2_dbl(c, c);
    fp2_dbl(c, c);          // 8C
    fp2_sub(d, d, r.x);
    fp2_mul(r.y, e, d);
    fp2_sub(r.y, r.y, c);   // Y3 = E(D - X3) - 8C
}

// r = p + q, q affine (Z = 1, "madd-2007-bl"), with the exceptional cases handled: p the
// identity returns q, p = q doubles, p = -q gives the identity. r may alias p.
__device__ __forceinline__ void g2_jac_add_affine(g2_jac_t& r, const g2_jac_t& p,
                                                  const fp2_t& qx, const fp2_t& qy) {
    if (fp2_is_zero(p.z)) {
        r.x = qx;
        r.y = qy;
        fp2_one(r.z);
        return;
    }
    fp2_t z1z1, u2, s2, h, hh, i, j, rr, v;
    fp2_sqr(z1z1, p.z);
    fp2_mul(u2, qx, z1z1);
    fp2_mul(s2, qy, p.z);
    fp2_mul(s2, s2, z1z1);
    fp2_sub(h, u2, p.x);
    fp2_sub(rr, s2, p.y);
    if (fp2_is_zero(h)) {
        if (fp2_is_zero(rr)) {
            g2_jac_double(r, p);
        } else {
            g2_jac_identity(r);
        }
        return;
    }
    fp2_sqr(hh, h);          // HH = H^2
    fp2_dbl(i, hh);
    fp2_dbl(i, i);           // I = 4 HH
    fp2_mul(j, h, i);        // J = H I
    fp2_dbl(rr, rr);         // r = 2(S2 - Y1)
    fp2_mul(v, p.x, i);      // V = X1 I
    fp2_add(u2, p.z, h);
    fp2_sqr(u2, u2);
    fp2_sub(u2, u2, z1z1);
    fp2_sub(r.z, u2, hh);    // Z3 = (Z1 + H)^2 - Z1Z1 - HH
    fp2_t y1j;
    fp2_mul(y1j, p.y, j);
    fp2_dbl(y1j, y1j);       // 2 Y1 J
    fp2_sqr(r.x, rr);
    fp2_sub(r.x, r.x, j);
    fp2_sub(r.x, r.x, v);
    fp2_sub(r.x, r.x, v);    // X3 = r^2 - J - 2V
    fp2_sub(v, v, r.x);
    fp2_mul(r.y, rr, v);
    fp2_sub(r.y, r.y, y1j);  // Y3 = r(V - X3) - 2 Y1 J
}

// r = p + q, both Jacobian ("add-2007-bl"), with the exceptional cases handled: an identity
// operand returns the other, p = q doubles, p = -q gives the identity. r may alias p.
__device__ __forceinline__ void g2_jac_add(g2_jac_t& r, const g2_jac_t& p, const g2_jac_t& q) {
    if (fp2_is_zero(q.z)) {
        r = p;
        return;
    }
    if (fp2_is_zero(p.z)) {
        r = q;
        return;
    }
    fp2_t z1z1, z2z2, u1, u2, s1, s2, h, i, j, rr, v;
    fp2_sqr(z1z1, p.z);
    fp2_sqr(z2z2, q.z);
    fp2_mul(u1, p.x, z2z2);
    fp2_mul(u2, q.x, z1z1);
    fp2_mul(s1, p.y, q.z);
    fp2_mul(s1, s1, z2z2);
    fp2_mul(s2, q.y, p.z);
    fp2_mul(s2, s2, z1z1);
    fp2_sub(h, u2, u1);
    fp2_sub(rr, s2, s1);
    if (fp2_is_zero(h)) {
        if (fp2_is_zero(rr)) {
            g2_jac_double(r, p);
        } else {
            g2_jac_identity(r);
        }
        return;
    }
    fp2_dbl(rr, rr);         // r = 2(S2 - S1)
    fp2_dbl(i, h);
    fp2_sqr(i, i);           // I = (2H)^2
    fp2_mul(j, h, i);        // J = H I
    fp2_mul(v, u1, i);       // V = U1 I
    fp2_add(u2, p.z, q.z);
    fp2_sqr(u2, u2);
    fp2_sub(u2, u2, z1z1);
    fp2_sub(u2, u2, z2z2);
    fp2_mul(r.z, u2, h);     // Z3 = ((Z1 + Z2)^2 - Z1Z1 - Z2Z2) H
    fp2_sqr(r.x, rr);
    fp2_sub(r.x, r.x, j);
    fp2_sub(r.x, r.x, v);
    fp2_sub(r.x, r.x, v);    // X3 = r^2 - J - 2V
    fp2_mul(s1, s1, j);
    fp2_dbl(s1, s1);         // 2 S1 J
    fp2_sub(v, v, r.x);
    fp2_mul(r.y, rr, v);
    fp2_sub(r.y, r.y, s1);   // Y3 = r(V - X3) - 2 S1 J
}

#endif
