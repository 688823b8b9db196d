#!/usr/bin/env bash
# Builds kernels/ops/hash_to_g1.cu for the host with g++ (CUDA keywords as plain C++, the
# PTX field product and additions swapped for portable ones, a block's two warps run one
# after the other: the second first, as the shared-memory hand-over needs) and checks it
# against the RFC 9380 vectors of gpu-crypto/testdata/hash_to_g1/; then checks the cut
# Miller loops of ops/bls_verify.cu against the uncut ones. No GPU needed.
# Usage: h2c_check.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../../.." && pwd)"
work="${TMPDIR:-/tmp}/h2c-hostcheck"
mkdir -p "$work/shim/ff"
# fp.cuh with the one-chain PTX product replaced by a portable CIOS (additions: the
# FP_ADD_U64_EMULATION variant, already portable).
python3 - "$root/kernels/ff/fp.cuh" "$work/shim/ff/fp.cuh" <<'PY'
import sys
src = open(sys.argv[1]).read()
start = src.index("#ifdef FP_MUL_ONE_CHAIN")
end = src.index("__device__ __forceinline__ void fp_mul(fp_t& r")
portable = '''__device__ __noinline__ fp_t fp_mul_v(const fp_t a, const fp_t b) {
    u32 t[FP_LIMBS + 2] = {0};
    for (int i = 0; i < FP_LIMBS; i++) {
        u64 c = 0;
        for (int j = 0; j < FP_LIMBS; j++) {
            c += (u64)t[j] + (u64)a.l[j] * b.l[i];
            t[j] = (u32)c; c >>= 32;
        }
        c += t[FP_LIMBS]; t[FP_LIMBS] = (u32)c; t[FP_LIMBS + 1] = (u32)(c >> 32);
        const u32 m = t[0] * FP_PINV;
        c = ((u64)t[0] + (u64)m * fp_p(0)) >> 32;
        for (int j = 1; j < FP_LIMBS; j++) {
            c += (u64)t[j] + (u64)m * fp_p(j);
            t[j - 1] = (u32)c; c >>= 32;
        }
        c += t[FP_LIMBS]; t[FP_LIMBS - 1] = (u32)c; c >>= 32;
        t[FP_LIMBS] = t[FP_LIMBS + 1] + (u32)c;
    }
    fp_t s, r;
    for (int j = 0; j < FP_LIMBS; j++) s.l[j] = t[j];
    fp_reduce_once(r, s, t[FP_LIMBS]);
    return r;
}

'''
open(sys.argv[2], "w").write(src[:start] + portable + src[end:])
PY
cat > "$work/prelude.h" <<'H'
#pragma once
#include <cstdint>
#define __device__
#define __global__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __constant__
#define __restrict__
#define __launch_bounds__(x)
#define __shared__ static
#define __syncthreads()
struct dim3h { unsigned x, y, z; };
static dim3h blockIdx, threadIdx, blockDim = {64, 1, 1};
static inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned n) {
    n &= 31;
    return n ? (lo >> n) | (hi << (32 - n)) : lo;
}
H
g++ -O1 -std=c++17 -DFP_ADD_U64_EMULATION -DFP_MUL_ONE_CHAIN -include "$work/prelude.h" \
  -I "$work/shim" -I "$root/kernels" -x c++ "$here/h2c_check.cpp" -o "$work/h2c_check"
"$work/h2c_check" "$root/gpu-crypto/testdata/hash_to_g1/rfc9380_bls12381g1_xmd_sha256_sswu_ro.txt"
# The same build of ops/bls_verify.cu: cut Miller loops (four threads per item) against
# the uncut ones (two threads per item).
g++ -O1 -std=c++17 -DFP_ADD_U64_EMULATION -DFP_MUL_ONE_CHAIN -include "$work/prelude.h" \
  -I "$work/shim" -I "$root/kernels" -x c++ "$here/ml_split_check.cpp" -o "$work/ml_split_check"
"$work/ml_split_check"
