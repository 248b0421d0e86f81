#!/usr/bin/env bash
# Call C (one H200): does the code's layout cost the one-rank call its
# 1-1.5 us (call B)? The same tree built twice: as always (Release), and
# with GCC's profile feedback on the C files (-fprofile-generate, a
# training run of one rank's eager calls, then -fprofile-use: the trained
# path laid out together, code never run moved to .text.unlikely), then
# timed alternately, NCCL in each run.
# Prediction: if the stall is a miss of the code's address translation (or
# of its cache lines), the profiled build's out-of-place call is 0.5-1.5 us
# faster (1.04-1.23x NCCL -> 0.9-1.05x) and in place 0.2-0.5 us faster; if
# it is the driver's or the GPU's, both read the same.
source "$(dirname "$0")/env.sh"
O=$OUT; R=/tmp/res; rm -rf $R; mkdir -p $R; trap "tar czf $O/c.tgz -C $R ." EXIT
OUT=$R
build . /tmp/plain
cmake -S . -B /tmp/pg -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS="-fprofile-generate -fprofile-update=atomic" \
  -DCMAKE_SHARED_LINKER_FLAGS=-fprofile-generate -DCMAKE_EXE_LINKER_FLAGS=-fprofile-generate > $R/pg.log 2>&1 &&
  cmake --build /tmp/pg -j "$(nproc)" --target dmaccl-perf >> $R/pg.log 2>&1 || { tail -20 $R/pg.log; exit 1; }
echo "instrumented at $(( $(date +%s) - T0 )) s"
/tmp/pg/dmaccl-perf -g 1 -o allgather,alltoall,allreduce -A auto -b 1K -e 1M -f 4 -n 500 -w 20 --baseline none --kernels 0 > $R/train.txt 2>&1
echo "trained: $(find /tmp/pg -name '*.gcda' | wc -l) profiles"
cmake -S . -B /tmp/pg -DCMAKE_C_FLAGS="-fprofile-use -Wno-missing-profile" -DCMAKE_SHARED_LINKER_FLAGS= -DCMAKE_EXE_LINKER_FLAGS= >> $R/pg.log 2>&1 &&
  cmake --build /tmp/pg -j "$(nproc)" --target dmaccl-perf >> $R/pg.log 2>&1 || { tail -20 $R/pg.log; exit 1; }
echo "profiled build at $(( $(date +%s) - T0 )) s"
size /tmp/plain/libdmaccl.so.0.2.0 /tmp/pg/libdmaccl.so.0.2.0 | tee $R/size.txt
A="-g 1 -o allgather,alltoall,allreduce -A auto -b 1K -e 1M -f 4 -n 200 -w 20 -N 3 --kernels 0"
for i in 1 2; do
  run plain-$i 120 /tmp/plain/dmaccl-perf $A
  run pgo-$i 120 /tmp/pg/dmaccl-perf $A
done
python3 docs/results/one-rank-h200/table.py $R/plain-1.txt $R/pgo-1.txt $R/plain-2.txt $R/pgo-2.txt | tee $R/table.txt
