# Run on the lent H200 from the repository root: bash gpu-crypto/device/results/run17-session5-pipes/run.sh
set -e
cd "$(dirname "$0")"
nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/pipes pipes.cu
echo "SASS of the whole program (what each PTX operation became):"
cuobjdump -sass /tmp/pipes | grep -oE "(IMAD\.WIDE\.U32(\.X)?|IADD3(\.X)?|DFMA(\.RZ)?|SHFL\.IDX) " | sort | uniq -c | sort -rn
/tmp/pipes
