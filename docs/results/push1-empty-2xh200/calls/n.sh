#!/usr/bin/env bash
# Call N (nvidia-h200-x2): push1's kernel polls its peers on PUSH words, a
# phase group no other algorithm writes (plan.h), so AllReduce's lane C no
# longer JOINs the kernel's end before its EXIT, and ReduceScatter,
# ReduceScatterV and Reduce have no EXIT again; in a graph the polled words
# are reset by the kernel's stream after it (memops), not by the kernel.
# Predictions: the GPU tests below pass; AllReduce push1 (auto) in graphs at
# or below call Q's no-JOIN 98-99 / 137 us at 16 / 32 MB (lower if the
# kernel's own reset, 15-26 us when it came before a signal in calls Q and P,
# also held lane 0's round 4); eager unchanged (92-96 / 142-144).
# ReduceScatter push1: eager 4-10% below pull1 at 16-32 MB (no EXIT, as in
# calls X and U); in graphs about eager's time (62-66 / 100-103) if the
# kernel's stores to its peers' words were the 30 us it lost there, else
# unchanged (96 / 133).
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/resn; rm -rf $R; mkdir -p $R; trap "tar czf $O/n.tgz -C $R ." EXIT
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON -DCMAKE_CUDA_ARCHITECTURES=90 > $R/build.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" --target dmaccl dmaccl-perf test_gpu_colls test_gpu_reduce test_gpu test_gpu_mp test_mp_colls >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
export DMACCL_TIMEOUT=30
t() { local l=$1 to=$2; shift 2; s=$(date +%s); timeout $to stdbuf -oL "$@" > $R/$l.log 2>&1; echo "$l: rc $?, $(( $(date +%s) - s )) s; $(grep -E "cases|passed|failed|FAIL" $R/$l.log | tail -2 | tr '\n' ' ')"; }
t reduce 40 build-gpu/tests/test_gpu_reduce
for c in allreduce reducescatter reducescatterv reduce; do t colls-$c 60 build-gpu/tests/test_gpu_colls $c; done
t gpu-graph 90 build-gpu/tests/test_gpu Graph
t mp-graph 90 build-gpu/tests/test_gpu_mp Graph
t mp-colls 120 build-gpu/tests/test_mp_colls gpu
P=build-gpu/dmaccl-perf
T="-p 2 -o allreduce,reducescatter -A auto,pull1,push1 -b 16M -e 64M -f 2 --kernels 0 --in-place 0"
for rep in 1 2; do
  timeout 60 $P $T -n 10 -w 3 -G 5 -J $R/graph-$rep.json > $R/graph-$rep.txt 2>&1; echo "graph-$rep: rc $?"
  timeout 60 $P $T -n 20 -w 5 -J $R/eager-$rep.json > $R/eager-$rep.txt 2>&1; echo "eager-$rep: rc $?"
done
for f in graph-1 graph-2 eager-1 eager-2; do echo "== $f: $(grep -c WRONG $R/$f.txt) wrong: $(grep -E "^ +(reducescatter|allreduce) +[0-9]+ " $R/$f.txt | awk '{print substr($1,1,2),$2/1048576,$5,$6}' | tr '\n' ';')"; done
echo "done at $(( $(date +%s) - T0 )) s"
