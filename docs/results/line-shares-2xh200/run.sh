#!/usr/bin/env bash
# x2: GPU tests of the line layout, channel memory, before/after perf at the line borders
set -u
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-} NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
nvidia-smi -L
mkdir -p /tmp/before && git archive ${BEFORE:-HEAD} | tar -x -C /tmp/before
(cmake -S /tmp/before -B /tmp/before/b -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build /tmp/before/b -j 16 --target dmaccl-perf dmaccl >/dev/null) &
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON >/dev/null && cmake --build build-gpu -j 16 > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
wait
gcc -std=c11 -I include -I /usr/local/cuda/include .scratch/chmem.c -o /tmp/chmem -L build-gpu -ldmaccl -L /usr/local/cuda/lib64 -lcudart -Wl,-rpath,$PWD/build-gpu
for n in 2 4 8; do /tmp/chmem $n; done 2>&1 | tee $OUT/chmem.txt
(cd build-gpu && timeout 240 ctest -R "test_gpu_colls|test_p2p_gpu|test_mp_colls_gpu|test_gpu_reduce|test_gpu_nokernel" --output-on-failure -j 1 --timeout 200) > $OUT/ctest.txt 2>&1; echo "ctest rc $?"; grep -E "tests passed|Failed|\*\*\*|Passed" $OUT/ctest.txt | tail -8
P="-p 2 -o allgather,allreduce,reducescatter,broadcast,sendrecv,alltoallv -A auto -b 512K -e 8M -f 2 -n 50 -w 10 --in-place 0 -G 10"
/tmp/before/b/dmaccl-perf $P -J $OUT/before.json > $OUT/before.txt 2>&1; echo "before rc $?"
build-gpu/dmaccl-perf $P -J $OUT/after.json > $OUT/after.txt 2>&1; echo "after rc $?"
for f in before after; do echo "== $f"; grep -E "^# coll|^  (allgather|allreduce|reducescatter|broadcast|sendrecv|alltoallv) " $OUT/$f.txt; done
