#!/usr/bin/env bash
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:$LD_LIBRARY_PATH NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
R=$OUT; rm -rf /tmp/res; mkdir -p /tmp/res; trap 'tar czf $R/r.tgz -C /tmp/res .' EXIT
nvidia-smi -L; T0=$(date +%s); mkdir -p /tmp/src && tar xf .scratch/gpu/head.tar -C /tmp/src && cd /tmp/src
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON >/tmp/res/build.log 2>&1 && cmake --build build-gpu -j 30 >>/tmp/res/build.log 2>&1 || { tail -30 /tmp/res/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
run() { local name=$1; shift; s=$(date +%s); timeout ${TT:-150} "$@" > "/tmp/res/$name.log" 2>&1; r=$?; echo "$name: rc $r, $(( $(date +%s) - s )) s"; [ $r -ne 0 ] && tail -25 "/tmp/res/$name.log"; }
run p2p build-gpu/tests/test_p2p gpu
run p2p-conn1 env CUDA_DEVICE_MAX_CONNECTIONS=1 build-gpu/tests/test_p2p gpu
grep -E "kernels in" /tmp/res/p2p.log | head -4
run nokernel build-gpu/tests/test_gpu_nokernel
run gpu_reduce build-gpu/tests/test_gpu_reduce
run gpu_args build-gpu/tests/test_gpu_args
P="-p 2 -o sendrecv -A auto --kernels 0 -b 1K -e 1M -f 4"
timeout 40 build-gpu/dmaccl-perf $P -n 100 -w 10 -N 3 -J /tmp/res/eager.json > /tmp/res/eager.txt 2>&1
timeout 40 build-gpu/dmaccl-perf $P -G 10 -n 50 -w 5 -N 3 -J /tmp/res/graph.json > /tmp/res/graph.txt 2>&1
grep -E "^  sendrecv" /tmp/res/eager.txt /tmp/res/graph.txt | awk '{print $1,$2,$5,$6}' | head -40
run mp_colls build-gpu/tests/test_mp_colls gpu
TT=200 run gpu build-gpu/tests/test_gpu
run gpu_colls build-gpu/tests/test_gpu_colls
TT=200 run gpu_mp build-gpu/tests/test_gpu_mp
echo "all done at $(( $(date +%s) - T0 )) s"
