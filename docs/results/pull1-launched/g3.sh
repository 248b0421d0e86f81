#!/bin/bash
# final: graph AllReduce 16-64 MB at HEAD (the 40 MB cut), both placements; -g 2 graph bracket (the hang)
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:$LD_LIBRARY_PATH NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
o=/tmp/res; mkdir -p $o
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON >$o/b1.log 2>&1 && cmake --build build-gpu -j16 --target dmaccl-perf test_gpu_colls >>$o/b1.log 2>&1 || { tail -20 $o/b1.log; exit 1; }
A=build-gpu/dmaccl-perf
run() { local t=$1; shift; echo "== $*"; timeout $t "$@" > $o/run.txt 2>$o/run.err; echo "rc $?"; grep -E "^  allreduce|^  reducescatter|^  allgather|^#   \^" $o/run.txt; tail -1 $o/run.err; cat $o/run.txt >> $o/all.txt; }
run 90 $A -p 2 -o allreduce -A auto -b 16M -e 64M -f 2 -G 5 -n 10 -w 3 --kernels 0 -J $o/final-graph.json
K="-G 2 -n 2 -w 1 --kernels 0 --baseline none"
run 25 $A -g 2 -o allreduce -b 4M -e 4M -A pull1 $K
run 25 $A -g 2 -o allreduce -b 16M -e 16M -A pull1 -G 1 -n 1 -w 0 --kernels 0 --baseline none
run 25 $A -g 2 -o reducescatter -b 16M -e 16M -A pull1 $K
run 25 $A -g 2 -o allgather -b 16M -e 16M -A auto $K
run 25 $A -g 2 -o allreduce -b 16M -e 16M -A pull1 -G 2 -n 2 -w 0 --kernels 0 --baseline none
DMACCL_DEBUG=INFO DMACCL_TIMEOUT=8 timeout 25 $A -g 2 -o allreduce -b 16M -e 16M -A pull1 -G 1 -n 1 -w 1 --kernels 0 --baseline none > $o/dbg.txt 2>&1; echo "dbg rc $?"; grep -iE "timeout|wait|rank|error" $o/dbg.txt | tail -12
