#!/usr/bin/env bash
# Runs on the GPU machine (see pack.sh): the GPU MSM tests (GPU and NVRTC required), then
# the GPU-vs-CPU MSM bench. Logs go to $OUT (fetched by the device tool).
set -uo pipefail
cd "$(dirname "$0")"
OUT="${OUT:-/tmp/gpu-out}"; mkdir -p "$OUT"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
  $(python3 -c 'import nvidia,os;[print(os.path.join(p,"cu13","lib")) for p in nvidia.__path__]' 2>/dev/null); do
  if [ -e "$d/libnvrtc.so.13" ]; then export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; break; fi
done
export GPU_CRYPTO_REQUIRE_GPU=1 GPU_CRYPTO_REQUIRE_NVRTC=1
export GPU_CRYPTO_KERNEL_CACHE=/tmp/gpu-crypto-kernels
export RUST_BACKTRACE=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv; nproc; } 2>&1 | tee "$OUT/env.log"
rc=0
for t in ${MSM_TESTS:-gpu_msm}; do
  s=$EPOCHREALTIME
  if ./"$t" --test-threads=2 --nocapture > "$OUT/test-$t.log" 2>&1; then r=ok; else r=FAILED; rc=1; fi
  printf '%-20s %-6s %6.1f s  %s\n' "$t" "$r" "$(awk -v a="$s" -v b="$EPOCHREALTIME" "BEGIN{print b-a}")" "$(grep -E '^test result' "$OUT/test-$t.log" | tail -1)" | tee -a "$OUT/summary.log"
  grep -q -E "FAILED|panicked" "$OUT/test-$t.log" && grep -E -B2 -A12 "panicked|FAILED" "$OUT/test-$t.log" | head -60
done
if [ "${MSM_BENCH:-1}" = 1 ]; then
  timeout "${MSM_BENCH_TIMEOUT:-300}" ./gpu_msm_bench 2>&1 | tee "$OUT/bench-msm.log" || rc=1
fi
echo "exit $rc" | tee -a "$OUT/summary.log"
exit $rc
