// Experiment (issue 3, session 6): the RNS Fp product of fp_rns.cuh, one element per warp,
// against kernels/ff/fp.cuh. Results compared item by item (product chains, square roots
// of x^3 + 4, chains of Jacobian doublings), then latencies: dependent products, a whole
// square root per point, 126 doublings per point, and both at once for 448 points, the
// shape of the small-batch decompression kernel. Built and run by run.sh (nvcc on the device).
#ifndef __CUDACC_RTC__  // nvrtc_check.py compiles the device part alone
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <random>
#endif
#include "ff/fp_sqrt.cuh"
#include "ec/g1_jacobian.cuh"
#include "fp_rns.cuh"

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)
#define WARPS_PER_BLOCK_MAX 4

__device__ __forceinline__ fp_t load_int(const u32* in, u32 w) { fp_t x; for (int i = 0; i < 12; i++) x.l[i] = in[w * 12 + i]; return x; }

// v -= (p << s) when v >= p << s (13 words).
__device__ __forceinline__ void sub_shifted_p_if_geq(u32* v, int s) {
    const u32 p[12] = {0xffffaaab,0xb9feffff,0xb153ffff,0x1eabfffe,0xf6b0f624,0x6730d2a0,0xf38512bf,0x64774b84,0x434bacd7,0x4b1ba7b6,0x397fe69a,0x1a0111ea};
    u32 t[13], borrow = 0;
    for (int w = 0; w < 13; w++) {
        const u32 lo = w < 12 ? p[w] << s : 0;
        const u32 hi = (w > 0 && s > 0) ? p[w - 1] >> (32 - s) : 0;
        const u64 d = (u64)v[w] - (lo | hi) - borrow;
        t[w] = (u32)d;
        borrow = (u32)(d >> 63);
    }
    if (!borrow) for (int w = 0; w < 13; w++) v[w] = t[w];
}

// Canonical integer of a lane-form value (rns_to_integer leaves it below 16p).
__device__ __forceinline__ fp_t rns_canonical(u32 a, const rns_ctx& c) {
    u32 v[13];
    rns_to_integer(v, a, c);
    for (int s = 3; s >= 0; s--) sub_shifted_p_if_geq(v, s);
    fp_t r;
    for (int w = 0; w < 12; w++) r.l[w] = v[w];
    return r;
}

__device__ __forceinline__ void store_fp(u32* out, const fp_t& a) { for (int i = 0; i < 12; i++) out[i] = a.l[i]; }

#define RNS_SMEM(K) __shared__ __align__(16) u32 smem_all[WARPS_PER_BLOCK_MAX][(K) * RNS_SLOT]; \
    u32* smem = smem_all[threadIdx.x >> 5]

// ---- products ----------------------------------------------------------------------------
extern "C" __global__ void check_mul(const u32* in_a, const u32* in_b, u32 n, u32 rounds, u32* out_ref, u32* out_rns) {
    RNS_SMEM(1);
    const u32 w = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (w >= n) return;
    rns_ctx c; rns_ctx_init(c, smem);
    const fp_t a = load_int(in_a, w), b = load_int(in_b, w);
    fp_t am, bm; fp_to_mont(am, a); fp_to_mont(bm, b);
    u32 ra = rns_from_integer(a.l, c), rb = rns_from_integer(b.l, c);
    for (u32 r = 0; r < rounds; r++) {
        fp_mul(am, am, bm); fp_sqr(bm, bm); fp_add(bm, bm, am);
        ra = rns_mul(ra, rb, c); rb = rns_mul(rb, rb, c); rb = rns_add(rb, ra, c);
    }
    fp_t x, y; fp_from_mont(x, am); fp_from_mont(y, bm);
    const fp_t rx = rns_canonical(ra, c), ry = rns_canonical(rb, c);
    if (lane == 0) { store_fp(out_ref + w * 24, x); store_fp(out_ref + w * 24 + 12, y); store_fp(out_rns + w * 24, rx); store_fp(out_rns + w * 24 + 12, ry); }
}

