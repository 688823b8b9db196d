#!/usr/bin/env bash
# Builds the GPU test executables and the bench runner on this machine (release), and
# copies them with run.sh into .device/ at the repository root (git-ignored); copy .device/
# to a machine with an NVIDIA GPU and run there (docs/gpu.md):
#   gpu-crypto/device/pack.sh
#   bash .device/run.sh                       # full run
#   GPU_BENCH_QUICK=1 bash .device/run.sh     # smoke run
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target-cuda}"
# The field and curve headers are shared with the MSM and BLS kernels: their tests run too.
# PACK_TESTS="a b ..": only those test binaries (a shorter build).
tests=(gpu_decompress gpu_sha256 gpu_runtime gpu_kernel_cache gpu_nvrtc_compile gpu_soak
  gpu_msm gpu_msm_encoded gpu_msm_g2 gpu_bls gpu_bls_strategy gpu_hash_to_g1)
if [ -n "${PACK_TESTS:-}" ]; then read -r -a tests <<< "$PACK_TESTS"; fi
args=(); for t in "${tests[@]}"; do args+=(--test "$t"); done
rm -rf .device && mkdir -p .device
{ cargo test --release --no-run -p gpu-crypto "${args[@]}" --message-format=json
  cargo bench --no-run -p gpu-crypto --bench gpu --message-format=json; } 2>/dev/null \
  | python3 -c '
import json, sys, shutil
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] in (["test"], ["bench"]):
        name = m["target"]["name"]
        shutil.copy2(m["executable"], ".device/" + name)
        print(".device/" + name)
'
cp gpu-crypto/device/run.sh .device/run.sh
# run.sh's default list: the test binaries built here (the whole list or PACK_TESTS).
printf '%s\n' "${tests[@]}" | grep -v '^gpu_soak$' > .device/tests || true
# Keep .device/ small enough to copy (about 64 MiB): drop debug info.
for f in .device/gpu*; do strip --strip-debug "$f"; done
for t in "${tests[@]}" gpu; do [ -x ".device/$t" ] || { echo "missing .device/$t (build failed?)" >&2; exit 1; }; done
du -sh .device
