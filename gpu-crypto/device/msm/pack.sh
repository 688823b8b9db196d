#!/usr/bin/env bash
# Builds the GPU MSM test and bench executables here (release) and copies them, run.sh,
# the sppark peer driver and the sources it is built from into .device-msm/ at the
# repository root (git-ignored); copy .device-msm/ to the GPU machine and run there:
#   gpu-crypto/device/msm/pack.sh
#   bash .device-msm/run.sh
# The peer's sources come from the cargo registry (the sppark and blst crates, fetched with
# `cargo fetch` in a scratch project that depends on sppark = "=0.1.16"); they are only
# carried to the device, never committed.
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
cd "$root"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target-msm}"
reg="${CARGO_HOME:-$HOME/.cargo}/registry/src"
sppark="$(ls -d "$reg"/*/sppark-0.1.16/sppark | head -1)"
blst="$(ls -d "$reg"/*/blst-0.3.17/blst | head -1)"
[ -d "$sppark" ] && [ -d "$blst" ] || { echo "sppark 0.1.16 / blst 0.3.17 sources not in $reg" >&2; exit 1; }
rm -rf .device-msm && mkdir -p .device-msm/src/blst/build
{ cargo test --release --no-run -p gpu-crypto --test gpu_msm --test gpu_msm_encoded --test gpu_nvrtc_compile --message-format=json
  cargo bench --no-run -p gpu-crypto --bench gpu_msm --message-format=json; } 2>/dev/null \
  | python3 -c '
import json, sys, shutil
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] in (["test"], ["bench"]):
        name = m["target"]["name"] + ("_bench" if m["target"]["kind"] == ["bench"] else "")
        shutil.copy2(m["executable"], ".device-msm/" + name)
        print(".device-msm/" + name)
'
cp gpu-crypto/device/msm/run.sh gpu-crypto/device/msm/build_peer.sh gpu-crypto/device/msm/sppark_peer.cu .device-msm/
cp -r "$sppark" .device-msm/src/sppark
cp -r "$blst/src" "$blst/bindings" .device-msm/src/blst/
cp -r "$blst/build/assembly.S" "$blst/build/elf" .device-msm/src/blst/build/
for f in .device-msm/gpu*; do strip --strip-debug "$f"; done
for t in gpu_msm gpu_msm_encoded gpu_nvrtc_compile gpu_msm_bench; do [ -x ".device-msm/$t" ] || { echo "missing .device-msm/$t" >&2; exit 1; }; done
du -sh .device-msm
