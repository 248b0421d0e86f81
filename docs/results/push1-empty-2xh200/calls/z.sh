#!/usr/bin/env bash
# Call Z (nvidia-h200-x2): the push1 graph hang where a rank's part is empty
# (docs/results/push1-2xh200/, call Y). Cause found by reading cuda.c: the
# CUDA executor gathered a lane's run of WAITs into one stream memop batch
# without stopping at a kernel's step, so where a rank's lane 0 has the
# ENTRY WAIT right before the kernel's polled PIECE WAIT (its peers' parts
# empty: no lane A JOIN between them), the PIECE WAIT went into the stream
# batch; in a graph a stream wait resets the word it waited for, and the
# kernel then polled a 0 for good (eager words are epochs, never reset:
# no hang). Fix: planRunEnd ends a run at a kernel's step; planPushRuns
# again takes push1 where a part is empty; the built-in table takes push1
# for 2-rank AllReduce from 16 MB below 64 MB.
# Predictions: (1) the repro and its kin run and check correct, in and out
# of place, one process (-g 2) and one per GPU (-p 2); (2) test_gpu_colls
# allreduce, reduce, reducescatterv (push1 forced) pass; (3) AllReduce auto
# at 16/32 MB within 5% of call X's push1 (graphs 98.7/137.0, eager
# 96-98/143-146), 64 MB auto = pull1 (252-261); (4) Reduce push1 against
# pull1 at 16-64 MB: 0.9-1.1x pull1's time (both move one buffer per
# peer into the root; push writes over NVLink, pull reads); below 8 MB
# slower than the table's stage.
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/resz; rm -rf $R; mkdir -p $R; trap "tar czf $O/z.tgz -C $R ." EXIT
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON > $R/build.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" --target dmaccl dmaccl-perf test_gpu_colls >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
fits() { [ $(( $(date +%s) - T0 + $1 )) -le 570 ]; }
P=build-gpu/dmaccl-perf
perf() { local name=$1 t=$2; shift 2; fits $t || { echo "$name: skipped (no time left)"; return; }; s=$(date +%s); timeout $t stdbuf -oL $P "$@" -J $R/$name.json > $R/$name.txt 2>&1; echo "$name: rc $?, $(( $(date +%s) - s )) s; $(grep -hE "checked|WRONG" $R/$name.txt | head -2 | tr '\n' ' ')"; }
perf repro-g 30 -g 2 -G 2 -o reduce,allreduce -A push1 -b 4 -e 4M -f 32 -n 2 -w 1 --kernels 0
perf repro-p 40 -p 2 -G 2 -o reduce,allreduce -A push1 -b 4 -e 4M -f 32 -n 2 -w 1 --kernels 0
for c in allreduce:120 reduce:90 reducescatterv:60; do
  fits ${c#*:} || { echo "${c%:*}: skipped"; continue; }
  s=$(date +%s); timeout ${c#*:} stdbuf -oL -eL build-gpu/tests/test_gpu_colls ${c%:*} > $R/colls-${c%:*}.log 2>&1
  echo "test_gpu_colls ${c%:*}: rc $?, $(( $(date +%s) - s )) s; $(grep -E "cases|passed|FAIL" $R/colls-${c%:*}.log | tail -3 | tr '\n' ' ')"
done
perf graph 90 -p 2 -o allreduce -A auto,pull1,push1 -b 16M -e 64M -f 2 -G 5 -n 10 -w 3 --kernels 0 --in-place 0
perf rgraph 60 -p 2 -o reduce -A auto,pull1,push1 -b 1M -e 64M -f 4 -G 5 -n 10 -w 3 --kernels 0 --in-place 0
perf eager 80 -p 2 -o allreduce,reduce -A auto,pull1,push1 -b 16M -e 64M -f 2 -n 20 -w 5 -N 2 --kernels 0 --in-place 0
for f in graph rgraph eager; do echo "== $f"; grep -E "^ +(allreduce|reduce) +[0-9]+ " $R/$f.txt | awk '{print $1,$2,$5,$6}' | head -40; done
