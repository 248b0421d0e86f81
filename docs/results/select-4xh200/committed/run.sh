#!/usr/bin/env bash
# The committed table (HEAD) on 4 GPUs: the GPU tests that run the selection,
# then Reduce and AlltoAllv with auto against the algorithms it chose between.
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:$LD_LIBRARY_PATH NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
R=$OUT; rm -rf /tmp/res; mkdir -p /tmp/res; trap 'cp .scratch/gpu/final.sh /tmp/res/run.sh; tar czf $R/r.tgz -C /tmp/res .' EXIT
nvidia-smi -L; T0=$(date +%s); git log --oneline | head -1
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON >/tmp/res/build.log 2>&1 && cmake --build build-gpu -j "$(nproc)" >>/tmp/res/build.log 2>&1 || { tail -30 /tmp/res/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
timeout 60 build-gpu/dmaccl-perf -p 4 -o reduce,alltoallv -A auto,stage,pull1,pushb,pushn -b 256K -e 8M -f 2 --kernels 0 --in-place 0 -n 30 -w 5 -N 2 -J /tmp/res/eager.json > /tmp/res/eager.txt 2>&1; echo "eager rc $?"
timeout 60 build-gpu/dmaccl-perf -p 4 -o reduce,alltoallv -A auto,stage,pull1,pushb,pushn -b 256K -e 8M -f 2 --kernels 0 --in-place 0 -G 10 -n 20 -w 5 -N 2 -J /tmp/res/graph.json > /tmp/res/graph.txt 2>&1; echo "graph rc $?"
(cd build-gpu && timeout 330 ctest -R "test_gpu_colls|test_mp_colls_gpu|test_p2p_gpu|test_gpu_nokernel|test_gpu_reduce|test_gpu_args" --timeout 300 -V) > /tmp/res/ctest.log 2>&1
grep -E "tests passed|Failed|\*\*\*|Test +#[0-9]+: " /tmp/res/ctest.log
echo "all done at $(( $(date +%s) - T0 )) s"
