"""Before (7e8af86) / after table of run.sh (python3 compare.py, in this folder)."""
import json


def load(f):
    d = json.load(open(f))
    return d["rows"] if isinstance(d, dict) else d


for mode in ["graph", "eager"]:
    print(f"== {mode}: us, dmaccl before / after | NCCL before / after | dmaccl/NCCL before -> after")
    t = {}
    for v in ["before", "after"]:
        for r in load(f"{v}-{mode}.json"):
            if not r["in_place"]:
                t.setdefault((r["coll"], r["size"]), {})[(r["contender"], v)] = r["time_us"]
    for (c, s), d in sorted(t.items()):
        b, a, nb, na = d[("auto", "before")], d[("auto", "after")], d[("nccl", "before")], d[("nccl", "after")]
        print(f"{c:9s} {s:8d}: {b:7.2f} / {a:7.2f} | {nb:6.2f} / {na:6.2f} | {b/nb:.2f} -> {a/na:.2f}")
