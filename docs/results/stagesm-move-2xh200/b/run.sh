#!/usr/bin/env bash
# call B (2x H200, 49a5407): the table with stagesm's 2-rank rows against
# NCCL (auto, eager and graphs, 3 sweeps each; one process driving both GPUs
# in graphs), dmaccl-c3 on 8b-decode-mlp (AlltoAll 4 MB) and 8b-decode-qkv
# (AllGather 1 MB, unchanged: a control), and the end-to-end rows whose
# collectives moved (Llama-3-8B sp at batch 256, DeepSeek-V3 at 128 tokens),
# before (DMACCL_ALGO = the old rows) and after in one call.
# Prediction: auto 2-8 MB at stagesm's call-A times (AllGather/AlltoAll
# 0.56-0.79x NCCL); 8b-decode-mlp's overlapped time from 41.7 ms to at most
# NCCL's 34.5 with its GEMM slowdown at most 1.2x; e2e sp batch 256 and
# DeepSeek-V3 128 tokens 1-3% shorter steps than before.
source "$(dirname "$0")/env.sh"
O=$OUT; R=/tmp/res; rm -rf $R; mkdir -p $R; trap "cp $0 $R/run.sh; tar czf $O/b.tgz -C $R ." EXIT
OUT=$R
build
C="-b 512K -e 16M -f 2 --kernels 0 --in-place 0 -A auto"
perf e-auto 120 -p 2 $C -o allgather,alltoall,allgatherv,broadcast,gather,scatter -n 50 -w 10 -N 3
perf g-auto 120 -p 2 $C -o allgather,alltoall,allgatherv,broadcast,gather,scatter -G 10 -n 30 -w 5 -N 3
perf g2-auto 60 -g 2 $C -o allgather,alltoall -G 10 -n 30 -w 5
s=$(date +%s)
timeout 150 build-gpu/dmaccl-c3 -p 2 -r 3 -s 8b-decode-mlp,8b-decode-qkv -A nccl,nccl-prio,nccl-cta8,nccl-ce,auto -J $R/c3.json > $R/c3.txt 2>&1
echo "c3: rc $?, $(( $(date +%s) - s )) s"
E="--models llama3-8b,deepseek-v3 --modes dense,moe --dense-variants sp --batches 256 --moe-variants agrs,a2a --tokens 128 --backends nccl-graph,dmaccl-graph"
OLD="allgather:1048577-4194305:stagell;allgatherv:1048577-4194305:stagell;alltoall:1048577-4194305:stagell"
for v in before after; do
  s=$(date +%s)
  if [ $v = before ]; then export DMACCL_ALGO=$OLD; else unset DMACCL_ALGO; fi
  DMACCL_LIBRARY=$PWD/build-gpu/libdmaccl.so PYTHONPATH=$PWD/python timeout 150 python3 bench/e2e/run.py $E --out $R/e2e-$v > $R/e2e-$v.log 2>&1
  echo "e2e $v: rc $?, $(( $(date +%s) - s )) s"; sed -n '/^mode /,$p' $R/e2e-$v.log | head -20
done
echo "done at $(( $(date +%s) - T0 )) s"
