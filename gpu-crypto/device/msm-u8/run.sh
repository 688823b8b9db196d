#!/usr/bin/env bash
# Runs on the GPU machine from the directory pack.sh filled: the shared-base 8-bit MSM's GPU
# tests (again with the points staged as encodings, GPU_CRYPTO_MSM_STAGING=encoded), the
# generic MSM's, kernel-cache and runtime tests, then `gpu-crypto bench --json --backend gpu`
# (every operation; msm_shared_u8 beside its CPU peers in the same run). Logs and the bench
# document go to $OUT; the msm_shared_u8 rows are printed last.
set -uo pipefail
cd "$(dirname "$0")"
OUT="${OUT:-/tmp/gpu-out}"; mkdir -p "$OUT"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
  $(python3 -c 'import nvidia,os;[print(os.path.join(p,"cu13","lib")) for p in nvidia.__path__]' 2>/dev/null); do
  if [ -e "$d/libnvrtc.so.13" ]; then export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; break; fi
done
export GPU_CRYPTO_KERNEL_CACHE=/tmp/gpu-crypto-kernels RUST_BACKTRACE=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv; nproc; lscpu | grep 'Model name'; } 2>&1 | tee "$OUT/env.log"
rc=0
run_test() { # name log [env...]
  local t=$1 log=$2; shift 2
  local s=$EPOCHREALTIME r
  if env "$@" timeout 240 ./"$t" --include-ignored --test-threads=1 --nocapture > "/tmp/$log.log" 2>&1; then r=ok; else r=FAILED; rc=1; fi
  printf '%-28s %-6s %6.1f s  %s\n' "$log" "$r" "$(awk -v a="$s" -v b="$EPOCHREALTIME" "BEGIN{print b-a}")" "$(grep -E '^test result' "/tmp/$log.log" | tail -1)" | tee -a "$OUT/summary.log"
  { echo "===== $log"; cat "/tmp/$log.log"; } >> "$OUT/tests.log"
}
for t in $(cat tests); do run_test "$t" "$t"; done
run_test gpu_msm_shared_u8 gpu_msm_shared_u8-encoded GPU_CRYPTO_MSM_STAGING=encoded
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu --format=csv -lms 500 > "$OUT/clocks.log" 2>&1 &
smi=$!
s=$EPOCHREALTIME
if timeout 300 ./gpu-crypto bench --json --backend gpu > "$OUT/bench.json" 2> "$OUT/bench.err"; then r=ok; else r=FAILED; rc=1; fi
kill "$smi" 2>/dev/null
printf '%-28s %-6s %6.1f s\n' bench "$r" "$(awk -v a="$s" -v b="$EPOCHREALTIME" "BEGIN{print b-a}")" | tee -a "$OUT/summary.log"
for f in /tmp/gpu_*.log; do grep -q -E "FAILED|panicked" "$f" && { echo "== $f"; grep -E -B2 -A12 "panicked|FAILED" "$f" | head -60; }; done
grep -h "plane widths\|seed" /tmp/gpu_msm_shared_u8*.log
python3 - "$OUT/bench.json" <<'PY' 2>/dev/null | tee "$OUT/msm-shared-u8.txt"
import json, sys
doc = json.load(open(sys.argv[1]))
for e in doc["results"]:
    if e["op"] == "msm_shared_u8":
        print(f'{e["points_per_msm"]:>4} {e["backend"]:<4} {e.get("algorithm",""):<20} {e["threads"]:>3}t '
              f'{e["seconds_per_call"]*1e3:9.3f} ms (min {e["seconds_per_call_min"]*1e3:.3f}, reps {e["repetitions"]}) on {e["executed_on"]}')
PY
echo "exit $rc" | tee -a "$OUT/summary.log"
exit $rc
