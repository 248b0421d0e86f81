#!/usr/bin/env bash
# dmaccl-c3's JSON and plot: test_c3 writes the JSON of a made-up run; plot.py
# --check recomputes every metric from its times; plot.py draws the SVG; a
# JSON whose fraction disagrees with its times is refused.
#   c3.sh TEST_C3 PLOT_PY
set -euo pipefail
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
"$1" "$t/c3.json" >/dev/null
python3 "$2" --check "$t/c3.json"
python3 "$2" -o "$t" "$t/c3.json"
grep -q "<svg" "$t/c3.svg" || { echo "no SVG written"; exit 1; }
grep -q "auto (default)" "$t/c3.svg" || { echo "the default contender is not marked"; exit 1; }
# a tampered fraction must be caught
python3 - "$t/c3.json" "$t/bad.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["scenarios"][0]["rows"][0]["fraction"] = 0.99
json.dump(d, open(sys.argv[2], "w"))
PY
if python3 "$2" --check "$t/bad.json" 2>"$t/err"; then
  echo "plot.py --check accepted a fraction that the times contradict"; exit 1
fi
grep -q "fraction" "$t/err" || { cat "$t/err"; exit 1; }
echo "c3.sh: JSON, check and plot ok"
