#!/usr/bin/env bash
export GPU_CHECK_TESTS=0
export GPU_CHECK_RUNS="-p 2 -o alltoallv -A auto,pushb -b 1K -e 1M -f 4 --kernels 0 --in-place 0 -n 100 -w 10 -N 3; -p 2 -o alltoallv -A auto,pushb -b 1K -e 1M -f 4 --kernels 0 --in-place 0 -n 50 -w 10 -G 10 -N 3; -p 2 -o alltoallv -A auto,pushb -b 4M -e 256M -f 4 --kernels 0 --in-place 0 -n 20 -w 5 -N 2; -p 2 -o alltoallv -A auto,pushb -b 4M -e 64M -f 4 --kernels 0 --in-place 0 -n 20 -w 5 -G 5 -N 2; -g 2 -o alltoallv -A auto,pushb -b 1K -e 1M -f 4 --kernels 1 --in-place 0 -n 50 -w 10 -G 10 -N 2; -g 2 -o alltoallv -A auto,pushb -b 1K -e 1M -f 4 --kernels 0 --in-place 0 -n 100 -w 10 -N 2; CUDA_DEVICE_MAX_CONNECTIONS=1 -p 2 -o alltoallv,sendrecv -A auto -b 1K -e 16M -f 4 -n 20 -w 5 -G 5 --in-place 0"
bash scripts/gpu-check > $OUT/console.txt 2>&1; rc=$?
grep -E "^== |alltoallv .* auto|wrong|FAIL|error" $OUT/console.txt | head -5
echo rc $rc
