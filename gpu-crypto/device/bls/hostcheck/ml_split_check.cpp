// Host run (g++) of kernels/ops/bls_verify.cu: the cut Miller loops of bls_rlc_quarters
// (miller_loop_head / miller_loop_tail) multiply to the uncut loops of bls_rlc_halves bit
// for bit, on random inputs (the identity is algebraic: no curve points needed). See
// check.sh. Exit status: the number of mismatches.
#include "ops/bls_verify.cu"
#include <cstdio>
#include <cstring>
#include <random>

static std::mt19937_64 rng(7);

// 48 random big-endian bytes below p (top nibble clear), no flag bits.
static void random_fp(u8* b) {
    for (int i = 0; i < 48; i++) b[i] = (u8)rng();
    b[0] &= 0x0f;
}

int main() {
    int fails = 0;
    for (int trial = 0; trial < 3; trial++) {
        u8 item[BLS_ITEM_BYTES], neg_g2[192];
        for (int k = 0; k < 8; k++) random_fp(item + 48 * k);  // signature, message, key
        for (int k = 0; k < 16; k++) item[384 + k] = (u8)rng();  // scalar
        for (int k = 0; k < 4; k++) random_fp(neg_g2 + 48 * k);
        fp12_t halves[2], quarters[4];
        blockIdx.x = 0;
        for (u32 t = 0; t < 2; t++) {
            threadIdx.x = t;
            bls_rlc_halves(item, 1, neg_g2, halves);
        }
        // Leaves 0 and 1 (threads 0, 1 heads; 32, 33 tails) of one item.
        for (u32 t : {0u, 1u, 32u, 33u}) {
            threadIdx.x = t;
            bls_rlc_quarters(item, 1, neg_g2, quarters);
        }
        for (int side = 0; side < 2; side++) {
            fp12_t prod;
            fp12_mul(prod, quarters[2 * side], quarters[2 * side + 1]);
            const bool eq = memcmp(&prod, &halves[side], sizeof(fp12_t)) == 0;
            printf("trial %d, %s side: head * tail %s the uncut loop\n", trial,
                   side ? "signature" : "message", eq ? "equals" : "DIFFERS FROM");
            fails += !eq;
        }
    }
    return fails;
}
