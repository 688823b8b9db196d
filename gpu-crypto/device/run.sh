#!/usr/bin/env bash
# Runs on the GPU machine (see pack.sh): every GPU test, the ignored ones included (they
# need the GPU and NVRTC this machine has), the 16-thread soak, then the GPU-vs-CPU bench. Logs go to $OUT (fetched by the tool).
# GPU_BENCH_QUICK=1: small bench sizes and a 2,000-batch soak (smoke run).
# GPU_RUN_TESTS: the test binaries to run (default: those pack.sh built, listed in tests); GPU_BENCH_VARIANTS=0: the bench
# measures only the production kernels; GPU_CRYPTO_SOAK_BATCHES: soak length (default
# 100,000), 0 skips the soak.
set -uo pipefail
cd "$(dirname "$0")"
OUT="${OUT:-/tmp/gpu-out}"; mkdir -p "$OUT"
# NVRTC: the CUDA toolkit's or the nvidia-cuda-nvrtc wheel's (libnvrtc-builtins beside it).
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
  $(python3 -c 'import nvidia,os;[print(os.path.join(p,"cu13","lib")) for p in nvidia.__path__]' 2>/dev/null); do
  if [ -e "$d/libnvrtc.so.13" ]; then export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; break; fi
done
export GPU_CRYPTO_KERNEL_CACHE=/tmp/gpu-crypto-kernels
export RUST_BACKTRACE=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv; nproc; echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"; } 2>&1 | tee "$OUT/env.log"
rc=0
for t in ${GPU_RUN_TESTS:-$(cat tests)}; do
  s=$EPOCHREALTIME
  if ./"$t" --include-ignored --test-threads=4 --nocapture > "/tmp/test-$t.log" 2>&1; then r=ok; else r=FAILED; rc=1; fi
  printf '%-20s %-6s %6.1f s  %s\n' "$t" "$r" "$(awk -v a="$s" -v b="$EPOCHREALTIME" "BEGIN{print b-a}")" "$(grep -E '^test result' "/tmp/test-$t.log" | tail -1)" | tee -a "$OUT/summary.log"
  { echo "===== $t"; cat "/tmp/test-$t.log"; } >> "$OUT/tests.log"
done
if [ "${GPU_BENCH_QUICK:-0}" = 1 ]; then export GPU_CRYPTO_SOAK_BATCHES="${GPU_CRYPTO_SOAK_BATCHES:-2000}"; fi
if [ "${GPU_CRYPTO_SOAK_BATCHES:-}" != 0 ] && [ ! -x ./gpu_soak ]; then
  echo "gpu_soak             not packed (PACK_TESTS)" | tee -a "$OUT/summary.log"
elif [ "${GPU_CRYPTO_SOAK_BATCHES:-}" != 0 ]; then
s=$EPOCHREALTIME
if ./gpu_soak --ignored --nocapture > /tmp/test-gpu_soak.log 2>&1; then r=ok; else r=FAILED; rc=1; fi
printf '%-20s %-6s %6.1f s  %s\n' gpu_soak "$r" "$(awk -v a="$s" -v b="$EPOCHREALTIME" "BEGIN{print b-a}")" "$(grep -E '^soak:' /tmp/test-gpu_soak.log | tail -1)" | tee -a "$OUT/summary.log"
{ echo "===== gpu_soak"; cat /tmp/test-gpu_soak.log; } >> "$OUT/tests.log"
fi
for f in /tmp/test-*.log; do grep -q -E "FAILED|panicked" "$f" && { echo "== $f"; grep -E -B2 -A12 "panicked|FAILED" "$f" | head -60; }; done
# SM clock and power while the bench runs (read only; the card's settings are left alone).
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu --format=csv -lms 250 > "$OUT/clocks.log" 2>&1 &
smi=$!
./gpu 2>&1 | tee "$OUT/bench.log" || rc=1
kill "$smi" 2>/dev/null
echo "exit $rc" | tee -a "$OUT/summary.log"
exit $rc
