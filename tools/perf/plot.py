#!/usr/bin/env python3
"""Plots dmaccl-perf JSON files (-J) as PNGs, or checks them.

    plot.py [-o DIR] [--title T] run.json [more.json ...]
    plot.py --check run.json [...]
    plot.py --compare before.json after.json

--compare prints, per collective, size and contender present in both files
(out of place, median over cycles), the time before, after, and after/before
(below 1: faster after), with each file's best NCCL time beside it, so that
two builds measured on one machine can be compared row by row.

Per collective: latency vs size (log-log) and busbw vs size, one line per
contender (dmaccl algorithms solid, NCCL baselines dashed), out of place,
median over cycles; with several files every line is labelled with its file.
When the file has them: energy per operation vs size, and the latency
breakdown (control / schedule / copy / sync) as stacked bars per contender.

--check validates the schema and the arithmetic of every row (algbw, busbw,
time_us against the -a choice, breakdown parts) and needs only the standard
library; plotting needs matplotlib (Debian: python3-matplotlib).
"""
import argparse
import json
import math
import os
import statistics
import sys

SCHEMA = "dmaccl-perf/1"
ROW_KEYS = {
    "cycle": int, "coll": str, "in_place": bool, "contender": str, "kind": str,
    "size": int, "count": int, "time_us": float, "time_us_rank0": float,
    "time_us_mean": float, "time_us_min": float, "time_us_max": float,
    "algbw": float, "busbw": float, "wrong": int,
}
OPTIONAL = {"speedup": float, "best_baseline": str, "energy_j_per_op": float,
            "watts": float, "breakdown": dict}
# files written before 2026-11-26 have no slowest_call_us, before 2026-11-27
# no start_skew_us, completion_wait_us or runqueue_us (which a process that
# cannot read its scheduler statistics leaves out)
LATER_KEYS = {"slowest_call_us": float, "start_skew_us": float, "completion_wait_us": float,
              "runqueue_us": float}
# --kernels (CUPTI); files written before it have none of these keys
KERNEL_KEYS = {"kernels_per_op": float, "kernel_us_per_op": float, "kernel_ctas": int}
# nccl-tests' size (count elements of the collective's count argument) and
# bus-bandwidth factor, per collective (tools/common/colls.c)
COLLS = ["allgather", "alltoall", "allreduce", "reducescatter", "broadcast", "reduce", "gather",
         "scatter", "allgatherv", "reducescatterv", "alltoallv", "sendrecv"]
# size = count bytes; the others n * count
COUNT_BYTES = {"allreduce", "broadcast", "reduce", "sendrecv"}


def bus_factor(coll, n):
    if coll in ("broadcast", "reduce", "sendrecv"):
        return 1.0
    return (2.0 if coll == "allreduce" else 1.0) * (n - 1) / n
BREAKDOWN_KEYS = ["control_us", "schedule_us", "copy_us", "sync_us", "total_us"]
AVG_KEYS = ["time_us_rank0", "time_us_mean", "time_us_min", "time_us_max"]


class SchemaError(Exception):
    pass


def _is(value, kind):
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def _close(a, b, rel=2e-3, abs_=2e-3):
    return abs(a - b) <= max(abs_, rel * max(abs(a), abs(b)))


