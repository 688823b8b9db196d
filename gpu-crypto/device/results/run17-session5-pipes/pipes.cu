// Experiment (session 5, issue 3): issue cost per warp instruction on one H200 scheduler
// of the operations a field product is made of: 32 x 32 -> 64 multiply-add (IMAD.WIDE.U32),
// the carry-chained pair a one-lane Montgomery row uses (mad.lo.cc + madc.hi.cc), FP64 FMA
// (DFMA), a shuffle, and IMAD.WIDE and DFMA interleaved (separate pipes or not).
// One warp per block, 1 or 4 blocks per SM; 16 independent chains per lane so that
// dependency latency hides and issue is what is measured; then 1 chain for latency.
// Every operand depends on the chain's previous result, so ptxas cannot hoist a product
// out of the loop (a first version with loop-invariant operands let it: run17's first
// call measured the invariant form and is not kept). The carry-chained pair is one chain
// by nature (the carry flag), as in a one-lane Montgomery row.
#include <cstdio>
#include <cstdlib>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)
typedef unsigned int u32; typedef unsigned long long u64;
#define ITERS 4096
#define CH 16

extern "C" __global__ void imad_wide(u64* out, u64* cyc, u32 chains) {
    u64 acc[CH]; u32 b = threadIdx.x * 13 + 5;
    for (int c = 0; c < CH; c++) acc[c] = c + 1;
    __syncwarp(); u64 t0 = clock64();
    for (int i = 0; i < ITERS; i++) {
        if (chains == 1) { for (int c = 0; c < CH; c++) asm volatile("mad.wide.u32 %0, %1, %2, %0;" : "+l"(acc[0]) : "r"((u32)acc[0]), "r"(b + c)); }
        else { for (int c = 0; c < CH; c++) asm volatile("mad.wide.u32 %0, %1, %2, %0;" : "+l"(acc[c]) : "r"((u32)acc[c]), "r"(b)); }
    }
    u64 t1 = clock64(); u64 s = 0; for (int c = 0; c < CH; c++) s += acc[c];
    out[blockIdx.x * 32 + threadIdx.x] = s; if (threadIdx.x == 0) cyc[blockIdx.x] = t1 - t0;
}

extern "C" __global__ void mad_cc_pair(u64* out, u64* cyc, u32 chains) {
    u32 lo[CH], hi[CH]; u32 b = threadIdx.x * 13 + 5;
    for (int c = 0; c < CH; c++) { lo[c] = c; hi[c] = 0; }
    __syncwarp(); u64 t0 = clock64();
    for (int i = 0; i < ITERS; i++) {
        // one carry chain through all 16 pairs (as a row of the one-lane product)
        asm volatile("mad.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;" : "+r"(lo[0]), "+r"(hi[0]) : "r"(hi[CH - 1]), "r"(b));
        for (int c = 1; c < CH; c++) asm volatile("madc.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;" : "+r"(lo[c]), "+r"(hi[c]) : "r"(lo[c - 1]), "r"(b));
        asm volatile("addc.u32 %0, %0, 0;" : "+r"(hi[CH - 1]));
    }
    u64 t1 = clock64(); u64 s = 0; for (int c = 0; c < CH; c++) s += lo[c] + hi[c];
    out[blockIdx.x * 32 + threadIdx.x] = s; if (threadIdx.x == 0) cyc[blockIdx.x] = t1 - t0;
}

extern "C" __global__ void dfma(u64* out, u64* cyc, u32 chains) {
    double acc[CH]; double a = 1.0 + threadIdx.x * 1e-9, b = 0.999999;
    for (int c = 0; c < CH; c++) acc[c] = c;
    __syncwarp(); u64 t0 = clock64();
    for (int i = 0; i < ITERS; i++) {
        if (chains == 1) { for (int c = 0; c < CH; c++) asm volatile("fma.rz.f64 %0, %0, %1, %2;" : "+d"(acc[0]) : "d"(b), "d"(a)); }
        else { for (int c = 0; c < CH; c++) asm volatile("fma.rz.f64 %0, %0, %1, %2;" : "+d"(acc[c]) : "d"(b), "d"(a)); }
    }
    u64 t1 = clock64(); double s = 0; for (int c = 0; c < CH; c++) s += acc[c];
    out[blockIdx.x * 32 + threadIdx.x] = (u64)s; if (threadIdx.x == 0) cyc[blockIdx.x] = t1 - t0;
}

