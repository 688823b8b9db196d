// Pippenger multi-scalar multiplication on G1 for a batch of independent MSMs (host side:
// gpu-crypto/engine/src/cuda/msm.rs; design: docs/msm.md). Large batches arrive in chunks of
// points: each chunk is sorted and added into the buckets while the next one crosses the
// bus, so the sort kernels and msm_accumulate take a range of global point indices.
//   scalars: msm_scalars_from_mont (raw ic_bls12_381 Montgomery limbs -> integers, when the
//            host uploaded them raw), msm_histogram (signed c-bit digits; count the points
//            of each bucket), msm_scan_* (exclusive prefix sum -> first slot of each
//            bucket), msm_scatter (point indices, sign in bit 31, into their bucket's slots).
//   points:  either ic_bls12_381's Montgomery x and y as they are in memory (the host copies
//            them out of each G1Affine at offsets it probed once), used as they are, or
//            96-byte big-endian encodings converted in place by msm_load_points.
//   then:    msm_accumulate (each thread adds a fixed-size slice of the sorted entries into
//            their buckets, XYZZ mixed addition), msm_merge (adds the parts of buckets that
//            straddle slices), msm_reduce (per window, sum_d d * B_d by segmented running
//            sums and a tree in shared memory; each block emits one Jacobian point). The host adds the blocks
//            and combines the windows (a few hundred additions, faster on CPU cores than on
//            one GPU thread).
// Bucket key of digit d != 0 of window w of MSM b: (b * windows + w) * 2^(c-1) + |d| - 1.
#include "common.cuh"
#include "ff/fp.cuh"
#include "ec/g1_xyzz.cuh"

#define SCAN_THREADS 256
#define SCAN_ITEMS 8
#define SCAN_TILE (SCAN_THREADS * SCAN_ITEMS)
#define REDUCE_THREADS_MAX 128

extern "C" __global__ void __launch_bounds__(128)
msm_load_points(u8* __restrict__ points, u32 n) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint4* rec = reinterpret_cast<uint4*>(points + (u64)i * 96);
    u8 b[96];
#pragma unroll
    for (int v = 0; v < 6; v++) {
        uint4 w = rec[v];
        u32 words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
        for (int k = 0; k < 16; k++) b[16 * v + k] = (u8)(words[k >> 2] >> (8 * (k & 3)));
    }
    b[0] &= 0x1f;  // flag bits; the host gives the identity a zero scalar
    fp_t x, y;
    fp_from_be_bytes(x, b);
    fp_from_be_bytes(y, b + 48);
    fp_to_mont(x, x);
    fp_to_mont(y, y);
    u32* out = reinterpret_cast<u32*>(rec);
#pragma unroll
    for (int k = 0; k < FP_LIMBS; k++) out[k] = x.l[k];
#pragma unroll
    for (int k = 0; k < FP_LIMBS; k++) out[FP_LIMBS + k] = y.l[k];
}

// r, the order of G1, as 8 x 32-bit little-endian limbs. r = 1 mod 2^32, so
// -r^-1 mod 2^32 = 2^32 - 1 and the Montgomery factor of each round is m = -t0.
__device__ __constant__ u32 FR_MODULUS[8] = {
    0x00000001u, 0xffffffffu, 0xfffe5bfeu, 0x53bda402u,
    0x09a1d805u, 0x3339d808u, 0x299d7d48u, 0x73eda753u};

// Scalars uploaded as ic_bls12_381's raw limbs (a * 2^256 mod r, little-endian) become the
// integers a, in place: one Montgomery reduction t * 2^-256 mod r. For t < r the result
// (t + M r) / 2^256 is at most r and equals r only for t = 0 (then it is 0), so no final
// subtraction is needed. One thread per scalar; a few hundred integer operations.
extern "C" __global__ void __launch_bounds__(256)
msm_scalars_from_mont(u32* __restrict__ scalars, u32 n) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint4* p = reinterpret_cast<uint4*>(scalars + (u64)i * 8);
    const uint4 a = p[0], b = p[1];
    u32 t[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
    for (int round = 0; round < 8; round++) {
        const u32 m = 0u - t[0];
        u64 c = ((u64)m * FR_MODULUS[0] + t[0]) >> 32;  // the low word is zero by design
#pragma unroll
        for (int j = 1; j < 8; j++) {
            c += (u64)m * FR_MODULUS[j] + t[j];
            t[j - 1] = (u32)c;
            c >>= 32;
        }
        t[7] = (u32)c;  // (t + m r) / 2^32 < 2^256, so the carry fits one limb
    }
    p[0] = make_uint4(t[0], t[1], t[2], t[3]);
    p[1] = make_uint4(t[4], t[5], t[6], t[7]);
}

