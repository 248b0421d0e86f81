"""Merges the e2e.json files of several runs of bench/e2e/run.py into one
folder: e2e.json, e2e.txt (the table and each row's ratio to the
reference) and the plots. The full grid does not fit one device call
(bench/e2e/README.md, "Commands for 2x H200"), so it runs in parts; this
puts the parts back together.

    python3 bench/e2e/merge.py --out docs/results/e2e-2xh200/grid part1/e2e.json part2/e2e.json

Every row keeps its run as "part" (the index of its file in the command
line; meta.parts lists the files and their runs' meta), and is compared
only with rows of its own run: its communication share with that run's
"none" row, its ratio with that run's reference row. A row measured again
in a later part (same mode, model, variant, batch, KV or prompt length
and backend) replaces the earlier one. The parts must agree on what makes
their rows comparable (ranks, GPU, dtype, reference, library and
framework versions); a file that is not a run's e2e.json, or parts that
disagree, stop the merge with a message naming the file and the field.
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run  # noqa: E402

# meta fields the parts must share (absent in both is agreement)
SAME = ("device", "ranks", "dtype", "reference", "gpu", "gpus", "shared_gpu", "torch", "nccl",
        "dmaccl_library")


def load(path):
    """A run's e2e.json: {"meta": {...}, "notes": [...], "rows": [...]}."""
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as e:
        raise SystemExit(f"merge.py: cannot read {path}: {e.strerror}")
    except json.JSONDecodeError as e:
        raise SystemExit(f"merge.py: {path} is not JSON ({e.msg}, line {e.lineno})")
    if not (isinstance(data, dict) and isinstance(data.get("meta"), dict)
            and isinstance(data.get("rows"), list)):
        raise SystemExit(f"merge.py: {path} is not an e2e.json of bench/e2e/run.py "
                         "(no meta object and rows list)")
    for i, r in enumerate(data["rows"]):
        missing = [k for k in ("mode", "model", "variant", "batch", "backend", "status", "graph")
                   if not isinstance(r, dict) or k not in r]
        if missing:
            raise SystemExit(f"merge.py: {path}: row {i} has no {', '.join(missing)}")
    return data


def merge(parts):
    """parts: [(path, data)]. Returns (meta, rows, notes, replaced)."""
    first_path, first = parts[0]
    for path, data in parts[1:]:
        for k in SAME:
            a, b = first["meta"].get(k), data["meta"].get(k)
            if a != b:
                raise SystemExit(f"merge.py: {path} and {first_path} differ in {k} "
                                 f"({b!r} against {a!r}): their rows are not comparable")
    meta = {k: first["meta"][k] for k in SAME if k in first["meta"]}
    meta["parts"] = [{"file": path, "meta": data["meta"]} for path, data in parts]
    merged, notes, replaced = {}, [], 0
    for i, (path, data) in enumerate(parts):
        notes += [f"part {i}: {n}" for n in data.get("notes", [])]
        for r in data["rows"]:
            key = run.row_key(r, r["backend"])
            replaced += key in merged
            merged.pop(key, None)  # the later run's row, in its order
            merged[key] = dict(r, part=i)
    return meta, list(merged.values()), notes, replaced


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("parts", nargs="+", help="e2e.json files of the runs, earliest first")
    ap.add_argument("--out", required=True, help="output folder")
    args = ap.parse_args(argv)
    parts = [(p, load(p)) for p in args.parts]
    meta, rows, notes, replaced = merge(parts)
    run.write(args.out, meta, rows, notes)
    print(run.table(rows))
    print()
    if meta.get("reference"):
        print(run.ratios(rows, meta["reference"]))
    print(f"\n{len(rows)} rows from {len(parts)} runs"
          + (f" ({replaced} measured again in a later part: the later kept)" if replaced else "")
          + f": {os.path.join(args.out, 'e2e.json')}")
    run.plot(args.out, [r for r in rows if r["status"] == "ok"])


if __name__ == "__main__":
    main()