extern "C" __global__ void mixed(u64* out, u64* cyc, u32 chains) {
    u64 acc[CH / 2]; double dacc[CH / 2]; u32 b = threadIdx.x * 13 + 5;
    double da = 1.0 + threadIdx.x * 1e-9, db = 0.999999;
    for (int c = 0; c < CH / 2; c++) { acc[c] = c + 1; dacc[c] = c; }
    __syncwarp(); u64 t0 = clock64();
    for (int i = 0; i < ITERS; i++) {
        for (int c = 0; c < CH / 2; c++) {
            asm volatile("mad.wide.u32 %0, %1, %2, %0;" : "+l"(acc[c]) : "r"((u32)acc[c]), "r"(b));
            asm volatile("fma.rz.f64 %0, %0, %1, %2;" : "+d"(dacc[c]) : "d"(db), "d"(da));
        }
    }
    u64 t1 = clock64(); u64 s = 0; for (int c = 0; c < CH / 2; c++) s += acc[c] + (u64)dacc[c];
    out[blockIdx.x * 32 + threadIdx.x] = s; if (threadIdx.x == 0) cyc[blockIdx.x] = t1 - t0;
}

extern "C" __global__ void shfl(u64* out, u64* cyc, u32 chains) {
    u32 v[CH]; for (int c = 0; c < CH; c++) v[c] = threadIdx.x + c;
    __syncwarp(); u64 t0 = clock64();
    for (int i = 0; i < ITERS; i++) {
        if (chains == 1) { for (int c = 0; c < CH; c++) v[0] = __shfl_sync(0xffffffffu, v[0], (threadIdx.x + c) & 31); }
        else { for (int c = 0; c < CH; c++) v[c] = __shfl_sync(0xffffffffu, v[c], (threadIdx.x + 1) & 31); }
    }
    u64 t1 = clock64(); u64 s = 0; for (int c = 0; c < CH; c++) s += v[c];
    out[blockIdx.x * 32 + threadIdx.x] = s; if (threadIdx.x == 0) cyc[blockIdx.x] = t1 - t0;
}

typedef void (*kern)(u64*, u64*, u32);
int main() {
    u64 *d_out, *d_cyc; CK(cudaMalloc(&d_out, 1 << 22)); CK(cudaMalloc(&d_cyc, 1 << 16));
    struct { const char* name; kern k; const char* unit; } ks[] = {
        {"mad.wide.u32, 64-bit addend", imad_wide, "op"},
        {"madc.lo.cc + madc.hi.cc pair", mad_cc_pair, "pair"},
        {"fma.rz.f64", dfma, "op"},
        {"mad.wide.u32 + fma.rz.f64 alt.", mixed, "op"},
        {"shfl.sync.idx", shfl, "op"},
    };
    printf("cycles per PTX operation of one warp (clock64, %d iterations x %d, median of the blocks)\n", ITERS, CH);
    for (auto& k : ks) {
        for (u32 chains : {16u, 1u}) {
            if (k.k == mad_cc_pair || k.k == mixed) { if (chains == 1) continue; }
            for (int blocks_per_sm : {1, 4}) {
                const int grid = 132 * blocks_per_sm;
                k.k<<<grid, 32>>>(d_out, d_cyc, chains); CK(cudaDeviceSynchronize());
                unsigned long long cyc[528]; CK(cudaMemcpy(cyc, d_cyc, grid * 8, cudaMemcpyDeviceToHost));
                // median
                for (int i = 0; i < grid; i++) for (int j = i + 1; j < grid; j++) if (cyc[j] < cyc[i]) { auto t = cyc[i]; cyc[i] = cyc[j]; cyc[j] = t; }
                double per = (double)cyc[grid / 2] / ((double)ITERS * CH);
                printf("%-30s %s, %d warp(s) per SM: %.2f cycles per %s\n", k.name, chains == 16 ? "16 independent chains" : "1 dependent chain    ", blocks_per_sm, per, k.unit);
            }
        }
    }
    return 0;
}
