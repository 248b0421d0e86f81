export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:$LD_LIBRARY_PATH NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
T0=$(date +%s)
build() {
  cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON >$OUT/build.log 2>&1 && cmake --build build-gpu -j "$(nproc)" >>$OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
  echo "built at $(( $(date +%s) - T0 )) s"
}
P=build-gpu/dmaccl-perf
perf() { local name=$1 t=$2; shift 2; s=$(date +%s); timeout $t $P "$@" -J $OUT/$name.json > $OUT/$name.txt 2>&1; echo "$name: rc $?, $(( $(date +%s) - s )) s"; }
