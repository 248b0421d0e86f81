#!/usr/bin/env bash
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:$LD_LIBRARY_PATH NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
R=$OUT; rm -rf /tmp/res; mkdir -p /tmp/res; trap 'tar czf $R/r.tgz -C /tmp/res .' EXIT
nvidia-smi -L; T0=$(date +%s)
mkdir -p /tmp/before && tar -xf .scratch/before.tar -C /tmp/before
(cmake -S /tmp/before -B /tmp/build-before -DCMAKE_BUILD_TYPE=Release >/tmp/res/build-before.log 2>&1 && cmake --build /tmp/build-before -j 10 --target dmaccl-perf >>/tmp/res/build-before.log 2>&1; echo "before build $?") &
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON >/tmp/res/build.log 2>&1 && cmake --build build-gpu -j 22 >>/tmp/res/build.log 2>&1 || { tail -30 /tmp/res/build.log; exit 1; }
wait
echo "built at $(( $(date +%s) - T0 )) s"
run() { local name=$1; shift; s=$(date +%s); timeout ${TT:-150} "$@" > "/tmp/res/$name.log" 2>&1; r=$?; echo "$name: rc $r, $(( $(date +%s) - s )) s"; [ $r -ne 0 ] && tail -25 "/tmp/res/$name.log"; }
run p2p build-gpu/tests/test_p2p gpu
run p2p-conn1 env CUDA_DEVICE_MAX_CONNECTIONS=1 build-gpu/tests/test_p2p gpu
grep -E "kernels in|node" /tmp/res/p2p.log | head
run nokernel build-gpu/tests/test_gpu_nokernel
grep -E "sendrecv" /tmp/res/nokernel.log | grep -E "stagell|auto" | head
run mp_colls build-gpu/tests/test_mp_colls gpu
TT=200 run gpu_mp build-gpu/tests/test_gpu_mp
echo "tests done at $(( $(date +%s) - T0 )) s"
P="-p 2 -o sendrecv -A auto --kernels 0 -b 1K -e 4M -f 4"
for k in before after before2 after2; do
  exe=build-gpu/dmaccl-perf; [[ $k == before* ]] && exe=/tmp/build-before/dmaccl-perf
  timeout 60 $exe $P -n 100 -w 10 -N 3 -J /tmp/res/eager-$k.json > /tmp/res/eager-$k.txt 2>&1
  timeout 60 $exe $P -G 10 -n 50 -w 5 -N 3 -J /tmp/res/graph-$k.json > /tmp/res/graph-$k.txt 2>&1
done
echo "perf done at $(( $(date +%s) - T0 )) s"
for k in eager graph; do python3 tools/perf/plot.py --compare /tmp/res/$k-before2.json /tmp/res/$k-after2.json 2>&1 | head -12; done
