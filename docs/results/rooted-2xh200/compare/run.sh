#!/usr/bin/env bash
# x2: the committed rows (7e8af86, before) against the tree (after): rooted collectives and pairs at 1-16 MB; GPU tests
set -u
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-} NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
mkdir -p /tmp/before && git archive ${BEFORE:-HEAD} | tar -x -C /tmp/before
(cmake -S /tmp/before -B /tmp/before/b -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build /tmp/before/b -j 16 --target dmaccl-perf >/dev/null) &
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON >/dev/null && cmake --build build-gpu -j 16 > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
wait
(cd build-gpu && timeout 130 ctest -R "test_gpu_colls|test_p2p_gpu" --output-on-failure -j 1 --timeout 120) > $OUT/ctest.txt 2>&1; echo "ctest rc $?"; grep -E "tests passed|Failed|\*\*\*|Passed" $OUT/ctest.txt | tail -4
C="-p 2 -o broadcast,gather,sendrecv,alltoallv -A auto -b 1M -e 16M -f 2 --kernels 0 --in-place 0"
for v in before after; do
  B=$([ $v = before ] && echo /tmp/before/b/dmaccl-perf || echo build-gpu/dmaccl-perf)
  $B $C -n 50 -w 10 -G 10 -J $OUT/$v-graph.json > $OUT/$v-graph.txt 2>&1; echo "$v graph $?"
  $B $C -n 100 -w 20 -J $OUT/$v-eager.json > $OUT/$v-eager.txt 2>&1; echo "$v eager $?"
done
cd $OUT && tar czf runs.tgz before-* after-* && rm -f before-* after-*
