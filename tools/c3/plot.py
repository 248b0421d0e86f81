#!/usr/bin/env python3
"""Plots dmaccl-c3 JSON (-J) as SVG, or checks it. Standard library only.

    plot.py [-o DIR] c3.json      writes DIR/c3.svg (default: beside the JSON)
    plot.py --check c3.json       validates the schema and every metric

The plot: realized fraction of the ideal gain per scenario, contenders side
by side (NCCL settings in greys, dmaccl's algorithms in colours, the
library's default outlined), the mean per contender at the right. A
contender without a row in a scenario ("skipped": e.g. an algorithm that the
collective does not take) has no bar there; its mean covers its rows.
--check recomputes ideal, realized, fraction and the slowdowns from the
times in each row and fails on any mismatch, and checks that skipped
contenders are known, have no row and give a reason.
"""
import argparse
import json
import os
import sys

SCHEMA = "dmaccl-c3/1"
# the collectives a scenario may name: the tools' table (tools/common/colls.h)
# without count arrays or Send/Recv (c3CollAccepted)
COLLS = ("allgather", "alltoall", "allreduce", "reducescatter", "broadcast", "reduce", "gather",
         "scatter")
ROW_NUM = ["gemm_us", "comm_us", "both_us", "gemm_together_us", "comm_together_us",
           "ideal", "realized", "fraction", "gemm_slowdown", "comm_slowdown", "joules"]


def fail(msg):
    print(f"plot.py: {msg}", file=sys.stderr)
    sys.exit(1)


def close(a, b):
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= 1e-4 * max(1.0, abs(a), abs(b))


def check(doc, path):
    if doc.get("schema") != SCHEMA:
        fail(f"{path}: schema is {doc.get('schema')!r}, expected {SCHEMA!r}")
    names = [c["name"] for c in doc["contenders"]]
    if not names or len(set(names)) != len(names):
        fail(f"{path}: contender names missing or repeated")
    nrows = 0
    for s in doc["scenarios"]:
        for key in ("name", "m", "n", "k", "coll", "size", "gemms", "colls", "rows"):
            if key not in s:
                fail(f"{path}: scenario without {key!r}")
        if s["coll"] not in COLLS:
            fail(f"{path}: {s['name']}: collective {s['coll']!r}")
        # contenders without a row and why (c3Lacks); absent in older files
        ran = {r.get("contender") for r in s["rows"]}
        for k in s.get("skipped", []):
            if k.get("contender") not in names or k["contender"] in ran:
                fail(f"{path}: {s['name']}: skipped contender {k.get('contender')!r} is unknown "
                     "or has a row")
            if not isinstance(k.get("why"), str) or not k["why"]:
                fail(f"{path}: {s['name']}/{k['contender']}: skipped without a reason")
        for r in s["rows"]:
            where = f"{path}: {s['name']}/{r.get('contender')}"
            if r.get("contender") not in names:
                fail(f"{where}: unknown contender")
            for key in ROW_NUM:
                if key not in r or not (r[key] is None or isinstance(r[key], (int, float))):
                    fail(f"{where}: {key} missing or not a number")
            if not isinstance(r.get("wrong"), int):
                fail(f"{where}: wrong is not an integer")
            g, c, b = r["gemm_us"], r["comm_us"], r["both_us"]
            if None in (g, c, b) or min(g, c, b) <= 0:
                fail(f"{where}: times must be positive")
            ideal = (g + c) / max(g, c)
            realized = (g + c) / b
            frac = (realized - 1) / (ideal - 1) if ideal - 1 >= 0.01 else None
            want = {"ideal": ideal, "realized": realized, "fraction": frac,
                    "gemm_slowdown": r["gemm_together_us"] / g,
                    "comm_slowdown": r["comm_together_us"] / c}
            for key, v in want.items():
                if not close(r[key], v):
                    fail(f"{where}: {key} is {r[key]}, the times give {v}")
            if b + 1e-6 < max(r["gemm_together_us"], r["comm_together_us"]) * 0.999:
                fail(f"{where}: both_us is shorter than one of its sides")
            if r["wrong"] > 0:
                fail(f"{where}: {r['wrong']} wrong elements")
            nrows += 1
    if nrows == 0:
        fail(f"{path}: no rows")
    return nrows


GREYS = ["#4d4d4d", "#7f7f7f", "#a6a6a6", "#cccccc"]
COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#17becf", "#bcbd22", "#393b79", "#637939", "#8c6d31"]


