#!/usr/bin/env bash
# Call B (one H200): call A's torch test again, each step's failure listed
# before the process group is destroyed (in call A the destroy's error,
# "this thread's open group holds calls", hid them), both init modes; the
# device API calls now answered by dmaccl (test_nccl_api gpu).
# Prediction: one step fails inside a torch group (ncclGroupStart, a call
# refused, the exception leaving the group open), and the steps after it
# then fail on the open group; test_nccl_api gpu passes.
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/resb; rm -rf $R; mkdir -p $R; trap "tar czf $O/b.tgz -C $R ." EXIT
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release > $R/build.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" --target dmaccl dmaccl_nccl test_nccl_api >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
if ! python3 -c "import pytest" 2>/dev/null; then
  python3 -m pip install -q --no-index --find-links .whl --target build-gpu/pytest-env pytest > $R/pip.log 2>&1
  export PYTHONPATH="$PWD/build-gpu/pytest-env"
fi
export DMACCL_LIBRARY=$PWD/build-gpu/libdmaccl.so PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
s=$(date +%s); timeout 300 python3 -m pytest -v tests/python/test_torch_nccl.py > $R/torch-nccl.log 2>&1
echo "test_torch_nccl.py: rc $?, $(( $(date +%s) - s )) s"; grep -E "PASSED|FAILED|^rank [0-9]: " $R/torch-nccl.log | cut -c1-400 | head -40
s=$(date +%s); DMACCL_INIT_TIMEOUT=30 timeout 100 build-gpu/tests/test_nccl_api gpu > $R/nccl-api-gpu.log 2>&1
echo "test_nccl_api gpu: rc $?, $(( $(date +%s) - s )) s"; tail -3 $R/nccl-api-gpu.log
