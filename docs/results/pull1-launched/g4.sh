#!/bin/bash
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64:$LD_LIBRARY_PATH NCCL_NVLS_ENABLE=0
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release >/tmp/b.log 2>&1 && cmake --build build-gpu -j16 --target dmaccl-perf >>/tmp/b.log 2>&1 || { tail /tmp/b.log; exit 1; }
for a in "-G 1 -n 2 -A pull1 -b 4M -e 4M" "-G 2 -n 1 -A pull1 -b 4M -e 4M" "-G 1 -n 2 -A twoshot -b 4M -e 4M" "-G 1 -n 2 -A stage -b 1M -e 1M" "-G 1 -n 2 -o reducescatter -A pull1 -b 4M -e 4M"; do
  echo "== $a"; timeout 20 build-gpu/dmaccl-perf -g 2 -o allreduce -w 0 --kernels 0 --baseline none $a 2>&1 | grep -E "^  allreduce|^  reducescatter|rror"; echo "rc ${PIPESTATUS[0]}"
done
