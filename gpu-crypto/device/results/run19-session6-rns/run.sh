# Run on the lent H200 from the repository root: bash gpu-crypto/device/results/run19-session6-rns/run.sh
set -e
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv
nvcc -O3 -arch=sm_90 -std=c++17 -I ../../../../kernels -I . -o /tmp/rns_exp rns_exp.cu
/tmp/rns_exp
nvidia-smi --query-gpu=clocks.sm --format=csv
