#!/usr/bin/env bash
# Call A (one H200; torch 2.11 and NCCL 2.28.9 there): the NCCL-compatible
# library (nccl/libnccl.so.2) and dmacclCommSplit on a GPU, ranks sharing
# GPU 0 as processes; the ABI check against NCCL 2.28.9's own nccl.h (the
# machine's NCCL, not 2.30's); and test_gpu.py, which last ran before the
# PyTorch supports_* change.
# Prediction: the build passes with the ABI check compiled against 2.28.9's
# nccl.h; test_nccl_api and test_split pass on the host executor and with
# "gpu" for 1-5 ranks on GPU 0 (a CUDA graph of ncclAllReduce + ncclAllGather
# per process included); test_nccl_api.py passes its GPU test (torch
# tensors, torch's stream, a graph, a split) and its host tests; test_gpu.py
# passes as in call D of torch-funcol-h200.
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/res; rm -rf $R; mkdir -p $R; trap "tar czf $O/a.tgz -C $R ." EXIT
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON > $R/build.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"; grep -E "NCCL baseline|nccl_abi_check" $R/build.log | head -3
grep -h "define NCCL_\(MAJOR\|MINOR\|PATCH\)" $(grep NCCL_INCLUDE_DIR build-gpu/CMakeCache.txt | cut -d= -f2)/nccl.h
python3 -c "import torch; print('torch', torch.__version__)"
if ! python3 -c "import pytest" 2>/dev/null; then
  python3 -m pip install -q --no-index --find-links .whl --target build-gpu/pytest-env pytest > $R/pip.log 2>&1
  export PYTHONPATH="$PWD/build-gpu/pytest-env"
fi
s=$(date +%s); (cd build-gpu && timeout 200 ctest --timeout 150 -R "^(test_nccl_api|test_nccl_api_gpu|test_split|test_split_gpu)$" --output-on-failure) > $R/ctest.log 2>&1
echo "ctest: rc $?, $(( $(date +%s) - s )) s"; grep -E "tests passed|Test +#|Failed|FAIL" $R/ctest.log | tail -8
export DMACCL_LIBRARY=$PWD/build-gpu/libdmaccl.so PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
s=$(date +%s); timeout 150 python3 -m pytest -v tests/python/test_nccl_api.py tests/python/test_communicator.py -k "nccl or split" > $R/py-nccl.log 2>&1
echo "test_nccl_api.py, split: rc $?, $(( $(date +%s) - s )) s"; grep -E "PASSED|FAILED|SKIPPED|ERROR|passed|failed" $R/py-nccl.log | tail -12
s=$(date +%s); timeout 200 python3 -m pytest -v tests/python/test_gpu.py > $R/py-gpu.log 2>&1
echo "test_gpu.py: rc $?, $(( $(date +%s) - s )) s"; grep -E "PASSED|FAILED|SKIPPED|ERROR|passed|failed" $R/py-gpu.log | tail -14
