#!/usr/bin/env bash
# Builds sppark_peer (the sppark MSM peer of the side-by-side bench) from the sources that
# pack.sh copied into .device-msm/src/ (the sppark and blst crates from the cargo registry;
# never committed). Run where nvcc is: on the GPU machine by run.sh, or here with
# NVCC=... CUDA_FLAGS="-I..." for a compile check.
#   build_peer.sh DIR   (DIR holds src/ and sppark_peer.cu; the binary lands in DIR)
set -euo pipefail
dir="$(cd "${1:-$(dirname "$0")}" && pwd)"
NVCC="${NVCC:-nvcc}"
b="$dir/src/blst"
tmp="$(mktemp -d)"
# The blst crate's build.rs flags for the C part, ADX forced as sppark's poc does.
gcc -O2 -fno-builtin -fPIC -mno-avx -D__ADX__ -c "$b/src/server.c" -o "$tmp/server.o"
gcc -O2 -fno-builtin -fPIC -mno-avx -D__ADX__ -c "$b/build/assembly.S" -o "$tmp/assembly.o"
ar rcs "$tmp/libblst.a" "$tmp/server.o" "$tmp/assembly.o"
"$NVCC" -arch=sm_90 -O3 -std=c++17 -DFEATURE_BLS12_381 -D__ADX__ \
  -DTAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE ${CUDA_FLAGS:-} \
  -I "$dir/src/sppark" -I "$b/src" -I "$b/bindings" \
  "$dir/sppark_peer.cu" "$dir/src/sppark/util/all_gpus.cpp" \
  -o "$dir/sppark_peer" "$tmp/libblst.a" ${CUDA_LDFLAGS:-}
rm -rf "$tmp"
echo "built $dir/sppark_peer"
