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
and backend) replaces the earlier one, unless the later one did not run
(skipped) and the earlier did; a replaced row goes to the file's
"replaced" list and still serves its own run's comparisons. The parts
must agree on what makes their rows comparable (ranks, GPU, dtype,
reference, library and framework versions, layers, chunks, seed,
tolerance). A file that is not one run's e2e.json (a merged file
included), or parts that disagree, stop the merge with a message naming
the file and what is wrong, and nothing is written. Needs no torch.
"""

import argparse
import json
import numbers
import os

import results  # this folder is first on sys.path when it runs as a script

# meta fields, and run options (meta.args), the parts must share (absent in
# both is agreement)
SAME = ("device", "ranks", "dtype", "reference", "gpu", "gpus", "shared_gpu", "torch", "nccl",
        "dmaccl_library")
SAME_ARGS = ("layers", "moe_layers", "chunks", "seed", "tol", "interleave")
ARG_DEFAULTS = {"interleave": False}  # runs from before the option had none
KEYS = ("mode", "model", "variant", "batch", "backend", "status", "graph")
MEASURED = ("p50_us", "p99_us", "tok_s")


def load(path):
    """One run's e2e.json: {"meta": {...}, "notes": [...], "rows": [...]}."""
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as e:
        raise SystemExit(f"merge.py: cannot read {path}: {e.strerror}")
    except json.JSONDecodeError as e:
        raise SystemExit(f"merge.py: {path} is not JSON ({e.msg}, line {e.lineno})")
    if not (isinstance(data, dict) and isinstance(data.get("meta"), dict)
            and isinstance(data.get("rows"), list)
            and isinstance(data.get("notes", []), list)):
        raise SystemExit(f"merge.py: {path} is not an e2e.json of bench/e2e/run.py "
                         "(no meta object, rows list and notes list)")
    if "parts" in data["meta"] or any(isinstance(r, dict) and "part" in r for r in data["rows"]):
        raise SystemExit(f"merge.py: {path} is a merged file: merge the runs it came from")
    if not isinstance(data["meta"].get("args", {}), dict):
        raise SystemExit(f"merge.py: {path}: meta.args is not an object")
    for i, r in enumerate(data["rows"]):
        missing = [k for k in KEYS if not isinstance(r, dict) or k not in r]
        if not missing and not isinstance(r["status"], str):
            missing = ["status text"]
        if not missing and r["status"] == "ok":
            missing = [k for k in MEASURED
                       if not isinstance(r.get(k), numbers.Real) or not r[k] > 0]
            if r.get("joules") is not None and not isinstance(r["joules"], numbers.Real):
                missing.append("joules number")
            if "joules" not in r:
                missing.append("joules")
            if r["mode"] == "prefill" and not isinstance(r.get("prompt"), int):
                missing.append("prompt")
        if missing:
            raise SystemExit(f"merge.py: {path}: row {i} has no {', '.join(missing)}")
    return data


def merge(parts):
    """parts: [(path, data)]. Returns (meta, rows, notes, replaced)."""
    first_path, first = parts[0]
    for path, data in parts[1:]:
        if ("args" in first["meta"]) != ("args" in data["meta"]):
            who = path if "args" not in data["meta"] else first_path
            raise SystemExit(f"merge.py: {who} has no meta.args (the run's options): its rows "
                             "cannot be shown comparable")
        for k in SAME + SAME_ARGS:
            where = (lambda d: d["meta"].get("args") or {}) if k in SAME_ARGS else \
                (lambda d: d["meta"])
            a, b = (where(d).get(k, ARG_DEFAULTS.get(k)) for d in (first, data))
            if a != b:
                raise SystemExit(f"merge.py: {path} and {first_path} differ in {k} "
                                 f"({b!r} against {a!r}): their rows are not comparable")
    meta = {k: first["meta"][k] for k in SAME if k in first["meta"]}
    meta["parts"] = [{"file": path, "meta": data["meta"]} for path, data in parts]
    merged, notes, replaced = {}, [], []
    for i, (path, data) in enumerate(parts):
        notes += [f"part {i}: {n}" for n in data.get("notes", [])]
        for r in data["rows"]:
            r = dict(r, part=i)
            key = results.row_key(r, r["backend"])
            old = merged.get(key)
            if old is not None and r["status"] != "ok" and old["status"] == "ok":
                replaced.append(r)  # a later skip does not undo a measurement
                continue
            if old is not None:
                replaced.append(merged.pop(key))  # the later run's row, in its order
            merged[key] = r
    return meta, list(merged.values()), notes, replaced


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("parts", nargs="+", help="e2e.json files of the runs, earliest first")
    ap.add_argument("--out", required=True, help="output folder")
    args = ap.parse_args(argv)
    seen = {}
    for p in args.parts:
        real = os.path.realpath(p)
        if real in seen:
            raise SystemExit(f"merge.py: {p} is given twice (as {seen[real]} before)")
        seen[real] = p
    target = os.path.realpath(os.path.join(args.out, "e2e.json"))
    if target in seen:
        raise SystemExit(f"merge.py: --out {args.out} would overwrite its input {seen[target]}")
    parts = [(p, load(p)) for p in args.parts]
    meta, rows, notes, replaced = merge(parts)
    results.write(args.out, meta, rows, notes, replaced)
    print(results.table(rows))
    print()
    if meta.get("reference"):
        print(results.ratios(rows, meta["reference"], replaced))
    print(f"\n{len(rows)} rows from {len(parts)} runs"
          + (f" ({len(replaced)} rows measured again or skipped in a later part: "
             "in e2e.json's replaced list)" if replaced else "")
          + f": {os.path.join(args.out, 'e2e.json')}")
    results.plot(args.out, [r for r in rows if r["status"] == "ok"])


if __name__ == "__main__":
    main()
