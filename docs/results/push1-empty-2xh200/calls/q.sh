#!/usr/bin/env bash
# Call Q (nvidia-h200-x2): why AllReduce push1 lost 6-8 us in graphs between
# call T (99.1 / 138.5 us at 16 / 32 MB) and the final form (x4-h200/at-f250a0b
# call A, GPUs 0-1: 106.7 / 144.6; pull1 and NCCL unchanged, eager unchanged).
# The only change on that path is lane C's JOIN of lane 0 (the kernel's end)
# before its EXIT. One build of f250a0b + x.patch (knobs for this call only):
#   X_NOJOIN=1  no JOIN (race 3 open again: measurement only)
#   X_RESET=2   the kernel resets its polled words before the last piece's
#               signals instead of at its end (so lane C's last WAIT implies
#               the reset, and the JOIN is not needed)
#   X_RESET=3   call S's kernel: piece k's words before piece k's signals
# Hypothesis: in a graph the JOIN's edge (kernel -> lane C's EXIT) changes
# how the graph maps lane C onto hardware queues, so its pushes no longer
# overlap the kernel. Predictions: v1 (no JOIN) and v2 (last-piece reset, no
# JOIN) about 99 / 138.5 us, v0 (the final form) about 107 / 145; v3 repeats
# call S (115 / 163) if S's loss was the kernel change, else about 99 / 138.
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/resq; rm -rf $R; mkdir -p $R; trap "tar czf $O/q.tgz -C $R ." EXIT
X=/tmp/exp; rm -rf $X; mkdir -p $X
tar cf - --exclude=./build --exclude='./build-*' --exclude=./.whl --exclude=./docs/results . | tar xf - -C $X
cp docs/results/push1-empty-2xh200/calls/x.patch $X/ && (cd $X && patch -p1 < x.patch) > $R/patch.log 2>&1 || { cat $R/patch.log; exit 1; }
cmake -S $X -B $X/b -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON -DCMAKE_CUDA_ARCHITECTURES=90 > $R/build.log 2>&1 &&
  cmake --build $X/b -j "$(nproc)" --target dmaccl-perf test_gpu_colls >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
P=$X/b/dmaccl-perf
G="-p 2 -o allreduce -b 16M -e 32M -f 2 --kernels 0 --in-place 0 -G 5 -n 10 -w 3"
v() { local name=$1; shift; s=$(date +%s); env "$@" timeout 60 $P $G $V -J $R/$name.json > $R/$name.txt 2>&1; echo "$name ($*): rc $?, $(( $(date +%s) - s )) s, $(grep -c WRONG $R/$name.txt) wrong: $(grep -E '^ +allreduce +[0-9]+ ' $R/$name.txt | awk '{print $2/1048576, $5, $6}' | tr '\n' ';')"; }
for rep in 1 2 3; do
  V="-A auto,push1,pull1"; v v0-$rep X_=0
  V="-A push1 --baseline none"
  v v1-$rep X_NOJOIN=1
  v v2-$rep X_NOJOIN=1 X_RESET=2
  v v3-$rep X_NOJOIN=1 X_RESET=3
done
export DMACCL_TIMEOUT=30
for e in "X_NOJOIN=1 X_RESET=2" "X_NOJOIN=1 X_RESET=3"; do
  s=$(date +%s); env $e timeout 90 stdbuf -oL $X/b/tests/test_gpu_colls allreduce > $R/colls-${e// /_}.log 2>&1
  echo "test_gpu_colls allreduce ($e): rc $?, $(( $(date +%s) - s )) s; $(grep -E "cases" $R/colls-${e// /_}.log | tail -1)"
done
echo "done at $(( $(date +%s) - T0 )) s"
