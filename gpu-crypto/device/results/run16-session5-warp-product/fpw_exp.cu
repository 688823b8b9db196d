// Experiment (session 5, issue 3): the warp-cooperative Fp product of fp_warp.cuh (and its
// first version, mul_v1.inc) against the one-lane fp_mul of kernels/ff/fp.cuh: results
// compared item by item, then the latency of dependent squaring chains and of a whole
// square root. Built and run by run.sh (nvcc on the device).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <random>
#include "fp_warp.cuh"
#include "ff/fp_sqrt.cuh"
#include "mul_v1.inc"

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)

__device__ __forceinline__ fp_t load_int(const u32* in, int w) { fp_t x; for (int i = 0; i < 12; i++) x.l[i] = in[w * 12 + i]; return x; }

// Per warp: a, b canonical; r = ((a*b)^2 * a ...) K rounds, both ways.
extern "C" __global__ void check(const u32* in_a, const u32* in_b, u32 n, u32 rounds, u32* out_ref, u32* out_w) {
    __shared__ uint4 scratch[4][FPW_SCRATCH_WORDS / 4];
    const u32 warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const u32 w = blockIdx.x * 4 + warp;
    if (w >= n) return;
    fpw_ctx c; fpw_ctx_init(c, scratch[warp]);
    fp_t a = load_int(in_a, w), b = load_int(in_b, w);
    // reference on every lane (same values)
    fp_t am, bm; fp_to_mont(am, a); fp_to_mont(bm, b);
    u32 wa = fpw_from_integer(a, c), wb = fpw_from_integer(b, c);
    for (u32 r = 0; r < rounds; r++) {
        fp_mul(am, am, bm); fp_sqr(bm, bm); fp_add(bm, bm, am);
        wa = fpw_mul(wa, wb, c); wb = fpw_sqr(wb, c);
        // add in warp form: limbs below 2^30, fine for one product
        wb = wb + wa;
        wb = fpw_carry((u64)wb);
    }
    fp_t ra; fp_from_mont(ra, am);
    fp_t rb; fp_from_mont(rb, bm);
    fp_t wra = fpw_to_canonical(wa, c);
    fp_t wrb = fpw_to_canonical(wb, c);
    if (lane == 0) for (int i = 0; i < 12; i++) { out_ref[w * 24 + i] = ra.l[i]; out_ref[w * 24 + 12 + i] = rb.l[i]; out_w[w * 24 + i] = wra.l[i]; out_w[w * 24 + 12 + i] = wrb.l[i]; }
}