// The MSM that global point i belongs to: the last b with start[b] <= i.
__device__ __forceinline__ u32 msm_of(const u32* __restrict__ start, u32 n_msms, u32 i) {
    u32 lo = 0, hi = n_msms;  // invariant: start[lo] <= i < start[hi]
    while (hi - lo > 1) {
        const u32 mid = (lo + hi) >> 1;
        if (start[mid] <= i) lo = mid; else hi = mid;
    }
    return lo;
}

// Bits [off, off + c) of a 256-bit little-endian scalar (c <= 16).
__device__ __forceinline__ u32 scalar_bits(const u32 s[8], u32 off, u32 c) {
    const u32 limb = off >> 5, sh = off & 31;
    if (limb >= 8) return 0;
    u32 v = s[limb] >> sh;
    if (sh + c > 32 && limb + 1 < 8) v |= s[limb + 1] << (32 - sh);
    return v & ((1u << c) - 1);
}

__device__ __forceinline__ void load_scalar(u32 s[8], const u32* __restrict__ scalars, u32 i) {
    const uint4* p = reinterpret_cast<const uint4*>(scalars + (u64)i * 8);
    const uint4 a = p[0], b = p[1];
    s[0] = a.x; s[1] = a.y; s[2] = a.z; s[3] = a.w;
    s[4] = b.x; s[5] = b.y; s[6] = b.z; s[7] = b.w;
}

// Windows: `windows` = ceil(256 / c) of them, the lowest `narrow` = c * windows - 256 of
// width c - 1 and the rest of width c, so the widths sum to 256. Scalars are below 2^255, so
// the top window's raw value is below 2^(c-1) and its carry-adjusted digit never exceeds
// 2^(c-1); and the top window's digits spread over its buckets like every other window's
// (a top window of a few bits would pile the points into a few buckets, i.e. one thread).
__device__ __forceinline__ u32 window_width(u32 w, u32 c, u32 narrow) { return w < narrow ? c - 1 : c; }
__device__ __forceinline__ u32 window_offset(u32 w, u32 c, u32 narrow) {
    return w * c - (w < narrow ? w : narrow);
}

// Signed digit of window w given the carry from window w-1: in [-(2^(width-1) - 1), 2^(width-1)].
__device__ __forceinline__ int next_digit(const u32 s[8], u32 w, u32 c, u32 narrow, u32& carry) {
    const u32 width = window_width(w, c, narrow);
    const u32 v = scalar_bits(s, window_offset(w, c, narrow), width) + carry;
    if (v > (1u << (width - 1))) {
        carry = 1;
        return (int)v - (int)(1u << width);
    }
    carry = 0;
    return (int)v;
}

extern "C" __global__ void __launch_bounds__(256)
msm_histogram(const u32* __restrict__ scalars, u32 first, u32 n,
              const u32* __restrict__ msm_start, u32 n_msms, u32 c, u32 windows, u32 narrow,
              u32* __restrict__ counts) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    const u32 i = first + t;
    u32 s[8];
    load_scalar(s, scalars, i);
    const u32 half = 1u << (c - 1);
    const u64 base = (u64)msm_of(msm_start, n_msms, i) * windows;
    u32 carry = 0;
    for (u32 w = 0; w < windows; w++) {
        const int d = next_digit(s, w, c, narrow, carry);
        if (d == 0) continue;
        const u32 mag = d < 0 ? (u32)(-d) : (u32)d;
        atomicAdd(&counts[(base + w) * half + mag - 1], 1u);
    }
}

extern "C" __global__ void __launch_bounds__(256)
msm_scatter(const u32* __restrict__ scalars, u32 first, u32 n,
            const u32* __restrict__ msm_start, u32 n_msms, u32 c, u32 windows, u32 narrow,
            u32* __restrict__ cursor, u32* __restrict__ sorted) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    const u32 i = first + t;
    u32 s[8];
    load_scalar(s, scalars, i);
    const u32 half = 1u << (c - 1);
    const u64 base = (u64)msm_of(msm_start, n_msms, i) * windows;
    u32 carry = 0;
    for (u32 w = 0; w < windows; w++) {
        const int d = next_digit(s, w, c, narrow, carry);
        if (d == 0) continue;
        const u32 mag = d < 0 ? (u32)(-d) : (u32)d;
        const u32 slot = atomicAdd(&cursor[(base + w) * half + mag - 1], 1u);
        sorted[slot] = i | (d < 0 ? 0x80000000u : 0u);
    }
}

