export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:$LD_LIBRARY_PATH NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
T0=$(date +%s)
# build SRC DIR: dmaccl-perf (and the library) of the tree SRC into DIR
build() {
  cmake -S $1 -B $2 -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON >$OUT/build-$(basename $2).log 2>&1 &&
    cmake --build $2 -j "$(nproc)" --target dmaccl-perf >>$OUT/build-$(basename $2).log 2>&1 ||
    { tail -30 $OUT/build-$(basename $2).log; exit 1; }
  echo "built $2 at $(( $(date +%s) - T0 )) s"
}
# run NAME TIMEOUT PERF ARGS...: one dmaccl-perf run, text and JSON into $OUT
run() { local name=$1 t=$2 p=$3; shift 3; s=$(date +%s); timeout $t $p "$@" -J $OUT/$name.json > $OUT/$name.txt 2>&1; echo "$name: rc $?, $(( $(date +%s) - s )) s"; }
