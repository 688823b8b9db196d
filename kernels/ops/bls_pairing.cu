// Products of pairings as Gt values, for the tests' comparison with ic_bls12_381 and for
// exact per-item checks (e(sig, -g2) * e(H(m), pk) of one item is a group of two pairs).
#include "common.cuh"
#include "pairing/bls_io.cuh"
#include "pairing/final_exp.cuh"

// Gt values of products of pairings: group g is the pairs [starts[g], starts[g + 1]),
// each 288 bytes (G1 then G2), and gets prod e(P, Q) as ic_bls12_381's Gt::to_bytes
// (576 bytes) in out. Pairs with an identity point contribute 1, as in ic_bls12_381.
// Two terms share one multi-Miller loop; longer groups multiply Miller values in pairs.
extern "C" __global__ void __launch_bounds__(64)
bls_pairing_products(const u8* __restrict__ pairs, const u32* __restrict__ starts, u32 groups,
                     u8* __restrict__ out) {
    const u32 g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= groups) return;
    fp12_t acc, m;
    fp12_one(acc);
    pairing_term_t terms[2];
    int n_terms = 0;
    for (u32 i = starts[g]; i < starts[g + 1]; i++) {
        const u8* pair = pairs + (u64)i * BLS_PAIR_BYTES;
        g1_proj_t p;
        load_g1(p, pair);
        if (make_term(terms[n_terms], p, pair + 96)) n_terms++;
        if (n_terms == 2) {
            miller_loop_multi(m, terms, n_terms);
            fp12_mul(acc, acc, m);
            n_terms = 0;
        }
    }
    if (n_terms > 0) {
        miller_loop_multi(m, terms, n_terms);
        fp12_mul(acc, acc, m);
    }
    final_exponentiation(acc, acc);
    fp12_to_bytes(out + (u64)g * 576, acc);
}
