#!/usr/bin/env python3
"""Medians of dmaccl-perf JSON rows: per collective, size and contender, the median time
over the sweeps (cycles) and the median of the per-sweep ratios to NCCL's
time in the same sweep. Usage: medians.py FILE.json..."""
import json
import statistics
import sys


def size(b):
    for u, s in (("M", 1 << 20), ("K", 1 << 10)):
        if b >= s and b % s == 0:
            return f"{b // s}{u}"
    return str(b)


for path in sys.argv[1:]:
    d = json.load(open(path))
    rows = [r for r in d["rows"] if not r["in_place"]]
    names = [c["name"] for c in d["contenders"]]
    keys = sorted({(r["coll"], r["size"]) for r in rows})
    t = {}
    for r in rows:
        assert r["wrong"] == 0, r
        t.setdefault((r["coll"], r["size"], r["contender"]), {})[r["cycle"]] = r["time_us"]
    print(f"## {path}\n\n`{' '.join(d['command'][1:])}`\n")
    print("| collective | size | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 2) + "|")
    for coll, s in keys:
        cells = []
        base = t.get((coll, s, "nccl"), {})
        for n in names:
            v = t.get((coll, s, n), {})
            if not v:
                cells.append("-")
                continue
            med = statistics.median(v.values())
            ratios = [v[c] / base[c] for c in v if c in base and n != "nccl"]
            cells.append(f"{med:.2f}" + (f" ({statistics.median(ratios):.2f})" if ratios else ""))
        print(f"| {coll} | {size(s)} | " + " | ".join(cells) + " |")
    print()
