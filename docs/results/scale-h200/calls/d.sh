#!/usr/bin/env bash
# Call D (one H200): the review's follow-ups on a GPU: Python's group
# failure tracking (test_gpu.py's dropped group on the CUDA executor), the
# registration list (test_gpu_mp: registered, deregistered, refused twice,
# across processes), the NCCL names (test_nccl_api gpu; torch's own nccl
# backend on dmaccl's libnccl.so.2).
# Prediction: all pass.
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/resd; rm -rf $R; mkdir -p $R; trap "tar czf $O/d.tgz -C $R ." EXIT
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON > $R/build.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" --target dmaccl dmaccl_nccl test_gpu_mp test_nccl_api >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
export DMACCL_INIT_TIMEOUT=30
for t in "test_gpu_mp" "test_nccl_api gpu"; do
  s=$(date +%s); timeout 150 build-gpu/tests/$t > "$R/${t// /-}.log" 2>&1
  echo "$t: rc $?, $(( $(date +%s) - s )) s"; tail -2 "$R/${t// /-}.log"
done
if ! python3 -c "import pytest" 2>/dev/null; then
  python3 -m pip install -q --no-index --find-links .whl --target build-gpu/pytest-env pytest > $R/pip.log 2>&1
  export PYTHONPATH="$PWD/build-gpu/pytest-env"
fi
export DMACCL_LIBRARY=$PWD/build-gpu/libdmaccl.so PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
s=$(date +%s); timeout 180 python3 -m pytest -v tests/python/test_gpu.py tests/python/test_torch_nccl.py > $R/pytest.log 2>&1
echo "pytest: rc $?, $(( $(date +%s) - s )) s"; grep -E "FAILED|ERROR|passed|failed" $R/pytest.log | tail -8
