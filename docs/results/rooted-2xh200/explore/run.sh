#!/usr/bin/env bash
# x2: 2-rank Broadcast/Scatter/Gather at 1-16 MB: each algorithm against the table, eager and in graphs
set -u
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-} NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON >/dev/null && cmake --build build-gpu -j 16 --target dmaccl-perf > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
B=build-gpu/dmaccl-perf
C="-p 2 -o broadcast,scatter,gather -A auto,stagell,stage,push1,pushb,split -b 1M -e 16M -f 2 --kernels 0 --in-place 0"
for i in 1 2; do
$B $C -n 50 -w 10 -G 10 -J $OUT/graph-$i.json > $OUT/graph-$i.txt 2>&1; echo "graph $i $?"
$B $C -n 100 -w 20 -J $OUT/eager-$i.json > $OUT/eager-$i.txt 2>&1; echo "eager $i $?"
done
cd $OUT && tar czf runs.tgz graph-* eager-* && rm -f graph-* eager-*