template <int K>
__device__ __forceinline__ void chain_body(u32 steps, u32* out) {
    RNS_SMEM(K);
    rns_ctx c; rns_ctx_init(c, smem);
    u32 a[K];
    for (int k = 0; k < K; k++) a[k] = (0x1234567u + threadIdx.x * 77777u + blockIdx.x * 31u + k) % c.m;
#pragma unroll 1
    for (u32 s = 0; s < steps; s++) rns_mul_k<K>(a, a, a, c);
    u32 acc = 0; for (int k = 0; k < K; k++) acc ^= a[k];
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
extern "C" __global__ void chain_rns1(u32 steps, u32* out) { chain_body<1>(steps, out); }
extern "C" __global__ void chain_rns3(u32 steps, u32* out) { chain_body<3>(steps, out); }

// ---- square root ---------------------------------------------------------------------------
__device__ __forceinline__ u32 rns_pow_sqrt(u32 a, const rns_ctx& c) {
    const u32 a2 = rns_mul(a, a, c);
    const u32 a3 = rns_mul(a2, a, c);
    const u32 a5 = rns_mul(a3, a2, c);
    const u32 a7 = rns_mul(a5, a2, c);
    u32 acc = a3;
#pragma unroll 1
    for (int s = 0; s < FP_SQRT_W3_STEPS; s++) {
        const u32 step = FP_SQRT_W3[s];
#pragma unroll 1
        for (u32 k = step >> 3; k != 0; k--) acc = rns_mul(acc, acc, c);
        const u32 digit = step & 7;
        acc = rns_mul(acc, digit == 1 ? a : digit == 3 ? a3 : digit == 5 ? a5 : a7, c);
    }
    return acc;
}

// One lane per point: y = (x^3 + 4)^((p+1)/4) and whether it is a root.
extern "C" __global__ void ref_sqrt(const u32* in_x, u32 n, u32* out) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fp_t x = load_int(in_x, i), xm, rhs, b, y;
    fp_to_mont(xm, x); fp_sqr(rhs, xm); fp_mul(rhs, rhs, xm); fp_load_const(b, FP_B); fp_add(rhs, rhs, b);
    const bool ok = fp_sqrt(y, rhs);
    fp_from_mont(y, y);
    store_fp(out + i * 13, y); out[i * 13 + 12] = ok;
}

__device__ __forceinline__ void sqrt_point(const u32* in_x, u32 i, u32* out, u64* cycles, const rns_ctx& c) {
    const u64 t0 = clock64();
    const fp_t x = load_int(in_x, i);
    const u32 rx = rns_from_integer(x.l, c);
    const u32 rhs = rns_add(rns_mul(rns_mul(rx, rx, c), rx, c), RNS_B4_MONT[c.lane < RNS_LANES ? c.lane : 0], c);
    const u32 y = rns_pow_sqrt(rhs, c);
    const u32 diff = rns_sub(rns_mul(y, y, c), rhs, rns_kp(17, c), c);  // rhs < 17p
    const fp_t yc = rns_canonical(y, c), dc = rns_canonical(diff, c);
    const u64 t1 = clock64();
    if (c.lane == 0) { store_fp(out + i * 13, yc); out[i * 13 + 12] = fp_is_zero(dc); if (cycles) cycles[i] = t1 - t0; }
}

extern "C" __global__ void sqrt_rns(const u32* in_x, u32 n, u32* out, u64* cycles) {
    RNS_SMEM(1);
    const u32 w = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (w >= n) return;
    rns_ctx c; rns_ctx_init(c, smem);
    sqrt_point(in_x, w, out, cycles, c);
}

// ---- Jacobian doubling (dbl-2009-l, as g1_jac_double) ---------------------------------------
struct rns_jac { u32 x, y, z; };
struct rns_dbl_consts { u32 p32, p128, p192, p208; };

__device__ __forceinline__ rns_dbl_consts rns_dbl_init(const rns_ctx& c) {
    return {rns_kp(32, c), rns_kp(128, c), rns_kp(192, c), rns_kp(208, c)};
}

