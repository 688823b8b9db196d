// SHA-256 compression function (FIPS 180-4) on one 64-byte block given as 16 big-endian
// words, with the 16-word rolling message schedule kept in registers.
#ifndef SOVEREIGN_HASH_SHA256_CUH
#define SOVEREIGN_HASH_SHA256_CUH

#include "common.cuh"

__device__ __constant__ u32 SHA256_K[64] = {
    0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u, 0x923f82a4u,
    0xab1c5ed5u, 0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu,
    0x9bdc06a7u, 0xc19bf174u, 0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu,
    0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau, 0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u,
    0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u, 0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu,
    0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u, 0xa2bfe8a1u, 0xa81a664bu,
    0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u, 0x19a4c116u,
    0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
    0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u, 0x90befffau, 0xa4506cebu, 0xbef9a3f7u,
    0xc67178f2u};

__device__ __forceinline__ void sha256_init(u32 st[8]) {
    st[0] = 0x6a09e667u; st[1] = 0xbb67ae85u; st[2] = 0x3c6ef372u; st[3] = 0xa54ff53au;
    st[4] = 0x510e527fu; st[5] = 0x9b05688cu; st[6] = 0x1f83d9abu; st[7] = 0x5be0cd19u;
}

__device__ __forceinline__ u32 sha256_rotr(u32 x, u32 n) { return __funnelshift_r(x, x, n); }

// x + y on the FMA pipe: an IMAD by a multiplier the compiler cannot see is 1 (`one`
// comes from a kernel argument). SHA-256 saturates the integer ALU pipe with shifts and
// logic ops; moving some additions to IMAD runs them on the otherwise idle FMA pipe.
__device__ __forceinline__ u32 sha256_add_fma(u32 x, u32 y, u32 one) {
    u32 r;
    asm("mad.lo.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(one), "r"(y));
    return r;
}

// x >> n on the FMA pipe: the high word of x * 2^(32-n), with the multiplier built from
// `one` so the compiler cannot turn it back into a shift.
__device__ __forceinline__ u32 sha256_shr_fma(u32 x, u32 pow2) {
    u32 r;
    asm("mul.hi.u32 %0, %1, %2;" : "=r"(r) : "r"(x), "r"(pow2));
    return r;
}

// `one` must be 1. FMA_SHR also moves the message schedule's two plain shifts to the FMA
// pipe (a benchmark variant: fewer ALU operations, two more IMADs per word).
// FMA_ADDS puts every addition of the rounds and of the message schedule
// on the FMA pipe, leaving the ALU the rotations and the logic ops (measured on the H200:
// 655 GB/s against 462 GB/s with the additions on the ALU). Regrouping the additions to
// shorten the e -> e' chain measured slower (590 GB/s), so they stay in this order.
template <bool FMA_ADDS, bool FMA_SHR = false>
__device__ __forceinline__ void sha256_compress(u32 st[8], u32 w[16], u32 one) {
    const u32 pow2_29 = one << 29, pow2_22 = one << 22;
    u32 a = st[0], b = st[1], c = st[2], d = st[3], e = st[4], f = st[5], g = st[6], h = st[7];
#pragma unroll
    for (int r = 0; r < 64; r++) {
        if (r >= 16) {
            const u32 w15 = w[(r + 1) & 15], w2 = w[(r + 14) & 15];
            const u32 sh3 = FMA_SHR ? sha256_shr_fma(w15, pow2_29) : w15 >> 3;
            const u32 sh10 = FMA_SHR ? sha256_shr_fma(w2, pow2_22) : w2 >> 10;
            const u32 s0 = sha256_rotr(w15, 7) ^ sha256_rotr(w15, 18) ^ sh3;
            const u32 s1 = sha256_rotr(w2, 17) ^ sha256_rotr(w2, 19) ^ sh10;
            if (FMA_ADDS)
                w[r & 15] = sha256_add_fma(
                    sha256_add_fma(w[r & 15], s0, one),
                    sha256_add_fma(w[(r + 9) & 15], s1, one), one);
            else
                w[r & 15] += s0 + w[(r + 9) & 15] + s1;
        }
        const u32 S1 = sha256_rotr(e, 6) ^ sha256_rotr(e, 11) ^ sha256_rotr(e, 25);
        const u32 ch = (e & f) ^ (~e & g);
        const u32 S0 = sha256_rotr(a, 2) ^ sha256_rotr(a, 13) ^ sha256_rotr(a, 22);
        const u32 maj = (a & b) ^ (a & c) ^ (b & c);
        u32 t1;
        if (FMA_ADDS) {
            const u32 hkw = sha256_add_fma(sha256_add_fma(w[r & 15], SHA256_K[r], one), h, one);
            t1 = sha256_add_fma(sha256_add_fma(S1, ch, one), hkw, one);
        } else {
            t1 = h + S1 + ch + SHA256_K[r] + w[r & 15];
        }
        h = g; g = f; f = e;
        e = FMA_ADDS ? sha256_add_fma(d, t1, one) : d + t1;
        d = c; c = b; b = a;
        a = FMA_ADDS ? sha256_add_fma(t1, sha256_add_fma(S0, maj, one), one) : t1 + S0 + maj;
    }
    st[0] += a; st[1] += b; st[2] += c; st[3] += d;
    st[4] += e; st[5] += f; st[6] += g; st[7] += h;
}

#endif
