// Benchmark-only instances of batch G1 decompression (ops/g1_decompress.cuh), never used
// by the engine. The bench compiles this program twice, with the field product and square
// called and inlined (FP_INLINE_MUL of ff/fp.cuh defined ahead of it), and measures each
// under two register budgets: none (2 blocks of 128 threads per SM at up to 255 registers)
// and 168 registers (3 blocks per SM).
#include "ops/g1_decompress.cuh"

#define G1_DECOMPRESS_INSTANCE(name, method, min_blocks)                                     \
    extern "C" __global__ void __launch_bounds__(128, min_blocks)                            \
    name(const u8* __restrict__ in, u32 n, u8* __restrict__ out, u8* __restrict__ codes) { \
        g1_decompress_batch<method>(in, n, out, codes);                                      \
    }

G1_DECOMPRESS_INSTANCE(g1_decompress_lb1, DECOMPRESS_JACOBIAN_WINDOW, 1)
G1_DECOMPRESS_INSTANCE(g1_decompress_lb3, DECOMPRESS_JACOBIAN_WINDOW, 3)
