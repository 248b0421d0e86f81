"""The results of bench/e2e runs: the table, each row's ratio to the
reference, the derived communication columns, the files and the plots.
No torch here: merge.py uses it on a machine without it."""

import json
import os


def row_key(r, backend):
    return (r["mode"], r["model"], r["variant"], r["batch"], r.get("kv"), r.get("prompt"),
            backend)


def measured(rows):
    """The rows that ran, by (part, row_key): a merged file (merge.py) keeps
    each row's run as "part", and a row is compared only with rows of its
    own run."""
    return {(r.get("part"), row_key(r, r["backend"])): r for r in rows if r["status"] == "ok"}


def derive(rows, replaced=()):
    """comm_share and comm_us of each row: against the "none" row (eager or
    graph, as the row) of the same shape and run (`replaced`: rows a later
    part measured again, still their own run's comparison)."""
    ok = measured(list(replaced) + list(rows))
    for r in rows:
        if r["status"] != "ok" or r["backend"].startswith("none"):
            continue
        z = ok.get((r.get("part"), row_key(r, "none-graph" if r["graph"] else "none")))
        r["comm_us"] = r["p50_us"] - z["p50_us"] if z else None
        r["comm_share"] = r["comm_us"] / r["p50_us"] if z else None


def ratios(rows, reference, replaced=()):
    """Each measured row's p50 step over the reference backend's (`reference`
    eager, `reference`-graph in graphs) of the same shape and run, as a
    table: the numbers the findings quote. Rows with no reference row (it was
    skipped, ran in another part, or has no graph form: gloo) show "-"."""
    ok = measured(list(replaced) + list(rows))
    head = (f"{'mode':7} {'model':14} {'variant':10} {'batch':>5} {'kv/pr':>5} {'backend':17} "
            f"{'p50 us':>9} {'ref us':>9} {'ratio':>6}")
    lines = [f"p50 step / {reference}'s (eager) or {reference}-graph's (in graphs), same run; "
             "below 1: faster", head, "-" * len(head)]
    for r in rows:
        if r["status"] != "ok" or r["backend"] in ("none", "none-graph", reference,
                                                     reference + "-graph"):
            continue
        ref = ok.get((r.get("part"), row_key(r, reference + ("-graph" if r["graph"] else ""))))
        lines.append(f"{r['mode']:7} {r['model']:14} {r['variant']:10} {r['batch']:>5} "
                     f"{fmt(r.get('kv') or r.get('prompt'), 'd'):>5} {r['backend']:17} "
                     f"{r['p50_us']:9.1f} {fmt(ref and ref['p50_us'], '9.1f'):>9} "
                     f"{fmt(ref and r['p50_us'] / ref['p50_us'], '6.3f'):>6}")
    return "\n".join(lines)


def fmt(v, spec):
    return format(v, spec) if v is not None else "-"


def table(rows):
    head = (f"{'mode':7} {'model':14} {'variant':10} {'backend':13} {'batch':>5} {'kv/pr':>5} "
            f"{'p50 us':>9} {'p99 us':>9} {'tok/s':>9} {'comm':>5} {'J/step':>7} "
            f"{'rel diff':>8} {'exact':>7} check")
    lines = [head, "-" * len(head)]
    for r in rows:
        lead = (f"{r['mode']:7} {r['model']:14} {r['variant']:10} {r['backend']:13} "
                f"{r['batch']:>5} {fmt(r.get('kv') or r.get('prompt'), 'd'):>5} ")
        if r["status"] != "ok":
            lines.append(lead + r["status"])
            continue
        share = r.get("comm_share")
        share = f"{share * 100:4.0f}%" if share is not None else "-"
        lines.append(lead + f"{r['p50_us']:9.1f} {r['p99_us']:9.1f} {r['tok_s']:9.0f} "
                     f"{share:>5} "
                     f"{fmt(r['joules'], '7.3f'):>7} {fmt(r.get('rel_diff'), '8.1e'):>8} "
                     f"{fmt(r.get('rel_exact'), '7.1e'):>7} {r.get('check', '-')}")
    return "\n".join(lines)


def write(out, meta, rows, notes, replaced=()):
    """e2e.json and e2e.txt in `out`, every text made before any file is
    opened; `replaced` (merge.py) goes into e2e.json as such."""
    derive(rows, replaced)
    doc = {"meta": meta, "notes": notes, "rows": rows}
    if replaced:
        doc["replaced"] = list(replaced)
    text = json.dumps(doc, indent=1)
    txt = table(rows) + "\n"
    if meta.get("reference"):
        txt += "\n" + ratios(rows, meta["reference"], replaced) + "\n"
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "e2e.json"), "w") as f:
        f.write(text)
    with open(os.path.join(out, "e2e.txt"), "w") as f:
        f.write(txt)


def plot(out, rows):
    """p50 step time and communication share against batch (tokens for MoE),
    one figure per mode, model and KV length, one column per variant."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plots skipped: matplotlib is not importable")
        return
    groups = {}
    for r in rows:
        if r["status"] == "ok":
            groups.setdefault((r["mode"], r["model"], r.get("kv")), []).append(r)
    for (mode, model, kv), rs in groups.items():
        variants = list(dict.fromkeys(r["variant"] for r in rs))
        fig, axes = plt.subplots(2, len(variants), figsize=(4.5 * len(variants), 7),
                                 squeeze=False)
        for col, v in enumerate(variants):
            for backend in dict.fromkeys(r["backend"] for r in rs):
                pts = sorted(((r["prompt"] if mode == "prefill" else r["batch"], r)
                              for r in rs if r["variant"] == v and r["backend"] == backend),
                             key=lambda p: p[0])
                xs = [x for x, _ in pts]
                axes[0][col].plot(xs, [r["p50_us"] for _, r in pts], marker="o", label=backend)
                share = [(x, r["comm_share"]) for x, r in pts if r.get("comm_share") is not None]
                if share:
                    axes[1][col].plot(*zip(*share), marker="o", label=backend)
            axes[0][col].set_title(f"{model} {mode} {v}" + (f" kv {kv}" if kv else ""))
            for ax, label in ((axes[0][col], "p50 step (us)"), (axes[1][col], "comm share")):
                ax.set_xscale("log", base=2)
                ax.set_xlabel({"moe": "tokens per rank", "prefill": "prompt tokens"}
                              .get(mode, "batch"))
                ax.set_ylabel(label)
                ax.grid(True, alpha=0.3)
            axes[0][col].set_yscale("log")
            axes[0][col].legend(fontsize=7)
        fig.tight_layout()
        name = f"e2e-{mode}-{model}" + (f"-kv{kv}" if kv else "") + ".png"
        fig.savefig(os.path.join(out, name), dpi=110)
        plt.close(fig)
        print(f"plot: {os.path.join(out, name)}")
