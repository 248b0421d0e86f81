#!/usr/bin/env bash
# The new 4-rank selection (Reduce stage below 4 MB, Broadcast pullb over
# 256 KB, AlltoAllv pushn in graphs) against the algorithms it chose between,
# on 4 ranks and (Reduce) on 2; then test_gpu_colls with it.
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:$LD_LIBRARY_PATH NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
R=$OUT; rm -rf /tmp/res; mkdir -p /tmp/res; trap 'cp .scratch/gpu/x4c.sh /tmp/res/run.sh; tar czf $R/r.tgz -C /tmp/res .' EXIT
nvidia-smi -L; T0=$(date +%s)
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON >/tmp/res/build.log 2>&1 && cmake --build build-gpu -j "$(nproc)" >>/tmp/res/build.log 2>&1 || { tail -30 /tmp/res/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
P=build-gpu/dmaccl-perf
perf() { local name=$1 t=$2; shift 2; s=$(date +%s); timeout $t $P "$@" -J /tmp/res/$name.json > /tmp/res/$name.txt 2>&1; echo "$name: rc $?, $(( $(date +%s) - s )) s"; }
perf sel4-eager 100 -p 4 -o reduce,broadcast,alltoallv -A auto,stage,pull1,pullb,chain,pushb,pushn -b 1K -e 8M -f 2 --kernels 0 --in-place 0 -n 50 -w 10 -N 3
perf sel4-graph 100 -p 4 -o reduce,broadcast,alltoallv -A auto,stage,pull1,pullb,chain,pushb,pushn -b 1K -e 8M -f 2 --kernels 0 --in-place 0 -G 10 -n 20 -w 5 -N 3
perf sel2-reduce 100 -p 2 -o reduce -A auto,stage,pull1 -b 256K -e 8M -f 2 --kernels 0 --in-place 0 -n 50 -w 10 -N 3
perf sel2-reduce-graph 100 -p 2 -o reduce -A auto,stage,pull1 -b 256K -e 8M -f 2 --kernels 0 --in-place 0 -G 10 -n 20 -w 5 -N 3
timeout 200 build-gpu/tests/test_gpu_colls > /tmp/res/gpu_colls.log 2>&1; echo "test_gpu_colls rc $?"; tail -3 /tmp/res/gpu_colls.log
echo "all done at $(( $(date +%s) - T0 )) s"
