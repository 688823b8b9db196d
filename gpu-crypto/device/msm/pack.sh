#!/usr/bin/env bash
# Builds the GPU MSM test and bench executables here (release) and copies them with
# run.sh into .device-msm/ at the repository root (git-ignored), for the device tool:
#   gpu-crypto/device/msm/pack.sh
#   run(command="bash .device-msm/run.sh", carry=[".device-msm"])
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
cd "$root"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target-msm}"
rm -rf .device-msm && mkdir -p .device-msm
{ cargo test --release --no-run -p gpu-crypto --test gpu_msm --test gpu_nvrtc_compile --message-format=json
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
cp gpu-crypto/device/msm/run.sh .device-msm/run.sh
for f in .device-msm/gpu*; do strip --strip-debug "$f"; done
for t in gpu_msm gpu_nvrtc_compile gpu_msm_bench; do [ -x ".device-msm/$t" ] || { echo "missing .device-msm/$t" >&2; exit 1; }; done
du -sh .device-msm
