#!/usr/bin/env bash
# device: the fix against its control, then the stall runs again
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-} NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
mkdir -p /tmp/nofix
tar --exclude='./build*' --exclude=./.git -cf - . | tar -xf - -C /tmp/nofix
(cd /tmp/nofix && patch -s -R -p1 < .scratch/fix.diff && cmake -S . -B b -DCMAKE_BUILD_TYPE=Release >"$OUT/nofix-build.log" 2>&1 &&
  cmake --build b -j 12 --target test_gpu_mp >>"$OUT/nofix-build.log" 2>&1; echo "nofix build rc $?") &
( while sleep 0.5; do nvidia-smi --query-compute-apps=timestamp,gpu_bus_id,pid,used_memory --format=csv,noheader; done ) >"$OUT/apps.csv" 2>&1 &
APPS=$!
R="-p 2 -o sendrecv,broadcast,alltoallv,gather,scatter,allreduce -A auto -b 1M -e 16M -f 2 --kernels 0 --in-place 0"
GPU_CHECK_WATCH=1 GPU_CHECK_TESTS=0 GPU_CHECK_RUNS="$R -n 40 -w 5 -N 4; $R -G 5 -n 10 -w 3 -N 4; $R -n 40 -w 5 -N 2" scripts/gpu-check 2>&1 | grep -E "^==|\^|took"
kill $APPS
wait
echo "== tests with the fix"
(cd build-gpu && ctest --timeout 240 -R 'test_p2p_gpu|test_gpu_mp' --output-on-failure 2>&1 | tail -25)
echo "== control: test_gpu_mp testOwnGpuOnly without the fix"
/tmp/nofix/b/tests/test_gpu_mp testOwnGpuOnly 2>&1 | tail -8
