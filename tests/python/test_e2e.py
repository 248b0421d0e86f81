"""The end-to-end inference benchmark (bench/e2e) on the CPU: gloo and
dmaccl's host executor, tiny shapes, two ranks.

- The whole run (`run.py --device cpu`): every expected row is there, dmaccl's
  outputs agree with gloo's, every variant agrees with the base variant (ar,
  agrs), and the derived columns are filled.
- The paths the CPU run cannot reach because they only run in CUDA graphs:
  the fixed-capacity AlltoAll dispatch, checked against the exact one, and
  sp-overlap with more chunks, against ar.
"""

import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch.distributed")

from ranks import ROOT, run_ranks  # noqa: E402

E2E = os.path.join(ROOT, "bench", "e2e")
TOL = 2e-2  # bf16: max |x - ref| / max |ref|


def test_cpu_run(tmp_path):
    import dmaccl

    env = dict(os.environ)  # the ranks import the package this test imported
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (os.path.dirname(os.path.dirname(dmaccl.__file__)),
                    env.get("PYTHONPATH")) if p)
    cmd = [sys.executable, os.path.join(E2E, "run.py"), "--device", "cpu", "--out",
           str(tmp_path), "--steps", "3", "--warmup", "1", "--prefill-reps", "2"]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    with open(tmp_path / "e2e.json") as f:
        data = json.load(f)
    assert data["meta"]["reference"] == "gloo"
    rows = data["rows"]
    backends = ("gloo", "dmaccl", "none")
    want = {("dense", "tiny", v, b, n) for v in ("ar", "sp", "sp-overlap") for b in backends
            for n in (1, 4)}
    want |= {("prefill", "tiny", v, b, 1) for v in ("ar", "sp", "sp-overlap") for b in backends}
    want |= {("moe", "tiny-moe", v, b, n) for v in ("agrs", "a2a", "agrs-tbo", "a2a-tbo")
             for b in backends for n in (1, 4)}
    got = [(r["mode"], r["model"], r["variant"], r["backend"], r["batch"]) for r in rows]
    assert sorted(got) == sorted(want)
    for r in rows:
        what = f"{r['mode']} {r['variant']} {r['backend']} batch {r['batch']}"
        if r["variant"].endswith("-tbo") and r["batch"] == 1:
            assert r["status"].startswith("skipped: two micro-batches"), what
            continue
        assert r["status"] == "ok", what
        assert 0 < r["p50_us"] <= r["p99_us"] and r["tok_s"] > 0, what
        assert r["joules"] is None, what  # no GPU, no NVML
        if r["backend"] == "none":
            continue
        assert r["comm_share"] is not None, what
        assert r["check"] == ("reference" if r["backend"] == "gloo" else "ok"), what
        assert r["rel_diff"] <= TOL, what
        if r["variant"] not in ("ar", "agrs"):
            assert r["rel_diff_base"] is not None and r["rel_diff_base"] <= TOL, what


def paths_body(uid, rank, n):
    sys.path.insert(0, E2E)
    import dmaccl
    from comms import DmacclComm
    from dense import DENSE_MODELS, DenseModel, DenseStep
    from measure import Streams
    from moe import MOE_MODELS, MoeModel, MoeStep

    cpu = torch.device("cpu")
    comm = DmacclComm(dmaccl.Communicator(unique_id=uid, rank=rank, world_size=n,
                                          executor="host"))
    st = Streams(cpu)

    def rel(a, b):
        return ((a.float() - b.float()).abs().max() / b.float().abs().max()).item()

    def run(step):
        step()
        return step.output().clone()

    m = MoeModel(MOE_MODELS["tiny-moe"], 2, n, rank, torch.bfloat16, cpu, seed=3)
    x0 = torch.randn(6, m.cfg.hidden, generator=torch.Generator().manual_seed(rank))
    x0 = x0.to(torch.bfloat16)
    ref = run(MoeStep(m, comm, st, "agrs", x0, padded=False))
    for variant in ("a2a", "a2a-tbo"):
        exact = run(MoeStep(m, comm, st, variant, x0, padded=False))
        padded = run(MoeStep(m, comm, st, variant, x0, padded=True))
        assert rel(padded, exact) <= TOL and rel(padded, ref) <= TOL, variant
    d = DenseModel(DENSE_MODELS["tiny"], 2, n, rank, torch.bfloat16, cpu, seed=3)
    ids = torch.randint(0, d.cfg.vocab, (16,), generator=torch.Generator().manual_seed(9))
    caches = d.make_caches(16, 8, 1, seed=3)
    ar = run(DenseStep(d, comm, st, "ar", 16, 1, ids, caches, 8))
    overlap = DenseStep(d, comm, st, "sp-overlap", 16, 4, ids, caches, 8)
    assert overlap.c == 4
    assert rel(run(overlap), ar) <= TOL
    comm.comm.destroy()


def test_graph_paths_on_cpu():
    run_ranks(paths_body, 2, timeout=120)


def test_reference_per_mode():
    """A graph row is checked against the reference's graph row, an eager row
    against its eager row (the graph form of MoE a2a rounds otherwise), and
    a graph row falls back to the eager reference where no graph row ran."""
    sys.path.insert(0, E2E)
    try:
        from worker import Rank
    finally:
        sys.path.remove(E2E)
    refs = {("a2a", False): "eager", ("a2a", True): "graph", ("agrs", False): "agrs eager"}
    assert Rank._ref(refs, "a2a", False) == "eager"
    assert Rank._ref(refs, "a2a", True) == "graph"
    assert Rank._ref(refs, "agrs", True) == "agrs eager"
    assert Rank._ref(refs, "sp", False) is None
