// SHA-256(prefix || chunk) for a batch of chunks, one thread per chunk (a SHA-256 chain is
// sequential, so a chunk cannot be split across threads). The IC's chunk hash uses
// prefix = 14 || "ic-state-chunk".
//
// Layout: chunk i is lens[i] bytes at data + offsets[i]; offsets are multiples of 16 and
// the buffer has at least 16 readable bytes after the last chunk (the host pads it).
// The prefix shifts every message block against the chunk's 16-byte alignment by the same
// amount q = (-prefix_len) mod 16 for every chunk, so the bulk loop loads aligned 16-byte
// vectors (the next block prefetched while the current one is compressed) and builds each
// big-endian message word with one byte-permute from two neighbouring loaded words.
// The few blocks that hold prefix bytes or padding go through a byte-wise path.
// Three entry points of the same function: sha256_prefixed moves every addition to the
// FMA pipe (hash/sha256.cuh says why); for the bench's comparison, sha256_prefixed_alu
// keeps them on the ALU and sha256_prefixed_shr_fma also moves the schedule's shifts.
#include "common.cuh"
#include "hash/sha256.cuh"

#define SHA256_MAX_PREFIX 1024

struct message_t {
    const u8* prefix;  // shared memory
    u32 prefix_len;
    const u8* chunk;
    u64 len;       // chunk bytes
    u64 total;     // prefix_len + len
    u64 nblocks;   // padded message blocks
};

__device__ __forceinline__ u32 message_byte(const message_t& m, u64 pos) {
    if (pos < m.prefix_len) return m.prefix[pos];
    const u64 c = pos - m.prefix_len;
    if (c < m.len) return m.chunk[c];
    if (c == m.len) return 0x80;
    const u64 len_at = 64 * m.nblocks - 8;
    if (pos >= len_at) return (u32)(((m.total * 8) >> (8 * (7 - (pos - len_at)))) & 0xff);
    return 0;
}

__device__ __noinline__ void compress_bytewise(u32 st[8], const message_t& m, u64 block) {
    // Rare blocks (prefix, padding): the plain variant.
    u32 w[16];
    for (int j = 0; j < 16; j++) {
        const u64 p = 64 * block + 4 * j;
        w[j] = (message_byte(m, p) << 24) | (message_byte(m, p + 1) << 16) |
               (message_byte(m, p + 2) << 8) | message_byte(m, p + 3);
    }
    sha256_compress<false>(st, w, 1);
}

__device__ __forceinline__ uint4 load16(const u8* p) {
    return __ldg(reinterpret_cast<const uint4*>(p));
}

// Blocks [first, first + count) lie wholly inside the chunk. `base` is the 16-byte-aligned
// address just below the first block's first byte, which lies QW words + (selector) bytes
// above it.
template <int QW, bool FMA_ADDS, bool FMA_SHR>
__device__ __forceinline__ void compress_bulk(u32 st[8], const u8* base, u64 count, u32 sel,
                                              u32 one) {
    uint4 v0 = load16(base);
    uint4 n1 = load16(base + 16), n2 = load16(base + 32), n3 = load16(base + 48),
          n4 = load16(base + 64);
    for (u64 k = 0; k < count; k++) {
        const uint4 v1 = n1, v2 = n2, v3 = n3, v4 = n4;
        if (k + 1 < count) {
            const u8* next = base + 64 * (k + 1);
            n1 = load16(next + 16);
            n2 = load16(next + 32);
            n3 = load16(next + 48);
            n4 = load16(next + 64);
        }
        const u32 lw[20] = {v0.x, v0.y, v0.z, v0.w, v1.x, v1.y, v1.z, v1.w, v2.x, v2.y,
                            v2.z, v2.w, v3.x, v3.y, v3.z, v3.w, v4.x, v4.y, v4.z, v4.w};
        u32 w[16];
#pragma unroll
        for (int j = 0; j < 16; j++) w[j] = __byte_perm(lw[QW + j], lw[QW + j + 1], sel);
        sha256_compress<FMA_ADDS, FMA_SHR>(st, w, one);
        v0 = v4;
    }
}

