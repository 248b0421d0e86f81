#!/usr/bin/env bash
# Call O (nvidia-h200-x2): the kernel's end word. In a CUDA graph a JOIN
# from a pieced kernel's lane (AllReduce push1's lane C before its EXIT)
# now waits for a word the kernel's last block writes after its resets
# (execReduceWait.endSignal, cuda.c endJoin) instead of an event edge.
# Predictions: test_gpu_reduce passes (the end word 0 while the kernel
# waits, 1 after); test_gpu_colls allreduce, reducescatter, reducescatterv,
# reduce and the graph tests of test_gpu and test_gpu_mp pass; AllReduce
# push1 (auto) in graphs at call Q's no-JOIN time, 98-100 / 136-138 us at
# 16 / 32 MB (was 106-108 / 144-145 with the JOIN); eager unchanged (about
# 92-95 / 142-144); pull1 within 3% of call Q.
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/reso; rm -rf $R; mkdir -p $R; trap "tar czf $O/o.tgz -C $R ." EXIT
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON -DCMAKE_CUDA_ARCHITECTURES=90 > $R/build.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" --target dmaccl dmaccl-perf test_gpu_colls test_gpu_reduce test_gpu test_gpu_mp >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
export DMACCL_TIMEOUT=30
t() { local l=$1 to=$2; shift 2; s=$(date +%s); timeout $to stdbuf -oL "$@" > $R/$l.log 2>&1; echo "$l: rc $?, $(( $(date +%s) - s )) s; $(grep -E "cases|passed|failed|FAIL" $R/$l.log | tail -2 | tr '\n' ' ')"; }
t reduce 40 build-gpu/tests/test_gpu_reduce
for c in allreduce reducescatter reducescatterv reduce; do t colls-$c 60 build-gpu/tests/test_gpu_colls $c; done
t gpu-graph 90 build-gpu/tests/test_gpu Graph
t mp-graph 90 build-gpu/tests/test_gpu_mp Graph
P=build-gpu/dmaccl-perf
T="-p 2 -o allreduce,reducescatter -A auto,pull1,push1 -b 16M -e 64M -f 2 --kernels 0 --in-place 0"
for rep in 1 2; do
  timeout 60 $P $T -n 10 -w 3 -G 5 -J $R/graph-$rep.json > $R/graph-$rep.txt 2>&1; echo "graph-$rep: rc $?"
  timeout 60 $P $T -n 20 -w 5 -J $R/eager-$rep.json > $R/eager-$rep.txt 2>&1; echo "eager-$rep: rc $?"
done
for f in graph-1 graph-2 eager-1 eager-2; do echo "== $f: $(grep -c WRONG $R/$f.txt) wrong: $(grep -E "^ +(reducescatter|allreduce) +[0-9]+ " $R/$f.txt | awk '{print substr($1,1,2),$2/1048576,$5,$6}' | tr '\n' ';')"; done
echo "done at $(( $(date +%s) - T0 )) s"
