#!/usr/bin/env bash
# Runs on the GPU machine from the directory pack.sh filled: every GPU test of gpu-crypto and
# the CLI's tests, the ignored ones included (this machine has the GPU and NVRTC they need),
# the shared-base MSM's again with the points staged as encodings, then
# `gpu-crypto bench --json --backend auto` (the CPU path on every thread and the GPU path of
# every operation, peers in the same run) and `nidkg verify` of a dealing at n = 28 under
# each backend, `nidkg verify-ic` of the IC's published dealing where the bundle carries
# it, and `nidkg timeline` of dealings at n = 28 and 40 (where a verification's wall time
# and host CPU go). Logs and the bench document go to $OUT.
# GPU_SUITE_TESTS: the test binaries to run (default: all of them); GPU_SUITE_BENCH=0 skips
# the bench; GPU_SUITE_TIMELINE=0 skips the timelines.
set -uo pipefail
cd "$(dirname "$0")"
OUT="${OUT:-/tmp/gpu-out}"; mkdir -p "$OUT"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
  $(python3 -c 'import nvidia,os;[print(os.path.join(p,"cu13","lib")) for p in nvidia.__path__]' 2>/dev/null); do
  if [ -e "$d/libnvrtc.so.13" ]; then export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; break; fi
done
export GPU_CRYPTO_KERNEL_CACHE=/tmp/gpu-crypto-kernels RUST_BACKTRACE=1
[ -d ic-nidkg ] && export IC_NIDKG_TESTDATA="$PWD/ic-nidkg"
# The CLI test runs the CLI and reads the corpus where they were built.
bin_path=$(cat cli-bin-path); mkdir -p "$(dirname "$bin_path")"; cp gpu-crypto "$bin_path"
data_path=$(cat testdata-path); mkdir -p "$data_path" "$(cat cli-manifest-dir)"; cp testdata/* "$data_path"/
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv; nproc; lscpu | grep 'Model name'; } 2>&1 | tee "$OUT/env.log"
rc=0
run_test() { # name log [env...]
  local t=$1 log=$2; shift 2
  local s=$EPOCHREALTIME r
  if env "$@" timeout 300 ./"$t" --include-ignored --test-threads=4 --nocapture > "/tmp/$log.log" 2>&1; then r=ok; else r=FAILED; rc=1; fi
  printf '%-28s %-6s %6.1f s  %s\n' "$log" "$r" "$(awk -v a="$s" -v b="$EPOCHREALTIME" "BEGIN{print b-a}")" "$(grep -E '^test result' "/tmp/$log.log" | tail -1)" | tee -a "$OUT/summary.log"
  { echo "===== $log"; cat "/tmp/$log.log"; } >> "$OUT/tests.log"
}
for t in ${GPU_SUITE_TESTS:-$(cat tests)}; do run_test "$t" "$t"; done
case " ${GPU_SUITE_TESTS:-$(cat tests)} " in
  *" gpu_msm_shared_u8 "*) run_test gpu_msm_shared_u8 gpu_msm_shared_u8-encoded GPU_CRYPTO_MSM_STAGING=encoded ;;
esac
for f in /tmp/gpu_*.log /tmp/cli.log; do [ -e "$f" ] && grep -q -E "FAILED|panicked" "$f" && { echo "== $f"; grep -E -B2 -A12 "panicked|FAILED" "$f" | head -60; }; done
grep -h "seed" /tmp/gpu_*.log | sort -u | tee "$OUT/seeds.log"
./gpu-crypto nidkg deal --n 28 --seed 1 --out /tmp/dealing-28.bin
for b in cpu auto gpu; do
  echo "== --backend $b" >> "$OUT/nidkg-verify.log"
  ./gpu-crypto --backend "$b" nidkg verify /tmp/dealing-28.bin >> "$OUT/nidkg-verify.log" 2>&1
  echo "exit $?" >> "$OUT/nidkg-verify.log"
done
# The IC's published dealing (n = 4, t = 2, epoch 5, dealer 0) under each backend.
if [ -d ic-nidkg ]; then
  keys=(); for i in 0 1 2 3; do keys+=(--receiver-key "ic-nidkg/nidkg_dealing_pk$i.hex"); done
  for b in cpu auto gpu; do
    echo "== --backend $b" >> "$OUT/nidkg-verify-ic.log"
    ./gpu-crypto --backend "$b" nidkg verify-ic --dealing ic-nidkg/nidkg_dealing.hex "${keys[@]}" \
      --threshold 2 --epoch 5 --dealer-index 0 >> "$OUT/nidkg-verify-ic.log" 2>&1
    echo "exit $?" >> "$OUT/nidkg-verify-ic.log"
  done
fi
# Timelines of one dealing: under the default policy, offloaded (offload-policy.toml, the
# bench's offload rows), offloaded with the exact checks, and offloaded with an overlap pool
# of three threads (the bench's offload-overlap rows); of a round (2n dealings a call):
# offloaded, overlapped, and under the default policy on 16 host threads, with the CPU
# path's peer at n = 28; then the MSMs' GPU profile of offloaded calls.
if [ "${GPU_SUITE_TIMELINE:-1}" != 0 ]; then
  ./gpu-crypto nidkg deal --n 40 --seed 1 --out /tmp/dealing-40.bin
  timeline() { # gpu-crypto arguments...
    echo "== gpu-crypto $*" >> "$OUT/nidkg-timeline.log"
    ./gpu-crypto "$@" >> "$OUT/nidkg-timeline.log" 2>&1
    echo "exit $?" >> "$OUT/nidkg-timeline.log"
  }
  for n in 28 40; do
    d=/tmp/dealing-$n.bin
    timeline --backend auto nidkg timeline "$d"
    timeline --policy offload-policy.toml nidkg timeline "$d"
    timeline --policy offload-policy.toml nidkg timeline --checks exact "$d"
    timeline --policy offload-policy.toml nidkg timeline --overlap-threads 3 "$d"
    timeline --policy offload-policy.toml nidkg timeline --calls 5 --batch $((2 * n)) "$d"
    timeline --policy offload-policy.toml nidkg timeline --calls 5 --batch $((2 * n)) --overlap-threads 3 "$d"
    timeline --backend auto nidkg timeline --calls 5 --batch $((2 * n)) --host-threads 16 "$d"
  done
  timeline --backend cpu nidkg timeline --calls 3 --batch 56 --host-threads 16 /tmp/dealing-28.bin
  GPU_CRYPTO_MSM_PROFILE=1 timeline --policy offload-policy.toml nidkg timeline --calls 3 /tmp/dealing-28.bin
fi
if [ "${GPU_SUITE_BENCH:-1}" != 0 ]; then
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu --format=csv -lms 500 > "$OUT/clocks.log" 2>&1 &
  smi=$!
  s=$EPOCHREALTIME
  if timeout 480 ./gpu-crypto bench --json --backend auto > "$OUT/bench.json" 2> "$OUT/bench.err"; then r=ok; else r=FAILED; rc=1; fi
  kill "$smi" 2>/dev/null
  printf '%-28s %-6s %6.1f s\n' bench "$r" "$(awk -v a="$s" -v b="$EPOCHREALTIME" "BEGIN{print b-a}")" | tee -a "$OUT/summary.log"
fi
echo "exit $rc" | tee -a "$OUT/summary.log"
exit $rc
