#!/usr/bin/env bash
# Call S (nvidia-h200-x2): after the two review fixes (push1 without lane C
# ends with an EXIT after its kernel; a kernel that signals per piece resets
# that piece's polled words before its signals, not at its end).
# Predictions: test_gpu_reduce passes (its piece-mask case checks the
# words' resets); test_gpu_colls allreduce, reducescatter, reducescatterv,
# reduce pass with push1 forced, eager and graph replays. ReduceScatter
# push1 eager pays one more signal round: 16 MB 58-61 -> 61-65 us, 32 MB
# 95-98 -> 98-102, against pull1's 65-66 and 98-100 (so 1.0-1.07x pull1's
# speed at 16 MB, level at 32); AllReduce push1 in graphs unchanged (its
# resets move earlier, no step added): 16 / 32 MB 98-100 / 137-139.
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/ress; rm -rf $R; mkdir -p $R; trap "tar czf $O/s.tgz -C $R ." EXIT
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON > $R/build.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" --target dmaccl dmaccl-perf test_gpu_colls test_gpu_reduce >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
export DMACCL_TIMEOUT=30
s=$(date +%s); timeout 30 build-gpu/tests/test_gpu_reduce > $R/reduce.log 2>&1; echo "test_gpu_reduce: rc $?, $(( $(date +%s) - s )) s; $(tail -1 $R/reduce.log)"
for c in allreduce reducescatter reducescatterv reduce; do
  s=$(date +%s); timeout 40 stdbuf -oL build-gpu/tests/test_gpu_colls $c > $R/colls-$c.log 2>&1
  echo "test_gpu_colls $c: rc $?, $(( $(date +%s) - s )) s; $(grep -E "cases" $R/colls-$c.log | tail -1)"
done
P=build-gpu/dmaccl-perf
timeout 40 $P -p 2 -o reducescatter -A auto,pull1,push1 -b 16M -e 32M -f 2 -n 20 -w 5 -N 2 --kernels 0 --in-place 0 -J $R/rs.json > $R/rs.txt 2>&1; echo "rs eager: rc $?"
timeout 30 $P -p 2 -o allreduce,reducescatter -A push1 -b 16M -e 32M -f 2 -n 10 -w 3 -G 5 --kernels 0 --in-place 0 -J $R/g.json > $R/g.txt 2>&1; echo "graph: rc $?"
for f in rs g; do echo "== $f: $(grep -E "^ +(allreduce|reducescatter) +[0-9]+ " $R/$f.txt | awk '{print substr($1,1,2),$2/1048576,$5,$6}' | tr '\n' ';') $(grep -c WRONG $R/$f.txt) wrong"; done
