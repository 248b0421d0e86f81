#!/usr/bin/env bash
# Call G (one H200): dmaccl-perf --op premulsum on a GPU. One rank (-g 1),
# where NCCL runs too (its PreMulSum of one input is the same rounding, so
# its rows are checked), then sum against premulsum on one rank; every
# byte checked.
# Prediction: #wrong 0 everywhere; dmaccl's premulsum at its sum's time
# within the run's noise (both are one launch of the reduction kernel up
# to 1 MB; above, sum is cudaMemcpyAsync and premulsum still the kernel);
# NCCL's premulsum at its sum's time.
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/resg; rm -rf $R; mkdir -p $R; trap "tar czf $O/g.tgz -C $R ." EXIT
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON > $R/build.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" --target dmaccl-perf >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
P=build-gpu/dmaccl-perf
for op in sum premulsum; do
  s=$(date +%s); timeout 40 $P -g 1 -o allreduce,reducescatter --op $op -A auto -b 1K -e 16M -f 4 -n 50 -w 10 -N 3 -J $R/one-$op.json > $R/one-$op.txt 2>&1
  echo "one rank $op: rc $?, $(( $(date +%s) - s )) s"; grep -E "allreduce +(1024|1048576|16777216) " $R/one-$op.txt | head -6; grep -E "checked|Out of" $R/one-$op.txt
done
