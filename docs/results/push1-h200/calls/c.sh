#!/usr/bin/env bash
# Call C (one H200): test_gpu_reduce's pieceMaskCase as a second review
# asked: the kernel's own word in the polled row (as launchPieced lays it
# out), unpolled words below the value (a kernel polling them would hang),
# pieces released one at a time with the later pieces' bytes and signals
# checked untouched. Prediction: all pass.
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/resc; rm -rf $R; mkdir -p $R; trap "tar czf $O/c.tgz -C $R ." EXIT
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON > $R/build.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" --target test_gpu_reduce >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
s=$(date +%s); timeout 120 build-gpu/tests/test_gpu_reduce > $R/test_gpu_reduce.log 2>&1; rc=$?
echo "test_gpu_reduce: rc $rc, $(( $(date +%s) - s )) s"; grep -E "FAIL|push1's kernel|passed" $R/test_gpu_reduce.log | head
