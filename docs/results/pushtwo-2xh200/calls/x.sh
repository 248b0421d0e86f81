#!/usr/bin/env bash
# Call X (nvidia-h200-x2):
#   1. bench/probes/pushtwo: a 2-GPU AllReduce whose copies are all pushes
#      (8-64 MB, K = 1-4 pieces, CUDA graphs, float, 8 CTAs), every element
#      checked;
#   2. the library's AllReduce in graphs at 8-64 MB, auto and pull1, NCCL in
#      the same run (the numbers pushtwo is held against);
#   3. issue 16's large sizes eager (premul-2xh200 call E's first half).
# Predictions: (1) 16 MB: K=1 85-95 us, best K (2-3) 60-72; 32 MB best K
#   (3-4) 110-125; 64 MB 210-240; i.e. 1.05-1.25x NCCL's speed at 16-64 MB
#   (NCCL 77 / 139 / 249 us in docs/results/pull1-lanes/), where pull1 takes
#   0.7-1.0x. Pushes at 340-390 GB/s against pulls' 250-280 carry it; the
#   memop gaps (4-5 us each) are what could sink it. (2) as pull1-lanes.
#   (3) AllReduce 0.71-0.95x NCCL's speed at 16-64 MB, ReduceScatter
#   0.73-1.0x, movement 1.0-1.1x.
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/resx; rm -rf $R; mkdir -p $R; trap "tar czf $O/x.tgz -C $R ." EXIT
(nvcc -O2 -std=c++17 -arch=sm_90 -o /tmp/pushtwo bench/probes/pushtwo.cu -lcuda > $R/probe-build.log 2>&1) &
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON > $R/build.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" --target dmaccl dmaccl-perf >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
wait
echo "built at $(( $(date +%s) - T0 )) s"
nvidia-smi topo -m > $R/topo.txt 2>&1
# (each step runs only if it fits the call's 400 s: the device budget's last minutes)
fits() { [ $(( $(date +%s) - T0 + $1 )) -le 400 ]; }
s=$(date +%s); timeout 90 /tmp/pushtwo 8,16,32,64 1,2,3,4 > $R/pushtwo.txt 2>&1; echo "pushtwo: rc $?, $(( $(date +%s) - s )) s"; cat $R/pushtwo.txt
P=build-gpu/dmaccl-perf
perf() { local name=$1 t=$2; shift 2; fits $t || { echo "$name: skipped (no time left)"; return; }; s=$(date +%s); timeout $t $P "$@" -J $R/$name.json > $R/$name.txt 2>&1; echo "$name: rc $?, $(( $(date +%s) - s )) s"; }
perf graph-ar 75 -p 2 -o allreduce -A auto,pull1 -b 8M -e 64M -f 2 -G 5 -n 10 -w 3 --kernels 0 --in-place 0
grep -E "^ +allreduce +[0-9]+ " $R/graph-ar.txt | awk '{print $2, $5, $6}'
perf large-red 70 -p 2 -o allreduce,reducescatter -A auto -b 16M -e 64M -f 2 -n 20 -w 5 -N 3 --in-place 0 --kernels 0
perf large-move 60 -p 2 -o broadcast,gather,scatter,allgatherv,alltoallv -A auto -b 16M -e 64M -f 2 -n 20 -w 5 -N 3 --in-place 0 --kernels 0
grep -E "checked|WRONG|rror" $R/*.txt | head
