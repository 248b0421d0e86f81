#!/usr/bin/env bash
# Call P (nvidia-h200-x2), after call Q: lane C's JOIN of lane 0 costs AllReduce
# push1 8 us in graphs (Q: 106.3-108.0 / 144.0-145.1 us at 16 / 32 MB with it,
# 98.4-99.3 / 136.8-137.8 without), and a kernel that resets its polled words
# before its last piece's signals (X_RESET=2) or before each piece's (3, call
# S's) costs 15-26 us, about one piece's push. x2.patch = x.patch plus:
#   X_ENDWAIT=1 X_RESET=4  no JOIN: the kernel's end (its last block, after
#               the reset) writes the rank's own PIECE+K word, and lane C WAITs
#               for it before its EXIT (graphs only; eager would hang)
#   X_NOJOIN=1 X_RESET=5   X_RESET=2's early reset, and the end block kept
#               (did 2 and 3 lose by the early reset or by skipping the end?)
# Predictions: v4 within 1 us of v1 (the EXIT waits for a word the kernel sets
# long before lane C's last push ends; no graph edge); v5: not predicted.
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/resp; rm -rf $R; mkdir -p $R; trap "tar czf $O/p.tgz -C $R ." EXIT
X=/tmp/exp; rm -rf $X; mkdir -p $X
tar cf - --exclude=./build --exclude='./build-*' --exclude=./.whl --exclude=./docs/results . | tar xf - -C $X
cp docs/results/push1-empty-2xh200/calls/x2.patch $X/ && (cd $X && patch -p1 < x2.patch) > $R/patch.log 2>&1 || { cat $R/patch.log; exit 1; }
cmake -S $X -B $X/b -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON -DCMAKE_CUDA_ARCHITECTURES=90 > $R/build.log 2>&1 &&
  cmake --build $X/b -j "$(nproc)" --target dmaccl-perf >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
P=$X/b/dmaccl-perf
G="-p 2 -o allreduce -b 16M -e 32M -f 2 --kernels 0 --in-place 0 -G 5 -n 10 -w 3"
v() { local name=$1; shift; s=$(date +%s); env "$@" timeout 60 $P $G $V -J $R/$name.json > $R/$name.txt 2>&1; echo "$name ($*): rc $?, $(( $(date +%s) - s )) s, $(grep -c WRONG $R/$name.txt) wrong: $(grep -E '^ +allreduce +[0-9]+ ' $R/$name.txt | awk '{print $2/1048576, $5, $6}' | tr '\n' ';')"; }
for rep in 1 2 3; do
  V="-A auto,push1 -b 16M -e 64M"; v v0-$rep X_=0
  V="-A push1 --baseline none"
  v v1-$rep X_NOJOIN=1
  v v4-$rep X_ENDWAIT=1 X_RESET=4
  v v5-$rep X_NOJOIN=1 X_RESET=5
done
echo "done at $(( $(date +%s) - T0 )) s"
