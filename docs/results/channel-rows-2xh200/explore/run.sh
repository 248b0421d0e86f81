#!/usr/bin/env bash
# x2: Send/Recv and AlltoAllv (pairs) at 512 KB-8 MB: which channel algorithm wins
set -u
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-} NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON >/dev/null && cmake --build build-gpu -j 16 --target dmaccl-perf > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
B=build-gpu/dmaccl-perf
C="-p 2 -b 512K -e 8M -f 2 --kernels 0 --in-place 0"
$B $C -o sendrecv -A auto,stagell,stage,pushb,split -n 50 -w 10 -G 10 -J $OUT/sr-graph.json > $OUT/sr-graph.txt 2>&1; echo "sr graph $?"
$B $C -o sendrecv -A auto,stagell,stage,pushb,split -n 100 -w 20 -J $OUT/sr-eager.json > $OUT/sr-eager.txt 2>&1; echo "sr eager $?"
for v in none stage pushb split; do
  if [ $v = none ]; then unset DMACCL_ALGO; else export DMACCL_ALGO="broadcast:1M-inf:$v"; fi
  $B $C -o alltoallv -A auto -b 1M -n 50 -w 10 -G 10 -J $OUT/a2av-graph-$v.json > $OUT/a2av-graph-$v.txt 2>&1; echo "a2av graph $v $?"
  $B $C -o alltoallv -A auto -b 1M -n 100 -w 20 -J $OUT/a2av-eager-$v.json > $OUT/a2av-eager-$v.txt 2>&1; echo "a2av eager $v $?"
done
unset DMACCL_ALGO
cd $OUT && tar czf runs.tgz *.json *.txt && rm -f *.json a2av*.txt sr*.txt
