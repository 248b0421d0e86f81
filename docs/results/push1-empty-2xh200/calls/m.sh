#!/usr/bin/env bash
# Call M (nvidia-h200-x2). NOT RUN: the device tool refused to start a machine
# with the 253 s left; for the next session's first call. It checks
# the review's fix (push1's PUSH words reset after lane 0's JOIN of lane A,
# planPushResetAt), the table's ReduceScatter push1 at 16 MB, and the
# kernel's instantiations split one type a file (the default build, both
# architectures: how long it takes now; calls N and O took 86-116 s with one
# architecture).
# Predictions: the build under 60 s; test_gpu_reduce passes (every type and
# op through the split files); test_gpu_colls reducescatter and allreduce
# pass, and reducescatter again under CUDA_DEVICE_MAX_CONNECTIONS=1 (one
# hardware queue, where the reset's place matters); ReduceScatter auto at
# 16 MB = push1 (58-60 us eager, 64-66 in graphs), AllReduce auto as call N
# (89-91 / 138-139 in graphs).
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/resm; rm -rf $R; mkdir -p $R; trap "tar czf $O/m.tgz -C $R ." EXIT
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON > $R/build.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" --target dmaccl dmaccl-perf test_gpu_colls test_gpu_reduce >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
export DMACCL_TIMEOUT=30
t() { local l=$1 to=$2; shift 2; s=$(date +%s); timeout $to stdbuf -oL "$@" > $R/$l.log 2>&1; echo "$l: rc $?, $(( $(date +%s) - s )) s; $(grep -E "cases|passed|failed|FAIL" $R/$l.log | tail -2 | tr '\n' ' ')"; }
t reduce 30 build-gpu/tests/test_gpu_reduce
t colls-reducescatter 50 build-gpu/tests/test_gpu_colls reducescatter
CUDA_DEVICE_MAX_CONNECTIONS=1 t conn1-reducescatter 50 build-gpu/tests/test_gpu_colls reducescatter
t colls-allreduce 30 build-gpu/tests/test_gpu_colls allreduce
P=build-gpu/dmaccl-perf
T="-p 2 -o reducescatter,allreduce -A auto,pull1 -b 16M -e 32M -f 2 --kernels 0 --in-place 0"
timeout 25 $P $T -n 10 -w 3 -G 5 -J $R/graph.json > $R/graph.txt 2>&1; echo "graph: rc $?"
timeout 25 $P $T -n 20 -w 5 -J $R/eager.json > $R/eager.txt 2>&1; echo "eager: rc $?"
for f in graph eager; do echo "== $f: $(grep -c WRONG $R/$f.txt) wrong: $(grep -E "^ +(reducescatter|allreduce) +[0-9]+ " $R/$f.txt | awk '{print substr($1,1,2),$2/1048576,$5,$6}' | tr '\n' ';')"; done
echo "done at $(( $(date +%s) - T0 )) s"
