#!/usr/bin/env bash
# Builds the BLS kernels for the host with g++ and runs them against vectors from
# ic_bls12_381 (vectors made by gen_vectors.rs: build it as the main.rs of a scratch crate
# depending on ic_bls12_381 0.10.1, rand 0.8, rand_chacha 0.3, hex, ff and group 0.13, and
# run it into a file). Usage: check.sh VECTORS
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../../.." && pwd)"
work="${TMPDIR:-/tmp}/bls-hostcheck"
mkdir -p "$work/shim/ff"
# fp.cuh with the PTX multiplication swapped for a portable one.
python3 - "$root/kernels/ff/fp.cuh" "$work/shim/ff/fp.cuh" <<'PY'
import sys, re
src = open(sys.argv[1]).read()
start = src.index("__device__ __noinline__ fp_t fp_mul_v(")
end = src.index("\n}\n", start) + 3
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
g++ -O2 -std=c++17 -include "$here/prelude.h" -I "$work/shim" -I "$root/kernels" \
  -x c++ "$here/hostcheck.cpp" -o "$work/hostcheck"
"$work/hostcheck" "$1"