def check(doc, name="json"):
    """Raises SchemaError naming the first problem; returns the row count."""
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise SchemaError(f"{name}: 'schema' is not {SCHEMA!r}")
    for key, kind in (("config", dict), ("contenders", list), ("rows", list), ("command", list)):
        if not isinstance(doc.get(key), kind):
            raise SchemaError(f"{name}: '{key}' missing or not a {kind.__name__}")
    cfg = doc["config"]
    for key in ("ranks", "iters", "average", "type_bytes", "graph_launches"):
        if not _is(cfg.get(key), int):
            raise SchemaError(f"{name}: config.{key} missing or not an integer")
    ranks, avg = cfg["ranks"], cfg["average"]
    if ranks < 1 or avg not in (0, 1, 2, 3):
        raise SchemaError(f"{name}: config.ranks {ranks} or config.average {avg} out of range")
    names = set()
    for c in doc["contenders"]:
        if not isinstance(c, dict) or not _is(c.get("name"), str) or c.get("kind") not in (
                "dmaccl", "nccl", "nccl-ce"):
            raise SchemaError(f"{name}: bad contender {c!r}")
        names.add(c["name"])
    for i, r in enumerate(doc["rows"]):
        where = f"{name}: rows[{i}]"
        if not isinstance(r, dict):
            raise SchemaError(f"{where}: not an object")
        for key, kind in ROW_KEYS.items():
            if key not in r or not _is(r[key], kind):
                raise SchemaError(f"{where}: '{key}' missing or not {kind.__name__}")
        for key, kind in OPTIONAL.items():
            if key not in r:
                raise SchemaError(f"{where}: '{key}' missing (null when not measured)")
            if r[key] is not None and not _is(r[key], kind):
                raise SchemaError(f"{where}: '{key}' is not {kind.__name__} or null")
        for key, kind in LATER_KEYS.items():
            if key in r and (not _is(r[key], kind) or r[key] < 0):
                raise SchemaError(f"{where}: '{key}' is not a non-negative {kind.__name__}")
        for key, kind in KERNEL_KEYS.items():
            if r.get(key) is not None and (not _is(r[key], kind) or r[key] < 0):
                raise SchemaError(f"{where}: '{key}' is not a non-negative {kind.__name__} or null")
        if r["coll"] not in COLLS:
            raise SchemaError(f"{where}: coll {r['coll']!r}")
        if r["contender"] not in names:
            raise SchemaError(f"{where}: contender {r['contender']!r} is not in 'contenders'")
        blocks = 1 if r["coll"] in COUNT_BYTES else ranks
        if r["size"] != r["count"] * cfg["type_bytes"] * blocks:
            raise SchemaError(f"{where}: size {r['size']} != count*type_bytes*"
                              f"{'1' if blocks == 1 else 'ranks'}")
        t = r["time_us"]
        if not t > 0 or not _close(t, r[AVG_KEYS[avg]]):
            raise SchemaError(f"{where}: time_us {t} is not {AVG_KEYS[avg]} ({r[AVG_KEYS[avg]]})")
        if not (r["time_us_min"] <= r["time_us_mean"] * (1 + 1e-9) and
                r["time_us_mean"] <= r["time_us_max"] * (1 + 1e-9)):
            raise SchemaError(f"{where}: min <= mean <= max does not hold")
        algbw = r["size"] / t / 1e3
        if not _close(r["algbw"], algbw):
            raise SchemaError(f"{where}: algbw {r['algbw']} but size/time gives {algbw:.4f}")
        factor = bus_factor(r["coll"], ranks)
        busbw = algbw * factor
        if not _close(r["busbw"], busbw):
            raise SchemaError(f"{where}: busbw {r['busbw']} but algbw*{factor:.4g} gives "
                              f"{busbw:.4f}")
        if r["wrong"] < 0:
            raise SchemaError(f"{where}: negative wrong count")
        bd = r["breakdown"]
        if bd is not None:
            for key in BREAKDOWN_KEYS:
                if not _is(bd.get(key), float) or bd[key] < 0:
                    raise SchemaError(f"{where}: breakdown.{key} missing or negative")
    return len(doc["rows"])


def load(path):
    with open(path) as f:
        doc = json.load(f)
    check(doc, path)
    return doc


def series(doc, coll, value):
    """{contender: [(size, median over cycles of value(row))]}, out of place."""
    out = {}
    for r in doc["rows"]:
        if r["coll"] != coll or r["in_place"]:
            continue
        v = value(r)
        if v is None:
            continue
        out.setdefault(r["contender"], {}).setdefault(r["size"], []).append(v)
    return {c: sorted((s, statistics.median(v)) for s, v in d.items()) for c, d in out.items()}


def size_label(b):
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b >= div:
            return f"{b / div:g}{unit}"
    return f"{b}"


