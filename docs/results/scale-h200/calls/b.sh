#!/usr/bin/env bash
# Call B (one H200): the one-rank test fixed (all_reduce(t, t) in place,
# the premultiplied sum in place with a device scalar), and
# bench/probes/pushtwo.cu's schedule with both ranks on the one GPU (a
# check that it completes and every element is right; no time).
# Prediction: test_gpu.py 9 passed; pushtwo "all correct" at 8 and 16 MB,
# K 1-3.
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/resb; rm -rf $R; mkdir -p $R; trap "tar czf $O/b.tgz -C $R ." EXIT
(nvcc -O2 -std=c++17 -arch=sm_90 -o /tmp/pushtwo bench/probes/pushtwo.cu -lcuda > $R/probe-build.log 2>&1) &
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON > $R/build.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" --target dmaccl >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
wait
echo "built at $(( $(date +%s) - T0 )) s"
s=$(date +%s); timeout 120 /tmp/pushtwo 8,16 1,2,3 > $R/pushtwo-1gpu.txt 2>&1; echo "pushtwo: rc $?, $(( $(date +%s) - s )) s"; cat $R/pushtwo-1gpu.txt
if ! python3 -c "import pytest" 2>/dev/null; then
  python3 -m pip install -q --no-index --find-links .whl --target build-gpu/pytest-env pytest > $R/pip.log 2>&1
  export PYTHONPATH="$PWD/build-gpu/pytest-env"
fi
export DMACCL_LIBRARY=$PWD/build-gpu/libdmaccl.so PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
s=$(date +%s); timeout 150 python3 -m pytest -v tests/python/test_gpu.py > $R/pytest.log 2>&1
echo "pytest: rc $?, $(( $(date +%s) - s )) s"; grep -E "FAILED|ERROR|passed|failed" $R/pytest.log | tail -8
