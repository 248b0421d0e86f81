#!/usr/bin/env bash
# Call D (one H200): the torch test widened: the list forms (all_to_all,
# gather, scatter, reduce_scatter), a coalesced all_gather, torch's
# non-blocking communicators, DDP and FSDP2 training and split_group, all on
# torch's own nccl backend with dmaccl's libnccl.so.2 preloaded.
# Prediction: the collectives pass in all three modes; the training test
# passes (DDP and FSDP2 use only calls the first test covered); the most
# likely failure is the non-blocking mode (torch polls for ncclInProgress)
# or split_group.
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/resd; rm -rf $R; mkdir -p $R; trap "tar czf $O/d.tgz -C $R ." EXIT
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release > $R/build.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" --target dmaccl dmaccl_nccl >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
if ! python3 -c "import pytest" 2>/dev/null; then
  python3 -m pip install -q --no-index --find-links .whl --target build-gpu/pytest-env pytest > $R/pip.log 2>&1
  export PYTHONPATH="$PWD/build-gpu/pytest-env"
fi
export DMACCL_LIBRARY=$PWD/build-gpu/libdmaccl.so PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
s=$(date +%s); timeout 400 python3 -m pytest -v tests/python/test_torch_nccl.py > $R/torch-nccl.log 2>&1
echo "test_torch_nccl.py: rc $?, $(( $(date +%s) - s )) s"; grep -E "PASSED|FAILED|^rank [0-9]: |^E  .*Error" $R/torch-nccl.log | cut -c1-400 | head -30
