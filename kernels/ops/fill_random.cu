// Fills a device buffer with pseudo-random words (splitmix64 of the index and a seed), so
// benchmarks hash data that is neither zero nor uploaded from the host.
#include "common.cuh"

extern "C" __global__ void fill_random(u64* __restrict__ out, u64 words, u64 seed) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < words;
         i += (u64)gridDim.x * blockDim.x) {
        u64 z = seed + (i + 1) * 0x9e3779b97f4a7c15ull;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        out[i] = z ^ (z >> 31);
    }
}
