// Benchmark-only instances of batch G1 decompression (ops/g1_decompress.cuh): the
// session-1 formulas (complete projective, plain square root) and the production formulas
// under two register caps. Same arguments as g1_decompress; never used by the engine.
#include "ops/g1_decompress.cuh"

#define G1_DECOMPRESS_INSTANCE(name, method, min_blocks)                                     \
    extern "C" __global__ void __launch_bounds__(128, min_blocks)                            \
    name(const u8* __restrict__ in, u32 n, u8* __restrict__ out, u8* __restrict__ codes) { \
        g1_decompress_batch<method>(in, n, out, codes);                                      \
    }

G1_DECOMPRESS_INSTANCE(g1_decompress_projective_plain, DECOMPRESS_PROJECTIVE_PLAIN, 1)
G1_DECOMPRESS_INSTANCE(g1_decompress_jacobian_lb3, DECOMPRESS_JACOBIAN_WINDOW, 3)

G1_DECOMPRESS_INSTANCE(g1_decompress_jacobian_lb4, DECOMPRESS_JACOBIAN_WINDOW, 4)
