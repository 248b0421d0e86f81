#!/usr/bin/env bash
# Call B (one H200): where one rank's eager 1 KB AllGather spends its host
# time. build-marks/ is this tree with rdtsc marks between the phases of a
# call (src/core/marks.h; not committed), carried; each mark prints the mean
# time since the previous one over the run's calls.
# Prediction (call A: 6.3-7.3 us per call against the launch's 3.9 and the
# API calls' 0.75): the launch 3.9-4.3 us; the checks 0.3-0.5; the group and
# core bookkeeping 0.4-0.8; something of about 1 us not yet placed.
source "$(dirname "$0")/env.sh"
O=$OUT; R=/tmp/res; rm -rf $R; mkdir -p $R; trap "tar czf $O/b.tgz -C $R ." EXIT
OUT=$R
build build-marks /tmp/bm
for i in 1 2 3; do
  /tmp/bm/dmaccl-perf -g 1 -o allgather -A auto -b 1K -e 1K -n 3000 -w 100 -c 0 --in-place 0 --baseline none --kernels 0 > $R/marks-$i.txt 2>&1
  grep -E "mark|^ +allgather" $R/marks-$i.txt
done
/tmp/bm/dmaccl-perf -g 1 -o allgather -A auto -b 1K -e 1K -n 3000 -w 100 -c 0 --in-place 0 --baseline none --kernels 0 -z 1 > $R/marks-z.txt 2>&1
grep -E "mark|^ +allgather" $R/marks-z.txt
