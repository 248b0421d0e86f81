#!/usr/bin/env bash
# Call Y (nvidia-h200-x2): call X's test_gpu_colls allreduce and reduce ran
# past their 60 s with no output (fully buffered stdout, killed), while
# reducescatter passed (104 cases). Hang or slow? Again with line-buffered
# output, DMACCL_TIMEOUT=40 (a stuck operation fails with where it stands),
# and room: allreduce 200 s, reduce 150 s.
# Prediction: slow, not stuck (push1 passed every dmaccl-perf check in call
# X, eager, graphs and in place): both pass in 70-150 s.
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/resy; rm -rf $R; mkdir -p $R; trap "tar czf $O/y.tgz -C $R ." EXIT
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON > $R/build.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" --target test_gpu_colls >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
export DMACCL_TIMEOUT=40
for c in allreduce:200 reduce:150; do
  s=$(date +%s); timeout ${c#*:} stdbuf -oL -eL build-gpu/tests/test_gpu_colls ${c%:*} > $R/colls-${c%:*}.log 2>&1
  echo "test_gpu_colls ${c%:*}: rc $?, $(( $(date +%s) - s )) s"; grep -vE "^\s*$" $R/colls-${c%:*}.log | tail -6
done
