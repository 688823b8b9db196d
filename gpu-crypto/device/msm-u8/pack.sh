#!/usr/bin/env bash
# Builds (release) the GPU test binaries of the shared-base 8-bit MSM (and of the generic
# MSM, whose kernel shares its point and bucket helpers) and the CLI on this machine, and
# packs them with run.sh into DEST (default .device-msmu8/ at the repository root,
# git-ignored) as one compressed archive; copy DEST to a machine with an NVIDIA GPU and run
#   tar xf DEST/bundle.tar.xz -C DEST && bash DEST/run.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
cd "$root"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target-cuda}"
dest="${DEST:-$root/.device-msmu8}"
tests=(gpu_msm_shared_u8 gpu_msm gpu_msm_encoded gpu_kernel_cache gpu_runtime)
args=(); for t in "${tests[@]}"; do args+=(--test "$t"); done
stage=$(mktemp -d)
{ cargo test --release --locked --no-run -p gpu-crypto "${args[@]}" --message-format=json
  cargo build --release --locked -p gpu-crypto-cli --bin gpu-crypto --message-format=json; } \
    2>/dev/null \
  | python3 -c '
import json, sys, shutil
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        if m["target"]["kind"] in (["test"], ["bin"]):
            shutil.copy2(m["executable"], sys.argv[1] + "/" + m["target"]["name"])
            print(m["target"]["name"])
' "$stage"
cp gpu-crypto/device/msm-u8/run.sh "$stage/run.sh"
printf '%s\n' "${tests[@]}" > "$stage/tests"
for f in "$stage"/gpu*; do strip --strip-debug "$f"; done
for t in "${tests[@]}" gpu-crypto; do [ -x "$stage/$t" ] || { echo "missing $t (build failed?)" >&2; exit 1; }; done
rm -rf "$dest" && mkdir -p "$dest"
tar -C "$stage" -cf - . | xz -T0 -6 > "$dest/bundle.tar.xz"
rm -rf "$stage"
du -sh "$dest"
