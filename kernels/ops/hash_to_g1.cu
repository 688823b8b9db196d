// Messages hashed to BLS12-381 G1 (RFC 9380 hash_to_curve, suite
// BLS12381G1_XMD:SHA-256_SSWU_RO_); the points as G1Affine::to_uncompressed, equal to
// ic_bls12_381's (gpu-crypto/engine/tests/gpu_hash_to_g1.rs).
#include "common.cuh"
#include "ec/g1_hash_to_curve.cuh"

// records: 4 words per message (message offset, message length, DST offset, DST length)
// into data; DSTs of at most 255 bytes (the host reduces longer ones). out: 96 bytes per
// message.
// Blocks of 64 threads for 32 messages: both warps expand the message (a few SHA-256
// blocks), then warp 0 maps u0 and warp 1 maps u1 at once (each map is an exponentiation
// by (p - 3) / 4 and the isogeny, about a third of the chain); warp 1 hands its point over
// in shared memory and warp 0 adds, clears the cofactor and encodes. The two warps run
// different code after the maps, so they are whole warps, never halves of one.
extern "C" __global__ void __launch_bounds__(64)
hash_to_g1(const u8* __restrict__ data, const u32* __restrict__ records, u32 n,
           u8* __restrict__ out) {
    __shared__ g1_proj_t second_map[32];
    const u32 warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const u32 i = blockIdx.x * 32 + lane;
    const bool active = i < n;
    g1_proj_t p;
    if (active) {
        const u32* rec = records + 4 * (u64)i;
        u32 uniform[32];
        expand_message_xmd_128(uniform, data + rec[0], rec[1], data + rec[2], rec[3]);
        fp_t u;
        fp_from_be_words_64(u, uniform + 16 * warp);
        g1_map_to_curve(p, u);
        if (warp == 1) second_map[lane] = p;
    }
    __syncthreads();
    if (!active || warp == 1) return;
    g1_add_shared(p, p, second_map[lane]);
    g1_clear_cofactor(p, p);
    u8 enc[96];
    g1_proj_to_uncompressed(enc, p);
    u8* o = out + 96 * (u64)i;
    for (int k = 0; k < 96; k++) o[k] = enc[k];
}
