// G2 in Jacobian coordinates (the formulas and exceptional cases of ec/g2_jacobian.cuh) with
// one point per warp in the residue number system of ff/fp2_rns.cuh, for the latency-bound
// G2 MSM kernel: the independent Fp2 products of each step of a formula run interleaved,
// so a doubling is 3 dependent products, a mixed addition 5 and a full addition 6.
// Values are RNS lane form below the bounds noted at each step (in units of p, per
// coefficient); every subtraction adds a multiple of p above the bound of what it
// subtracts. Every product is below 48p whatever its inputs (below 2^18 p), so the bounds
// of each formula's outputs hold for any inputs that stay below the bounds stated.
#ifndef SOVEREIGN_EC_G2_JACOBIAN_RNS_CUH
#define SOVEREIGN_EC_G2_JACOBIAN_RNS_CUH

#include "ff/fp2_rns.cuh"
#include "ec/g2_subgroup.cuh"

// Shared slots (ff/fp_rns.cuh) the calling warp must provide: three Fp2 products in flight.
#define G2_RNS_SLOTS 9

// Z = 0 (mod p) is the identity.
struct g2_rns_t {
    fp2_rns_t x, y, z;
};

// Multiples of p the formulas subtract with, lane form.
struct g2_rns_offsets {
    u32 p16, p48, p96, p192, p384, p432, p576, p624;
};

__device__ __forceinline__ g2_rns_offsets g2_rns_offsets_init(const rns_ctx& c) {
    return {rns_kp(16, c),  rns_kp(48, c),  rns_kp(96, c),  rns_kp(192, c),
            rns_kp(384, c), rns_kp(432, c), rns_kp(576, c), rns_kp(624, c)};
}

// One in Montgomery lane form (M mod p: the product of 1 and M^2 mod p), below 16p.
__device__ __forceinline__ u32 g2_rns_mont_one(const rns_ctx& c) {
    return rns_mul(rns_lane_const(RNS_ONE, c), rns_lane_const(RNS_M2P, c), c);
}

__device__ __forceinline__ void g2_rns_identity(g2_rns_t& r, const rns_ctx& c) {
    const u32 one = g2_rns_mont_one(c);
    r.x = r.y = {one, 0};
    r.z = {0, 0};
}

// r = 2p ("dbl-2009-l"). Outputs below (624, 432, 96) p for inputs below 2^17 p. The
// twist's order is odd, so no point has y = 0 and Z3 = 2YZ keeps the identity at Z = 0.
// r may alias p.
__device__ __forceinline__ void g2_rns_double(g2_rns_t& r, const g2_rns_t& p, const rns_ctx& c,
                                              const g2_rns_offsets& k) {
    fp2_rns_t o[3];
    {
        const fp2_rns_t a[3] = {p.x, p.y, p.y}, b[3] = {p.x, p.y, p.z};
        fp2_rns_mul_k<3>(o, a, b, k.p16, c);  // A = X^2, B = Y^2, W = YZ (each below 48)
    }
    const fp2_rns_t A = o[0], B = o[1], W = o[2];
    const fp2_rns_t E = fp2_rns_add(fp2_rns_dbl(A, c), A, c);  // 3A < 144
    {
        const fp2_rns_t a[3] = {E, B, fp2_rns_add(p.x, B, c)};
        fp2_rns_mul_k<3>(o, a, a, k.p16, c);  // F = E^2, C = B^2, T = (X + B)^2
    }
    const fp2_rns_t F = o[0], C = o[1], T = o[2];
    const fp2_rns_t D =
        fp2_rns_dbl(fp2_rns_sub(fp2_rns_sub(T, A, k.p48, c), C, k.p48, c), c);  // < 288
    const fp2_rns_t X3 = fp2_rns_sub(F, fp2_rns_dbl(D, c), k.p576, c);           // < 624
    const fp2_rns_t C8 = fp2_rns_dbl(fp2_rns_dbl(fp2_rns_dbl(C, c), c), c);      // < 384
    {
        const fp2_rns_t a[1] = {E}, b[1] = {fp2_rns_sub(D, X3, k.p624, c)};
        fp2_rns_mul_k<1>(o, a, b, k.p16, c);  // E (D - X3)
    }
    r.y = fp2_rns_sub(o[0], C8, k.p384, c);  // < 432
    r.z = fp2_rns_dbl(W, c);                 // 2YZ < 96
    r.x = X3;
}

