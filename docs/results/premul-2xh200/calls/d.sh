#!/usr/bin/env bash
# Call D (nvidia-h200-x2, after C on the same machine: build-gpu kept):
#   1. issue 22's table at HEAD (small-2xh200-9e1e178/run.sh, 3 eager runs
#      instead of 5): out of place, auto, every byte checked, NCCL same run;
#   2. torch.distributed's all_reduce/all_gather, bf16, 8 KB-8 MB, eager and
#      in graphs (bench/comm_latency.py), once on NCCL and once with
#      dmaccl's libnccl.so.2 preloaded (torch's own nccl backend on dmaccl):
#      the same program, the two libraries, one machine.
# Predictions: (1) as at 9e1e178 within the host's drift: eager AllGather
#   0.80-0.88x NCCL's time, AlltoAll 0.71-0.84x; graphs 0.43-0.78x;
#   persistent 0.85-1.0x dmaccl's eager; one rank 1.1-1.25x NCCL.
#   (2) graph column: torch+dmaccl about what dmaccl's own Python
#   communicator takes in the same table (0.5-0.8x NCCL's graph time up to
#   1 MB for all_gather; all_reduce near 1.0x at 1-8 MB); eager column
#   host-bound (torch's ProcessGroupNCCL bookkeeping dominates both).
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/resd; rm -rf $R; mkdir -p $R; trap "tar czf $O/d.tgz -C $R ." EXIT
cmake --build build-gpu -j "$(nproc)" --target dmaccl dmaccl_nccl dmaccl-perf > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"; git log --oneline | head -1
P=build-gpu/dmaccl-perf
perf() { local name=$1 t=$2; shift 2; s=$(date +%s); timeout $t $P "$@" -J $R/$name.json > $R/$name.txt 2>&1; echo "$name: rc $?, $(( $(date +%s) - s )) s"; }
S="-o allgather,alltoall,allreduce -A auto -b 1K -e 1M -f 4 --kernels 0 --in-place 0"
for i in 1 2 3; do perf eager-$i 50 -p 2 $S -n 200 -w 20 -N 5; done
perf graph 60 -p 2 $S -G 10 -n 50 -w 10 -N 5
perf persistent 50 -p 2 -o allgather,alltoall,allreduce -A auto -b 1K -e 1M -f 4 --kernels 0 --in-place 0 --persistent -n 200 -w 20 -N 3
perf one-rank 40 -g 1 -o allgather,alltoall,allreduce -A auto -b 1K -e 1M -f 4 --kernels 0 -n 200 -w 20 -N 3
export DMACCL_LIBRARY=$PWD/build-gpu/libdmaccl.so PYTHONPATH="$PWD/python"
NL=$(python3 -c "import dmaccl; print(dmaccl.nccl_library_path())")
B="bench/comm_latency.py -n 2 --colls allreduce,allgather --sizes 8K,64K,512K,1M,4M,8M"
s=$(date +%s); timeout 100 python3 $B -J $R/torch-nccl.json > $R/torch-nccl.txt 2>&1; echo "torch on NCCL: rc $?, $(( $(date +%s) - s )) s"
s=$(date +%s); LD_PRELOAD=$NL timeout 100 python3 $B -J $R/torch-dmaccl.json > $R/torch-dmaccl.txt 2>&1; echo "torch on dmaccl (preload): rc $?, $(( $(date +%s) - s )) s"
tail -20 $R/torch-nccl.txt; tail -20 $R/torch-dmaccl.txt
