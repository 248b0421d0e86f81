"""bench/e2e's results without a run and without torch: the ratio table
(each row's p50 over the reference backend's row of its shape and run) and
merge.py, which puts the parts of a grid back together. Rows are compared
within their own run only; a later part's row replaces an earlier one,
except a skip after a measurement; a replaced row still serves its own
run; files that are not one run's e2e.json, and parts that are not
comparable, are refused with the file and the field named, and nothing is
written."""

import json
import os
import sys

import pytest

E2E = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                   "bench", "e2e")
_path = sys.path[:]
sys.path.insert(0, E2E)
import merge  # noqa: E402
import results  # noqa: E402

sys.path[:] = _path


def part(rows, args=None, **meta):
    """A run's e2e.json content: reference nccl, 2 ranks, one GPU kind."""
    m = dict(device="cuda", ranks=2, dtype="bf16", reference="nccl", gpu="H200", gpus=2,
             torch="2.11", nccl="2.28.9", dmaccl_library=200,
             args=dict(layers=None, moe_layers=None, chunks=2, seed=0, tol=0.02, steps=200))
    m["args"].update(args or {})
    m.update(meta)
    return {"meta": m, "notes": [], "rows": [dict(r) for r in rows]}


def row(backend, p50, batch=1, variant="ar", status="ok"):
    return dict(mode="dense", model="llama3-8b", variant=variant, batch=batch, kv=1024,
                backend=backend, graph=backend.endswith("-graph"), status=status,
                p50_us=p50, p99_us=p50, tok_s=batch / p50 * 1e6, joules=None)


def dump(tmp_path, *datas):
    paths = []
    for i, data in enumerate(datas):
        paths.append(str(tmp_path / f"part{i}.json"))
        with open(paths[-1], "w") as f:
            json.dump(data, f)
    return paths


def merged(tmp_path, *datas, out="m"):
    merge.main(["--out", str(tmp_path / out), *dump(tmp_path, *datas)])
    with open(tmp_path / out / "e2e.json") as f:
        return json.load(f)


def ratio_table(data):
    """{(batch, backend): ratio text} of a merged file's rows."""
    lines = results.ratios(data["rows"], "nccl", data.get("replaced", ())).splitlines()[3:]
    return {(ln.split()[3], ln.split()[5]): ln.split()[-1] for ln in lines}


def test_ratios():
    """Eager rows against the eager reference, graph rows against its graph
    form, nccl-ce too; the reference's and none's own rows are left out; a
    reference row that did not run counts as none."""
    rows = [row("nccl", 200.0), row("nccl-graph", 100.0), row("dmaccl", 150.0),
            row("dmaccl-graph", 90.0), row("nccl-ce", 250.0), row("nccl-ce-graph", 120.0),
            row("none-graph", 80.0), row("nccl-graph", 1.0, batch=8, status="skipped: oom"),
            row("dmaccl-graph", 50.0, batch=8)]
    lines = results.ratios(rows, "nccl").splitlines()
    assert lines[0].startswith("p50 step / nccl's")
    got = {(ln.split()[3], ln.split()[5]): ln.split()[-1] for ln in lines[3:]}
    assert got == {("1", "dmaccl"): "0.750", ("1", "dmaccl-graph"): "0.900",
                   ("1", "nccl-ce"): "1.250", ("1", "nccl-ce-graph"): "1.200",
                   ("8", "dmaccl-graph"): "-"}


