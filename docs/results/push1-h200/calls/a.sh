#!/usr/bin/env bash
# Call A (one H200, ranks sharing it): the scratch buffer moved into the
# staging area (da8034a) and AllReduce's push1 (550c0a7), on the CUDA
# executor. Every reduction's scratch now lies in the area, so the GPU
# suite's reductions check the move: test_gpu_colls (every collective
# against the host executor, eager and in a graph; AllReduce also with
# push1 forced, which on one GPU runs as pull1), test_gpu (graphs, 2-GPU
# cases skip), test_gpu_reduce, test_gpu_mp (processes sharing the GPU),
# test_gpu_args, test_gpu_nokernel (CUPTI), and tests/python/test_gpu.py.
# Prediction: all pass; push1's pushes themselves need 2 GPUs (not run
# here).
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/resa; rm -rf $R; mkdir -p $R; trap "tar czf $O/a.tgz -C $R ." EXIT
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON > $R/build.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
for t in test_gpu_colls test_gpu test_gpu_reduce test_gpu_mp test_gpu_args test_gpu_nokernel; do
  s=$(date +%s); timeout 150 build-gpu/tests/$t > $R/$t.log 2>&1; rc=$?
  echo "$t: rc $rc, $(( $(date +%s) - s )) s; $(tail -1 $R/$t.log)"
  [ $rc -ne 0 ] && grep -E "FAIL" $R/$t.log | head -5
  [ $(( $(date +%s) - T0 )) -gt 430 ] && { echo "stopping: time"; break; }
done
if ! python3 -c "import pytest" 2>/dev/null; then
  python3 -m pip install -q --no-index --find-links .whl --target build-gpu/pytest-env pytest > $R/pip.log 2>&1
  export PYTHONPATH="$PWD/build-gpu/pytest-env"
fi
export DMACCL_LIBRARY=$PWD/build-gpu/libdmaccl.so PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
s=$(date +%s); timeout 100 python3 -m pytest -q tests/python/test_gpu.py > $R/pytest.log 2>&1
echo "pytest: rc $?, $(( $(date +%s) - s )) s"; tail -2 $R/pytest.log
