#!/usr/bin/env bash
# Call F (one H200): the second review's fixes on a GPU (105618f): the
# one-thread refusal now comes before the group's inits are made; a thread
# making a recorded init binds to its device first; the progress thread's
# bindThread takes a device.
# Prediction: test_nccl_api gpu, test_split gpu and test_p2p gpu pass as in
# call E.
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/resf; rm -rf $R; mkdir -p $R; trap "tar czf $O/f.tgz -C $R ." EXIT
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON > $R/build.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" --target test_nccl_api test_split test_p2p >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
export DMACCL_INIT_TIMEOUT=30
for t in "test_nccl_api gpu" "test_split gpu" "test_p2p gpu"; do
  s=$(date +%s); timeout 100 build-gpu/tests/$t > "$R/${t// /-}.log" 2>&1
  echo "$t: rc $?, $(( $(date +%s) - s )) s"; tail -4 "$R/${t// /-}.log"
done
