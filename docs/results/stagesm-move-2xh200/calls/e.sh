#!/usr/bin/env bash
# call E (2x H200): the review's fixes on a GPU: test_gpu_nokernel's new
# assertion, test_gpu_colls, test_gpu_reduce.
source "$(dirname "$0")/env.sh"
O=$OUT; R=/tmp/res; rm -rf $R; mkdir -p $R; trap "tar czf $O/e.tgz -C $R ." EXIT
OUT=$R
build
t() { local l=$1; shift; s=$(date +%s); timeout 150 "$@" > $R/$l.log 2>&1; echo "$l ($*): rc $?, $(( $(date +%s) - s )) s"; tail -2 $R/$l.log; }
t nokernel build-gpu/tests/test_gpu_nokernel
t reduce build-gpu/tests/test_gpu_reduce
t colls build-gpu/tests/test_gpu_colls
grep -E "^stagesm " $R/nokernel.log | head -20