// The same loop with the next blocks fetched by cp.async into shared memory, issued
// SHA256_STAGES - 1 blocks ahead. In compress_bulk the compiler issues the last prefetch
// late in the block (its registers are the block's own, still live), so each block waited
// out a global load; with one warp per scheduler (16,384 chunks) nothing hides that wait.
// Asynchronous copies hold no registers, so they are issued at the top of the block, and
// each thread reads back only what it copied itself (wait_group orders that; no barrier).
// The default wait (712 GB/s on the H200, docs/benchmarks.md) lets one group stay in
// flight, so block k also waits for block k + 1's copies, issued a whole block earlier.
#define SHA256_THREADS 64
// Bench switches: SHA256_STAGES (default 3) and SHA256_WAIT_CURRENT_BLOCK (wait for block
// k's copies only, not also block k + 1's), for the bench's comparisons.
#ifndef SHA256_STAGES
#define SHA256_STAGES 3
#endif
#ifdef SHA256_WAIT_CURRENT_BLOCK
#define SHA256_IN_FLIGHT (SHA256_STAGES - 1)
#else
#define SHA256_IN_FLIGHT (SHA256_STAGES - 2)
#endif

__device__ __forceinline__ void cp_async16(uint4* smem, const u8* gmem) {
    const u32 s = (u32)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem) : "memory");
}

__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;" ::: "memory");
}

// Waits until at most SHA256_IN_FLIGHT groups of this thread are still in flight: by
// default STAGES - 2, so after block k + 2's group is committed blocks k and k + 1 have
// landed.
__device__ __forceinline__ void cp_async_wait_stage() {
    asm volatile("cp.async.wait_group %0;" ::"n"(SHA256_IN_FLIGHT) : "memory");
}

// stage[s][j][thread]: a warp's 16-byte reads of one vector are consecutive (no conflicts).
template <int QW, bool FMA_ADDS>
__device__ __forceinline__ void compress_bulk_async(u32 st[8], const u8* base, u64 count,
                                                    u32 sel, u32 one,
                                                    uint4 (*stage)[4][SHA256_THREADS]) {
    const u32 t = threadIdx.x;
    uint4 v0 = load16(base);
    // Block k's vectors 1..4 (bytes 16..80 above base + 64k) go to stage k % STAGES.
#pragma unroll
    for (int s = 0; s < SHA256_STAGES - 1; s++) {
        if ((u64)s < count) {
#pragma unroll
            for (int j = 0; j < 4; j++) cp_async16(&stage[s][j][t], base + 64 * s + 16 * (j + 1));
        }
        cp_async_commit();
    }
    u32 slot = 0;
    for (u64 k = 0; k < count; k++) {
        const u64 ahead = k + SHA256_STAGES - 1;
        if (ahead < count) {
            const u32 fill = slot == 0 ? SHA256_STAGES - 1 : slot - 1;
#pragma unroll
            for (int j = 0; j < 4; j++)
                cp_async16(&stage[fill][j][t], base + 64 * ahead + 16 * (j + 1));
        }
        cp_async_commit();  // possibly empty: keeps one group per block
        cp_async_wait_stage();
        const uint4 v1 = stage[slot][0][t], v2 = stage[slot][1][t], v3 = stage[slot][2][t],
                    v4 = stage[slot][3][t];
        const u32 lw[20] = {v0.x, v0.y, v0.z, v0.w, v1.x, v1.y, v1.z, v1.w, v2.x, v2.y,
                            v2.z, v2.w, v3.x, v3.y, v3.z, v3.w, v4.x, v4.y, v4.z, v4.w};
        u32 w[16];
#pragma unroll
        for (int j = 0; j < 16; j++) w[j] = __byte_perm(lw[QW + j], lw[QW + j + 1], sel);
        sha256_compress<FMA_ADDS, false>(st, w, one);
        v0 = v4;
        slot = slot == SHA256_STAGES - 1 ? 0 : slot + 1;
    }
}

