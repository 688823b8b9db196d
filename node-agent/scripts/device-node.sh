#!/usr/bin/env bash
# Runs on the GPU machine from .device/ (see node-agent/scripts/pack-device): the agent's
# readiness report, its resources while serving (RSS, CPU, scrape latency; the GPU selftest
# runs in a child process), and `gpu-crypto bench --json` for the provisioning planner.
# Logs go to $OUT.
set -uo pipefail
cd "$(dirname "$0")"
OUT="${OUT:-/tmp/node-out}"; mkdir -p "$OUT"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  if [ -e "$d/libnvrtc.so.13" ]; then export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; break; fi
done
export GPU_CRYPTO_KERNEL_CACHE=/tmp/gpu-crypto-kernels
rc=0
./node-agent check > "$OUT/node-check.txt" 2>&1; echo "node-agent check: exit $?" | tee -a "$OUT/node-summary.log"
SCRAPES="${SCRAPES:-100}" WINDOW="${WINDOW:-30}" bash ./measure-resources ./node-agent > "$OUT/node-resources.txt" 2>&1 || rc=1
echo "measure-resources: exit $rc" | tee -a "$OUT/node-summary.log"
./gpu-crypto bench --json > "$OUT/bench-h200.json" 2> "$OUT/bench-h200.log" || rc=1
echo "gpu-crypto bench --json: exit $?" | tee -a "$OUT/node-summary.log"
exit $rc
