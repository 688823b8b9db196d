// ec/g2_subgroup.cuh's membership test, psi(P) == [z]P, with one point per warp in the
// residue number system (ec/g2_jacobian_rns.cuh): [|z|]P by the same 63 doublings and 5
// mixed additions, each step's products interleaved.
#ifndef SOVEREIGN_EC_G2_SUBGROUP_RNS_CUH
#define SOVEREIGN_EC_G2_SUBGROUP_RNS_CUH

#include "ec/g2_jacobian_rns.cuh"

// r = [|z|](x, y), left to right. x and y below 48p. Every addition follows a doubling,
// so its Jacobian input is within g2_rns_add_affine's bounds.
__device__ __forceinline__ void g2_rns_mul_by_abs_z(g2_rns_t& r, const fp2_rns_t& x,
                                                    const fp2_rns_t& y, const rns_ctx& c,
                                                    const g2_rns_offsets& k) {
    g2_rns_t acc;
    acc.x = x;
    acc.y = y;
    acc.z = {g2_rns_mont_one(c), 0};
#pragma unroll 1
    for (int bit = 62; bit >= 0; bit--) {
        g2_rns_double(acc, acc, c, k);
        if ((BLS_Z_ABS >> bit) & 1) g2_rns_add_affine(acc, acc, x, y, c, k);
    }
    r = acc;
}

// (x, y) is an affine point of the twist (coefficients below 48p), not the identity:
// [|z|]P = (X, Y, Z) must equal -psi(P) = (conj(x) PSI_X, -conj(y) PSI_Y), i.e. Z != 0,
// X = psi_x Z^2 and Y + psi_y Z^3 = 0, as g2_affine_is_torsion_free.
__device__ __forceinline__ bool g2_rns_affine_is_torsion_free(const fp2_rns_t& x,
                                                              const fp2_rns_t& y,
                                                              const rns_ctx& c,
                                                              const g2_rns_offsets& k) {
    g2_rns_t q;
    g2_rns_mul_by_abs_z(q, x, y, c, k);
    if (fp2_rns_is_zero(q.z, c)) return false;
    fp2_rns_t psi_x = x, psi_y = y;
    g2_rns_affine_psi(psi_x, psi_y, g2_rns_psi_consts_init(c), c, k);  // < 48p
    fp2_rns_t zz, o[2];
    fp2_rns_mul_k<1>(&zz, &q.z, &q.z, k.p16, c);  // Z^2
    {
        const fp2_rns_t a[2] = {zz, psi_x}, b[2] = {q.z, zz};
        fp2_rns_mul_k<2>(o, a, b, k.p16, c);  // Z^3, psi_x Z^2
    }
    const fp2_rns_t lhs_x = o[1];
    fp2_rns_mul_k<1>(o, &psi_y, &o[0], k.p16, c);  // psi_y Z^3
    return fp2_rns_is_zero(fp2_rns_sub(lhs_x, q.x, k.p624, c), c) &&
           fp2_rns_is_zero(fp2_rns_add(q.y, o[0], c), c);
}

#endif
