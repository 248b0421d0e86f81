#!/usr/bin/env bash
# usage: pairs.sh NRANKS
set -u
N=$1
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-} NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
R=/tmp/res; mkdir -p $R; trap 'tar czf $OUT/r.tgz -C $R .' EXIT
nvidia-smi -L
t0=$(date +%s)
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON > $R/build.log 2>&1 && cmake --build build-gpu -j $(nproc) >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
P=build-gpu/dmaccl-perf
[ -x $P ] || P=$(find build-gpu -name dmaccl-perf -type f | head -1)
$P -p $N -o alltoallv -A auto,pushb,pushn,pairs -b 1K -e 1M -f 4 --kernels 0 --in-place 0 -n 100 -w 10 -N 3 -J $R/eager.json > $R/eager.txt 2>&1; echo "eager rc $? $(( $(date +%s) - t0 )) s"
$P -p $N -o alltoallv -A auto,pushb,pushn,pairs -b 1K -e 1M -f 4 --kernels 0 --in-place 0 -n 50 -w 10 -G 10 -N 3 -J $R/graph.json > $R/graph.txt 2>&1; echo "graph rc $? $(( $(date +%s) - t0 )) s"
$P -p $N -o alltoallv -A auto,pairs -b 4M -e 256M -f 4 --kernels 0 --in-place 0 -n 20 -w 5 -N 2 -J $R/large.json > $R/large.txt 2>&1; echo "large rc $? $(( $(date +%s) - t0 )) s"
$P -p $N -o alltoallv -A auto,pairs -b 4M -e 64M -f 4 --kernels 0 --in-place 0 -n 20 -w 5 -G 5 -N 2 -J $R/large-graph.json > $R/large-graph.txt 2>&1; echo "large graph rc $? $(( $(date +%s) - t0 )) s"
for f in eager graph large large-graph; do echo "== $f"; grep -E "^ +alltoallv" $R/$f.txt | awk '{print $2, $5, $6}' | head -80 | paste -sd' ' | fold -w 400; done
echo "== tests"
(cd build-gpu && timeout 400 ctest --timeout 300 -R "test_gpu_nokernel|test_mp_colls_gpu|test_p2p_gpu" > $R/ctest.log 2>&1); echo "ctest rc $? $(( $(date +%s) - t0 )) s"
grep -E "tests passed|Failed|\*\*\*" $R/ctest.log
DMACCL_ALGO=alltoallv:pairs timeout 200 build-gpu/tests/test_gpu_colls alltoallv > $R/gpu_colls.log 2>&1; echo "test_gpu_colls alltoallv rc $? $(( $(date +%s) - t0 )) s"
tail -3 $R/gpu_colls.log