// Inputs below (208p, 144p, 32p) give outputs below the same: products stay below 16p for
// inputs below 2^19 p (rns_model.py), so the offsets below bound every subtraction.
__device__ __forceinline__ void rns_double(rns_jac& r, const rns_jac& p, const rns_ctx& c, const rns_dbl_consts& k) {
    u32 o[3];
    { const u32 a[3] = {p.x, p.y, p.y}, b[3] = {p.x, p.y, p.z}; rns_mul_k<3>(o, a, b, c); }
    const u32 A = o[0], B = o[1], W = o[2];
    const u32 E = rns_add(rns_add(A, A, c), A, c);
    const u32 XB = rns_add(p.x, B, c);
    { const u32 a[3] = {E, B, XB}; rns_mul_k<3>(o, a, a, c); }
    const u32 F = o[0], C = o[1], T = o[2];
    u32 D = rns_sub(rns_sub(T, A, k.p32, c), C, 0, c);  // T + 32p - A - C
    D = rns_add(D, D, c);                                 // < 96p
    const u32 D2 = rns_add(D, D, c);
    const u32 X3 = rns_sub(F, D2, k.p192, c);             // < 208p
    const u32 Z3 = rns_add(W, W, c);
    u32 C8 = rns_add(C, C, c); C8 = rns_add(C8, C8, c); C8 = rns_add(C8, C8, c);
    const u32 DX = rns_sub(D, X3, k.p208, c);            // < 304p
    const u32 Y = rns_mul(E, DX, c);
    r.y = rns_sub(Y, C8, k.p128, c);                      // < 144p
    r.x = X3;
    r.z = Z3;
}

extern "C" __global__ void ref_dbl(const u32* in, u32 n, u32 steps, u32* out) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    g1_jac_t p; fp_t t;
    t = load_int(in, 3 * i); fp_to_mont(p.x, t);
    t = load_int(in, 3 * i + 1); fp_to_mont(p.y, t);
    t = load_int(in, 3 * i + 2); fp_to_mont(p.z, t);
    for (u32 s = 0; s < steps; s++) g1_jac_double(p, p);
    fp_from_mont(t, p.x); store_fp(out + i * 36, t);
    fp_from_mont(t, p.y); store_fp(out + i * 36 + 12, t);
    fp_from_mont(t, p.z); store_fp(out + i * 36 + 24, t);
}

__device__ __forceinline__ void dbl_point(const u32* in, u32 i, u32 steps, u32* out, u64* cycles, const rns_ctx& c) {
    const u64 t0 = clock64();
    const rns_dbl_consts k = rns_dbl_init(c);
    rns_jac p;
    p.x = rns_from_integer(load_int(in, 3 * i).l, c);
    p.y = rns_from_integer(load_int(in, 3 * i + 1).l, c);
    p.z = rns_from_integer(load_int(in, 3 * i + 2).l, c);
#pragma unroll 1
    for (u32 s = 0; s < steps; s++) rns_double(p, p, c, k);
    const fp_t x = rns_canonical(p.x, c), y = rns_canonical(p.y, c), z = rns_canonical(p.z, c);
    const u64 t1 = clock64();
    if (c.lane == 0) { store_fp(out + i * 36, x); store_fp(out + i * 36 + 12, y); store_fp(out + i * 36 + 24, z); if (cycles) cycles[i] = t1 - t0; }
}

extern "C" __global__ void dbl_rns(const u32* in, u32 n, u32 steps, u32* out, u64* cycles) {
    RNS_SMEM(3);
    const u32 w = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (w >= n) return;
    rns_ctx c; rns_ctx_init(c, smem);
    dbl_point(in, w, steps, out, cycles, c);
}

// Both chains of one point on two warps of a block: even warps the root, odd warps 126
// doublings (the subgroup test's doubling chain without its 10 additions).
extern "C" __global__ void both_rns(const u32* in_x, const u32* in_pts, u32 n, u32 steps, u32* out_y, u32* out_p) {
    RNS_SMEM(3);
    const u32 warp = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    const u32 i = warp >> 1;
    if (i >= n) return;
    rns_ctx c; rns_ctx_init(c, smem);
    if (warp & 1) dbl_point(in_pts, i, steps, out_p, nullptr, c);
    else sqrt_point(in_x, i, out_y, nullptr, c);
}

