#!/usr/bin/env bash
# Call A (one H200): one rank's eager call, before (build-before/: the tree
# of d99fc31, carried) and after (this tree) alternately on one machine,
# NCCL in the same runs; the host cost of each CUDA call (hostapi).
#
# Change: a group's end allocates nothing for small groups (the recorded
# calls in a thread-local array of 8, its scratch arrays on the stack);
# dmaccl-perf wraps every call in a group, as NCCL's rows are.
# Callgrind on the host executor (-g 1, 1 KB out of place): 3750 -> 2050
# instructions per call (GroupStart + AllGather + GroupEnd).
# Prediction: 0.3-0.6 us less per call, in place and out of place (malloc,
# calloc and free with their locked operations); in place from 0.8-1.9 us
# (two earlier machines) to 0.4-1.4; out of place 1.1-1.2x NCCL -> 1.05-1.15x.
# The memcpy path (DMACCL_CTA_POLICY=zero) against the kernel: the kernel
# 0.3-0.8 us cheaper (hostapi on H100: launch 2.9-3.0, cudaMemcpyAsync 3.6).
source "$(dirname "$0")/env.sh"
O=$OUT; R=/tmp/res; rm -rf $R; mkdir -p $R; trap "tar czf $O/a.tgz -C $R ." EXIT
OUT=$R
build build-before /tmp/bb
build . build-gpu
nvcc -O2 -o /tmp/hostapi bench/probes/hostapi.cu && /tmp/hostapi 2000 7 > $R/hostapi.txt 2>&1; cat $R/hostapi.txt
A="-g 1 -o allgather,alltoall,allreduce -A auto -b 1K -e 1M -f 4 -n 200 -w 20 -N 3 --kernels 0"
for i in 1 2; do
  run before-$i 120 /tmp/bb/dmaccl-perf $A
  run after-$i 120 build-gpu/dmaccl-perf $A
done
DMACCL_CTA_POLICY=zero run after-memcpy 120 build-gpu/dmaccl-perf $A
run after-3 120 build-gpu/dmaccl-perf $A
run timeline 120 build-gpu/dmaccl-perf -g 1 -o allgather -A auto -b 1K -e 1K -n 50 -w 10 --timeline $R/tl
for f in before-1 after-1 before-2 after-2 after-memcpy after-3; do echo "== $f"; grep -E "^ +[0-9]" $R/$f.txt | head -40; done