// r = p + q, q affine ("madd-2007-bl"), with the exceptional cases of g2_jac_add_affine:
// p the identity returns q, p = q doubles, p = -q gives the identity. p below
// (624, 432, 96) p, q below 48p give outputs below (192, 144, 144) p, or those of a
// doubling. r may alias p.
__device__ __forceinline__ void g2_rns_add_affine(g2_rns_t& r, const g2_rns_t& p,
                                                  const fp2_rns_t& qx, const fp2_rns_t& qy,
                                                  const rns_ctx& c, const g2_rns_offsets& k) {
    fp2_rns_t o[3];
    {
        const fp2_rns_t a[2] = {p.z, qy}, b[2] = {p.z, p.z};
        fp2_rns_mul_k<2>(o, a, b, k.p16, c);  // Z1Z1, qy Z1
    }
    const fp2_rns_t z1z1 = o[0];
    {
        const fp2_rns_t a[2] = {qx, o[1]}, b[2] = {z1z1, z1z1};
        fp2_rns_mul_k<2>(o, a, b, k.p16, c);  // U2 = qx Z1Z1, S2 = qy Z1 Z1Z1
    }
    const fp2_rns_t h = fp2_rns_sub(o[0], p.x, k.p624, c);   // U2 - X1 < 672
    fp2_rns_t rr = fp2_rns_sub(o[1], p.y, k.p432, c);        // S2 - Y1 < 480
    const bool h_zero = fp2_rns_is_zero(h, c), rr_zero = fp2_rns_is_zero(rr, c);
    rr = fp2_rns_dbl(rr, c);  // r = 2(S2 - Y1) < 960
    {
        const fp2_rns_t zh = fp2_rns_add(p.z, h, c);
        const fp2_rns_t a[3] = {h, rr, zh};
        fp2_rns_mul_k<3>(o, a, a, k.p16, c);  // HH, r^2, (Z1 + H)^2
    }
    const fp2_rns_t hh = o[0], rr_sq = o[1];
    const fp2_rns_t z3 = fp2_rns_sub(fp2_rns_sub(o[2], z1z1, k.p48, c), hh, k.p48, c);  // < 144
    const fp2_rns_t i = fp2_rns_dbl(fp2_rns_dbl(hh, c), c);  // I = 4 HH < 192
    {
        const fp2_rns_t a[2] = {h, p.x}, b[2] = {i, i};
        fp2_rns_mul_k<2>(o, a, b, k.p16, c);  // J = H I, V = X1 I
    }
    const fp2_rns_t j = o[0], v = o[1];
    const fp2_rns_t x3 =
        fp2_rns_sub(fp2_rns_sub(rr_sq, j, k.p48, c), fp2_rns_dbl(v, c), k.p96, c);  // < 192
    {
        const fp2_rns_t a[2] = {rr, p.y}, b[2] = {fp2_rns_sub(v, x3, k.p192, c), j};
        fp2_rns_mul_k<2>(o, a, b, k.p16, c);  // r (V - X3), Y1 J
    }
    const fp2_rns_t y3 = fp2_rns_sub(o[0], fp2_rns_dbl(o[1], c), k.p96, c);  // < 144
    if (fp2_rns_is_zero(p.z, c)) {
        r.x = qx;
        r.y = qy;
        r.z = {g2_rns_mont_one(c), 0};
    } else if (h_zero) {
        if (rr_zero) {
            g2_rns_double(r, p, c, k);
        } else {
            g2_rns_identity(r, c);
        }
    } else {
        r.x = x3;
        r.y = y3;
        r.z = z3;
    }
}