// ---- host -------------------------------------------------------------------------------
#ifndef __CUDACC_RTC__
static const u32 P_WORDS[12] = {0xffffaaab,0xb9feffff,0xb153ffff,0x1eabfffe,0xf6b0f624,0x6730d2a0,0xf38512bf,0x64774b84,0x434bacd7,0x4b1ba7b6,0x397fe69a,0x1a0111ea};

static void random_elements(std::vector<u32>& v, size_t count, std::mt19937_64& rng) {
    v.resize(count * 12);
    for (size_t w = 0; w < count; w++) {
        for (int i = 0; i < 12; i++) v[w * 12 + i] = (u32)rng();
        v[w * 12 + 11] &= 0x0fffffff;  // below 2^380 < p
    }
    // Edge values first: 0, 1, p - 1, p - 2.
    for (size_t w = 0; w < 4 && w < count; w++) {
        for (int i = 0; i < 12; i++) v[w * 12 + i] = w < 2 ? 0 : P_WORDS[i];
        if (w == 1) v[w * 12] = 1;
        if (w >= 2) v[w * 12] -= (u32)(w - 1);
    }
}

static u32* to_device(const std::vector<u32>& v) { u32* d; CK(cudaMalloc(&d, v.size() * 4)); CK(cudaMemcpy(d, v.data(), v.size() * 4, cudaMemcpyHostToDevice)); return d; }
static std::vector<u32> from_device(const u32* d, size_t words) { std::vector<u32> v(words); CK(cudaMemcpy(v.data(), d, words * 4, cudaMemcpyDeviceToHost)); return v; }

static int compare(const char* what, const std::vector<u32>& a, const std::vector<u32>& b, size_t stride, size_t n) {
    int bad = 0;
    for (size_t i = 0; i < n; i++) if (memcmp(&a[i * stride], &b[i * stride], stride * 4)) { if (bad < 4) printf("  %s mismatch at %zu: %08x.. vs %08x..\n", what, i, a[i * stride], b[i * stride]); bad++; }
    printf("%s: %zu items, %d mismatches\n", what, n, bad);
    return bad;
}

template <typename F>
static float time_ms(F launch, int reps) {
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    launch(); CK(cudaDeviceSynchronize());
    float best = 1e30f;
    for (int r = 0; r < reps; r++) {
        cudaEventRecord(e0); launch(); cudaEventRecord(e1); CK(cudaEventSynchronize(e1));
        float ms; cudaEventElapsedTime(&ms, e0, e1); if (ms < best) best = ms;
    }
    return best;
}

