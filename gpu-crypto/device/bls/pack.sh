#!/usr/bin/env bash
# Builds the GPU BLS test and bench executables here (release) and copies them with
# run.sh into .device-bls/ at the repository root (git-ignored), plus a kernel cache
# compiled here for sm_90 (a miss only means compiling there); copy .device-bls/ to the
# GPU machine and run there:
#   gpu-crypto/device/bls/pack.sh
#   bash .device-bls/run.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
cd "$root"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target-bls}"
rm -rf .device-bls && mkdir -p .device-bls
{ cargo test --release --no-run -p gpu-crypto --test gpu_bls --test gpu_bls_strategy --test gpu_hash_to_g1 --message-format=json
  cargo bench --no-run -p gpu-crypto --bench gpu_bls --message-format=json; } 2>/dev/null \
  | python3 -c '
import json, sys, shutil
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] in (["test"], ["bench"]):
        name = m["target"]["name"] + ("_bench" if m["target"]["kind"] == ["bench"] else "")
        shutil.copy2(m["executable"], ".device-bls/" + name)
        print(".device-bls/" + name)
'
cp gpu-crypto/device/bls/run.sh .device-bls/run.sh
for f in .device-bls/gpu*; do strip --strip-debug "$f"; done
for t in gpu_bls gpu_bls_strategy gpu_hash_to_g1 gpu_bls_bench; do [ -x ".device-bls/$t" ] || { echo "missing .device-bls/$t" >&2; exit 1; }; done
if [ "${BLS_PREBUILD_CACHE:-1}" = 1 ]; then
  LD_LIBRARY_PATH="$root/target/nvrtc/nvidia/cu13/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    python3 gpu-crypto/device/bls/prebuild_cache.py .device-bls/kernels sm_90 13000
fi
du -sh .device-bls