extern "C" __global__ void chain_warp(u32 steps, u32* out) {
    __shared__ uint4 scratch[4][FPW_SCRATCH_WORDS / 4];
    const u32 warp = threadIdx.x >> 5;
    fpw_ctx c; fpw_ctx_init(c, scratch[warp]);
    u32 a = fpw_lane() < 14 ? (0x1234567u + threadIdx.x * 77777u + blockIdx.x) & FPW_MASK : 0;
    if (fpw_lane() == 13) a &= 0xffff;
#pragma unroll 1
    for (u32 s = 0; s < steps; s++) a = fpw_sqr(a, c);
    out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

extern "C" __global__ void chain_warp_v1(u32 steps, u32* out) {
    __shared__ uint4 scratch[4][FPW_SCRATCH_WORDS / 4];
    const u32 warp = threadIdx.x >> 5;
    fpw_ctx c; fpw_ctx_init(c, scratch[warp]);
    u32 a = fpw_lane() < 14 ? (0x1234567u + threadIdx.x * 77777u + blockIdx.x) & FPW_MASK : 0;
    if (fpw_lane() == 13) a &= 0xffff;
#pragma unroll 1
    for (u32 s = 0; s < steps; s++) a = fpw_mul_v1(a, a, c);
    out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

extern "C" __global__ void chain_lane(u32 steps, u32* out) {
    fp_t a; for (int i = 0; i < 12; i++) a.l[i] = (threadIdx.x + 1) * 0x9e3779b9u + 0x7f4a7c15u * i; a.l[11] &= 0x0fffffff;
#pragma unroll 1
    for (u32 s = 0; s < steps; s++) fp_sqr(a, a);
    out[blockIdx.x * blockDim.x + threadIdx.x] = a.l[0];
}


__device__ __forceinline__ u32 fpw_pow_sqrt(u32 a, const fpw_ctx& c) {
    const u32 a2 = fpw_sqr(a, c);
    const u32 a3 = fpw_mul(a2, a, c);
    const u32 a5 = fpw_mul(a3, a2, c);
    const u32 a7 = fpw_mul(a5, a2, c);
    u32 acc = a3;
#pragma unroll 1
    for (int s = 0; s < FP_SQRT_W3_STEPS; s++) {
        const u32 step = FP_SQRT_W3[s];
#pragma unroll 1
        for (u32 k = step >> 3; k != 0; k--) acc = fpw_sqr(acc, c);
        const u32 digit = step & 7;
        acc = fpw_mul(acc, digit == 1 ? a : digit == 3 ? a3 : digit == 5 ? a5 : a7, c);
    }
    return acc;
}

// Per warp: rhs = x^3 + 4, root both ways; out: canonical root (lane way) / (warp way) and flags.
extern "C" __global__ void sqrt_check(const u32* in_a, u32 n, u32* out_ref, u32* out_w, u64* cycles) {
    __shared__ uint4 scratch[4][FPW_SCRATCH_WORDS / 4];
    const u32 warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const u32 w = blockIdx.x * 4 + warp;
    if (w >= n) return;
    fpw_ctx c; fpw_ctx_init(c, scratch[warp]);
    fp_t x = load_int(in_a, w);
    fp_t xm, rhs, b; fp_to_mont(xm, x); fp_sqr(rhs, xm); fp_mul(rhs, rhs, xm); fp_load_const(b, FP_B); fp_add(rhs, rhs, b);
    fp_t y; bool ok = false;
    if (out_ref) { ok = fp_sqrt(y, rhs); fp_from_mont(y, y); }
    const u64 t0 = clock64();
    const u32 wx = fpw_from_integer(x, c);
    u32 wr = fpw_mul(fpw_sqr(wx, c), wx, c);
    wr = fpw_carry((u64)wr + fpw_const(FPW_B4));
    const u32 wy = fpw_pow_sqrt(wr, c);
    const fp_t wyc = fpw_to_canonical(wy, c);
    const fp_t chk = fpw_to_canonical(fpw_sqr(wy, c), c);
    const fp_t rc = fpw_to_canonical(wr, c);
    const bool wok = fp_eq(chk, rc);
    const u64 t1 = clock64();
    if (lane == 0) { for (int i = 0; i < 12; i++) { if (out_ref) out_ref[w * 13 + i] = y.l[i]; out_w[w * 13 + i] = wyc.l[i]; }
        if (out_ref) out_ref[w * 13 + 12] = ok; out_w[w * 13 + 12] = wok; cycles[w] = t1 - t0; }
}

int main() {
    const u32 n = 2048, rounds = 20;
    std::mt19937_64 rng(42);
    // p as words
    const u32 P[12] = {0xffffaaab,0xb9feffff,0xb153ffff,0x1eabfffe,0xf6b0f624,0x6730d2a0,0xf38512bf,0x64774b84,0x434bacd7,0x4b1ba7b6,0x397fe69a,0x1a0111ea};
    std::vector<u32> A(n * 12), B(n * 12);
    for (u32 w = 0; w < n; w++) {
        for (int i = 0; i < 12; i++) { A[w*12+i] = (u32)rng(); B[w*12+i] = (u32)rng(); }
        A[w*12+11] &= 0x0fffffff; B[w*12+11] &= 0x0fffffff;  // below 2^380 < p
        if (w < 8) { // edge: 0, 1, p-1, p-2
            for (int i = 0; i < 12; i++) A[w*12+i] = 0;
            if (w == 1) A[w*12] = 1;
            if (w >= 2) { for (int i = 0; i < 12; i++) A[w*12+i] = P[i]; A[w*12] -= (w - 1); }
            if (w >= 4) for (int i = 0; i < 12; i++) B[w*12+i] = A[w*12+i];
        }
    }
    u32 *dA, *dB, *dR, *dW, *dO;
    CK(cudaMalloc(&dA, n*48)); CK(cudaMalloc(&dB, n*48)); CK(cudaMalloc(&dR, n*96)); CK(cudaMalloc(&dW, n*96)); CK(cudaMalloc(&dO, 1<<24));
    CK(cudaMemcpy(dA, A.data(), n*48, cudaMemcpyHostToDevice)); CK(cudaMemcpy(dB, B.data(), n*48, cudaMemcpyHostToDevice));
    check<<<n/4, 128>>>(dA, dB, n, rounds, dR, dW); CK(cudaDeviceSynchronize());
    std::vector<u32> R(n*24), Wv(n*24);
    CK(cudaMemcpy(R.data(), dR, n*96, cudaMemcpyDeviceToHost)); CK(cudaMemcpy(Wv.data(), dW, n*96, cudaMemcpyDeviceToHost));
    int bad = 0; for (u32 w = 0; w < n; w++) if (memcmp(&R[w*24], &Wv[w*24], 96)) { if (bad < 4) printf("mismatch warp %u: ref %08x.. warp %08x..\n", w, R[w*24], Wv[w*24]); bad++; }
    printf("check: %u warps x %u rounds, %d mismatches\n", n, rounds, bad);
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    const u32 steps = 2000;
    auto timeit = [&](const char* name, void (*k)(u32, u32*), int grid, int block) {
        k<<<grid, block>>>(10, dO); CK(cudaDeviceSynchronize());
        float best = 1e9;
        for (int r = 0; r < 5; r++) { cudaEventRecord(e0); k<<<grid, block>>>(steps, dO); cudaEventRecord(e1); CK(cudaEventSynchronize(e1)); float ms; cudaEventElapsedTime(&ms, e0, e1); if (ms < best) best = ms; }
        printf("%-12s grid %5d block %4d: %.1f ns per step\n", name, grid, block, best * 1e6 / steps);
    };
    timeit("lane_sqr", chain_lane, 1, 32);
    timeit("warp_v1", chain_warp_v1, 1, 32);
    timeit("warp_v1", chain_warp_v1, 448, 32);
    timeit("warp_sqr", chain_warp, 1, 32);
    timeit("warp_sqr", chain_warp, 132, 128);
    timeit("warp_sqr", chain_warp, 448, 32);
    timeit("warp_sqr", chain_warp, 448, 96);
    timeit("warp_sqr", chain_warp, 448, 128);
    timeit("warp_sqr", chain_warp, 336, 128);

    {   // square roots
        const u32 m = 2048;
        u32 *dR2, *dW2; u64* dC; CK(cudaMalloc(&dR2, m*52)); CK(cudaMalloc(&dW2, m*52)); CK(cudaMalloc(&dC, m*8));
        sqrt_check<<<m/4, 128>>>(dA, m, dR2, dW2, dC); CK(cudaDeviceSynchronize());
        std::vector<u32> r2(m*13), w2(m*13); std::vector<unsigned long long> cyc(m);
        CK(cudaMemcpy(r2.data(), dR2, m*52, cudaMemcpyDeviceToHost)); CK(cudaMemcpy(w2.data(), dW2, m*52, cudaMemcpyDeviceToHost)); CK(cudaMemcpy(cyc.data(), dC, m*8, cudaMemcpyDeviceToHost));
        int bad2 = 0, roots = 0; for (u32 w = 0; w < m; w++) { roots += r2[w*13+12]; if (r2[w*13+12] != w2[w*13+12] || (r2[w*13+12] && memcmp(&r2[w*13], &w2[w*13], 48))) { if (bad2 < 4) printf("sqrt mismatch %u ok %u/%u\n", w, r2[w*13+12], w2[w*13+12]); bad2++; } }
        printf("sqrt check: %u points, %d roots, %d mismatches; warp sqrt %.1f us (clock64 cycles %llu at 1.98 GHz)\n", m, roots, bad2, cyc[9] / 1980.0, cyc[9]);
        bad += bad2;
        for (int g : {1, 112, 336}) {
            float best = 1e9;
            for (int r = 0; r < 5; r++) { cudaEventRecord(e0); sqrt_check<<<g, 128>>>(dA, g * 4, nullptr, dW2, dC); cudaEventRecord(e1); CK(cudaEventSynchronize(e1)); float ms; cudaEventElapsedTime(&ms, e0, e1); if (ms < best) best = ms; }
            printf("warp sqrt kernel, %d points (4 warps/block): %.1f us\n", g * 4, best * 1e3);
        }
    }
    return bad != 0;
}
