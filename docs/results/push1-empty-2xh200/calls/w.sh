#!/usr/bin/env bash
# Call W (nvidia-h200-x2): two questions, by experiment (no timeline tool
# on these machines).
# Q1. ReduceScatter and Reduce push1 (no lane C, no EXIT) lose about 30 us
#   in CUDA graphs against eager (RS 8/16/32 MB 72.7/88.8/125.4 against
#   39.6/58.8/95.0; Reduce 16 MB 123.7 against 93.5), where AllReduce push1
#   loses 0-7 us. Hypothesis A: in the graph the kernel no longer overlaps
#   the copies (it starts after lane A's pushes): the loss then grows with
#   the size (one piece's reduction, about 10-30 us from 1 to 16 MB).
#   Hypothesis B: a fixed latency (a node that waits on something): the
#   same loss at 1 MB and 16 MB. Varied: sizes 1-16 MB, one operation per
#   graph (-G 1) against five, one process (-g 2), 1 CTA, signals by copy.
#   Prediction: B is likelier (the loss was 33 us at 8 MB and 30 at 16 and
#   32 MB: constant); -G 1 and -g 2 show the same loss; 1 CTA and signals
#   by copy do not remove it.
# Q2. AllReduce push1 at 16 MB (98.9 us, NCCL 77.1): is the 8-CTA kernel
#   the bound? DMACCL_REDUCE_CTAS 4, 8, 16, 32 in graphs. Prediction: 16
#   and 32 CTAs 3-8 us faster than 8 (the kernel reduces 8 MB, reading 16 MB
#   and writing 8; 8 CTAs reach about 1 TB/s); 4 CTAs 5-15 us slower.
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/resw; rm -rf $R; mkdir -p $R; trap "tar czf $O/w.tgz -C $R ." EXIT
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON > $R/build.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" --target dmaccl dmaccl-perf >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
fits() { [ $(( $(date +%s) - T0 + $1 )) -le 570 ]; }
P=build-gpu/dmaccl-perf
perf() { local name=$1 t=$2; shift 2; fits $t || { echo "$name: skipped (no time left)"; return; }; s=$(date +%s); timeout $t stdbuf -oL $P "$@" -J $R/$name.json > $R/$name.txt 2>&1; echo "$name: rc $?, $(( $(date +%s) - s )) s; $(grep -hcE "WRONG" $R/$name.txt) wrong"; }
C="-o reducescatter -b 1M -e 16M -f 4 -n 10 -w 3 --kernels 0 --in-place 0"
perf q1-eager 40 -p 2 $C -A pull1,push1
perf q1-g5 40 -p 2 $C -A pull1,push1 -G 5
perf q1-g1 40 -p 2 $C -A push1 -G 1
perf q1-one 40 -g 2 $C -A pull1,push1 -G 5
perf q1-one-eager 40 -g 2 $C -A push1
(export DMACCL_REDUCE_CTAS=1; perf q1-cta1 40 -p 2 $C -A push1 -G 5)
(export DMACCL_SIGNAL=copy; perf q1-sigcopy 40 -p 2 $C -A push1 -G 5)
perf q1-ar 40 -p 2 -o allreduce -b 2M -e 32M -f 4 -n 10 -w 3 --kernels 0 --in-place 0 -A push1 -G 5
for c in 4 8 16 32; do (export DMACCL_REDUCE_CTAS=$c; perf q2-cta$c 40 -p 2 -o allreduce -b 16M -e 16M -n 10 -w 3 --kernels 0 --in-place 0 -A push1 -G 5); done
for f in $R/q*.txt; do echo "== $(basename $f .txt)"; grep -E "^ +(allreduce|reducescatter) +[0-9]+ " $f | awk '{print $2,$5,$6}' | grep -v nccl | tr '\n' ';'; echo; done