template <bool FMA_ADDS, bool FMA_SHR, bool ASYNC = false>
__device__ __forceinline__ void sha256_prefixed_body(const u8* __restrict__ data,
                                                     const u64* __restrict__ offsets,
                                                     const u32* __restrict__ lens, u32 n,
                                                     const u8* __restrict__ prefix,
                                                     u32 prefix_len, u32* __restrict__ digests,
                                                     u32 one) {
    __shared__ u8 prefix_s[SHA256_MAX_PREFIX];
    for (u32 i = threadIdx.x; i < prefix_len && i < SHA256_MAX_PREFIX; i += blockDim.x)
        prefix_s[i] = prefix[i];
    __syncthreads();

    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;

    message_t m;
    m.prefix = prefix_s;
    m.prefix_len = prefix_len;
    m.chunk = data + offsets[i];
    m.len = lens[i];
    m.total = m.prefix_len + m.len;
    m.nblocks = (m.total + 9 + 63) / 64;

    u32 st[8];
    sha256_init(st);

    // Bulk blocks: wholly chunk bytes, i.e. 64k >= prefix_len and 64k + 64 <= total.
    const u64 bulk_first = (m.prefix_len + 63) / 64;
    const u64 bulk_end = m.total / 64;
    u64 k = 0;
    if (bulk_end > bulk_first) {
        for (; k < bulk_first; k++) compress_bytewise(st, m, k);
        const u64 d = 64 * bulk_first - m.prefix_len;  // chunk offset of the first bulk block
        const u32 q = (u32)(d & 15), qb = q & 3;
        const u32 sel = (qb << 12) | ((qb + 1) << 8) | ((qb + 2) << 4) | (qb + 3);
        const u8* base = m.chunk + (d - q);
        const u64 count = bulk_end - bulk_first;
        if (ASYNC) {
            __shared__ uint4 stage_s[SHA256_STAGES][4][SHA256_THREADS];
            switch (q >> 2) {
                case 0: compress_bulk_async<0, FMA_ADDS>(st, base, count, sel, one, stage_s); break;
                case 1: compress_bulk_async<1, FMA_ADDS>(st, base, count, sel, one, stage_s); break;
                case 2: compress_bulk_async<2, FMA_ADDS>(st, base, count, sel, one, stage_s); break;
                default: compress_bulk_async<3, FMA_ADDS>(st, base, count, sel, one, stage_s); break;
            }
        } else {
            switch (q >> 2) {
                case 0: compress_bulk<0, FMA_ADDS, FMA_SHR>(st, base, count, sel, one); break;
                case 1: compress_bulk<1, FMA_ADDS, FMA_SHR>(st, base, count, sel, one); break;
                case 2: compress_bulk<2, FMA_ADDS, FMA_SHR>(st, base, count, sel, one); break;
                default: compress_bulk<3, FMA_ADDS, FMA_SHR>(st, base, count, sel, one); break;
            }
        }
        k = bulk_end;
    }
    for (; k < m.nblocks; k++) compress_bytewise(st, m, k);

    // Digest bytes in order: the big-endian state words, byte-swapped for a u32 store.
#pragma unroll
    for (int j = 0; j < 8; j++) digests[8 * (u64)i + j] = __byte_perm(st[j], 0, 0x0123);
}

// `one` must be 1 (see sha256_add_fma). Variants of the same function: the bench measures
// all; the backend uses sha256_prefixed.
// SHA256_REGISTER_PREFETCH (the bench's comparison): the next block prefetched into
// registers instead of by cp.async.
#ifdef SHA256_REGISTER_PREFETCH
#define SHA256_PRODUCTION_ASYNC false
#else
#define SHA256_PRODUCTION_ASYNC true
#endif
extern "C" __global__ void __launch_bounds__(SHA256_THREADS)
sha256_prefixed(const u8* __restrict__ data, const u64* __restrict__ offsets,
                const u32* __restrict__ lens, u32 n, const u8* __restrict__ prefix,
                u32 prefix_len, u32* __restrict__ digests, u32 one) {
    sha256_prefixed_body<true, false, SHA256_PRODUCTION_ASYNC>(data, offsets, lens, n, prefix,
                                                               prefix_len, digests, one);
}

extern "C" __global__ void __launch_bounds__(SHA256_THREADS)
sha256_prefixed_alu(const u8* __restrict__ data, const u64* __restrict__ offsets,
                    const u32* __restrict__ lens, u32 n, const u8* __restrict__ prefix,
                    u32 prefix_len, u32* __restrict__ digests, u32 one) {
    sha256_prefixed_body<false, false>(data, offsets, lens, n, prefix, prefix_len, digests, one);
}

extern "C" __global__ void __launch_bounds__(SHA256_THREADS)
sha256_prefixed_shr_fma(const u8* __restrict__ data, const u64* __restrict__ offsets,
                        const u32* __restrict__ lens, u32 n, const u8* __restrict__ prefix,
                        u32 prefix_len, u32* __restrict__ digests, u32 one) {
    sha256_prefixed_body<true, true>(data, offsets, lens, n, prefix, prefix_len, digests, one);
}
