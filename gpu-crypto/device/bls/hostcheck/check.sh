#!/usr/bin/env bash
# Builds BLS kernels for the host with g++ (CUDA keywords as plain C++, prelude.h; the PTX
# field product swapped for a portable CIOS and the additions taken in their portable
# FP_ADD_U64_EMULATION form) and checks them, no GPU needed:
#   * ops/hash_to_g1.cu against the RFC 9380 vectors of gpu-crypto/testdata/hash_to_g1/
#     (h2c_check.cpp: a block's two warps run one after the other, the second first, as
#     the shared-memory hand-over needs);
#   * the cut Miller loops of ops/bls_verify.cu (four threads per item) against the uncut
#     ones (two threads per item) on random inputs (ml_split_check.cpp);
#   * with VECTORS, ops/bls_verify.cu and ops/bls_pairing.cu against vectors from
#     ic_bls12_381 (hostcheck.cpp; vectors made by gen_vectors.rs: build it as the main.rs
#     of a scratch crate depending on ic_bls12_381 0.10.1, rand 0.8, rand_chacha 0.3, hex,
#     ff and group 0.13, and run it into a file).
# Usage: check.sh [VECTORS]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../../.." && pwd)"
work="${TMPDIR:-/tmp}/bls-hostcheck"
mkdir -p "$work/shim/ff"
# fp.cuh with the one-chain PTX product replaced by a portable CIOS.
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
# build_run PROGRAM [ARGS]: PROGRAM.cpp built against the shim, then run (exit status: the
# number of mismatches).
build_run() {
  local program=$1; shift
  g++ -O1 -std=c++17 -DFP_ADD_U64_EMULATION -DFP_MUL_ONE_CHAIN -include "$here/prelude.h" \
    -I "$work/shim" -I "$root/kernels" -x c++ "$here/$program.cpp" -o "$work/$program"
  "$work/$program" "$@"
}
build_run h2c_check "$root/gpu-crypto/testdata/hash_to_g1/rfc9380_bls12381g1_xmd_sha256_sswu_ro.txt"
build_run ml_split_check
if [ $# -ge 1 ]; then build_run hostcheck "$1"; fi
