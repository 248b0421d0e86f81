#!/usr/bin/env bash
# Call F (one H200): after the review's fixes (50058a5): test_gpu_reduce
# (the kernel's premultiplied sum against the host's, every type, the
# scalar in parameters and in device memory, line kernels), test_gpu_colls
# (immediate scalars in the direct forms, one rank), test_split gpu (the
# bootstrap's one verdict on the CUDA executor), test_nccl_api gpu, and the
# torch nccl test scaling by 0.3 (dmaccl's order: the float sum times the
# scalar).
# Prediction: all pass. The one doubt: fp16 in the torch test if torch
# rounds its factor differently from torch.tensor(0.3, float16).
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/resf; rm -rf $R; mkdir -p $R; trap "tar czf $O/f.tgz -C $R ." EXIT
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON > $R/build.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" --target dmaccl dmaccl_nccl test_gpu_reduce test_gpu_colls test_split test_nccl_api >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
export DMACCL_INIT_TIMEOUT=30
for t in "test_gpu_reduce" "test_gpu_colls" "test_split gpu" "test_nccl_api gpu"; do
  s=$(date +%s); timeout 150 build-gpu/tests/$t > "$R/${t// /-}.log" 2>&1
  echo "$t: rc $?, $(( $(date +%s) - s )) s"; tail -3 "$R/${t// /-}.log"
done
if ! python3 -c "import pytest" 2>/dev/null; then
  python3 -m pip install -q --no-index --find-links .whl --target build-gpu/pytest-env pytest > $R/pip.log 2>&1
  export PYTHONPATH="$PWD/build-gpu/pytest-env"
fi
export DMACCL_LIBRARY=$PWD/build-gpu/libdmaccl.so PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
s=$(date +%s); timeout 120 python3 -m pytest -v tests/python/test_torch_nccl.py -k backend > $R/pytest.log 2>&1
echo "pytest: rc $?, $(( $(date +%s) - s )) s"; grep -E "FAILED|ERROR|passed|failed|premul" $R/pytest.log | tail -8
