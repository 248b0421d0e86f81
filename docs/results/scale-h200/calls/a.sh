#!/usr/bin/env bash
# Call A (one H200, 2026-11-29):
#   1. the one-rank premultiplied sum with the byte copy's 32 blocks instead
#      of DMACCL_REDUCE_CTAS (8): dmaccl-perf -g 1 --op premulsum, NCCL in
#      the same run, every byte checked;
#   2. what was not run on a GPU after its last change: test_split gpu (the
#      bootstrap's deadlines, edaf0a2), test_gpu_colls (one-rank premul), and
#      the Python Communicator's premultiplied sums on CUDA tensors
#      (tests/python/test_gpu.py, new cases; 2 ranks sharing the GPU);
#   3. bench/probes/reduce_rate at 4, 16 and 64 MB per input: is the
#      kernel's ~115 GB/s per block the SM's port (same when the inputs sit
#      in the 50 MB L2) or memory latency (faster from L2)?
# Predictions: (1) 16 MB 11-13 us (call G: 46.7; NCCL 14.0), 4 MB about 7
#   (host-bound like the sum's 7.8; NCCL 5.4), up to 1 MB unchanged
#   (6.0-7.8). (2) all pass. (3) the port: 8 blocks within 20% of 64 MB's
#   930 GB/s at 4 MB too.
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/resa; rm -rf $R; mkdir -p $R; trap "tar czf $O/a.tgz -C $R ." EXIT
(nvcc -O2 -std=c++17 -arch=sm_90 -o /tmp/reduce_rate bench/probes/reduce_rate.cu > $R/probe-build.log 2>&1) &
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON > $R/build.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" --target dmaccl dmaccl_nccl dmaccl-perf test_split test_gpu_colls >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
wait
echo "built at $(( $(date +%s) - T0 )) s"
P=build-gpu/dmaccl-perf
for op in sum premulsum; do
  s=$(date +%s); timeout 40 $P -g 1 -o allreduce,reducescatter --op $op -A auto -b 1K -e 16M -f 4 -n 50 -w 10 -N 3 -J $R/one-$op.json > $R/one-$op.txt 2>&1
  echo "one rank $op: rc $?, $(( $(date +%s) - s )) s"; grep -E "allreduce +(1024|1048576|4194304|16777216) " $R/one-$op.txt | head -8; grep -E "checked|Out of" $R/one-$op.txt
done
for mb in 4 16 64; do timeout 60 /tmp/reduce_rate $mb 8,16 > $R/rate-$mb.txt 2>&1; echo "rate $mb MB: rc $?"; grep -E "copy|regs 16" $R/rate-$mb.txt; done
export DMACCL_INIT_TIMEOUT=30
for t in "test_split gpu" "test_gpu_colls"; do
  s=$(date +%s); timeout 150 build-gpu/tests/$t > "$R/${t// /-}.log" 2>&1
  echo "$t: rc $?, $(( $(date +%s) - s )) s"; tail -2 "$R/${t// /-}.log"
done
if ! python3 -c "import pytest" 2>/dev/null; then
  python3 -m pip install -q --no-index --find-links .whl --target build-gpu/pytest-env pytest > $R/pip.log 2>&1
  export PYTHONPATH="$PWD/build-gpu/pytest-env"
fi
export DMACCL_LIBRARY=$PWD/build-gpu/libdmaccl.so PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
s=$(date +%s); timeout 150 python3 -m pytest -v tests/python/test_gpu.py > $R/pytest.log 2>&1
echo "pytest: rc $?, $(( $(date +%s) - s )) s"; grep -E "FAILED|ERROR|passed|failed" $R/pytest.log | tail -8
