#!/usr/bin/env bash
# Call B (one H200): call A's torch failures were bf16 PREMUL_SUM, a torch
# bug (pytorch/pytorch#190745: torch 2.11 passes a float32 factor for bf16
# data, of which NCCL's ABI reads two bytes; its tensor factor must be
# float32). The test now takes fp32 and fp16. Runs the torch nccl test
# (all modes, training) and the Python GPU suite again.
# Prediction: 40+ passed, none failed (fp16 PREMUL_SUM: torch passes an
# at::Half scalar, which dmaccl reads as fp16).
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/resb; rm -rf $R; mkdir -p $R; trap "tar czf $O/b.tgz -C $R ." EXIT
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON > $R/build.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" --target dmaccl dmaccl_nccl >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
export DMACCL_INIT_TIMEOUT=30
if ! python3 -c "import pytest" 2>/dev/null; then
  python3 -m pip install -q --no-index --find-links .whl --target build-gpu/pytest-env pytest > $R/pip.log 2>&1
  export PYTHONPATH="$PWD/build-gpu/pytest-env"
fi
export DMACCL_LIBRARY=$PWD/build-gpu/libdmaccl.so PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
s=$(date +%s); timeout 240 python3 -m pytest -v tests/python/test_torch_nccl.py tests/python/test_gpu.py tests/python/test_nccl_api.py tests/python/test_communicator.py > $R/pytest.log 2>&1
echo "pytest: rc $?, $(( $(date +%s) - s )) s"; grep -E "FAILED|ERROR|passed|failed" $R/pytest.log | tail -8
