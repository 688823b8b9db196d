#!/usr/bin/env bash
# Runs on the GPU machine from the pack dir (node-agent/scripts/pack-device): the RSS of
# `node-agent run` by mapping (/proc/PID/smaps), with and without a glibc arena limit.
cd "$(dirname "$0")"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -e "$d/libnvrtc.so.13" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}" && break; done
export GPU_CRYPTO_KERNEL_CACHE=/tmp/gpu-crypto-kernels
mkdir -p /tmp/st; printf 'listen = "127.0.0.1:0"\n[attestation]\nstate_dir = "/tmp/st"\n' > /tmp/a.toml
one() {
  env "$@" ./node-agent run --config /tmp/a.toml > /dev/null 2> /tmp/log & p=$!
  for _ in $(seq 300); do grep -q "serving on" /tmp/log && break; sleep 0.1; done
  sleep 3
  addr=$(grep -o "serving on [0-9.:]*" /tmp/log | head -1 | awk '{print $3}')
  for _ in $(seq 20); do curl -s -o /dev/null "http://$addr/metrics"; done
  echo "== env: $* =="
  grep -E "VmRSS|RssAnon|RssFile|Threads" /proc/$p/status
  awk '/^[0-9a-f]+-[0-9a-f]+ /{name=$6; if(name=="")name="[anon]"} /^Rss:/{rss[name]+=$2} END{for(n in rss) if(rss[n]>=200) printf "%8d kB %s\n", rss[n], n}' /proc/$p/smaps | sort -rn | head -15
  kill $p; wait $p 2>/dev/null
}
one X=1
one MALLOC_ARENA_MAX=1
