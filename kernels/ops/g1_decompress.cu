// Batch G1 decompression with full validation, one thread per point (ops/g1_decompress.cuh).
// Jacobian subgroup test and windowed square root, with no register cap: on the H200 a cap
// of 168 or 128 registers (3 or 4 blocks per SM) spills and gains at most 1% throughput at
// 2^20 points while costing 28% latency at 448 (docs/benchmarks.md, run5).
#include "ops/g1_decompress.cuh"

extern "C" __global__ void __launch_bounds__(128)
g1_decompress(const u8* __restrict__ in, u32 n, u8* __restrict__ out, u8* __restrict__ codes) {
    g1_decompress_batch<DECOMPRESS_JACOBIAN_WINDOW>(in, n, out, codes);
}
