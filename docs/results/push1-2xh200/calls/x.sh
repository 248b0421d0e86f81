#!/usr/bin/env bash
# Call X (nvidia-h200-x2): AllReduce's push1 in the library (550c0a7).
#   1. test_gpu_colls allreduce, reducescatter, reduce: every case of those
#      with push1 forced on 2 GPUs (its pushes for real, eager and in a
#      graph) against the host executor; test_gpu GraphApart (ranks of one process captured into
#      separate graphs: a 32 MB AllReduce now runs as push1, 128 MB is
#      refused).
#   2. dmaccl-perf -p 2, AllReduce and ReduceScatter 8-64 MB, auto, pull1
#      and push1, NCCL in the same run: CUDA graphs, then eager (3 sweeps),
#      out of place; then push1 in place eager.
# Predictions (the probe took 84.5 / 133.7 / 231 us at 16 / 32 / 64 MB in
# graphs, one process for both GPUs; the library adds an ENTRY handshake
# and an EXIT, 5-10 us): graphs 90-100 us at 16 MB, 135-150 at 32, 230-250
# at 64, i.e. 0.78-0.86x, 0.93-1.03x and 1.0-1.08x NCCL's speed (77 / 139 /
# 249), and 1.1-1.2x pull1's from 16 MB; 8 MB 55-65 (slower than auto's
# twoshot, 51). Eager: within 5% of the graph numbers from 32 MB, 16 MB
# 5-15 us slower (the host issues about 20 CUDA calls). ReduceScatter
# (no lane C, no EXIT): 1.05-1.2x pull1's speed at 16-64 MB (pull1 65.8 /
# 100.2 / 159.4 us eager, NCCL 51.6 / 91.6 / 161.6), so 0.85-0.95x NCCL's at
# 16 MB and 1.0-1.15x at 32-64. Every result checked.
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/resx; rm -rf $R; mkdir -p $R; trap "tar czf $O/x.tgz -C $R ." EXIT
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON > $R/build.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" --target dmaccl dmaccl-perf test_gpu_colls test_gpu >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
nvidia-smi topo -m > $R/topo.txt 2>&1
fits() { [ $(( $(date +%s) - T0 + $1 )) -le 560 ]; }
for c in allreduce reducescatter reduce; do
  s=$(date +%s); timeout 60 build-gpu/tests/test_gpu_colls $c > $R/colls-$c.log 2>&1; echo "test_gpu_colls $c: rc $?, $(( $(date +%s) - s )) s; $(tail -2 $R/colls-$c.log | head -1)"
  grep FAIL $R/colls-$c.log | head -5
done
s=$(date +%s); timeout 60 build-gpu/tests/test_gpu GraphApart > $R/apart.log 2>&1; echo "test_gpu GraphApart: rc $?, $(( $(date +%s) - s )) s"; grep -E "AllReduce|Reduce |FAIL|passed" $R/apart.log | head -8
P=build-gpu/dmaccl-perf
perf() { local name=$1 t=$2; shift 2; fits $t || { echo "$name: skipped (no time left)"; return; }; s=$(date +%s); timeout $t $P "$@" -J $R/$name.json > $R/$name.txt 2>&1; echo "$name: rc $?, $(( $(date +%s) - s )) s"; }
perf graph 110 -p 2 -o allreduce,reducescatter -A auto,pull1,push1 -b 8M -e 64M -f 2 -G 5 -n 10 -w 3 --kernels 0 --in-place 0
perf eager 130 -p 2 -o allreduce,reducescatter -A auto,pull1,push1 -b 8M -e 64M -f 2 -n 20 -w 5 -N 3 --kernels 0 --in-place 0
perf inplace 40 -p 2 -o allreduce -A push1 -b 16M -e 64M -f 2 -n 20 -w 5 --kernels 0 --in-place 1
for f in graph eager inplace; do echo "== $f"; grep -E "^ +(allreduce|reducescatter) +[0-9]+ " $R/$f.txt | head -40; done
grep -hE "checked|WRONG|rror" $R/graph.txt $R/eager.txt $R/inplace.txt | sort | uniq -c | head
