"""Per row (collective, size), dmaccl / NCCL out of place and both times in
place, from dmaccl-perf text outputs (the median of a run's sweeps):
python3 table.py RUN.txt [RUN.txt ...]"""
import statistics
import sys
from collections import defaultdict


def load(path):
    rows = defaultdict(list)
    for line in open(path):
        p = line.split()
        if len(p) >= 14 and p[1].isdigit() and not line.startswith("#"):
            inplace = float(p[9]) if p[9] != "N/A" else float("nan")
            rows[(p[0], int(p[1]), p[4])].append((float(p[5]), inplace))
    return {k: (statistics.median(v[0] for v in vs), statistics.median(v[1] for v in vs))
            for k, vs in rows.items()}


runs = [load(f) for f in sys.argv[1:]]
print("collective size | per run: out-of-place dmaccl/NCCL; in place dmaccl (NCCL) us")
for coll, size, algo in sorted(k for k in runs[0] if k[2] != "nccl"):
    cells = []
    for r in runs:
        d, n = r.get((coll, size, algo)), r.get((coll, size, "nccl"))
        if not d or not n:
            cells.append("-")
            continue
        cells.append("%.2f; %.2f (%.2f)" % (d[0] / n[0], d[1], n[1]))
    print(coll, size, "|", " | ".join(cells))
