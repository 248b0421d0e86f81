#!/usr/bin/env bash
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:$LD_LIBRARY_PATH NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
R=$OUT; rm -rf /tmp/res; mkdir -p /tmp/res; trap 'tar czf $R/r.tgz -C /tmp/res .' EXIT
nvidia-smi -L; T0=$(date +%s)
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON >/tmp/res/build.log 2>&1 && cmake --build build-gpu -j 60 --target dmaccl-perf test_p2p test_gpu_colls test_gpu_nokernel >>/tmp/res/build.log 2>&1 || { tail -30 /tmp/res/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
P="-p 4 --kernels 0 -b 1K -e 1M -f 4"
timeout 80 build-gpu/dmaccl-perf $P -o gather -A auto,stage,pushb -n 100 -w 10 -N 3 -J /tmp/res/gather-eager.json > /tmp/res/gather-eager.txt 2>&1; echo "gather eager rc $?"
timeout 60 build-gpu/dmaccl-perf $P -o gather -A auto -G 10 -n 50 -w 5 -N 2 -J /tmp/res/gather-graph.json > /tmp/res/gather-graph.txt 2>&1; echo "gather graph rc $?"
timeout 60 build-gpu/dmaccl-perf $P -o sendrecv -A auto -n 100 -w 10 -N 3 -J /tmp/res/sr-eager.json > /tmp/res/sr-eager.txt 2>&1; echo "sr eager rc $?"
timeout 60 build-gpu/dmaccl-perf $P -o sendrecv -A auto -G 10 -n 50 -w 5 -N 3 -J /tmp/res/sr-graph.json > /tmp/res/sr-graph.txt 2>&1; echo "sr graph rc $?"
echo "perf done at $(( $(date +%s) - T0 )) s"
run() { local name=$1; shift; s=$(date +%s); timeout ${TT:-100} "$@" > "/tmp/res/$name.log" 2>&1; r=$?; echo "$name: rc $r, $(( $(date +%s) - s )) s"; [ $r -ne 0 ] && tail -25 "/tmp/res/$name.log"; }
run gpu_colls_gather build-gpu/tests/test_gpu_colls gather
run nokernel build-gpu/tests/test_gpu_nokernel
run p2p build-gpu/tests/test_p2p gpu
echo "all done at $(( $(date +%s) - T0 )) s"
