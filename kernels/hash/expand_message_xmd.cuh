// expand_message_xmd with SHA-256 (RFC 9380 section 5.3.1) for one message per thread,
// fixed to the 128 output bytes of hash_to_field for two BLS12-381 Fp elements
// (L = 64 bytes per element, count 2). Bytes are streamed through the 64-byte block of
// hash/sha256.cuh, so messages of any length read straight from global memory.
// DSTs longer than 255 bytes are reduced by the host (RFC 9380 section 5.3.3), as
// ic_bls12_381 does; the device takes DSTs of at most 255 bytes.
#ifndef SOVEREIGN_HASH_EXPAND_MESSAGE_XMD_CUH
#define SOVEREIGN_HASH_EXPAND_MESSAGE_XMD_CUH

#include "common.cuh"
#include "hash/sha256.cuh"

// A SHA-256 computation fed byte by byte: the chaining state, the block being filled
// (big-endian words) and the counts.
struct sha256_stream_t {
    u32 st[8];
    u32 w[16];
    u32 fill;   // bytes in the current block
    u64 total;  // bytes fed so far
};

__device__ __forceinline__ void sha256_stream_clear_block(sha256_stream_t& s) {
#pragma unroll
    for (int i = 0; i < 16; i++) s.w[i] = 0;
    s.fill = 0;
}

__device__ __forceinline__ void sha256_stream_init(sha256_stream_t& s) {
    sha256_init(s.st);
    sha256_stream_clear_block(s);
    s.total = 0;
}

// One shared copy of the compression for every block of every stream.
__device__ __noinline__ void sha256_stream_block(sha256_stream_t& s) {
    u32 w[16];
#pragma unroll
    for (int i = 0; i < 16; i++) w[i] = s.w[i];
    sha256_compress<false>(s.st, w, 1u);
    sha256_stream_clear_block(s);
}

__device__ __forceinline__ void sha256_stream_byte(sha256_stream_t& s, u32 b) {
    s.w[s.fill >> 2] |= (b & 0xffu) << (24 - 8 * (s.fill & 3));
    s.total++;
    if (++s.fill == 64) sha256_stream_block(s);
}

__device__ __noinline__ void sha256_stream_bytes(sha256_stream_t& s, const u8* p, u32 len) {
    for (u32 i = 0; i < len; i++) sha256_stream_byte(s, p[i]);
}

// Pads (FIPS 180-4 section 5.1.1) and writes the digest as 8 big-endian words.
__device__ __noinline__ void sha256_stream_finish(sha256_stream_t& s, u32 out[8]) {
    const u64 bits = s.total * 8;
    sha256_stream_byte(s, 0x80);
    while (s.fill != 56) sha256_stream_byte(s, 0);
    s.w[14] = (u32)(bits >> 32);
    s.w[15] = (u32)bits;
    sha256_stream_block(s);
#pragma unroll
    for (int i = 0; i < 8; i++) out[i] = s.st[i];
}

__device__ __forceinline__ void sha256_stream_word(sha256_stream_t& s, u32 v) {
    sha256_stream_byte(s, v >> 24);
    sha256_stream_byte(s, v >> 16);
    sha256_stream_byte(s, v >> 8);
    sha256_stream_byte(s, v);
}

// uniform = expand_message_xmd(msg, dst, 128) as 32 big-endian words:
//   b0 = H(Z_pad || msg || I2OSP(128, 2) || I2OSP(0, 1) || DST'),  DST' = dst || I2OSP(len, 1)
//   b1 = H(b0 || I2OSP(1, 1) || DST'),  b_i = H((b0 xor b_{i-1}) || I2OSP(i, 1) || DST')
// dst_len <= 255 (checked by the host).
__device__ __noinline__ void expand_message_xmd_128(u32 uniform[32], const u8* msg, u32 msg_len,
                                                    const u8* dst, u32 dst_len) {
    sha256_stream_t s;
    u32 b0[8];
    sha256_stream_init(s);
    sha256_stream_block(s);  // Z_pad: one block of zero bytes
    s.total = 64;
    sha256_stream_bytes(s, msg, msg_len);
    sha256_stream_byte(s, 0);     // len_in_bytes = 128, two bytes
    sha256_stream_byte(s, 128);
    sha256_stream_byte(s, 0);     // I2OSP(0, 1)
    sha256_stream_bytes(s, dst, dst_len);
    sha256_stream_byte(s, dst_len);
    sha256_stream_finish(s, b0);
    u32 prev[8];
#pragma unroll
    for (int k = 0; k < 8; k++) prev[k] = 0;  // b0 xor 0 = b0 for b1
    for (u32 i = 1; i <= 4; i++) {
        sha256_stream_init(s);
        for (int k = 0; k < 8; k++) sha256_stream_word(s, b0[k] ^ prev[k]);
        sha256_stream_byte(s, i);
        sha256_stream_bytes(s, dst, dst_len);
        sha256_stream_byte(s, dst_len);
        sha256_stream_finish(s, prev);
        for (int k = 0; k < 8; k++) uniform[8 * (i - 1) + k] = prev[k];
    }
}

#endif
