#!/usr/bin/env bash
# Call T (nvidia-h200-x2): the table at its final form for this session
# (AllReduce push1 16 MB below 64 MB; ReduceScatter push1 there eager, pull1
# in graphs), and three more variants on push1's graph loss.
# Predictions: auto eager ReduceScatter at 16/32 MB within 3% of push1's
# row (about 59-62 / 95), auto in graphs within 3% of pull1's (65 / 98),
# 64 MB auto = pull1 both ways; AllReduce auto = push1 at 16/32 MB (about
# 92-99 / 137-145). The graph loss (ReduceScatter push1, 1-16 MB): high
# lane priority, one hardware queue (CUDA_DEVICE_MAX_CONNECTIONS=1) and 32
# queues: no hypothesis favoured; if the queue count moves it, the loss is
# how the graph's branches map onto hardware queues.
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/rest; rm -rf $R; mkdir -p $R; trap "tar czf $O/t.tgz -C $R ." EXIT
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON > $R/build.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" --target dmaccl dmaccl-perf >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
P=build-gpu/dmaccl-perf
perf() { local name=$1; shift; s=$(date +%s); timeout 60 $P "$@" -J $R/$name.json > $R/$name.txt 2>&1; echo "$name: rc $?, $(( $(date +%s) - s )) s; $(grep -hcE "WRONG" $R/$name.txt) wrong"; }
T="-p 2 -o reducescatter,allreduce -A auto,pull1,push1 -b 16M -e 64M -f 2 --kernels 0 --in-place 0"
perf eager $T -n 20 -w 5 -N 2
perf graph $T -n 10 -w 3 -G 5
L="-p 2 -o reducescatter -A push1 -b 1M -e 16M -f 4 -n 10 -w 3 --kernels 0 --in-place 0 -G 5"
(export DMACCL_LANE_PRIORITY=high; perf prio $L)
(export CUDA_DEVICE_MAX_CONNECTIONS=1; perf conn1 $L)
(export CUDA_DEVICE_MAX_CONNECTIONS=32; perf conn32 $L)
for f in eager graph prio conn1 conn32; do echo "== $f: $(grep -E "^ +(reducescatter|allreduce) +[0-9]+ " $R/$f.txt | awk '{print substr($1,1,2),$2/1048576,$5,$6}' | tr '\n' ';')"; done
