#!/usr/bin/env bash
# Call E (nvidia-h200-x2, after D on the same machine):
#   1. issue 16's large sizes, eager, out of place, auto, NCCL same run:
#      AllReduce, ReduceScatter 16-64 MB; Broadcast, Gather, Scatter,
#      AllGatherV, AlltoAllv 16-64 MB.
#   2. bench/e2e's Llama-3-8B decode in CUDA graphs (AllReduce after o_proj
#      and down_proj, batches 1, 8, 32), backends nccl-graph and none-graph,
#      run twice: on NCCL, and with dmaccl's libnccl.so.2 preloaded (torch's
#      own nccl backend on dmaccl: no dmaccl code in the program).
# Predictions: (1) as pull1-exit-4xh200 and rooted-2xh200: AllReduce
#   0.71-0.95x NCCL's speed at 16-64 MB, ReduceScatter 0.73-1.0x, movement
#   1.0-1.1x. (2) the preloaded nccl-graph rows at about dmaccl-graph's step
#   in e2e-2xh200 (batch 1 same as NCCL, 8 and 32 about 0.93-0.95x NCCL's).
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/rese; rm -rf $R; mkdir -p $R; trap "tar czf $O/e.tgz -C $R ." EXIT
[ -f build-gpu/CMakeCache.txt ] || cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON > $R/build.log 2>&1
cmake --build build-gpu -j "$(nproc)" --target dmaccl dmaccl_nccl dmaccl-perf >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
P=build-gpu/dmaccl-perf
perf() { local name=$1 t=$2; shift 2; s=$(date +%s); timeout $t $P "$@" -J $R/$name.json > $R/$name.txt 2>&1; echo "$name: rc $?, $(( $(date +%s) - s )) s"; }
perf large-red 90 -p 2 -o allreduce,reducescatter -A auto -b 16M -e 64M -f 2 -n 20 -w 5 -N 3 --in-place 0 --kernels 0
perf large-move 90 -p 2 -o broadcast,gather,scatter,allgatherv,alltoallv -A auto -b 16M -e 64M -f 2 -n 20 -w 5 -N 3 --in-place 0 --kernels 0
export DMACCL_LIBRARY=$PWD/build-gpu/libdmaccl.so PYTHONPATH="$PWD/python"
NL=$(python3 -c "import dmaccl; print(dmaccl.nccl_library_path())")
E="bench/e2e/run.py --models llama3-8b --modes dense --kv 1024 --batches 1,8,32 --dense-variants ar --backends nccl-graph,none-graph --steps 100 --timeout 120"
s=$(date +%s); timeout 130 python3 $E --out $R/e2e-nccl > $R/e2e-nccl.log 2>&1; echo "e2e on NCCL: rc $?, $(( $(date +%s) - s )) s"
s=$(date +%s); LD_PRELOAD=$NL timeout 130 python3 $E --out $R/e2e-dmaccl > $R/e2e-dmaccl.log 2>&1; echo "e2e on dmaccl (preload): rc $?, $(( $(date +%s) - s )) s"
grep -A12 "batch" $R/e2e-nccl/e2e.txt 2>/dev/null | head -20; grep -A12 "batch" $R/e2e-dmaccl/e2e.txt 2>/dev/null | head -20
tail -5 $R/e2e-nccl.log $R/e2e-dmaccl.log
