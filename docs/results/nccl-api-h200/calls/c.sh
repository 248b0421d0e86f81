#!/usr/bin/env bash
# Call C (one H200): dmacclCommInitRank inside a group (NCCL's idiom for
# several ranks in one thread), added after calls A and B, on the CUDA
# executor: one process makes ranks 0 and 1 of three on GPU 0 in one group,
# another rank 2; one thread's group then issues for both of its ranks;
# and the whole of test_nccl_api gpu and test_split gpu again, with the
# group change (src/core/group.c) under test_gpu and test_p2p_gpu.
# Prediction: all pass; the group's two ranks in one process are made at
# once (a thread each) and the issuing thread's group does not wait on
# itself (the host executor passed locally).
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/resc; rm -rf $R; mkdir -p $R; trap "tar czf $O/c.tgz -C $R ." EXIT
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON > $R/build.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
s=$(date +%s); (cd build-gpu && timeout 400 ctest --timeout 300 -R "^(test_nccl_api|test_nccl_api_gpu|test_split_gpu|test_gpu|test_p2p_gpu)$" --output-on-failure) > $R/ctest.log 2>&1
echo "ctest: rc $?, $(( $(date +%s) - s )) s"; grep -E "tests passed|Test +#|Failed|FAIL|ok$" $R/ctest.log | tail -24
