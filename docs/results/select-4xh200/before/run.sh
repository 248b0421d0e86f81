#!/usr/bin/env bash
# 4 ranks: every algorithm of Reduce, Broadcast, AlltoAllv and AllReduce
# side by side with the selection and NCCL, eager and in a graph, 1 KB-4 MB.
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:$LD_LIBRARY_PATH NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
R=$OUT; rm -rf /tmp/res; mkdir -p /tmp/res; trap 'cp .scratch/gpu/x4b.sh /tmp/res/run.sh; tar czf $R/r.tgz -C /tmp/res .' EXIT
nvidia-smi -L; T0=$(date +%s)
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON >/tmp/res/build.log 2>&1 && cmake --build build-gpu -j "$(nproc)" --target dmaccl-perf >>/tmp/res/build.log 2>&1 || { tail -30 /tmp/res/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
P=build-gpu/dmaccl-perf
perf() { local name=$1 t=$2; shift 2; s=$(date +%s); timeout $t $P "$@" -J /tmp/res/$name.json > /tmp/res/$name.txt 2>&1; echo "$name: rc $?, $(( $(date +%s) - s )) s"; }
S="-p 4 -o reduce,broadcast,alltoallv,allreduce -A auto,all -b 1K -e 4M -f 4 --kernels 0 --in-place 0"
perf algos-eager 150 $S -n 50 -w 10 -N 3
perf algos-graph 150 $S -G 10 -n 20 -w 5 -N 3
perf algos-uneven 100 -p 4 -o alltoallv -A auto,all -b 1K -e 4M -f 4 --kernels 0 --in-place 0 --uneven -G 10 -n 20 -w 5 -N 3
echo "all done at $(( $(date +%s) - T0 )) s"
