#!/usr/bin/env bash
# The plot script on a sample run: PNGs for latency, busbw, energy and the
# breakdown come out and are PNG images. Skipped (77) where no Python has
# matplotlib; .ci/run installs Debian's python3-matplotlib.
#   perf_plot.sh PLOT_PY SAMPLE_JSON
set -euo pipefail
plot=$1 sample=$2
py=""
for p in python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null && "$p" -c "import matplotlib" 2>/dev/null; then py=$p; break; fi
done
[ -n "$py" ] || { echo "no Python with matplotlib: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$py" "$plot" -o "$tmp" --title sample "$sample" "$sample" >"$tmp/list" || exit 1
for coll in allgather alltoall; do
  for m in latency busbw energy breakdown; do
    f="$tmp/$coll-$m.png"
    grep -qx "$f" "$tmp/list" || { echo "FAIL: $f not listed"; cat "$tmp/list"; exit 1; }
    [ "$(head -c 8 "$f" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] ||
      { echo "FAIL: $f is not a PNG"; exit 1; }
    [ "$(stat -c %s "$f")" -gt 10000 ] || { echo "FAIL: $f is nearly empty"; exit 1; }
  done
done
echo "perf_plot: OK ($(wc -l <"$tmp/list") images)"
