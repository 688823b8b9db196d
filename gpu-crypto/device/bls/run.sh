#!/usr/bin/env bash
# Runs on the GPU machine (see pack.sh): the GPU BLS tests (the ignored ones included: they need the GPU), then the BLS
# bench (GPU vs the CPU path vs blst's batch verification on all host cores). Logs go to
# $OUT. BLS_BENCH_QUICK=1: small sizes.
set -uo pipefail
cd "$(dirname "$0")"
OUT="${OUT:-/tmp/gpu-out}"; mkdir -p "$OUT"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
  $(python3 -c 'import nvidia,os;[print(os.path.join(p,"cu13","lib")) for p in nvidia.__path__]' 2>/dev/null); do
  if [ -e "$d/libnvrtc.so.13" ]; then export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; break; fi
done
export RUST_BACKTRACE=1
# Cubins compiled by pack.sh, copied to a writable place (the device compiles on a miss).
export GPU_CRYPTO_KERNEL_CACHE=/tmp/gpu-crypto-kernels
mkdir -p "$GPU_CRYPTO_KERNEL_CACHE"; cp kernels/*.cubin "$GPU_CRYPTO_KERNEL_CACHE/" 2>/dev/null
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv; nproc; } 2>&1 | tee "$OUT/env.log"
rc=0
for t in ${BLS_TESTS:-gpu_hash_to_g1 gpu_bls_strategy gpu_bls}; do
  s=$EPOCHREALTIME
  # PROFILE=2: every combination's root is also decided on the GPU and compared (bls.rs).
  if GPU_CRYPTO_BLS_PROFILE=2 timeout "${BLS_TEST_TIMEOUT:-240}" ./"$t" --include-ignored --test-threads=4 --nocapture > "$OUT/test-$t.log" 2>&1; then r=ok; else r=FAILED; rc=1; fi
  printf '%-20s %-6s %6.1f s  %s\n' "$t" "$r" "$(awk -v a="$s" -v b="$EPOCHREALTIME" "BEGIN{print b-a}")" "$(grep -E '^test result' "$OUT/test-$t.log" | tail -1)" | tee -a "$OUT/summary.log"
  grep -q -E "FAILED|panicked" "$OUT/test-$t.log" && grep -E -B2 -A12 "panicked|FAILED" "$OUT/test-$t.log" | head -60
done
if [ "${BLS_BENCH:-1}" = 1 ]; then
  ( while sleep 1; do nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader; done ) > "$OUT/clocks.log" 2>&1 &
  clk=$!
  GPU_CRYPTO_BLS_PROFILE=1 GPU_BENCH_QUICK="${BLS_BENCH_QUICK:-0}" timeout "${BLS_BENCH_TIMEOUT:-300}" ./gpu_bls_bench > "$OUT/bench-bls.log" 2>&1 || rc=1
  kill "$clk" 2>/dev/null
  grep -v "^bls profile" "$OUT/bench-bls.log" | tail -40
fi
ls "$GPU_CRYPTO_KERNEL_CACHE" > "$OUT/kernel-cache.log" 2>&1
echo "exit $rc" | tee -a "$OUT/summary.log"
exit $rc
