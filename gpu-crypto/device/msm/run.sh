#!/usr/bin/env bash
# Runs on the GPU machine (see pack.sh): builds the sppark peer (nvcc -arch=sm_90, in the
# background), runs the GPU MSM tests (the ignored ones included: they need the GPU), then the side-by-side
# bench (ours, sppark, blst on all host cores). Logs go to $OUT.
set -uo pipefail
cd "$(dirname "$0")"
OUT="${OUT:-/tmp/gpu-out}"; mkdir -p "$OUT"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
  $(python3 -c 'import nvidia,os;[print(os.path.join(p,"cu13","lib")) for p in nvidia.__path__]' 2>/dev/null); do
  if [ -e "$d/libnvrtc.so.13" ]; then export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; break; fi
done
export PATH="/usr/local/cuda/bin:$PATH"
export GPU_CRYPTO_KERNEL_CACHE=/tmp/gpu-crypto-kernels
export RUST_BACKTRACE=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv; nproc; nvcc --version | tail -2; } 2>&1 | tee "$OUT/env.log"
( s=$EPOCHREALTIME; bash ./build_peer.sh . > "$OUT/peer-build.log" 2>&1; echo "rc $? in $(awk -v a="$s" -v b="$EPOCHREALTIME" 'BEGIN{print b-a}') s" >> "$OUT/peer-build.log" ) &
build=$!
rc=0
for t in ${MSM_TESTS:-gpu_msm gpu_msm_encoded}; do
  s=$EPOCHREALTIME
  if ./"$t" --include-ignored --test-threads=2 --nocapture > "$OUT/test-$t.log" 2>&1; then r=ok; else r=FAILED; rc=1; fi
  printf '%-20s %-6s %6.1f s  %s\n' "$t" "$r" "$(awk -v a="$s" -v b="$EPOCHREALTIME" "BEGIN{print b-a}")" "$(grep -E '^test result' "$OUT/test-$t.log" | tail -1)" | tee -a "$OUT/summary.log"
  grep -q -E "FAILED|panicked" "$OUT/test-$t.log" && grep -E -B2 -A12 "panicked|FAILED" "$OUT/test-$t.log" | head -60
done
wait $build; tail -3 "$OUT/peer-build.log"
if [ "${MSM_BENCH:-1}" = 1 ]; then
  ( nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv -lms 250 > "$OUT/clocks.log" 2>&1 ) &
  smi=$!
  MSM_PEER_BIN=./sppark_peer timeout "${MSM_BENCH_TIMEOUT:-300}" ./gpu_msm_bench 2>&1 | tee "$OUT/bench-msm.log" || rc=1
  kill $smi 2>/dev/null
fi
echo "exit $rc" | tee -a "$OUT/summary.log"
exit $rc
