#!/bin/bash
# pull1's one-kernel reductions: pieces of total/4 (HEAD) against /2, /3, /6
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:$LD_LIBRARY_PATH NCCL_NVLS_ENABLE=0
nvidia-smi -L
for d in . .k2 .k3 .k6; do
  b=build-$(basename $d | tr -d .); [ "$d" = . ] && b=build-gpu
  (cmake -S $d -B $b -DCMAKE_BUILD_TYPE=Release > $OUT/build-$(basename $b).log 2>&1 && cmake --build $b -j 8 --target dmaccl-perf >> $OUT/build-$(basename $b).log 2>&1 || echo "build $d failed") &
done
wait
A="-p 2 -o reducescatter,allreduce -A auto -b 16M -e 64M -f 2 --in-place 0 --kernels 0"
for rep in 1 2; do
  for b in build-gpu build-k2 build-k3 build-k6; do
    timeout 60 $b/dmaccl-perf $A -n 20 -w 5 -J $OUT/e-$b-$rep.json > $OUT/e-$b-$rep.txt 2>&1 || echo "$b eager failed"
    [ $rep = 1 ] && { timeout 60 $b/dmaccl-perf $A -G 5 -n 10 -w 3 -J $OUT/g-$b.json > $OUT/g-$b.txt 2>&1 || echo "$b graph failed"; }
  done
done
for f in $OUT/e-*.txt $OUT/g-*.txt; do echo "== $(basename $f)"; grep -E '^ +(reducescatter|allreduce) .* auto ' $f | awk '{print $1, $2, $6, $NF}'; done
