// sppark's GPU MSM as a measured peer for the side-by-side benchmark; never
// shipped. Instantiated as sppark's poc/msm-cuda does for BLS12-381: Jacobian result,
// XYZZ buckets, the buckets' affine points, fr_t scalars passed as plain little-endian
// integers (mont = false). Built on the GPU machine by build_peer.sh with
// nvcc -arch=sm_90 from the sppark crate's headers and blst's C library (flags of the
// blst crate plus -D__ADX__).
//
// Usage: sppark_peer INPUTS REPS LOG2...
//        sppark_peer --rows R INPUTS REPS
// INPUTS (written by benches/gpu_msm.rs): u64 n, then n blst_p1_affine (96 bytes,
// Montgomery limbs), then the scalars (32 bytes, little-endian, below r): n of them, or
// R * n with --rows. For each size 2^k the first 2^k entries are used: one untimed call,
// then REPS timed ones, from pinned host buffers (registered once, outside the timing, as
// the anchors' "pinned" mode). Prints
//   sppark log2=K n=N median_ms=.. min_ms=.. max_ms=.. result=<96-byte uncompressed hex>
// With --rows, one batch is R MSMs over the same n bases (row k's scalars are entries
// k*n..(k+1)*n), one sppark call each, timed together; prints
//   sppark rows=R n=N median_ms=.. min_ms=.. max_ms=.. result=<hex>,<hex>,...
#include <cuda.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>

#include <ec/jacobian_t.hpp>
#include <ec/xyzz_t.hpp>
#include <ff/bls12-381.hpp>

typedef jacobian_t<fp_t> point_t;
typedef xyzz_t<fp_t> bucket_t;
typedef bucket_t::affine_t affine_t;
typedef fr_t scalar_t;

#include <msm/pippenger.cuh>

// blst.h itself clashes with blst_t.hpp (which sppark's host field types include), so the
// one blst function used here is declared on its own; blst_p1 is X, Y, Z Montgomery limbs.
struct blst_p1_raw { uint64_t l[18]; };
extern "C" void blst_p1_serialize(unsigned char out[96], const blst_p1_raw* in);

static_assert(sizeof(affine_t) == 96, "affine_t is blst_p1_affine");
static_assert(sizeof(scalar_t) == 32, "scalar_t is 32 bytes");
static_assert(sizeof(point_t) == sizeof(blst_p1_raw), "point_t is blst_p1");

static double median_of(std::vector<double>& ms) {
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

static void print_encoding(const point_t& out) {
    blst_p1_raw p;
    memcpy(&p, &out, sizeof(p));
    unsigned char enc[96];
    blst_p1_serialize(enc, &p);
    for (int i = 0; i < 96; i++) printf("%02x", enc[i]);
}

int main(int argc, char** argv) {
    size_t rows = 0;
    if (argc >= 3 && strcmp(argv[1], "--rows") == 0) {
        rows = strtoull(argv[2], nullptr, 10);
        argv += 2;
        argc -= 2;
        if (rows == 0 || argc != 3) {
            fprintf(stderr, "usage: sppark_peer --rows R INPUTS REPS\n");
            return 2;
        }
    }
    if (rows == 0 && argc < 4) {
        fprintf(stderr, "usage: %s INPUTS REPS LOG2...\n", argv[0]);
        return 2;
    }
    FILE* f = fopen(argv[1], "rb");
    if (!f) { perror(argv[1]); return 1; }
    uint64_t n = 0;
    if (fread(&n, 8, 1, f) != 1) { fprintf(stderr, "short read\n"); return 1; }
    const size_t n_scalars = rows ? rows * n : n;
    std::vector<affine_t> points(n);
    std::vector<scalar_t> scalars(n_scalars);
    if (fread(points.data(), 96, n, f) != n ||
        fread(scalars.data(), 32, n_scalars, f) != n_scalars) {
        fprintf(stderr, "short read\n");
        return 1;
    }
    fclose(f);
    if (cudaHostRegister(points.data(), n * 96, cudaHostRegisterDefault) != cudaSuccess ||
        cudaHostRegister(scalars.data(), n_scalars * 32, cudaHostRegisterDefault) != cudaSuccess) {
        fprintf(stderr, "cudaHostRegister failed\n");
        return 1;
    }
    const int reps = atoi(argv[2]);
    if (rows) {
        std::vector<point_t> out(rows);
        std::vector<double> ms;
        for (int r = 0; r <= reps; r++) {
            auto t0 = std::chrono::steady_clock::now();
            for (size_t k = 0; k < rows; k++) {
                RustError e = mult_pippenger<bucket_t>(&out[k], points.data(), n,
                                                       scalars.data() + k * n, false);
                if (e.code != cudaSuccess) {
                    fprintf(stderr, "sppark error %d: %s\n", e.code, e.message ? e.message : "");
                    return 1;
                }
            }
            auto t1 = std::chrono::steady_clock::now();
            if (r > 0) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        }
        const double median = median_of(ms);
        printf("sppark rows=%zu n=%llu median_ms=%.3f min_ms=%.3f max_ms=%.3f result=", rows,
               (unsigned long long)n, median, ms.front(), ms.back());
        for (size_t k = 0; k < rows; k++) {
            if (k) printf(",");
            print_encoding(out[k]);
        }
        printf("\n");
        return 0;
    }
    for (int a = 3; a < argc; a++) {
        const int k = atoi(argv[a]);
        const size_t m = (size_t)1 << k;
        if (m > n) { fprintf(stderr, "2^%d > %llu inputs\n", k, (unsigned long long)n); return 1; }
        point_t out;
        std::vector<double> ms;
        for (int r = 0; r <= reps; r++) {
            auto t0 = std::chrono::steady_clock::now();
            RustError e = mult_pippenger<bucket_t>(&out, points.data(), m, scalars.data(), false);
            auto t1 = std::chrono::steady_clock::now();
            if (e.code != cudaSuccess) {
                fprintf(stderr, "sppark error %d: %s\n", e.code, e.message ? e.message : "");
                return 1;
            }
            if (r > 0) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        }
        const double median = median_of(ms);
        printf("sppark log2=%d n=%zu median_ms=%.3f min_ms=%.3f max_ms=%.3f result=", k, m,
               median, ms.front(), ms.back());
        print_encoding(out);
        printf("\n");
        fflush(stdout);
    }
    return 0;
}
