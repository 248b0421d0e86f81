#!/usr/bin/env bash
# call A (2x H200, 5d90c6b): stagesm's movement form by name against the
# other forms and NCCL, 2 ranks, 512 KB-16 MB, eager and in graphs; its GPU
# tests. Prediction (before the run): AlltoAll/AllGather 4 MB stagesm eager
# 15-18 us (stagell/stage 28-29, NCCL 19.5-20), in graphs 13-16 (push1 20.6).
source "$(dirname "$0")/env.sh"
O=$OUT; R=/tmp/res; rm -rf $R; mkdir -p $R; trap "cp $0 $R/run.sh; tar czf $O/a.tgz -C $R ." EXIT
OUT=$R
build
t() { local l=$1; shift; s=$(date +%s); timeout 240 "$@" > $R/$l.log 2>&1; echo "$l ($*): rc $?, $(( $(date +%s) - s )) s"; tail -2 $R/$l.log; }
t reduce build-gpu/tests/test_gpu_reduce
C="-p 2 -b 512K -e 16M -f 2 --kernels 0 --in-place 0"
perf e-ag 90 $C -o allgather,alltoall -A auto,stagesm,stagell,stage,pushb -n 50 -w 10
perf g-ag 90 $C -o allgather,alltoall -A auto,stagesm,stagell,stage,push1 -G 10 -n 30 -w 5
perf e-root 90 $C -o broadcast,gather,scatter,allgatherv -A auto,stagesm -n 50 -w 10
perf g-root 90 $C -o broadcast,gather,scatter,allgatherv -A auto,stagesm -G 10 -n 30 -w 5
DMACCL_REDUCE_CTAS=64 perf e-cta64 60 $C -o allgather,alltoall -A stagesm -n 50 -w 10
DMACCL_REDUCE_CTAS=64 perf g-cta64 60 $C -o allgather,alltoall -A stagesm -G 10 -n 30 -w 5
t mpcolls build-gpu/tests/test_mp_colls gpu
t nokernel build-gpu/tests/test_gpu_nokernel
t colls build-gpu/tests/test_gpu_colls
echo "done at $(( $(date +%s) - T0 )) s"
