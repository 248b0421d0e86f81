#!/usr/bin/env bash
# Call B (the same machine, warm: build-gpu kept): torch 2.11 on the PyTorch
# tests that never ran there (DDP, FSDP2, compiled functional collectives,
# the 2 x 2 mesh, the supports_* flags: CPU tensors on the host executor,
# torch's ProcessGroup form, the Backend form skipped on 2.11).
# Prediction: every ProcessGroup-form test passes; the Backend form skips.
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/resb; rm -rf $R; mkdir -p $R; trap "tar czf $O/b.tgz -C $R ." EXIT
[ -f build-gpu/libdmaccl.so ] || { cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release > $R/build.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" --target dmaccl dmaccl_nccl >> $R/build.log 2>&1; echo "built at $(( $(date +%s) - T0 )) s"; }
python3 -c "import torch; print('torch', torch.__version__)"
if ! python3 -c "import pytest" 2>/dev/null; then
  [ -d build-gpu/pytest-env ] || python3 -m pip install -q --no-index --find-links .whl --target build-gpu/pytest-env pytest > $R/pip.log 2>&1
  export PYTHONPATH="$PWD/build-gpu/pytest-env"
fi
export DMACCL_LIBRARY=$PWD/build-gpu/libdmaccl.so PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
s=$(date +%s); timeout 520 python3 -m pytest -v tests/python/test_torch_backend.py > $R/torch-backend.log 2>&1
echo "test_torch_backend.py: rc $?, $(( $(date +%s) - s )) s"; grep -E "PASSED|FAILED|SKIPPED|ERROR|passed|failed" $R/torch-backend.log | tail -40