int main() {
    std::mt19937_64 rng(20261130);
    int bad = 0;
    // 1. Product chains.
    {
        const u32 n = 2048, rounds = 20;
        std::vector<u32> A, B; random_elements(A, n, rng); random_elements(B, n, rng);
        u32 *dA = to_device(A), *dB = to_device(B), *dR, *dW;
        CK(cudaMalloc(&dR, n * 96)); CK(cudaMalloc(&dW, n * 96));
        check_mul<<<n / 4, 128>>>(dA, dB, n, rounds, dR, dW); CK(cudaDeviceSynchronize());
        bad += compare("product chains (20 rounds of mul, sqr, add)", from_device(dR, n * 24), from_device(dW, n * 24), 24, n);
    }
    // 2. Square roots of x^3 + 4.
    const u32 n_sqrt = 2048;
    std::vector<u32> X; random_elements(X, n_sqrt, rng);
    u32* dX = to_device(X);
    u32 *dYref, *dY; u64* dCyc;
    CK(cudaMalloc(&dYref, n_sqrt * 52)); CK(cudaMalloc(&dY, n_sqrt * 52)); CK(cudaMalloc(&dCyc, n_sqrt * 8));
    {
        ref_sqrt<<<n_sqrt / 128, 128>>>(dX, n_sqrt, dYref);
        sqrt_rns<<<n_sqrt / 4, 128>>>(dX, n_sqrt, dY, dCyc); CK(cudaDeviceSynchronize());
        const auto r = from_device(dYref, n_sqrt * 13);
        u32 roots = 0; for (u32 i = 0; i < n_sqrt; i++) roots += r[i * 13 + 12];
        printf("square roots: %u of %u exist\n", roots, n_sqrt);
        bad += compare("square roots (root and verdict)", r, from_device(dY, n_sqrt * 13), 13, n_sqrt);
    }
    // 3. Doubling chains (any X, Y, Z: the formulas are polynomials).
    const u32 steps = 126;
    std::vector<u32> PTS; random_elements(PTS, 3 * n_sqrt, rng);
    u32* dP = to_device(PTS);
    u32 *dQref, *dQ;
    CK(cudaMalloc(&dQref, n_sqrt * 144)); CK(cudaMalloc(&dQ, n_sqrt * 144));
    {
        ref_dbl<<<n_sqrt / 128, 128>>>(dP, n_sqrt, steps, dQref);
        dbl_rns<<<n_sqrt / 4, 128>>>(dP, n_sqrt, steps, dQ, dCyc); CK(cudaDeviceSynchronize());
        bad += compare("126 doublings", from_device(dQref, n_sqrt * 36), from_device(dQ, n_sqrt * 36), 36, n_sqrt);
    }
    // 4. Both chains of 448 points at once, checked against the references.
    {
        const u32 n = 448;
        CK(cudaMemset(dY, 0xff, n * 52)); CK(cudaMemset(dQ, 0xff, n * 144));
        both_rns<<<n / 2, 128>>>(dX, dP, n, steps, dY, dQ); CK(cudaDeviceSynchronize());
        bad += compare("448 points, both chains: roots", from_device(dYref, n * 13), from_device(dY, n * 13), 13, n);
        bad += compare("448 points, both chains: doublings", from_device(dQref, n * 36), from_device(dQ, n * 36), 36, n);
    }
    printf("CORRECTNESS: %s\n", bad ? "FAIL" : "ok");

    // Latencies.
    u32* dOut; CK(cudaMalloc(&dOut, 1 << 24));
    for (int k = 0; k < 2; k++) {
        const u32 chain = 2000;
        for (u32 blocks : {1u, 448u}) {
            float ms = time_ms([&] { if (k == 0) chain_rns1<<<blocks, 32>>>(chain, dOut); else chain_rns3<<<blocks, 32>>>(chain, dOut); }, 5);
            printf("dependent RNS products, %d in flight per warp, %u warps (1 per block): %.1f ns per step\n", k == 0 ? 1 : 3, blocks, ms * 1e6 / chain);
        }
    }
    for (u32 n : {4u, 448u, 1344u}) {
        for (u32 wpb : {1u, 4u}) {
            float ms = time_ms([&] { sqrt_rns<<<(n + wpb - 1) / wpb, 32 * wpb>>>(dX, n, dY, dCyc); }, 5);
            printf("square root, one warp per point, %u points, %u warps per block: %.1f us\n", n, wpb, ms * 1e3);
        }
    }
    for (u32 n : {4u, 448u}) {
        float ms = time_ms([&] { dbl_rns<<<n, 32>>>(dP, n, steps, dQ, dCyc); }, 5);
        printf("126 doublings, one warp per point, %u points: %.1f us\n", n, ms * 1e3);
    }
    for (u32 n : {4u, 448u, 1344u}) {
        float ms = time_ms([&] { both_rns<<<n, 64>>>(dX, dP, n, steps, dY, dQ); }, 5);
        printf("both chains (root + 126 doublings), two warps per point, %u points: %.1f us\n", n, ms * 1e3);
    }
    auto cyc = std::vector<u64>(448);
    sqrt_rns<<<448, 32>>>(dX, 448, dY, dCyc); CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(cyc.data(), dCyc, 448 * 8, cudaMemcpyDeviceToHost));
    u64 mx = 0, mn = ~0ull; for (auto v : cyc) { mx = v > mx ? v : mx; mn = v < mn ? v : mn; }
    printf("square root clock64 per warp at 448 points: %llu..%llu cycles\n", (unsigned long long)mn, (unsigned long long)mx);
    return bad ? 1 : 0;
}
#endif