def test_merge(tmp_path):
    a = part([row("nccl-graph", 100.0), row("dmaccl-graph", 90.0), row("none-graph", 80.0),
              row("nccl-graph", 200.0, batch=8), row("dmaccl-graph", 150.0, batch=8),
              row("nccl-ce", 120.0, batch=8), row("none", 85.0),
              row("dmaccl-graph", 60.0, batch=16), row("nccl-graph", 70.0, batch=16)])
    b = part([row("dmaccl-graph", 95.0, batch=8),  # again, later: replaces a's
              row("nccl-graph", 65.0, batch=16),  # a's reference of a's dmaccl 16, again
              row("nccl-graph", 400.0, batch=32), row("dmaccl-graph", 300.0, batch=32),
              row("none-graph", 250.0, batch=32),
              row("dmaccl-graph", 1.0, batch=64, status="skipped: out of memory"),
              row("nccl-ce", 130.0),  # its none row is in a only
              row("none-graph", 75.0),  # a's none row measured again
              row("dmaccl-graph", 1.0, batch=16, status="skipped: out of memory")])
    data = merged(tmp_path, a, b)
    rows = data["rows"]
    assert [p["file"] for p in data["meta"]["parts"]] == [str(tmp_path / "part0.json"),
                                                          str(tmp_path / "part1.json")]
    assert data["meta"]["reference"] == "nccl" and data["meta"]["ranks"] == 2
    got = {(r["backend"], r["batch"]): r for r in rows}
    assert len(rows) == len(got) == 14
    assert got[("dmaccl-graph", 8)]["p50_us"] == 95.0 and got[("dmaccl-graph", 8)]["part"] == 1
    assert got[("nccl-graph", 8)]["part"] == 0
    # a later skip does not undo a measurement
    assert got[("dmaccl-graph", 16)]["status"] == "ok" and got[("dmaccl-graph", 16)]["part"] == 0
    assert {(r["backend"], r["batch"], r["part"]) for r in data["replaced"]} == \
        {("dmaccl-graph", 8, 0), ("none-graph", 1, 0), ("dmaccl-graph", 16, 1),
         ("nccl-graph", 16, 0)}
    # communication against the same run's none row only, a replaced one too
    assert got[("dmaccl-graph", 1)]["comm_us"] == 10.0  # a's none-graph (80), replaced by b's
    assert got[("nccl-graph", 1)]["comm_us"] == 20.0
    assert got[("dmaccl-graph", 32)]["comm_us"] == 50.0
    assert got[("dmaccl-graph", 8)]["comm_us"] is None  # no none row of batch 8 in b
    assert got[("nccl-ce", 1)]["comm_us"] is None  # a's eager none, b's nccl-ce
    assert ratio_table(data) == {
        ("1", "dmaccl-graph"): "0.900", ("8", "dmaccl-graph"): "-",  # b has no nccl-graph 8
        ("8", "nccl-ce"): "-", ("1", "nccl-ce"): "-",  # no eager nccl row anywhere
        # a's dmaccl 16 against a's reference, replaced by b's in the table
        ("16", "dmaccl-graph"): f"{60.0 / 70.0:.3f}", ("32", "dmaccl-graph"): "0.750"}
    with open(tmp_path / "m" / "e2e.txt") as f:
        text = f.read()
    assert "p50 step / nccl's" in text and f"{60.0 / 70.0:.3f}" in text
    # the replaced row's reference in the later part: the ratio is there again
    b["rows"].append(row("nccl-graph", 190.0, batch=8))
    assert ratio_table(merged(tmp_path, a, b, out="m2"))[("8", "dmaccl-graph")] == \
        f"{95.0 / 190.0:.3f}"


