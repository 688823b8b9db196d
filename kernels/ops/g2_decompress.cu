// Batch G2 decompression with full validation, one thread per point
// (ops/g2_decompress.cuh): the norm-method square root in Fp2 (ff/fp2_sqrt.cuh) and the
// psi endomorphism subgroup test in Jacobian coordinates (ec/g2_subgroup.cuh).
// Fp multiplication and squaring are inlined into the called Fp2 product, square and
// exponentiation (FP_INLINE_MUL), as in ops/g1_decompress.cu.
#define FP_INLINE_MUL
#include "ops/g2_decompress.cuh"

extern "C" __global__ void __launch_bounds__(128)
g2_decompress(const u8* __restrict__ in, u32 n, u8* __restrict__ out, u8* __restrict__ codes) {
    g2_decompress_batch(in, n, out, codes);
}