def plot(paths, outdir, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    docs = [(os.path.splitext(os.path.basename(p))[0], load(p)) for p in paths]
    os.makedirs(outdir, exist_ok=True)
    written = []
    kinds = {}
    for _, doc in docs:
        for c in doc["contenders"]:
            kinds[c["name"]] = c["kind"]
    colls = sorted({r["coll"] for _, doc in docs for r in doc["rows"]})
    metrics = [
        ("latency", "time per operation (us)", lambda r: r["time_us"], True),
        ("busbw", "bus bandwidth (GB/s)", lambda r: r["busbw"], False),
        ("energy", "energy per operation, all GPUs (mJ)",
         lambda r: r["energy_j_per_op"] * 1e3 if r["energy_j_per_op"] else None, True),
    ]
    for coll in colls:
        for metric, ylabel, value, logy in metrics:
            fig, ax = plt.subplots(figsize=(8, 5))
            lines = 0
            for label, doc in docs:
                cfg = doc["config"]
                for name, pts in sorted(series(doc, coll, value).items()):
                    if not pts:
                        continue
                    xs, ys = zip(*pts)
                    base = kinds.get(name) != "dmaccl"
                    tag = name if len(docs) == 1 else f"{name} ({label})"
                    ax.plot(xs, ys, marker="o", markersize=3, linewidth=2.2 if base else 1.4,
                            linestyle="--" if base else "-",
                            color={"nccl": "black", "nccl-ce": "dimgray"}.get(name),
                            label=tag)
                    lines += 1
            if not lines:
                plt.close(fig)
                continue
            ax.set_xscale("log", base=2)
            if logy:
                ax.set_yscale("log")
            ticks = sorted({s for _, d in docs for r in d["rows"] if r["coll"] == coll
                            for s in [r["size"]]})
            step = max(1, len(ticks) // 12)
            ax.set_xticks(ticks[::step])
            ax.set_xticklabels([size_label(t) for t in ticks[::step]], rotation=45)
            ax.set_xlabel("size (bytes, nccl-tests' convention: docs/benchmark.md)")
            ax.set_ylabel(ylabel)
            cfg = docs[0][1]["config"]
            mode = f"{cfg['processes']} processes" if cfg.get("processes", 1) > 1 else "1 process"
            graph = f", CUDA graph x{cfg['graph_launches']}" if cfg["graph_launches"] else ""
            ax.set_title(f"{title or 'dmaccl-perf'}: {coll}, {cfg['ranks']} ranks "
                         f"({mode}{graph}), {cfg.get('gpu') or cfg.get('executor')}")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8, ncol=2)
            fig.tight_layout()
            path = os.path.join(outdir, f"{coll}-{metric}.png")
            fig.savefig(path, dpi=110)
            plt.close(fig)
            written.append(path)
        # breakdown: stacked bars per contender, first file
        label, doc = docs[0]
        rows = [r for r in doc["rows"] if r["coll"] == coll and r["breakdown"] and r["cycle"] == 0
                and not r["in_place"]]
        names = [c["name"] for c in doc["contenders"] if any(r["contender"] == c["name"]
                                                             for r in rows)]
        if rows and names:
            cols = min(3, len(names))
            nrow = math.ceil(len(names) / cols)
            fig, axes = plt.subplots(nrow, cols, figsize=(5 * cols, 3.4 * nrow), squeeze=False,
                                     sharey=True)
            parts = [("control_us", "control", "tab:blue"), ("schedule_us", "schedule", "tab:orange"),
                     ("sync_us", "sync", "tab:red"), ("copy_us", "copy", "tab:green")]
            for k, name in enumerate(names):
                ax = axes[k // cols][k % cols]
                mine = sorted((r for r in rows if r["contender"] == name), key=lambda r: r["size"])
                xs = range(len(mine))
                bottom = [0.0] * len(mine)
                for key, lab, color in parts:
                    ys = [r["breakdown"][key] for r in mine]
                    ax.bar(xs, ys, bottom=bottom, color=color, label=lab)
                    bottom = [a + b for a, b in zip(bottom, ys)]
                ax.plot(xs, [r["breakdown"]["total_us"] for r in mine], "k.", label="total")
                ax.set_xticks(list(xs))
                ax.set_xticklabels([size_label(r["size"]) for r in mine], rotation=45, fontsize=7)
                ax.set_title(name, fontsize=10)
                ax.set_yscale("log")
                if k % cols == 0:
                    ax.set_ylabel("us (log)")
            for k in range(len(names), nrow * cols):
                axes[k // cols][k % cols].axis("off")
            axes[0][0].legend(fontsize=7)
            fig.suptitle(f"{title or 'dmaccl-perf'}: {coll}, where one operation's time goes")
            fig.tight_layout()
            path = os.path.join(outdir, f"{coll}-breakdown.png")
            fig.savefig(path, dpi=100)
            plt.close(fig)
            written.append(path)
    return written


def compare(before_path, after_path, out=sys.stdout):
    """Row-by-row table of two runs; returns the rows compared."""
    docs = [load(before_path), load(after_path)]
    times = []
    for d in docs:
        avg = AVG_KEYS[d["config"]["average"]]
        t = {}
        for r in d["rows"]:
            if not r["in_place"]:
                t.setdefault((r["coll"], r["size"], r["contender"], r["kind"]), []).append(r[avg])
        times.append({k: statistics.median(v) for k, v in t.items()})
    before, after = times

    def nccl(t, coll, size):
        v = [x for (c, s, _, kind), x in t.items() if c == coll and s == size and kind == "nccl"]
        return min(v) if v else None

    print(f"# before: {before_path}\n# after:  {after_path}", file=out)
    print(f"# {'coll':<14} {'size(B)':>12} {'contender':<9} {'before(us)':>10} {'after(us)':>10} "
          f"{'after/before':>12} {'nccl before':>11} {'nccl after':>10}", file=out)
    n = 0
    for key in sorted(k for k in after if k in before and k[3] == "dmaccl"):
        coll, size, name, _ = key
        nb, na = nccl(before, coll, size), nccl(after, coll, size)
        fmt = lambda v: f"{v:.2f}" if v is not None else "-"
        print(f"  {coll:<14} {size:>12} {name:<9} {before[key]:>10.2f} {after[key]:>10.2f} "
              f"{after[key] / before[key]:>11.3f}x {fmt(nb):>11} {fmt(na):>10}", file=out)
        n += 1
    return n


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", help="dmaccl-perf -J output")
    ap.add_argument("-o", "--outdir", default="plots", help="where the PNGs go (default plots)")
    ap.add_argument("--title", default="", help="title prefix")
    ap.add_argument("--check", action="store_true", help="only validate the files")
    ap.add_argument("--compare", action="store_true",
                    help="two files, before and after: a row-by-row time table")
    a = ap.parse_args(argv)
    try:
        if a.compare:
            if len(a.files) != 2:
                raise SchemaError("--compare takes two files: before.json after.json")
            compare(*a.files)
            return 0
        if a.check:
            for p in a.files:
                with open(p) as f:
                    n = check(json.load(f), p)
                print(f"{p}: {n} rows, schema {SCHEMA} OK")
            return 0
        for path in plot(a.files, a.outdir, a.title):
            print(path)
        return 0
    except (SchemaError, json.JSONDecodeError, OSError) as e:
        print(f"plot.py: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
