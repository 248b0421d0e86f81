#!/usr/bin/env bash
# Call V (nvidia-h200-x2): the GPU suite at the table's push1 for AllReduce
# 16-64 MB and planRunEnd (scripts/gpu-check: ctest -L gpu, the
# one-hardware-queue reruns, pytest, CUPTI kernel counts), then one
# experiment on call W's open question.
# Prediction (suite): every GPU test and pytest passes.
# Experiment: eager calls issue push1's copies through the batch API with
# cudaMemcpyFlagPreferOverlapWithCompute; a CUDA graph cannot capture that
# API, so captured copies are plain cudaMemcpyAsync, which the driver may
# run as SM copy kernels. If that is where ReduceScatter push1's graph
# loss comes from, eager with DMACCL_BATCH_OVERLAP=0 (the batch API without
# the flag) loses the same 10-30 us at 1-16 MB; pull1 (reads, not writes)
# lost nothing in graphs and should not change either way. Prediction: the
# hypothesis holds for push1 (eager 1 MB 23.6 -> 33-38 us), pull1 unchanged.
export GPU_CHECK_CTEST="-L gpu -j2" GPU_CHECK_TEST_TIMEOUT=240
X="-p 2 -o reducescatter -A pull1,push1 -b 1M -e 16M -f 4 -n 20 -w 5 --kernels 0 --in-place 0"
export GPU_CHECK_RUNS="$X; DMACCL_BATCH_OVERLAP=0 $X; $X -G 5"
exec scripts/gpu-check
