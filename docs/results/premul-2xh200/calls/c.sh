#!/usr/bin/env bash
# Call C (nvidia-h200-x2, lent this session after three sessions without
# it): the GPU suite at HEAD on 2 GPUs, one rank per GPU (PreMulSum
# against the host executor on two GPUs, across processes, through the
# NCCL API), then torch's own nccl backend on dmaccl with a rank per GPU
# (last session ran it only with both ranks on one GPU) and test_gpu.py.
# Prediction: every GPU test passes; the torch tests pass (4) with rank r
# on GPU r, and test_gpu.py's.
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/resc; rm -rf $R; mkdir -p $R; trap "tar czf $O/c.tgz -C $R ." EXIT
nvidia-smi -L > $R/gpus.txt; nvidia-smi topo -m >> $R/gpus.txt 2>&1
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON > $R/build.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"; git log --oneline | head -1
export DMACCL_INIT_TIMEOUT=30
s=$(date +%s); (cd build-gpu && timeout 280 ctest -j2 -L gpu --output-on-failure > $R/ctest-gpu.log 2>&1)
echo "ctest gpu: rc $?, $(( $(date +%s) - s )) s"; grep -E "tests passed|Failed|\*\*\*" $R/ctest-gpu.log | tail -12
if ! python3 -c "import pytest" 2>/dev/null; then
  python3 -m pip install -q --no-index --find-links .whl --target build-gpu/pytest-env pytest > $R/pip.log 2>&1
  export PYTHONPATH="$PWD/build-gpu/pytest-env"
fi
export DMACCL_LIBRARY=$PWD/build-gpu/libdmaccl.so PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
s=$(date +%s); timeout 150 python3 -m pytest -v tests/python/test_torch_nccl.py tests/python/test_gpu.py > $R/pytest.log 2>&1
echo "pytest: rc $?, $(( $(date +%s) - s )) s"; grep -E "FAILED|ERROR|passed|failed" $R/pytest.log | tail -8
