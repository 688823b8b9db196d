#!/usr/bin/env bash
# Builds (release) every GPU test binary of gpu-crypto, the CLI and its test binary on this
# machine, and packs them with run.sh into DEST (default .device-suite/ at the repository
# root, git-ignored) as one compressed archive; copy DEST to a machine with an NVIDIA GPU
# and run
#   tar xf DEST/bundle.tar.xz -C DEST && bash DEST/run.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
cd "$root"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target-cuda}"
dest="${DEST:-$root/.device-suite}"
tests=(gpu_decompress gpu_runtime gpu_kernel_cache gpu_nvrtc_compile gpu_sha256 gpu_msm
  gpu_msm_encoded gpu_msm_shared_u8 gpu_pairing gpu_nidkg gpu_nidkg_batch gpu_bls gpu_bls_strategy
  gpu_hash_to_g1 gpu_msm_g2)
args=(); for t in "${tests[@]}"; do args+=(--test "$t"); done
stage=$(mktemp -d)
{ cargo test --release --locked --no-run -p gpu-crypto "${args[@]}" -p gpu-crypto-cli --test cli \
    --message-format=json
  cargo build --release --locked -p gpu-crypto-cli --bin gpu-crypto --message-format=json; } \
    2>/dev/null \
  | python3 -c '
import json, sys, shutil
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        kind, name = m["target"]["kind"], m["target"]["name"]
        if kind in (["test"], ["bin"]):
            shutil.copy2(m["executable"], sys.argv[1] + "/" + name)
            if kind == ["bin"]:
                open(sys.argv[1] + "/cli-bin-path", "w").write(m["executable"])
            print(name)
' "$stage"
cp gpu-crypto/device/suite/run.sh gpu-crypto/device/suite/offload-policy.toml "$stage/"
printf '%s\n' "${tests[@]}" cli > "$stage/tests"
# The CLI test finds the decompression corpus and the CLI's manifest folder by these.
mkdir -p "$stage/testdata" && cp gpu-crypto/engine/testdata/decompress/*.txt "$stage/testdata/"
echo "$root/gpu-crypto/engine/testdata/decompress" > "$stage/testdata-path"
echo "$root/gpu-crypto/cli" > "$stage/cli-manifest-dir"
# The IC's published NI-DKG data travels in the bundle only (never in the repository), so
# that the GPU machine verifies the IC's own dealing too.
ic_data="$root/../shared/testdata/ic-nidkg"
if [ -d "$ic_data" ]; then mkdir -p "$stage/ic-nidkg" && cp "$ic_data"/*.hex "$stage/ic-nidkg/"; fi
for f in "$stage"/gpu* "$stage"/cli; do strip --strip-debug "$f"; done
for t in "${tests[@]}" cli gpu-crypto; do [ -x "$stage/$t" ] || { echo "missing $t (build failed?)" >&2; exit 1; }; done
rm -rf "$dest" && mkdir -p "$dest"
tar -C "$stage" -cf - . | xz -T0 -6 > "$dest/bundle.tar.xz"
rm -rf "$stage"
du -sh "$dest"
