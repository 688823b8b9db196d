// G1 of BLS12-381 in extended Jacobian "XYZZ" coordinates, as sppark's MSM buckets:
// x = X/ZZ, y = Y/ZZZ with ZZ^3 = ZZZ^2; the identity has ZZ = ZZZ = 0. Formulas
// add-2008-s, madd-2008-s, dbl-2008-s-1, mdbl-2008-s-1 (EFD, a = 0). These formulas are
// not complete, so the exceptional cases (identity operand, P == Q, P == -Q) are tested
// explicitly; G1 has no point of order 2 (odd cofactor), so doubling never meets y = 0.
#ifndef SOVEREIGN_EC_G1_XYZZ_CUH
#define SOVEREIGN_EC_G1_XYZZ_CUH

#include "ff/fp.cuh"
#include "ec/g1_jacobian.cuh"

struct g1_affine_t {
    fp_t x, y;
};

struct g1_xyzz_t {
    fp_t x, y, zz, zzz;
};

__device__ __forceinline__ void xyzz_set_identity(g1_xyzz_t& r) {
    fp_zero(r.x);
    fp_zero(r.y);
    fp_zero(r.zz);
    fp_zero(r.zzz);
}

__device__ __forceinline__ bool xyzz_is_identity(const g1_xyzz_t& p) { return fp_is_zero(p.zz); }

__device__ __forceinline__ void xyzz_from_affine(g1_xyzz_t& r, const g1_affine_t& a) {
    r.x = a.x;
    r.y = a.y;
    fp_load_const(r.zz, FP_ONE);
    fp_load_const(r.zzz, FP_ONE);
}

// r = 2a for an affine point a (mdbl-2008-s-1).
__device__ __forceinline__ void xyzz_double_affine(g1_xyzz_t& r, const g1_affine_t& a) {
    fp_t u, v, w, s, m, t;
    fp_add(u, a.y, a.y);
    fp_sqr(v, u);
    fp_mul(w, u, v);
    fp_mul(s, a.x, v);
    fp_sqr(m, a.x);
    fp_add(t, m, m);
    fp_add(m, t, m);
    fp_sqr(r.x, m);
    fp_add(t, s, s);
    fp_sub(r.x, r.x, t);
    fp_sub(t, s, r.x);
    fp_mul(t, m, t);
    fp_mul(s, w, a.y);
    fp_sub(r.y, t, s);
    r.zz = v;
    r.zzz = w;
}

// r = 2p (dbl-2008-s-1); the identity doubles to itself (ZZ stays 0). r may alias p.
__device__ __forceinline__ void xyzz_double(g1_xyzz_t& r, const g1_xyzz_t& p) {
    fp_t u, v, w, s, m, t, x3;
    fp_add(u, p.y, p.y);
    fp_sqr(v, u);
    fp_mul(w, u, v);
    fp_mul(s, p.x, v);
    fp_sqr(m, p.x);
    fp_add(t, m, m);
    fp_add(m, t, m);
    fp_sqr(x3, m);
    fp_add(t, s, s);
    fp_sub(x3, x3, t);
    fp_sub(t, s, x3);
    fp_mul(t, m, t);
    fp_mul(s, w, p.y);
    fp_sub(r.y, t, s);
    r.x = x3;
    fp_mul(r.zz, p.zz, v);
    fp_mul(r.zzz, p.zzz, w);
}

// r = p + a, a affine (madd-2008-s). r may alias p.
__device__ __forceinline__ void xyzz_add_affine(g1_xyzz_t& r, const g1_xyzz_t& p, const g1_affine_t& a) {
    if (xyzz_is_identity(p)) {
        xyzz_from_affine(r, a);
        return;
    }
    fp_t pd, rd;
    fp_mul(pd, a.x, p.zz);
    fp_sub(pd, pd, p.x);
    fp_mul(rd, a.y, p.zzz);
    fp_sub(rd, rd, p.y);
    if (fp_is_zero(pd)) {
        if (fp_is_zero(rd)) {
            xyzz_double_affine(r, a);
        } else {
            xyzz_set_identity(r);
        }
        return;
    }
    fp_t pp, ppp, q, t, x3;
    fp_sqr(pp, pd);
    fp_mul(ppp, pd, pp);
    fp_mul(q, p.x, pp);
    fp_sqr(x3, rd);
    fp_sub(x3, x3, ppp);
    fp_add(t, q, q);
    fp_sub(x3, x3, t);
    fp_sub(t, q, x3);
    fp_mul(t, rd, t);
    fp_mul(q, p.y, ppp);
    fp_sub(r.y, t, q);
    r.x = x3;
    fp_mul(r.zz, p.zz, pp);
    fp_mul(r.zzz, p.zzz, ppp);
}

