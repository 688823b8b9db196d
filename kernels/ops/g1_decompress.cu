// Batch G1 decompression with full validation, one thread per point (ops/g1_decompress.cuh).
// Jacobian subgroup test and windowed square root, with no register cap: on the H200 a cap
// of 168 registers (3 blocks per SM) spills and measured slower at 2^20 points with the
// inlined field arithmetic (docs/results/decompress-sha256-h200, the kernel variants).
// Fp multiplication and squaring are inlined here (FP_INLINE_MUL): 8% faster at 2^20 points
// and 6% at 448 than one called copy of each, for about 10 s more of NVRTC at start-up
// (once; the cubin is cached). The MSM and pairing programs keep the called copies.
#define FP_INLINE_MUL
#include "ops/g1_decompress.cuh"

extern "C" __global__ void __launch_bounds__(128)
g1_decompress(const u8* __restrict__ in, u32 n, u8* __restrict__ out, u8* __restrict__ codes) {
    g1_decompress_batch<DECOMPRESS_JACOBIAN_WINDOW>(in, n, out, codes);
}