// r = p + q, both Jacobian ("add-2007-bl"), with the exceptional cases of g2_jac_add: an
// identity operand returns the other, p = q doubles, p = -q gives the identity. Inputs
// below (624, 432, 144) p give outputs below (192, 144, 48) p, or those of a doubling or
// an input. r may alias p or q.
__device__ __forceinline__ void g2_rns_add(g2_rns_t& r, const g2_rns_t& p, const g2_rns_t& q,
                                           const rns_ctx& c, const g2_rns_offsets& k) {
    fp2_rns_t o[3];
    {
        const fp2_rns_t a[3] = {p.z, q.z, p.y}, b[3] = {p.z, q.z, q.z};
        fp2_rns_mul_k<3>(o, a, b, k.p16, c);  // Z1Z1, Z2Z2, Y1 Z2
    }
    const fp2_rns_t z1z1 = o[0], z2z2 = o[1], y1z2 = o[2];
    {
        const fp2_rns_t a[3] = {p.x, q.x, q.y}, b[3] = {z2z2, z1z1, p.z};
        fp2_rns_mul_k<3>(o, a, b, k.p16, c);  // U1, U2, Y2 Z1
    }
    const fp2_rns_t u1 = o[0], u2 = o[1];
    {
        const fp2_rns_t a[2] = {y1z2, o[2]}, b[2] = {z2z2, z1z1};
        fp2_rns_mul_k<2>(o, a, b, k.p16, c);  // S1, S2
    }
    const fp2_rns_t s1 = o[0];
    const fp2_rns_t h = fp2_rns_sub(u2, u1, k.p48, c);  // U2 - U1 < 96
    fp2_rns_t rr = fp2_rns_sub(o[1], s1, k.p48, c);     // S2 - S1 < 96
    const bool h_zero = fp2_rns_is_zero(h, c), rr_zero = fp2_rns_is_zero(rr, c);
    rr = fp2_rns_dbl(rr, c);  // r = 2(S2 - S1) < 192
    {
        const fp2_rns_t a[3] = {fp2_rns_dbl(h, c), rr, fp2_rns_add(p.z, q.z, c)};
        fp2_rns_mul_k<3>(o, a, a, k.p16, c);  // I = (2H)^2, r^2, (Z1 + Z2)^2
    }
    const fp2_rns_t i = o[0], rr_sq = o[1];
    const fp2_rns_t zz = fp2_rns_sub(fp2_rns_sub(o[2], z1z1, k.p48, c), z2z2, k.p48, c);  // < 144
    {
        const fp2_rns_t a[3] = {h, u1, zz}, b[3] = {i, i, h};
        fp2_rns_mul_k<3>(o, a, b, k.p16, c);  // J = H I, V = U1 I, Z3 = zz H
    }
    const fp2_rns_t j = o[0], v = o[1], z3 = o[2];
    const fp2_rns_t x3 =
        fp2_rns_sub(fp2_rns_sub(rr_sq, j, k.p48, c), fp2_rns_dbl(v, c), k.p96, c);  // < 192
    {
        const fp2_rns_t a[2] = {rr, s1}, b[2] = {fp2_rns_sub(v, x3, k.p192, c), j};
        fp2_rns_mul_k<2>(o, a, b, k.p16, c);  // r (V - X3), S1 J
    }
    const fp2_rns_t y3 = fp2_rns_sub(o[0], fp2_rns_dbl(o[1], c), k.p96, c);  // < 144
    if (fp2_rns_is_zero(q.z, c)) {
        r = p;
    } else if (fp2_rns_is_zero(p.z, c)) {
        r = q;
    } else if (h_zero) {
        if (rr_zero) {
            g2_rns_double(r, p, c, k);
        } else {
            g2_rns_identity(r, c);
        }
    } else {
        r.x = x3;
        r.y = y3;
        r.z = z3;
    }
}

// The psi constants of ec/g2_subgroup.cuh in Montgomery lane form: PSI_X = G2_PSI_X_C1 u,
// PSI_Y = G2_PSI_Y_C0 + G2_PSI_Y_C1 u (each below 16p).
struct g2_rns_psi_consts {
    u32 x1, y0, y1;
};

__device__ __forceinline__ u32 g2_rns_from_mont_const(const u32* mont, const rns_ctx& c) {
    fp_t v, w;
    fp_load_const(v, mont);
    fp_from_mont(w, v);
    return rns_from_words(w.l, c);
}

__device__ __forceinline__ g2_rns_psi_consts g2_rns_psi_consts_init(const rns_ctx& c) {
    return {g2_rns_from_mont_const(G2_PSI_X_C1, c), g2_rns_from_mont_const(G2_PSI_Y_C0, c),
            g2_rns_from_mont_const(G2_PSI_Y_C1, c)};
}

// (x, y) = psi(x, y) = (conj(x) PSI_X, conj(y) PSI_Y), affine, inputs below 48p, outputs
// below 48p. conj(x) (c1 u) = x1 c1 + x0 c1 u, as g2_affine_psi.
__device__ __forceinline__ void g2_rns_affine_psi(fp2_rns_t& x, fp2_rns_t& y,
                                                  const g2_rns_psi_consts& psi, const rns_ctx& c,
                                                  const g2_rns_offsets& k) {
    const fp2_rns_t a[2] = {{x.c1, x.c0}, {y.c0, rns_sub(0, y.c1, k.p48, c)}};
    const fp2_rns_t b[2] = {{psi.x1, 0}, {psi.y0, psi.y1}};
    fp2_rns_t o[2];
    fp2_rns_mul_k<2>(o, a, b, k.p16, c);
    x = o[0];
    y = o[1];
}

#endif