// r = p + q (add-2008-s). r may alias p or q.
__device__ __forceinline__ void xyzz_add(g1_xyzz_t& r, const g1_xyzz_t& p, const g1_xyzz_t& q) {
    if (xyzz_is_identity(p)) {
        r = q;
        return;
    }
    if (xyzz_is_identity(q)) {
        r = p;
        return;
    }
    fp_t u1, u2, s1, s2;
    fp_mul(u1, p.x, q.zz);
    fp_mul(u2, q.x, p.zz);
    fp_mul(s1, p.y, q.zzz);
    fp_mul(s2, q.y, p.zzz);
    fp_sub(u2, u2, u1);  // P
    fp_sub(s2, s2, s1);  // R
    if (fp_is_zero(u2)) {
        if (fp_is_zero(s2)) {
            xyzz_double(r, p);
        } else {
            xyzz_set_identity(r);
        }
        return;
    }
    fp_t pp, ppp, t, x3, zz3, zzz3;
    fp_sqr(pp, u2);
    fp_mul(ppp, u2, pp);
    fp_mul(u1, u1, pp);  // Q
    fp_sqr(x3, s2);
    fp_sub(x3, x3, ppp);
    fp_add(t, u1, u1);
    fp_sub(x3, x3, t);
    fp_sub(t, u1, x3);
    fp_mul(t, s2, t);
    fp_mul(s1, s1, ppp);
    fp_mul(zz3, p.zz, q.zz);
    fp_mul(zz3, zz3, pp);
    fp_mul(zzz3, p.zzz, q.zzz);
    fp_mul(zzz3, zzz3, ppp);
    fp_sub(r.y, t, s1);
    r.x = x3;
    r.zz = zz3;
    r.zzz = zzz3;
}

// The same point in Jacobian coordinates (X*ZZ^2, Y*ZZZ^2, ZZZ), no inversion: x = X/ZZ =
// X*ZZ^2 / ZZZ^2 and y = Y/ZZZ = Y*ZZZ^2 / ZZZ^3. Z = 0 for the identity, as blst expects.
__device__ __forceinline__ void xyzz_to_jacobian(g1_jac_t& r, const g1_xyzz_t& p) {
    fp_t t;
    fp_sqr(t, p.zz);
    fp_mul(r.x, p.x, t);
    fp_sqr(t, p.zzz);
    fp_mul(r.y, p.y, t);
    r.z = p.zzz;
}

// 16-byte loads and stores of points and buckets: records of 96 and 192 bytes in areas
// aligned to 256 bytes are 16-byte aligned, but the structs only promise 4 bytes, for which
// the compiler would issue 24 or 48 separate 4-byte accesses.
__device__ __forceinline__ void load_fp3(fp_t& a, const uint4* __restrict__ p) {
#pragma unroll
    for (int v = 0; v < 3; v++) {
        const uint4 w = p[v];
        a.l[4 * v] = w.x;
        a.l[4 * v + 1] = w.y;
        a.l[4 * v + 2] = w.z;
        a.l[4 * v + 3] = w.w;
    }
}

__device__ __forceinline__ void store_fp3(uint4* __restrict__ p, const fp_t& a) {
#pragma unroll
    for (int v = 0; v < 3; v++)
        p[v] = make_uint4(a.l[4 * v], a.l[4 * v + 1], a.l[4 * v + 2], a.l[4 * v + 3]);
}

__device__ __forceinline__ void load_affine(g1_affine_t& a, const g1_affine_t* __restrict__ points,
                                            u32 i) {
    const uint4* p = reinterpret_cast<const uint4*>(points) + (u64)i * 6;
    load_fp3(a.x, p);
    load_fp3(a.y, p + 3);
}

__device__ __forceinline__ void load_xyzz(g1_xyzz_t& r, const g1_xyzz_t* __restrict__ at) {
    const uint4* p = reinterpret_cast<const uint4*>(at);
    load_fp3(r.x, p);
    load_fp3(r.y, p + 3);
    load_fp3(r.zz, p + 6);
    load_fp3(r.zzz, p + 9);
}

__device__ __forceinline__ void store_xyzz(g1_xyzz_t* __restrict__ at, const g1_xyzz_t& r) {
    uint4* p = reinterpret_cast<uint4*>(at);
    store_fp3(p, r.x);
    store_fp3(p + 3, r.y);
    store_fp3(p + 6, r.zz);
    store_fp3(p + 9, r.zzz);
}

#endif
