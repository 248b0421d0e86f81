#!/usr/bin/env bash
# Call D (one H200, torch 2.11 there): PyTorch's functional collectives and
# DTensor on the "dmaccl" group. On 2.11-2.13 the group is dmaccl's Python
# ProcessGroup, which torch could not name ("ProcessGroup name not set"
# under every functional collective, seen on torch 2.15 locally); it now
# keeps its name. Also the group change (src/core/group.c) under the GPU
# tests that use groups.
# Prediction: test_torch_backend.py passes on 2.11 with the new test in the
# ProcessGroup form (the Backend form skips); test_torch_backend_cuda,
# now with functional collectives and DTensor on a CUDA mesh, passes with
# both ranks on GPU 0; test_host, test_gpu and test_gpu_mp pass.
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/res; rm -rf $R; mkdir -p $R; trap "tar czf $O/d.tgz -C $R ." EXIT
OUT=$R
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON > $R/build.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
python3 -c "import torch; print('torch', torch.__version__)"
if ! python3 -c "import pytest" 2>/dev/null; then
  python3 -m pip install -q --no-index --find-links .whl --target build-gpu/pytest-env pytest > $R/pip.log 2>&1
  export PYTHONPATH="$PWD/build-gpu/pytest-env"
fi
export DMACCL_LIBRARY=$PWD/build-gpu/libdmaccl.so PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
s=$(date +%s); timeout 240 python3 -m pytest -v tests/python/test_torch_backend.py > $R/torch-backend.log 2>&1
echo "test_torch_backend.py: rc $?, $(( $(date +%s) - s )) s"; grep -E "PASSED|FAILED|SKIPPED|ERROR|passed|failed" $R/torch-backend.log | tail -20
s=$(date +%s); timeout 180 python3 -m pytest -v tests/python/test_gpu.py -k torch_backend_cuda > $R/gpu-torch.log 2>&1
echo "test_gpu.py -k torch_backend_cuda: rc $?, $(( $(date +%s) - s )) s"; grep -E "PASSED|FAILED|SKIPPED|ERROR|passed|failed" $R/gpu-torch.log | tail -5
s=$(date +%s); (cd build-gpu && timeout 200 ctest --timeout 150 -R "^(test_host|test_gpu|test_gpu_mp)$") > $R/ctest.log 2>&1
echo "ctest: rc $?, $(( $(date +%s) - s )) s"; grep -E "tests passed|Test +#|Failed|FAIL" $R/ctest.log | tail -8
