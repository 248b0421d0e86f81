#!/bin/bash
# usage: loop.sh BIN LOG SECONDS
bin=$1; log=$2; dur=$3; end=$(( $(date +%s) + dur ))
echo "start $(date +%s)" > $log
while [ $(date +%s) -lt $end ]; do
  DMACCL_HOST_TIMEOUT=10 timeout $(( end - $(date +%s) + 30 )) $bin > /dev/null 2> $log.cur
  rc=$?
  echo "exit $rc at $(date +%s) $(grep -c ok $log.cur) okmarks; $(grep -m1 FAIL $log.cur)" >> $log
  grep -m3 -i "timed out\|timeout" $log.cur | cut -c1-300 >> $log
done
echo "end $(date +%s)" >> $log
