#!/usr/bin/env bash
# Runs on the GPU machine from the directory pack.sh filled: the GPU tests of gpu-crypto
# (gpu_decompress first: G1 and G2 against the CPU reference), the CLI's GPU test, then
# `gpu-crypto bench --json --backend gpu` (every operation, GPU and the CPU path on all host
# threads in the same run). Logs and the bench document go to $OUT.
# G2_RUN_TESTS: the test binaries to run (default: all packed); G2_BENCH=0 skips the bench.
set -uo pipefail
cd "$(dirname "$0")"
OUT="${OUT:-/tmp/gpu-out}"; mkdir -p "$OUT"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
  $(python3 -c 'import nvidia,os;[print(os.path.join(p,"cu13","lib")) for p in nvidia.__path__]' 2>/dev/null); do
  if [ -e "$d/libnvrtc.so.13" ]; then export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; break; fi
done
export GPU_CRYPTO_KERNEL_CACHE=/tmp/gpu-crypto-kernels RUST_BACKTRACE=1
# The CLI test finds the binary and the corpus files at the paths its build recorded.
bin_path=$(cat cli-bin-path); mkdir -p "$(dirname "$bin_path")"; cp gpu-crypto "$bin_path"
data_path=$(cat testdata-path); mkdir -p "$data_path" "$(cat cli-manifest-dir)"; cp testdata/* "$data_path"/
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv; nproc; lscpu | grep 'Model name'; } 2>&1 | tee "$OUT/env.log"
rc=0
for t in ${G2_RUN_TESTS:-$(cat tests)}; do
  s=$EPOCHREALTIME
  filter=""; [ "$t" = cli ] && filter="gpu"
  if timeout 240 ./"$t" --include-ignored --test-threads=4 $filter > "/tmp/test-$t.log" 2>&1; then r=ok; else r=FAILED; rc=1; fi
  printf '%-20s %-6s %6.1f s  %s\n' "$t" "$r" "$(awk -v a="$s" -v b="$EPOCHREALTIME" "BEGIN{print b-a}")" "$(grep -E '^test result' "/tmp/test-$t.log" | tail -1)" | tee -a "$OUT/summary.log"
  { echo "===== $t"; cat "/tmp/test-$t.log"; } >> "$OUT/tests.log"
  if [ "$t" = gpu_decompress ] && [ "${G2_BENCH:-1}" = 1 ]; then
    nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu --format=csv -lms 500 > "$OUT/clocks.log" 2>&1 &
    smi=$!
    s=$EPOCHREALTIME
    if timeout 300 ./gpu-crypto bench --json --backend gpu > "$OUT/bench.json" 2> "$OUT/bench.err"; then r=ok; else r=FAILED; rc=1; fi
    kill "$smi" 2>/dev/null
    printf '%-20s %-6s %6.1f s\n' "bench" "$r" "$(awk -v a="$s" -v b="$EPOCHREALTIME" "BEGIN{print b-a}")" | tee -a "$OUT/summary.log"
  fi
done
for f in /tmp/test-*.log; do grep -q -E "FAILED|panicked" "$f" && { echo "== $f"; grep -E -B2 -A12 "panicked|FAILED" "$f" | head -60; }; done
echo "exit $rc" | tee -a "$OUT/summary.log"
exit $rc
