#!/usr/bin/env bash
# Call A (one H200): PreMulSum on a GPU. Builds everything, then
#   - the GPU ctest suite (ranks share GPU 0): test_gpu_colls compares every
#     reduction with the host executor, premultiplied sums included (bf16
#     and int64, the scalar in device memory, changed before each graph
#     replay), test_mp_colls_gpu (fp16 premul across processes),
#     test_nccl_api_gpu (ncclRedOpCreatePreMulSum, device and immediate
#     scalars, every other call);
#   - pytest: the torch nccl test (PREMUL_SUM with a float and a tensor
#     factor; FSDP2 with set_gradient_divide_factor(4)), test_gpu.py,
#     test_nccl_api.py, test_communicator.py.
# Prediction: everything passes. Risks: torch 2.11's _make_nccl_premul_sum
# may want a list of tensors (the test falls back to one); FSDP2 in torch
# 2.11 may not have set_gradient_divide_factor (then that test fails with
# AttributeError and says so).
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/resa; rm -rf $R; mkdir -p $R; trap "tar czf $O/a.tgz -C $R ." EXIT
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
s=$(date +%s); timeout 180 python3 -m pytest -v tests/python/test_torch_nccl.py tests/python/test_gpu.py tests/python/test_nccl_api.py tests/python/test_communicator.py > $R/pytest.log 2>&1
echo "pytest: rc $?, $(( $(date +%s) - s )) s"; grep -E "FAILED|ERROR|passed|failed" $R/pytest.log | tail -8
