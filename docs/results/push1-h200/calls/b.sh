#!/usr/bin/env bash
# Call B (one H200): push1's kernel alone (test_gpu_reduce's pieceMaskCase:
# pieces gated by two ranks' words, its own word written per piece, eager
# and graph replays), then the whole test_gpu_reduce and test_gpu_colls
# again after the review's changes (stripped schedules, imports).
# Prediction: all pass.
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/resb; rm -rf $R; mkdir -p $R; trap "tar czf $O/b.tgz -C $R ." EXIT
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON > $R/build.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" --target test_gpu_reduce test_gpu_colls > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
for t in test_gpu_reduce test_gpu_colls; do
  s=$(date +%s); timeout 150 build-gpu/tests/$t > $R/$t.log 2>&1; rc=$?
  echo "$t: rc $rc, $(( $(date +%s) - s )) s; $(tail -1 $R/$t.log)"
  grep -E "FAIL|push1's kernel" $R/$t.log | head -5
done
