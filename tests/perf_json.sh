#!/usr/bin/env bash
# dmaccl-perf end to end on the host executor: -J writes JSON that the plot
# script's checker accepts (schema, busbw and algbw arithmetic, -a choice),
# the table and the file agree, and a tampered file is refused.
#   perf_json.sh DMACCL_PERF PLOT_PY
set -euo pipefail
perf=$1 plot=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
py=$(command -v python3)

fail() { echo "FAIL: $*"; exit 1; }

# threads, two cycles, two algorithms, in place; then processes with -a 3
"$perf" -B host -g 3 -b 1K -e 16K -f 4 -n 3 -w 1 -c 2 -N 2 -A auto,pull1 -J "$tmp/t.json" \
  >"$tmp/t.txt" 2>"$tmp/t.err" || { cat "$tmp/t.txt" "$tmp/t.err"; fail "threads run"; }
"$perf" -B host -p 3 -b 1K -e 4K -n 3 -w 1 -a 3 -A push1 -o allgather -J "$tmp/p.json" \
  >"$tmp/p.txt" 2>"$tmp/p.err" || { cat "$tmp/p.txt" "$tmp/p.err"; fail "processes run"; }
"$py" "$plot" --check "$tmp/t.json" "$tmp/p.json" || fail "schema check"

# rows: 3 sizes x 2 contenders x 2 cycles x (allgather out+in, alltoall out)
"$py" - "$tmp/t.json" "$tmp/t.txt" "$tmp/p.json" <<'PY' || fail "content"
import json, sys
t = json.load(open(sys.argv[1]))
rows = t["rows"]
assert len(rows) == 3 * 2 * 2 * 3, len(rows)
assert t["complete"] is True  # the last write; the ones after each size say false
assert t["config"]["ranks"] == 3 and t["config"]["processes"] == 1
assert t["config"]["cta_policy"] == "", t["config"]  # unset: the library's default
assert {r["cycle"] for r in rows} == {0, 1}
assert sum(r["in_place"] for r in rows) == 12
assert all(r["wrong"] == 0 for r in rows)
assert all(r["coll"] == "allgather" for r in rows if r["in_place"])
# every out-of-place row of the last cycle appears in the table with the same time
table = open(sys.argv[2]).read().splitlines()
for r in rows:
    if r["in_place"] or r["cycle"] != 1:
        continue
    hits = [l for l in table if l.split()[:5] == [r["coll"], str(r["size"]), str(r["count"]),
                                                "float", r["contender"]]]
    assert any(abs(float(l.split()[5]) - r["time_us"]) < 0.006 for l in hits), (r, hits)
p = json.load(open(sys.argv[3]))
assert p["config"]["processes"] == 3 and p["config"]["average"] == 3
for r in p["rows"]:
    assert r["time_us"] == r["time_us_max"] and r["time_us_min"] <= r["time_us_mean"]
    assert r["breakdown"] is None and r["energy_j_per_op"] is None
PY

# every collective: --uneven V forms, an op, a root, persistent requests, CTA
# policy zero; the checker's size and busbw rules per collective; no kernel
# columns on the host
DMACCL_CTA_POLICY=zero "$perf" -B host -g 3 -o all --uneven --op max -d half --root 2 --persistent -b 1K -e 4K -n 2 \
  -w 1 -A auto,stage -J "$tmp/a.json" >"$tmp/a.txt" 2>"$tmp/a.err" ||
  { cat "$tmp/a.txt" "$tmp/a.err"; fail "-o all run"; }
"$py" "$plot" --check "$tmp/a.json" || fail "schema check of -o all"
grep -q "uneven" "$tmp/a.txt" || fail "-o all: the header does not say --uneven"
grep -q "DMACCL_CTA_POLICY=zero" "$tmp/a.txt" || fail "-o all: the header does not name the policy"
grep -q "^  reducescatterv " "$tmp/a.txt" || fail "-o all: no reducescatterv rows in the table"
"$py" - "$tmp/a.json" <<'PY' || fail "content of -o all"
import json, sys
d = json.load(open(sys.argv[1]))
rows, cfg = d["rows"], d["config"]
assert cfg["op"] == "max" and cfg["root"] == 2 and cfg["uneven"] and cfg["persistent"], cfg
assert cfg["kernels"] is False and cfg["reduce_ctas"] >= 1, cfg
assert cfg["cta_policy"] == "zero", cfg
colls = ["allgather", "alltoall", "allreduce", "reducescatter", "broadcast", "reduce", "gather",
         "scatter", "allgatherv", "reducescatterv", "alltoallv", "sendrecv"]
assert sorted({r["coll"] for r in rows}) == sorted(colls), {r["coll"] for r in rows}
assert all(r["wrong"] == 0 for r in rows)
assert all(r["kernels_per_op"] is None and r["kernel_ctas"] is None for r in rows)
inplace = {r["coll"] for r in rows if r["in_place"]}
assert inplace == set(colls) - {"alltoall", "alltoallv", "sendrecv"}, inplace
# 3 sizes x (auto, and stage where the collective takes it: sendrecv through
# broadcast's entry) x (1 or 2 places); alltoallv takes only
# push1/pushn/pushb: no stage row; alltoall(v) and sendrecv: no in place
for c in colls:
    n = sum(1 for r in rows if r["coll"] == c)
    want = 3 * (1 if c == "alltoallv" else 2) * (1 if c.startswith("alltoall") or c == "sendrecv" else 2)
    assert n == want, (c, n, want)