// Exclusive scan of one block's SCAN_THREADS values; returns the block total in `total`.
__device__ __forceinline__ u32 block_exclusive_scan(u32 v, u32& total) {
    __shared__ u32 warp_sums[SCAN_THREADS / 32];
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    u32 x = v;
#pragma unroll
    for (u32 o = 1; o < 32; o <<= 1) {
        const u32 y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o) x += y;
    }
    if (lane == 31) warp_sums[warp] = x;
    __syncthreads();
    if (warp == 0) {
        u32 t = lane < SCAN_THREADS / 32 ? warp_sums[lane] : 0;
#pragma unroll
        for (u32 o = 1; o < 32; o <<= 1) {
            const u32 y = __shfl_up_sync(0xffffffffu, t, o);
            if (lane >= o) t += y;
        }
        if (lane < SCAN_THREADS / 32) warp_sums[lane] = t;
    }
    __syncthreads();
    total = warp_sums[SCAN_THREADS / 32 - 1];
    const u32 before = warp == 0 ? 0 : warp_sums[warp - 1];
    __syncthreads();
    return before + x - v;
}

// Scan, step a: each tile of SCAN_TILE counts -> exclusive scan within the tile, tile totals.
extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
msm_scan_tiles(const u32* __restrict__ counts, u32 k, u32* __restrict__ starts,
               u32* __restrict__ tile_sums) {
    const u64 first = (u64)blockIdx.x * SCAN_TILE + (u64)threadIdx.x * SCAN_ITEMS;
    u32 v[SCAN_ITEMS];
    u32 sum = 0;
#pragma unroll
    for (int j = 0; j < SCAN_ITEMS; j++) {
        v[j] = first + j < k ? counts[first + j] : 0;
        sum += v[j];
    }
    u32 total;
    u32 run = block_exclusive_scan(sum, total);
#pragma unroll
    for (int j = 0; j < SCAN_ITEMS; j++) {
        if (first + j < k) starts[first + j] = run;
        run += v[j];
    }
    if (threadIdx.x == 0) tile_sums[blockIdx.x] = total;
}

// Scan, step b: exclusive scan of the tile totals, in place, by one block.
extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
msm_scan_tile_sums(u32* __restrict__ tile_sums, u32 tiles) {
    u32 carry = 0;
    for (u32 base = 0; base < tiles; base += SCAN_THREADS) {
        const u32 i = base + threadIdx.x;
        const u32 v = i < tiles ? tile_sums[i] : 0;
        u32 total;
        const u32 ex = block_exclusive_scan(v, total);
        if (i < tiles) tile_sums[i] = carry + ex;
        carry += total;
    }
}

// Scan, step c: add each tile's offset; the scatter cursor starts as a copy of the starts.
extern "C" __global__ void __launch_bounds__(256)
msm_scan_add(u32* __restrict__ starts, u32* __restrict__ cursor, u32 k,
             const u32* __restrict__ tile_sums) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= k) return;
    const u32 v = starts[i] + tile_sums[i / SCAN_TILE];
    starts[i] = v;
    cursor[i] = v;
}

// Bucket accumulation with the work balanced per thread, not per bucket (as sppark): the
// chunk's sorted entries [0, total) are cut into slices of `slice` entries, one per thread.
// A thread adds the runs of equal bucket within its slice, one mixed addition per entry
// in a single loop (a thread whose run ends stores it and starts the next while the warp
// goes on: no thread waits for another's bucket), and stores each run's sum:
//   * into its bucket, when the bucket's first entry of this chunk is in the slice (the
//     thread "owns" the bucket; on later chunks, `resume` = 1, it adds the bucket's sum so far);
//   * into spills[t], when the slice begins inside a bucket that started before it (only the
//     slice's first run can), and that bucket into spill_bucket[t] (NO_SPILL if none);
//     msm_merge then adds those into the bucket.
// The host sizes the slices so that the threads fill about one wave of the device.
// Buckets that no entry of the first chunk reaches stay as the host cleared them: zero, the
// identity (ZZ = 0).
// At most 168 registers, so that 3 blocks of 128 threads fit an SM.
#define NO_SPILL 0xffffffffu
extern "C" __global__ void __launch_bounds__(128, 3)
msm_accumulate(const g1_affine_t* __restrict__ points, const u32* __restrict__ sorted,
               const u32* __restrict__ starts, const u32* __restrict__ ends, u32 k, u32 slice,
               u32 resume, g1_xyzz_t* __restrict__ buckets, g1_xyzz_t* __restrict__ spills,
               u32* __restrict__ spill_bucket) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    const u32 total = ends[k - 1];
    if ((u64)t * slice >= total) return;
    const u32 s = t * slice;
    const u32 e = s + min(slice, total - s);
    // The bucket of entry s: the first whose entries end after s (ends[k - 1] = total > s).
    u32 b = 0, hi = k - 1;
    while (b < hi) {
        const u32 mid = (b + hi) >> 1;
        if (ends[mid] > s) hi = mid; else b = mid + 1;
    }
    u32 run_end = min(ends[b], e);
    bool spill = starts[b] < s;
    spill_bucket[t] = spill ? b : NO_SPILL;
    g1_xyzz_t acc;
    if (resume && !spill) load_xyzz(acc, buckets + b); else xyzz_set_identity(acc);
    for (u32 j = s; j < e;) {
        const u32 entry = sorted[j];
        g1_affine_t a;
        load_affine(a, points, entry & 0x7fffffffu);
        if (entry >> 31) fp_neg(a.y, a.y);
        xyzz_add_affine(acc, acc, a);
        if (++j == run_end) {
            store_xyzz(spill ? spills + t : buckets + b, acc);
            spill = false;
            if (j < e) {
                do b++; while (ends[b] <= j);  // skips the buckets without entries
                run_end = min(ends[b], e);
                if (resume) load_xyzz(acc, buckets + b); else xyzz_set_identity(acc);
            }
        }
    }
}

