// BLS signature batch verification kernels (signatures in G1, public keys in G2).
//
// Random-linear-combination batch (as blst's batch verification): for item i with
// signature s_i, message point H_i, public key pk_i and a random 128-bit r_i,
//   prod_i e(r_i H_i, pk_i) * e(sum_i r_i s_i, -g2) == 1.
// `bls_rlc_leaves` computes per item the Miller loop value f_i = ML(r_i H_i, pk_i) and the
// point r_i s_i; `bls_tree_level` builds a tree of products of f and sums of r s (one
// launch per level); `bls_check_nodes` decides any tree nodes: node f times
// ML(node sum, -g2), final exponentiation, == 1. A leaf's check is the exact check of its
// item (r_i is invertible mod the group order), so the host bisects a failing node down to
// leaves and every verdict is per item. `bls_rlc_halves` and `bls_rlc_quarters` are the
// two- and four-threads-per-item forms.
#include "common.cuh"
#include "pairing/bls_io.cuh"
#include "pairing/final_exp.cuh"

extern "C" __global__ void __launch_bounds__(64)
bls_rlc_leaves(const u8* __restrict__ items, u32 n, fp12_t* __restrict__ f_out,
               g1_proj_t* __restrict__ s_out) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const u8* item = items + (u64)i * BLS_ITEM_BYTES;
    const u8* scalar = item + 384;
    g1_proj_t sig, msg;
    load_g1(sig, item);
    load_g1(msg, item + 96);
    g1_mul_u128(sig, sig, scalar);
    g1_mul_u128(msg, msg, scalar);
    s_out[i] = sig;
    pairing_term_t term;
    fp12_t f;
    const int n_terms = make_term(term, msg, item + 192) ? 1 : 0;
    miller_loop_multi(f, &term, n_terms);
    f_out[i] = f;
}

// One side of item side / 2's pairing check as a Miller-loop term: side 2i is the message
// side (r_i H_i, pk_i), side 2i + 1 the signature side (r_i s_i, -g2). False when the
// term is the identity (its Miller loop is 1).
__device__ __forceinline__ bool bls_side_term(pairing_term_t& term, const u8* items, u32 side,
                                              const u8* neg_g2) {
    const u8* item = items + (u64)(side >> 1) * BLS_ITEM_BYTES;
    const bool signature_side = side & 1;
    g1_proj_t p;
    load_g1(p, signature_side ? item : item + 96);
    g1_mul_u128(p, p, item + 384);
    return make_term(term, p, signature_side ? neg_g2 : item + 192);
}

// The same combination with two threads per item (latency: half a Miller loop chain per
// thread at batch sizes that leave the GPU idle): thread 2i computes ML(r_i H_i, pk_i),
// thread 2i + 1 computes ML(r_i s_i, -g2); their product is item i's factor, so the tree's
// level 1 holds the items and a check is a final exponentiation only (s unused).
extern "C" __global__ void __launch_bounds__(64)
bls_rlc_halves(const u8* __restrict__ items, u32 n, const u8* __restrict__ neg_g2,
               fp12_t* __restrict__ f_out) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= 2 * n) return;
    pairing_term_t term;
    fp12_t f;
    const int n_terms = bls_side_term(term, items, t, neg_g2) ? 1 : 0;
    miller_loop_multi(f, &term, n_terms);
    f_out[t] = f;
}

// Four threads per item: each Miller loop of bls_rlc_halves cut in two
// (miller_loop_head / miller_loop_tail), for batches that leave most of the GPU idle.
// Head and tail threads run different code, so they sit in different warps: threads
// [64g, 64g + 32) are the heads and [64g + 32, 64g + 64) the tails of leaves
// 32g .. 32g + 31, leaf 2i being item i's message side and 2i + 1 its signature side.
// f_out[2 leaf + part]: item i's four factors are f_out[4i .. 4i + 3], so the tree's
// level 2 holds the items and a check is a final exponentiation only.
extern "C" __global__ void __launch_bounds__(64)
bls_rlc_quarters(const u8* __restrict__ items, u32 n, const u8* __restrict__ neg_g2,
                 fp12_t* __restrict__ f_out) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    const u32 leaf = (t >> 6) * 32 + (t & 31);
    const u32 part = (t >> 5) & 1;  // 0: head, 1: tail; uniform in a warp
    if (leaf >= 2 * n) return;
    pairing_term_t term;
    fp12_t f;
    if (bls_side_term(term, items, leaf, neg_g2)) {
        if (part == 0)
            miller_loop_head(f, term);
        else
            miller_loop_tail(f, term);
    } else {
        fp12_one(f);
    }
    f_out[2 * leaf + part] = f;
}

// One level of the combination tree: node j of the output is the product (f) and sum (s)
// of nodes 2j and 2j + 1 of the input; an odd last node is carried up unchanged.
extern "C" __global__ void __launch_bounds__(64)
bls_tree_level(const fp12_t* __restrict__ f_in, const g1_proj_t* __restrict__ s_in, u32 n_in,
               fp12_t* __restrict__ f_out, g1_proj_t* __restrict__ s_out) {
    const u32 j = blockIdx.x * blockDim.x + threadIdx.x;
    const u32 n_out = (n_in + 1) / 2;
    if (j >= n_out) return;
    if (2 * j + 1 < n_in) {
        fp12_t a = f_in[2 * j], b = f_in[2 * j + 1];
        fp12_mul(a, a, b);
        f_out[j] = a;
        if (s_in != nullptr) {
            g1_proj_t p = s_in[2 * j], q = s_in[2 * j + 1];
            g1_add_shared(p, p, q);
            s_out[j] = p;
        }
    } else {
        f_out[j] = f_in[2 * j];
        if (s_in != nullptr) s_out[j] = s_in[2 * j];
    }
}

// verdicts[k] = 1 when f[nodes[k]] * ML(s[nodes[k]], -g2), finally exponentiated, is one;
// 0 otherwise. neg_g2: the 192-byte encoding of -g2. With s null (two threads per item)
// the signature side is already in f: the check is the final exponentiation alone.
extern "C" __global__ void __launch_bounds__(64)
bls_check_nodes(const fp12_t* __restrict__ f, const g1_proj_t* __restrict__ s,
                const u32* __restrict__ nodes, u32 count, const u8* __restrict__ neg_g2,
                u8* __restrict__ verdicts) {
    const u32 k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= count) return;
    const u32 node = nodes[k];
    fp12_t acc = f[node];
    if (s != nullptr) {
        pairing_term_t term;
        fp12_t m;
        const g1_proj_t sum = s[node];
        const int n_terms = make_term(term, sum, neg_g2) ? 1 : 0;
        miller_loop_multi(m, &term, n_terms);
        fp12_mul(acc, acc, m);
    }
    final_exponentiation(acc, acc);
    verdicts[k] = fp12_is_one(acc) ? 1 : 0;
}
