#!/usr/bin/env bash
# Call C (one H200): the audits' fixes on the CUDA executor and under torch:
# a call refused inside a group fails the group (C, NCCL names, Python's
# dmaccl.group drop), dmacclCommDeregister's handle bookkeeping
# (test_gpu_mp), the Python package's new refusals, the NCCL shim's
# async-error sentence and nested simulated end. The whole GPU ctest suite
# (ranks sharing the GPU) and the Python suites that touch a GPU.
# Prediction: all pass.
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/resc; rm -rf $R; mkdir -p $R; trap "tar czf $O/c.tgz -C $R ." EXIT
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON > $R/build.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
export DMACCL_INIT_TIMEOUT=30
s=$(date +%s); (cd build-gpu && timeout 300 ctest -j2 -L gpu --output-on-failure > $R/ctest-gpu.log 2>&1)
echo "ctest gpu: rc $?, $(( $(date +%s) - s )) s"; grep -E "tests passed|Failed|\*\*\*" $R/ctest-gpu.log | tail -12
if ! python3 -c "import pytest" 2>/dev/null; then
  python3 -m pip install -q --no-index --find-links .whl --target build-gpu/pytest-env pytest > $R/pip.log 2>&1
  export PYTHONPATH="$PWD/build-gpu/pytest-env"
fi
export DMACCL_LIBRARY=$PWD/build-gpu/libdmaccl.so PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
s=$(date +%s); timeout 200 python3 -m pytest -v tests/python/test_gpu.py tests/python/test_torch_nccl.py tests/python/test_nccl_api.py tests/python/test_communicator.py > $R/pytest.log 2>&1
echo "pytest: rc $?, $(( $(date +%s) - s )) s"; grep -E "FAILED|ERROR|passed|failed" $R/pytest.log | tail -8
