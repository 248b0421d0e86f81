#!/bin/bash
# samples every thread of the stress processes once a second
while true; do
  echo "T $(date +%s.%N | cut -c1-14)"
  ps -eLo pid,ppid,tid,stat,wchan:28,psr,pri,ni,cls,time,comm | grep -E "stress" | grep -v grep
  cat /proc/loadavg
  sleep 1
done