ar = next(r for r in rows if r["coll"] == "allreduce")
assert abs(ar["busbw"] - ar["algbw"] * 4 / 3) < 2e-3 + 1e-3 * ar["busbw"], ar
assert ar["size"] == ar["count"] * 2  # count bytes of half
sr = next(r for r in rows if r["coll"] == "sendrecv")
assert sr["size"] == sr["count"] * 2, sr  # count bytes of half, not n * count
assert abs(sr["busbw"] - sr["algbw"]) < 1e-3 + 1e-3 * sr["busbw"], sr  # factor 1
PY

# one rank: sendrecv (a Send to oneself) is skipped with a reason, not an
# error; the other collectives of the run still run
"$perf" -B host -g 1 -o sendrecv,allgather -b 1K -e 2K -n 2 -w 1 -A auto -J "$tmp/one.json" \
  >"$tmp/one.txt" 2>"$tmp/one.err" || { cat "$tmp/one.txt" "$tmp/one.err"; fail "-g 1 run"; }
grep -q "^# no sendrecv rows: it needs 2 ranks or more" "$tmp/one.txt" ||
  fail "-g 1: no reason for the missing sendrecv rows: $(cat "$tmp/one.txt")"
grep -q "^  sendrecv " "$tmp/one.txt" && fail "-g 1: sendrecv rows"
grep -q "^  allgather " "$tmp/one.txt" || fail "-g 1: no allgather rows"
"$py" "$plot" --check "$tmp/one.json" || fail "schema check of -g 1"
# sendrecv with ranks as processes, persistent (two requests per rank), checked
"$perf" -B host -p 3 -o sendrecv --persistent -b 1K -e 64K -f 8 -n 2 -w 1 -c 2 -A auto,pull1 \
  -J "$tmp/sr.json" >"$tmp/sr.txt" 2>"$tmp/sr.err" || { cat "$tmp/sr.txt" "$tmp/sr.err"; fail "-p 3 sendrecv"; }
"$py" "$plot" --check "$tmp/sr.json" || fail "schema check of -p 3 sendrecv"
"$py" - "$tmp/sr.json" <<'PY' || fail "content of -p 3 sendrecv"
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
assert len(rows) == 3 * 2 and all(r["coll"] == "sendrecv" and not r["in_place"] for r in rows), rows
assert all(r["wrong"] == 0 for r in rows), rows
PY

# --compare of a run with itself: every dmaccl row, each 1.000x
"$py" "$plot" --compare "$tmp/t.json" "$tmp/t.json" >"$tmp/cmp.txt" || fail "compare"
rows=$(grep -c "^  " "$tmp/cmp.txt")
[ "$rows" -eq 12 ] || fail "compare: $rows rows, expected 12: $(cat "$tmp/cmp.txt")"
[ "$(grep -c " 1.000x" "$tmp/cmp.txt")" -eq 12 ] || fail "compare ratios: $(cat "$tmp/cmp.txt")"

# a tampered busbw, a missing key and a wrong schema are refused, naming the problem
"$py" - "$tmp/t.json" "$tmp" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
# off by more than the printed precision, whatever the (load-dependent) value
d["rows"][1]["busbw"] = d["rows"][1]["busbw"] * 1.5 + 0.01
json.dump(d, open(sys.argv[2] + "/bad1.json", "w"))
d = json.load(open(sys.argv[1]))
del d["rows"][0]["time_us_max"]
json.dump(d, open(sys.argv[2] + "/bad2.json", "w"))
d = json.load(open(sys.argv[1]))
d["schema"] = "nccl-tests"
json.dump(d, open(sys.argv[2] + "/bad3.json", "w"))
PY
for k in 1 2 3; do
  if "$py" "$plot" --check "$tmp/bad$k.json" 2>"$tmp/bad$k.err"; then fail "bad$k.json accepted"; fi
done
grep -q "rows\[1\]: busbw" "$tmp/bad1.err" || fail "bad1: $(cat "$tmp/bad1.err")"
grep -q "time_us_max' missing" "$tmp/bad2.err" || fail "bad2: $(cat "$tmp/bad2.err")"
grep -q "schema" "$tmp/bad3.err" || fail "bad3: $(cat "$tmp/bad3.err")"

# bad flags are refused before anything runs
if "$perf" -J "$tmp/x.txt" 2>"$tmp/e"; then fail "-J x.txt accepted"; fi
grep -q "only JSON output" "$tmp/e" || fail "-J message: $(cat "$tmp/e")"
[ ! -e "$tmp/x.txt" ] || fail "-J x.txt wrote a file"
echo "perf_json: OK"
