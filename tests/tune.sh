#!/usr/bin/env bash
# dmaccl-tune on the host executor writes a tuning file that DMACCL_TUNE_FILE
# loads (dmaccl-info shows its ranges); a malformed file is skipped with a
# warning naming the line, and the built-in table stays.
#   tune.sh DMACCL_TUNE DMACCL_INFO
set -u
tune=$1 info=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$dir"
"$tune" -B host -p 2 -b 1K -e 64K -f 8 -n 3 -w 1 >tune.out 2>tune.err || fail "dmaccl-tune exited $?"
[ -s dmaccl-tune.txt ] || fail "no dmaccl-tune.txt"
grep -q "auto (the library's selection) vs the fastest" tune.out || fail "no auto vs best table"
line=$(grep -v '^#' dmaccl-tune.txt)
echo "$line" | grep -Eq '^2 allgather:0-[^;]*inf:[a-z0-9]+;alltoall:0-.*inf:[a-z0-9]+$' ||
  fail "unexpected tuning line: $line"
DMACCL_TUNE_FILE=$PWD/dmaccl-tune.txt "$info" -n 2 -s 1K >info.out 2>info.err || fail "dmaccl-info exited $?"
grep -q "applied for 2 ranks" info.out || fail "tuning file not applied: $(cat info.out info.err)"
grep -q "DMACCL_TUNE_FILE line 6" info.out || fail "ranges do not name the file's line"
[ -s info.err ] && fail "warnings for a good file: $(cat info.err)"
# For another rank count only '*' lines apply: the built-in table.
DMACCL_TUNE_FILE=$PWD/dmaccl-tune.txt "$info" -n 4 >info4.out 2>&1 || fail "dmaccl-info -n 4"
grep -q "DMACCL_TUNE_FILE line" info4.out && fail "a 2-rank line applied to 4 ranks"
printf '2 allgather:stage\n2 alltoall:0-1K:warp\n' >bad.txt
DMACCL_TUNE_FILE=$PWD/bad.txt "$info" -n 2 >bad.out 2>bad.err || fail "dmaccl-info refused a bad file"
grep -q "line 2: unknown algorithm 'warp'" bad.err || fail "no warning naming line 2: $(cat bad.err)"
grep -q "built-in table is used" bad.out || fail "bad file not reported in the table header"
grep -q "DMACCL_TUNE_FILE line" bad.out && fail "ranges from a bad file were applied"
DMACCL_TUNE_FILE=$PWD/missing.txt "$info" -n 2 >miss.out 2>&1 || fail "dmaccl-info refused a missing file"
grep -q "cannot open it" miss.out || fail "missing file not reported"
# The channels' rows and the memory a rank holds (8 MB staging slots).
DMACCL_STAGE_BYTES=8M "$info" -n 2 >ch2.out 2>&1 || fail "dmaccl-info -n 2"
grep -Eq '^  sendrecv +0 +1048577 +stagell' ch2.out || fail "no channel rows: $(cat ch2.out)"
grep -q "each Send/Recv channel end: 48M" ch2.out || fail "no channel memory line"
grep -q "communicator: 80M (staging and line slots 48M, scratch 32M)" ch2.out || fail "no memory line"
DMACCL_STAGE_BYTES=8M "$info" -n 4 >ch4.out 2>&1 || fail "dmaccl-info -n 4"
grep -Eq '^  sendrecv +4M +inf +pushb' ch4.out || fail "4-rank channels do not push: $(cat ch4.out)"
echo "tune file checks passed"
