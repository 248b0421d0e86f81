#!/usr/bin/env bash
# Call E (one H200): the hang of calls C and D's rerun (one thread issuing
# for two ranks of one dmacclCommInitRank set) is now refused at the
# group's end (group.c, by the sets' setKey). test_nccl_api gpu tries it
# after the per-thread collectives; the rest of the GPU tests touched by
# group.c again.
# Prediction: test_nccl_api gpu passes with the refusal (ncclInvalidUsage,
# nothing written) in seconds; test_split gpu and test_p2p gpu (groups of
# Send/Recv per rank, one rank per process) pass. (test_gpu_mp left out:
# it needs more than the device time left.)
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/rese; rm -rf $R; mkdir -p $R; trap "tar czf $O/e.tgz -C $R ." EXIT
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON > $R/build.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
export DMACCL_INIT_TIMEOUT=30
for t in "test_nccl_api gpu" "test_split gpu" "test_p2p gpu"; do
  s=$(date +%s); timeout 150 build-gpu/tests/$t > "$R/${t// /-}.log" 2>&1
  echo "$t: rc $?, $(( $(date +%s) - s )) s"; tail -4 "$R/${t// /-}.log"
done
