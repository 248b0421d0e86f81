#!/usr/bin/env bash
# Call F (one H200): the session's final code on a GPU: test_p2p gpu,
# test_args_colls (host, built here), test_nccl_api gpu, the torch nccl
# test, and the Python GPU suite (test_gpu.py, test_nccl_api.py,
# test_communicator.py).
# Prediction: everything passes (the review's fixes touch the group's
# end: self ops left out of the AlltoAllv pairs verdict, a host drain).
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/resf; rm -rf $R; mkdir -p $R; trap "tar czf $O/f.tgz -C $R ." EXIT
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON > $R/build.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" --target dmaccl dmaccl_nccl test_nccl_api test_p2p test_args_colls >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
export DMACCL_INIT_TIMEOUT=30
for t in "test_p2p gpu" "test_nccl_api gpu" "test_args_colls"; do
  s=$(date +%s); timeout 120 build-gpu/tests/$t > "$R/${t// /-}.log" 2>&1
  echo "$t: rc $?, $(( $(date +%s) - s )) s"; tail -2 "$R/${t// /-}.log"
done
if ! python3 -c "import pytest" 2>/dev/null; then
  python3 -m pip install -q --no-index --find-links .whl --target build-gpu/pytest-env pytest > $R/pip.log 2>&1
  export PYTHONPATH="$PWD/build-gpu/pytest-env"
fi
export DMACCL_LIBRARY=$PWD/build-gpu/libdmaccl.so PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
s=$(date +%s); timeout 200 python3 -m pytest -v tests/python/test_torch_nccl.py tests/python/test_gpu.py tests/python/test_nccl_api.py tests/python/test_communicator.py > $R/pytest.log 2>&1
echo "pytest: rc $?, $(( $(date +%s) - s )) s"; grep -E "FAILED|ERROR|passed|failed" $R/pytest.log | tail -8