BAD = {
    "ranks": (part([row("nccl-graph", 1.0)], ranks=4), "differ in ranks (4 against 2)"),
    "chunks": (part([row("nccl-graph", 1.0)], args=dict(chunks=4)), "differ in chunks"),
    "seed": (part([row("nccl-graph", 1.0)], args=dict(seed=1)), "differ in seed"),
    "tol": (part([row("nccl-graph", 1.0)], args=dict(tol=0.1)), "differ in tol"),
    "moe_layers": (part([row("nccl-graph", 1.0)], args=dict(moe_layers=2)),
                   "differ in moe_layers"),
    "no-args": (dict(part([row("nccl-graph", 1.0)]), meta={"ranks": 2}), "has no meta.args"),
    "args-type": (dict(part([]), meta=dict(part([])["meta"], args=[1])),
                  "meta.args is not an object"),
    "merged-row": (part([dict(row("nccl-graph", 1.0), part=0)]), "is a merged file"),
    "notes": (dict(part([]), notes="x"), "is not an e2e.json"),
    "joules": (part([dict(row("nccl-graph", 1.0), joules="2")]), "row 0 has no joules number"),
    "no-joules": (part([{k: v for k, v in row("nccl-graph", 1.0).items() if k != "joules"}]),
                  "row 0 has no joules"),
    "status": (part([dict(row("nccl-graph", 1.0), status=None)]), "row 0 has no status text"),
    "p50": (part([dict(row("nccl-graph", 1.0), p50_us=0)]), "row 0 has no p50_us"),
    "prompt": (part([dict(row("nccl", 1.0), mode="prefill")]), "row 0 has no prompt"),
    "gpu": (part([row("nccl-graph", 1.0)], gpu="H100"), "differ in gpu"),
    "layers": (part([row("nccl-graph", 1.0)], args=dict(layers=8)), "differ in layers"),
    "interleave": (part([row("nccl-graph", 1.0)], args=dict(interleave=True)),
                   "differ in interleave (True against False)"),
    "merged": (dict(part([row("nccl-graph", 1.0)]), meta=dict(part([])["meta"], parts=[])),
               "is a merged file"),
    "missing": (None, "cannot read"),
    "not-json": ("{rows", "is not JSON"),
    "not-e2e": ({"rows": []}, "is not an e2e.json"),
    "row": (part([{"mode": "dense"}]), "row 0 has no model"),
    "measure": (part([dict(row("nccl-graph", 1.0), p99_us=None)]), "row 0 has no p99_us"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_merge_refuses(tmp_path, case):
    """A message naming the file and what is wrong; nothing written."""
    content, want = BAD[case]
    good = tmp_path / "good.json"
    with open(good, "w") as f:
        json.dump(part([row("nccl-graph", 100.0)]), f)
    bad = tmp_path / "bad.json"
    if content is not None:
        with open(bad, "w") as f:
            f.write(content if isinstance(content, str) else json.dumps(content))
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as e:
        merge.main(["--out", str(out), str(good), str(bad)])
    msg = str(e.value)
    assert str(bad) in msg and want in msg, msg
    assert not out.exists()


def test_merge_interleave_default(tmp_path):
    """A run from before --interleave (no such option in meta.args) merges
    with a run that did not interleave, and not with one that did."""
    old = part([row("nccl-graph", 100.0)])
    new = part([row("dmaccl-graph", 90.0)], args=dict(interleave=False))
    assert len(merged(tmp_path, old, new)["rows"]) == 2
    with pytest.raises(SystemExit) as e:
        merged(tmp_path, old, part([row("dmaccl-graph", 90.0)], args=dict(interleave=True)),
               out="m2")
    assert "differ in interleave" in str(e.value)


def test_merge_refuses_paths(tmp_path):
    """The same file twice, or --out onto an input: refused, the input kept."""
    p0, p1 = dump(tmp_path, part([row("nccl-graph", 100.0)]), part([row("dmaccl-graph", 90.0)]))
    with pytest.raises(SystemExit) as e:
        merge.main(["--out", str(tmp_path / "m"), p0, p1, str(tmp_path / "." / "part0.json")])
    assert "is given twice" in str(e.value)
    os.makedirs(tmp_path / "run")
    own = str(tmp_path / "run" / "e2e.json")
    with open(p0) as f, open(own, "w") as g:
        g.write(f.read())
    with pytest.raises(SystemExit) as e:
        merge.main(["--out", str(tmp_path / "run"), own, p1])
    assert "would overwrite its input" in str(e.value)
    with open(own) as f:
        assert "parts" not in json.load(f)["meta"]


def test_write_makes_text_first(tmp_path):
    """A row the table cannot print: write() raises before any file exists."""
    bad = dict(row("nccl-graph", 100.0), p99_us="x")
    with pytest.raises(ValueError):
        results.write(str(tmp_path / "w"), {"reference": "nccl"}, [bad], [])
    assert not (tmp_path / "w").exists()