def esc(t):
    return (str(t).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def plot(doc, out):
    contenders = [c["name"] for c in doc["contenders"]]
    kinds = {c["name"]: c["kind"] for c in doc["contenders"]}
    default = doc.get("default_contender", "")
    colour, ng, nd = {}, 0, 0
    for name in contenders:
        if kinds[name] == "nccl":
            colour[name] = GREYS[ng % len(GREYS)]
            ng += 1
        else:
            colour[name] = COLOURS[nd % len(COLOURS)]
            nd += 1
    groups = [s["name"] for s in doc["scenarios"]] + ["mean"]
    value = {}
    for s in doc["scenarios"]:
        for r in s["rows"]:
            value[(s["name"], r["contender"])] = r["fraction"]
    for name in contenders:
        v = [value[(s, name)] for s in groups[:-1] if value.get((s, name)) is not None]
        value[("mean", name)] = sum(v) / len(v) if v else None
    lo, hi = -0.25, 1.25
    bw = 7
    gw = bw * len(contenders) + 14
    left, top, ph = 60, 50, 320
    width = left + gw * len(groups) + 230
    height = top + ph + 150

    def y(v):
        v = min(max(v, lo), hi)
        return top + ph * (hi - v) / (hi - lo)

    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="20" font-size="14">Realized fraction of the ideal gain (ConCCL), '
           f'{esc(doc["nranks"])} x {esc(doc["gpu"])}, NCCL {esc(doc["nccl_version"])}</text>',
           f'<text x="{left}" y="36" fill="#555">{esc(doc["command"])[:160]}</text>']
    for t in (-0.25, 0, 0.25, 0.5, 0.75, 0.85, 1.0, 1.25):
        dash = ' stroke-dasharray="4,3"' if t == 0.85 else ""
        svg.append(f'<line x1="{left}" x2="{left + gw * len(groups)}" y1="{y(t):.1f}" '
                   f'y2="{y(t):.1f}" stroke="{"#000" if t == 0 else "#ddd"}"{dash}/>')
        svg.append(f'<text x="{left - 6}" y="{y(t) + 4:.1f}" text-anchor="end">{t:.0%}</text>')
    for gi, g in enumerate(groups):
        x0 = left + gi * gw + 7
        for ci, name in enumerate(contenders):
            v = value.get((g, name))
            if v is None:
                continue
            x = x0 + ci * bw
            y0, y1 = sorted((y(0), y(v)))
            stroke = ' stroke="black" stroke-width="1.2"' if name == default else ""
            svg.append(f'<rect x="{x}" y="{y0:.1f}" width="{bw - 1}" height="{max(y1 - y0, 0.5):.1f}" '
                       f'fill="{colour[name]}"{stroke}><title>{esc(g)} {esc(name)}: {v:.0%}'
                       f'</title></rect>')
        cx = x0 + bw * len(contenders) / 2
        svg.append(f'<text transform="translate({cx:.1f},{top + ph + 10}) rotate(45)" '
                   f'font-weight="{"bold" if g == "mean" else "normal"}">{esc(g)}</text>')
    lx = left + gw * len(groups) + 20
    for ci, name in enumerate(contenders):
        ly = top + 14 * ci
        stroke = ' stroke="black"' if name == default else ""
        svg.append(f'<rect x="{lx}" y="{ly}" width="10" height="10" fill="{colour[name]}"{stroke}/>')
        mean = value.get(("mean", name))
        label = f"{name}{' (default)' if name == default else ''}: " + \
            ("-" if mean is None else f"{mean:.0%}")
        svg.append(f'<text x="{lx + 14}" y="{ly + 9}">{esc(label)}</text>')
    svg.append("</svg>")
    with open(out, "w") as f:
        f.write("\n".join(svg) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json")
    ap.add_argument("-o", dest="outdir", default=None)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    try:
        with open(a.json) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{a.json}: {e}")
    try:
        n = check(doc, a.json)
    except (KeyError, TypeError, ZeroDivisionError) as e:
        fail(f"{a.json}: malformed: {e!r}")
    if a.check:
        print(f"{a.json}: {n} rows, schema and metrics consistent")
        return
    outdir = a.outdir or os.path.dirname(os.path.abspath(a.json))
    out = os.path.join(outdir, os.path.splitext(os.path.basename(a.json))[0] + ".svg")
    plot(doc, out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
