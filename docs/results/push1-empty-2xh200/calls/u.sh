#!/usr/bin/env bash
# Call U (nvidia-h200-x2): call V's suite passed every GPU test but
# test_nccl_api_gpu, whose testGpuInitInGroup (3 ranks, two processes, all
# on GPU 0, a thread per rank: a small AllReduce and AllGather) ran past
# 300 s; it passed in 3-5 s in every earlier call (the last on x2 at
# premul-2xh200 call C). Mine or a flake? planRunEnd changes only push1's
# runs (test_plan testRunEnd), and push1 runs as pull1 where ranks share a
# GPU, so prediction: a flake of the shared-GPU path, rare: at HEAD it
# passes in 8 of 8 runs (or hangs as rarely at 3933776, the session's
# start). Then pytest tests/python/test_gpu.py (call V never reached it) and
# call V's experiment (its prediction in calls/v.sh).
source "$(dirname "$0")/../../one-rank-h200/calls/env.sh"
O=$OUT; R=/tmp/resu; rm -rf $R; mkdir -p $R; trap "tar czf $O/u.tgz -C $R ." EXIT
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDMACCL_WERROR=ON > $R/build.log 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" --target dmaccl dmaccl-perf test_nccl_api >> $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "built at $(( $(date +%s) - T0 )) s"
export DMACCL_TIMEOUT=15 DMACCL_INIT_TIMEOUT=20
loop() { # loop TREE TAG: up to 8 runs, stop at the first failure
  local ok=0
  for i in 1 2 3 4 5 6 7 8; do
    s=$(date +%s); (cd $1/tests && timeout 40 stdbuf -oL -eL ./test_nccl_api gpu) > $R/$2-$i.log 2>&1; r=$?
    [ $r -eq 0 ] && ok=$((ok+1)) || { echo "$2 run $i: rc $r after $(( $(date +%s) - s )) s"; tail -8 $R/$2-$i.log; break; }
  done
  echo "$2: $ok passed"
  return $(( ok < 8 ))
}
if ! loop build-gpu head; then
  # build-oldsrc: git archive 3933776 (docs/results left out), carried
  cmake -S build-oldsrc -B build-old -DCMAKE_BUILD_TYPE=Release > $R/build-old.log 2>&1 &&
    cmake --build build-old -j "$(nproc)" --target test_nccl_api >> $R/build-old.log 2>&1 && loop build-old old
fi
if ! python3 -c "import pytest" 2>/dev/null; then
  python3 -m pip install -q --no-index --find-links .whl --target build-gpu/pytest-env pytest > $R/pip.log 2>&1
  export PYTHONPATH="$PWD/build-gpu/pytest-env"
fi
s=$(date +%s); DMACCL_LIBRARY=$PWD/build-gpu/libdmaccl.so PYTHONPATH="$PWD/python:${PYTHONPATH:-}" timeout 150 python3 -m pytest -v tests/python/test_gpu.py > $R/pytest.log 2>&1
echo "pytest test_gpu.py: rc $?, $(( $(date +%s) - s )) s; $(tail -1 $R/pytest.log)"
P=build-gpu/dmaccl-perf; X="-p 2 -o reducescatter -A pull1,push1 -b 1M -e 16M -f 4 -n 20 -w 5 --kernels 0 --in-place 0"
for v in 1 0; do DMACCL_BATCH_OVERLAP=$v timeout 40 $P $X -J $R/overlap$v.json > $R/overlap$v.txt 2>&1; echo "BATCH_OVERLAP=$v: rc $?"; done
timeout 40 $P $X -G 5 -J $R/graph.json > $R/graph.txt 2>&1; echo "graph: rc $?"
for f in overlap1 overlap0 graph; do echo "== $f: $(grep -E "^ +reducescatter +[0-9]+ " $R/$f.txt | awk '{print $2,$5,$6}' | grep -v nccl | tr '\n' ';')"; done
