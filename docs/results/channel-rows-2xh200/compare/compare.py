"""Before/after table of run.sh's four runs per mode (python3 compare.py, in this folder)."""
import json


def load(f):
    d = json.load(open(f))
    return d["rows"] if isinstance(d, dict) else d


for mode in ["graph", "eager"]:
    print(f"== {mode}: dmaccl us before1 after1 before2 after2 | NCCL in the same runs | "
          "dmaccl/NCCL before -> after (mean of the two pairs)")
    t = {}
    for v in ["before", "after"]:
        for i in [1, 2]:
            for r in load(f"{v}-{mode}-{i}.json"):
                t.setdefault((r["coll"], r["size"]), {}).setdefault(r["contender"], {})[(v, i)] = r["time_us"]
    for (c, s), d in sorted(t.items()):
        dm, n = d["auto"], d["nccl"]
        rb = sum(dm[("before", i)] / n[("before", i)] for i in [1, 2]) / 2
        ra = sum(dm[("after", i)] / n[("after", i)] for i in [1, 2]) / 2
        cells = [dm[k] for k in [("before", 1), ("after", 1), ("before", 2), ("after", 2)]]
        ncells = [n[k] for k in [("before", 1), ("after", 1), ("before", 2), ("after", 2)]]
        print(f"{c:9s} {s:8d}: " + " ".join(f"{x:7.2f}" for x in cells) + " | " +
              " ".join(f"{x:6.2f}" for x in ncells) + f" | {rb:.2f} -> {ra:.2f}")
