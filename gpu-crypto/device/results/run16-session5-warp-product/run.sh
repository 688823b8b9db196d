# Run on the lent H200 from the repository root: bash gpu-crypto/device/results/run16-session5-warp-product/run.sh
set -e
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv
nvcc -O3 -arch=sm_90 -std=c++17 -I ../../../../kernels -I . -o /tmp/fpw_exp fpw_exp.cu
/tmp/fpw_exp
