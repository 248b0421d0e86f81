#!/bin/bash
# -g 2 graph AllReduce: before and after builds; 24/48 MB graph pairs
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:$LD_LIBRARY_PATH NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
o=/tmp/res; mkdir -p $o
(cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release >$o/b1.log 2>&1 && cmake --build build-gpu -j8 --target dmaccl-perf test_gpu_colls >>$o/b1.log 2>&1) &
(cmake -S .scratch/before -B build-before -DCMAKE_BUILD_TYPE=Release >$o/b2.log 2>&1 && cmake --build build-before -j8 --target dmaccl-perf >>$o/b2.log 2>&1) &
wait
ls -la build-gpu/dmaccl-perf build-before/dmaccl-perf || exit 1
A=build-gpu/dmaccl-perf; B=build-before/dmaccl-perf
run() { local t=$1; shift; echo "== $*"; timeout $t "$@" > $o/run.txt 2>$o/run.err; echo "rc $?"; grep -E "^  allreduce|^#   \^" $o/run.txt; tail -2 $o/run.err; cat $o/run.txt >> $o/all.txt; }
G="-o allreduce -b 16M -e 16M -G 3 -n 5 -w 2 --kernels 0"
run 45 $B -g 2 $G --baseline none
run 45 $A -g 2 $G --baseline none
run 45 $A -g 2 $G -A pull1 --baseline none
run 45 $B -g 2 -o allreduce -b 16M -e 16M -n 5 -w 2 --kernels 0
run 45 $A -g 2 -o allreduce -b 16M -e 16M -n 5 -w 2 --kernels 0
run 45 $B -g 2 $G
P="-p 2 -o allreduce -A auto -b 24M -e 48M -f 2 -G 5 -n 10 -w 3 --in-place 0 --kernels 0"
run 60 $B $P; run 60 $A $P; run 60 $B $P; run 60 $A $P
CUDA_DEVICE_MAX_CONNECTIONS=1 timeout 60 build-gpu/tests/test_gpu_colls allreduce > $o/conn1.log 2>&1; echo "conn1 colls rc $?"
