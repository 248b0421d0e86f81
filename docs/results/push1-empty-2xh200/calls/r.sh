#!/usr/bin/env bash
# Call R (nvidia-h200-x2; NOT RUN: written for the next session's first
# call, no device time was left). The final form of this session's review
# fixes has not run on a GPU: AllReduce push1's lane C JOINs lane 0 (the
# kernel's end) before its EXIT; push1 without lane C ends with an EXIT;
# the kernel resets its polled words at its end again (as in calls Z, T).
# Predictions: test_gpu_colls allreduce, reducescatter, reducescatterv,
# reduce pass (104 cases each, push1 forced, eager and graph replays);
# AllReduce auto (push1) in graphs 16 / 32 MB within 3% of call T's 99.1 /
# 138.5 (the JOIN waits for a kernel that ends before lane C's last push),
# eager within 3% of 93 / 145; ReduceScatter push1 in graphs about call S's
# 95.7 / 132.2 (its EXIT), auto = pull1 (65-67 / 98-100).
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/resr; rm -rf $R; mkdir -p $R; trap "tar czf $O/r.tgz -C $R ." EXIT
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON > $R/build.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" --target dmaccl dmaccl-perf test_gpu_colls test_gpu_reduce >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
export DMACCL_TIMEOUT=30
s=$(date +%s); timeout 30 build-gpu/tests/test_gpu_reduce > $R/reduce.log 2>&1; echo "test_gpu_reduce: rc $?, $(( $(date +%s) - s )) s; $(tail -1 $R/reduce.log)"
for c in allreduce reducescatter reducescatterv reduce; do
  s=$(date +%s); timeout 60 stdbuf -oL build-gpu/tests/test_gpu_colls $c > $R/colls-$c.log 2>&1
  echo "test_gpu_colls $c: rc $?, $(( $(date +%s) - s )) s; $(grep -E "cases" $R/colls-$c.log | tail -1)"
done
P=build-gpu/dmaccl-perf
T="-p 2 -o reducescatter,allreduce -A auto,pull1,push1 -b 16M -e 64M -f 2 --kernels 0 --in-place 0"
timeout 60 $P $T -n 20 -w 5 -N 2 -J $R/eager.json > $R/eager.txt 2>&1; echo "eager: rc $?"
timeout 60 $P $T -n 10 -w 3 -G 5 -J $R/graph.json > $R/graph.txt 2>&1; echo "graph: rc $?"
for f in eager graph; do echo "== $f: $(grep -E "^ +(reducescatter|allreduce) +[0-9]+ " $R/$f.txt | awk '{print substr($1,1,2),$2/1048576,$5,$6}' | tr '\n' ';') $(grep -c WRONG $R/$f.txt) wrong"; done
