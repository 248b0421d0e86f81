#!/usr/bin/env bash
# call D (2x H200, 49a5407): dmaccl-c3 on all 24 standard scenarios with every
# NCCL setting (issue 21's bars at this table), the fused ones, and the
# Python tests that call B's pytest did not reach before its timeout.
source "$(dirname "$0")/env.sh"
O=$OUT; R=/tmp/res; rm -rf $R; mkdir -p $R; trap "cp $0 $R/run.sh; tar czf $O/d.tgz -C $R ." EXIT
OUT=$R
build
s=$(date +%s)
timeout 240 build-gpu/dmaccl-c3 -p 2 -r 3 -A nccl,nccl-prio,nccl-cta8,nccl-ce,auto -J $R/c3.json > $R/c3.txt 2>&1
echo "c3: rc $?, $(( $(date +%s) - s )) s"; tail -8 $R/c3.txt
s=$(date +%s)
timeout 90 build-gpu/dmaccl-c3 -p 2 -r 3 -f tools/c3/fused.txt -A nccl,auto -J $R/c3-fused.json > $R/c3-fused.txt 2>&1
echo "c3 fused: rc $?, $(( $(date +%s) - s )) s"; tail -4 $R/c3-fused.txt
s=$(date +%s)
DMACCL_LIBRARY=$PWD/build-gpu/libdmaccl.so PYTHONPATH=$PWD/python timeout 150 python3 -m pytest -q tests/python/test_torch_backend.py > $R/pytest-torch.log 2>&1
echo "pytest torch: rc $?, $(( $(date +%s) - s )) s"; tail -2 $R/pytest-torch.log
echo "done at $(( $(date +%s) - T0 )) s"
