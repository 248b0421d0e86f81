#!/bin/bash
# Does the container's CPU quota throttle the ranks (CFS), and when?
cg=/sys/fs/cgroup
echo "nproc $(nproc); cgroup $(cat /proc/self/cgroup)"
for f in cpu.max cpu.max.burst cpu.weight cpuset.cpus.effective; do echo "$f: $(cat $cg/$f 2>&1)"; done
cat /proc/pressure/cpu 2>&1
(while :; do echo "$(date +%s.%N) $(tr '\n' ' ' < $cg/cpu.stat)"; sleep 0.01; done) > $OUT/cpustat.log 2>&1 &
S=$!
P=build-gpu/dmaccl-perf
for i in 1 2 3; do
  a=$(grep -E 'nr_throttled|throttled_usec' $cg/cpu.stat | tr '\n' ' ')
  t0=$(date +%s.%N)
  timeout 150 $P -p 2 -o allreduce,reducescatter,allgather -A auto -b 4M -e 64M -f 2 -n 20 -w 5 --kernels 0 -J $OUT/stall$i.json 2>$OUT/stall$i.err > $OUT/stall$i.txt
  b=$(grep -E 'nr_throttled|throttled_usec' $cg/cpu.stat | tr '\n' ' ')
  echo "run $i start $t0 end $(date +%s.%N): before [$a] after [$b]"
  grep -E '^ +(allreduce|reducescatter|allgather)' $OUT/stall$i.txt | awk '$6+0>400 || $10+0>400'
done
kill $S
cat /proc/pressure/cpu
