#!/usr/bin/env bash
# Call 1: build after + before, GPU tests touching held launches, sendrecv before/after.
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:$LD_LIBRARY_PATH NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
R=$OUT; rm -rf /tmp/res; mkdir -p /tmp/res; trap 'tar czf $R/r.tgz -C /tmp/res .' EXIT
nvidia-smi -L; T0=$(date +%s)
mkdir -p /tmp/before && tar -xf .scratch/before.tar -C /tmp/before
(cmake -S /tmp/before -B /tmp/build-before -DCMAKE_BUILD_TYPE=Release >/tmp/res/build-before.log 2>&1 && cmake --build /tmp/build-before -j 12 --target dmaccl-perf >>/tmp/res/build-before.log 2>&1; echo "before build $?") &
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON >/tmp/res/build.log 2>&1 && cmake --build build-gpu -j 20 >>/tmp/res/build.log 2>&1 || { tail -30 /tmp/res/build.log; exit 1; }
wait
echo "built at $(( $(date +%s) - T0 )) s"
for t in "test_p2p gpu" "test_gpu_nokernel" "test_mp_colls gpu" "test_gpu_colls sendrecv" "test_gpu_colls broadcast" "test_gpu"; do
  s=$(date +%s)
  timeout ${TT:-200} build-gpu/tests/$t > "/tmp/res/$(echo $t | tr ' ' _).log" 2>&1; r=$?
  echo "$t: rc $r, $(( $(date +%s) - s )) s"
  [ $r -ne 0 ] && tail -20 "/tmp/res/$(echo $t | tr ' ' _).log"
done
grep -E "sendrecv" /tmp/res/test_gpu_nokernel.log | head -12
echo "tests done at $(( $(date +%s) - T0 )) s"
P="-p 2 -o sendrecv,broadcast -A auto --kernels 0 -b 1K -e 4M -f 4"
for k in before after before2 after2; do
  exe=build-gpu/dmaccl-perf; [[ $k == before* ]] && exe=/tmp/build-before/dmaccl-perf
  timeout 100 $exe $P -n 100 -w 10 -N 3 -J /tmp/res/eager-$k.json > /tmp/res/eager-$k.txt 2>&1
  timeout 100 $exe $P -G 10 -n 50 -w 5 -N 3 -J /tmp/res/graph-$k.json > /tmp/res/graph-$k.txt 2>&1
  echo "$k done at $(( $(date +%s) - T0 )) s"
done
for k in eager graph; do python3 tools/perf/plot.py --compare /tmp/res/$k-before.json /tmp/res/$k-after.json 2>&1 | head -40; done
