#!/usr/bin/env bash
# Call E (one H200): the torch backend's contiguous copies and complex views
# (torch_backend.py) on CUDA tensors: tests/python/test_gpu.py (the
# "cuda:dmaccl" backend's collectives, graphs, the Communicator).
# Prediction: all pass.
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/rese2; rm -rf $R; mkdir -p $R; trap "tar czf $O/e.tgz -C $R ." EXIT
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON > $R/build.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" --target dmaccl >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
if ! python3 -c "import pytest" 2>/dev/null; then
  python3 -m pip install -q --no-index --find-links .whl --target build-gpu/pytest-env pytest > $R/pip.log 2>&1
  export PYTHONPATH="$PWD/build-gpu/pytest-env"
fi
export DMACCL_LIBRARY=$PWD/build-gpu/libdmaccl.so PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
s=$(date +%s); timeout 110 python3 -m pytest -v tests/python/test_gpu.py > $R/pytest.log 2>&1
echo "pytest: rc $?, $(( $(date +%s) - s )) s"; grep -E "FAILED|ERROR|passed|failed" $R/pytest.log | tail -8