// Second pass of the accumulation, one thread per slice: the slices that begin inside
// bucket b are consecutive, t0 + 1 .. t1, where slice t0 holds the bucket's first entry (its
// thread stored its part in the bucket); the thread of slice t0 + 1 adds their spills to the
// bucket. Only threads at slice starts have anything to do, so one thread per slice (about
// one wave) rather than one per bucket (several waves, each as long as one addition). A
// bucket spanning many slices (the same digit for many points) adds its spills in a serial
// chain of (entries / slice) additions.
extern "C" __global__ void __launch_bounds__(128)
msm_merge(const u32* __restrict__ ends, u32 k, u32 slice, const u32* __restrict__ spill_bucket,
          const g1_xyzz_t* __restrict__ spills, g1_xyzz_t* __restrict__ buckets) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    const u32 total = ends[k - 1];
    // Slices at or past the end had no thread in msm_accumulate: spill_bucket is stale there.
    const u64 active = ((u64)total + slice - 1) / slice;
    if (t >= active) return;
    const u32 b = spill_bucket[t];
    if (b == NO_SPILL || (t > 0 && spill_bucket[t - 1] == b)) return;
    g1_xyzz_t acc, part;
    load_xyzz(acc, buckets + b);
    for (u32 u = t; u < active && spill_bucket[u] == b; u++) {
        load_xyzz(part, spills + u);
        xyzz_add(acc, acc, part);
    }
    store_xyzz(buckets + b, acc);
}

// Reduction: window win = blockIdx.y has `half` buckets (digit d in bucket d - 1). Thread j of
// the window takes buckets [j*len, (j+1)*len): with running sums from the top,
// acc = sum (d - j*len) B_d and run = sum B_d, so its share is acc + (j*len) * run. The
// block's shares are summed in shared memory and emitted as Jacobian (xyzz_to_jacobian).
extern "C" __global__ void __launch_bounds__(REDUCE_THREADS_MAX)
msm_reduce(const g1_xyzz_t* __restrict__ buckets, u32 half, u32 len,
           g1_jac_t* __restrict__ partials) {
    __shared__ g1_xyzz_t shares[REDUCE_THREADS_MAX];
    const u32 j = blockIdx.x * blockDim.x + threadIdx.x;
    const g1_xyzz_t* win = buckets + (u64)blockIdx.y * half;
    g1_xyzz_t run, acc;
    xyzz_set_identity(run);
    xyzz_set_identity(acc);
    const u32 lo = j * len;
    for (u32 t = len; t > 0; t--) {
        xyzz_add(run, run, win[lo + t - 1]);
        xyzz_add(acc, acc, run);
    }
    // acc += lo * run, double-and-add from the top bit.
    g1_xyzz_t mul;
    xyzz_set_identity(mul);
    for (int bit = 31 - __clz(lo | 1); lo != 0 && bit >= 0; bit--) {
        xyzz_double(mul, mul);
        if ((lo >> bit) & 1) xyzz_add(mul, mul, run);
    }
    xyzz_add(acc, acc, mul);
    shares[threadIdx.x] = acc;
    __syncthreads();
    for (u32 stride = blockDim.x >> 1; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) {
            g1_xyzz_t s = shares[threadIdx.x];
            xyzz_add(s, s, shares[threadIdx.x + stride]);
            shares[threadIdx.x] = s;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        g1_jac_t out;
        xyzz_to_jacobian(out, shares[0]);
        partials[(u64)blockIdx.y * gridDim.x + blockIdx.x] = out;
    }
}
