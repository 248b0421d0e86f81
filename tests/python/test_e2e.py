"""The end-to-end inference benchmark (bench/e2e) on the CPU: gloo and
dmaccl's host executor, tiny shapes, two ranks.

- The whole run (`run.py --device cpu`): every expected row is there, dmaccl's
  outputs agree with gloo's, every variant agrees with the base variant (ar,
  agrs), and the derived columns are filled.
- The same with four ranks: gloo and dmaccl both reduce bf16 in fp32 with
  one rounding, so dmaccl gives the exact result's bits.
- `--interleave` (the backends of a row timed together in rounds): the same
  rows, marked, measured and checked.
- The paths the CPU run cannot reach because they only run in CUDA graphs:
  the fixed-capacity AlltoAll dispatch, checked against the exact one,
  sp-overlap with more chunks, against ar, and sp-notify's arrival words
  (one wait per peer and gather, the words stored; a backend without words
  runs the same GEMMs after its gather and gives the same bytes).
- The numerical control (fp32 communication, the rule in worker.verdict) on
  four virtual ranks whose reference rounds as NCCL's ring does.
- The ratio table at the end of e2e.txt (each row's p50 over its run's
  reference row) on a real run; merge.py and the table's rules:
  test_e2e_merge.py.
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


def cpu_run(out, *extra):
    """run.py --device cpu, quickly; its e2e.json."""
    import dmaccl

    env = dict(os.environ)  # the ranks import the package this test imported
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (os.path.dirname(os.path.dirname(dmaccl.__file__)),
                    env.get("PYTHONPATH")) if p)
    cmd = [sys.executable, os.path.join(E2E, "run.py"), "--device", "cpu", "--out",
           str(out), "--steps", "3", "--warmup", "1", "--prefill-reps", "2", *extra]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    with open(out / "e2e.json") as f:
        data = json.load(f)
    assert data["meta"]["reference"] == "gloo"
    assert "k = 2" in data["meta"]["exact"]
    return data


def test_cpu_run(tmp_path):
    rows = cpu_run(tmp_path)["rows"]
    backends = ("gloo", "dmaccl", "none")
    dense = ("ar", "sp", "sp-overlap")  # the default variants
    want = {("dense", "tiny", v, b, n) for v in dense for b in backends for n in (1, 4)}
    want |= {("prefill", "tiny", v, b, 1) for v in dense for b in backends}
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
        assert "interleaved" not in r, what
        assert 0 < r["p50_us"] <= r["p99_us"] and r["tok_s"] > 0, what
        assert r["joules"] is None, what  # no GPU, no NVML
        if r["backend"] == "none":
            continue
        assert r["comm_share"] is not None, what
        assert r["check"] == ("reference" if r["backend"] == "gloo" else "ok"), what
        assert r["rel_diff"] <= TOL, what
        # gloo sums bf16 in fp32 and rounds once: the control gives its bits
        assert (r["rel_exact"] == 0.0) if r["backend"] == "gloo" else (r["rel_exact"] <= TOL), what
        if r["variant"] not in ("ar", "agrs"):
            assert r["rel_diff_base"] is not None and r["rel_diff_base"] <= TOL, what
    # e2e.txt ends with every dmaccl row's ratio to gloo's row of its shape
    with open(tmp_path / "e2e.txt") as f:
        text = f.read()
    ratios = text[text.index("p50 step / gloo's"):].splitlines()[3:]
    gloo = {(r["mode"], r["variant"], r["batch"]): r["p50_us"] for r in rows
            if r["backend"] == "gloo" and r["status"] == "ok"}
    mine = [r for r in rows if r["backend"] == "dmaccl" and r["status"] == "ok"]
    assert len(ratios) == len(mine)
    for line, r in zip(ratios, mine):
        want = r["p50_us"] / gloo[(r["mode"], r["variant"], r["batch"])]
        assert line.split()[:4] == [r["mode"], r["model"], r["variant"], str(r["batch"])]
        assert line.split()[-1] == f"{want:.3f}", line


def test_cpu_run_zero_policy(tmp_path):
    """The dmaccl-zero backend (CTA policy zero) runs and matches the reference."""
    rows = cpu_run(tmp_path, "--backends", "gloo,dmaccl-zero", "--modes", "dense,moe",
                   "--batches", "4", "--tokens", "4")["rows"]
    zero = [r for r in rows if r["backend"] == "dmaccl-zero" and r["status"] == "ok"]
    assert len(zero) == 3 + 4  # dense ar, sp, sp-overlap; moe agrs, a2a and their -tbo
    for r in zero:
        assert r["check"] == "ok" and r["rel_diff"] <= TOL, f"{r['mode']} {r['variant']}"


def test_cpu_run_interleaved(tmp_path):
    """--interleave: the same rows as one after the other, each marked as
    timed together with its shape's other backends, measured and checked
    against the reference (whose row is finished first)."""
    rows = cpu_run(tmp_path, "--interleave", "--batches", "4", "--tokens", "1,4")["rows"]
    ok = [r for r in rows if r["status"] == "ok"]
    # gloo, dmaccl, none: dense, prefill, moe variants at 4 tokens, moe agrs and a2a at 1
    assert len(ok) == 3 * (3 + 3 + 4 + 2)
    skipped = [r for r in rows if r["status"] != "ok"]  # -tbo at 1 token, every backend
    assert len(skipped) == 3 * 2
    assert all(r["status"].startswith("skipped: two micro-batches") for r in skipped)
    for r in ok:
        what = f"{r['mode']} {r['variant']} {r['backend']} batch {r['batch']}"
        assert r.get("interleaved") is True, what
        assert 0 < r["p50_us"] <= r["p99_us"] and r["tok_s"] > 0, what
        if r["backend"] == "none":
            continue
        assert r["check"] == ("reference" if r["backend"] == "gloo" else "ok"), what
        assert r["rel_diff"] <= TOL, what
        # the control ran (after the shape's steps were dropped)
        assert (r["rel_exact"] == 0.0) if r["backend"] == "gloo" else (r["rel_exact"] <= TOL), what
        if r["variant"] not in ("ar", "agrs"):
            assert r["rel_diff_base"] is not None and r["rel_diff_base"] <= TOL, what


def test_run_rows_order():
    """--interleave's order on every rank: every backend's step prepared (a
    skipped one not), the rounds timed once over the prepared ones, each
    measured with its own times, all dropped, then checked, the reference
    first; without --interleave one row after the other."""
    sys.path.insert(0, E2E)
    try:
        import worker
    finally:
        sys.path.remove(E2E)
    from types import SimpleNamespace

    log = []

    def fake_rank(interleave):
        r = worker.Rank.__new__(worker.Rank)
        r.args, r.cuda = SimpleNamespace(interleave=interleave), False

        def prepare(rec, b, build, steps, skip):
            log.append(("prepare", b))
            return None if skip else SimpleNamespace(rec=rec, name=b, fn=b)

        r._prepare = prepare
        r._measured = lambda p, times, tokens, e0=None, wall=None: \
            log.append(("measure", p.name, tuple(times), wall is None)) or p.name + "-out"
        r._drop = lambda p: log.append(("drop", p.name))
        r._checked = lambda p, out, build, refs, base: log.append(("check", p.name, out,
                                                                   p.rec.get("interleaved")))
        r.run_row = lambda rec, b, *rest, skip=None: log.append(("row", b, skip))
        return r

    saved = worker.time_rounds
    worker.time_rounds = lambda fns, steps, cuda: (log.append(("rounds", tuple(fns), steps))
                                                   or [[float(i)] * steps for i in range(len(fns))])
    try:
        skip = {"b": "no"}.get
        fake_rank(True).run_rows({}, ["ref", "b", "c"], None, 2, {}, "ar", 1, skip)
        assert log == [("prepare", "ref"), ("prepare", "b"), ("prepare", "c"),
                       ("rounds", ("ref", "c"), 2),
                       ("measure", "ref", (0.0, 0.0), True), ("measure", "c", (1.0, 1.0), True),
                       ("drop", "ref"), ("drop", "c"),
                       ("check", "ref", "ref-out", True), ("check", "c", "c-out", True)]
        log.clear()
        fake_rank(False).run_rows({}, ["ref", "b"], None, 2, {}, "ar", 1, skip)
        assert log == [("row", "ref", None), ("row", "b", "no")]
    finally:
        worker.time_rounds = saved


def test_time_rounds():
    """The rounds of --interleave: each round calls every step once, starting
    one further each round; one time per call, per function."""
    sys.path.insert(0, E2E)
    try:
        from measure import time_rounds
    finally:
        sys.path.remove(E2E)
    calls = []
    fns = [lambda i=i: calls.append(i) for i in range(3)]
    out = time_rounds(fns, 4, False)
    assert calls == [0, 1, 2, 1, 2, 0, 2, 0, 1, 0, 1, 2]
    assert [len(t) for t in out] == [4, 4, 4]
    assert all(t >= 0 for ts in out for t in ts)


def test_cpu_run_4_ranks(tmp_path):
    rows = cpu_run(tmp_path, "--ranks", "4", "--batches", "4", "--tokens", "4",
                   "--dense-variants", "ar,sp,sp-overlap,sp-notify")["rows"]
    checked = [r for r in rows if r["status"] == "ok" and r["backend"] != "none"]
    assert len(checked) == 2 * (4 + 4 + 4)  # gloo and dmaccl: dense, prefill, moe variants
    for r in checked:
        what = f"{r['mode']} {r['variant']} {r['backend']}"
        assert r["check"] == ("reference" if r["backend"] == "gloo" else "ok"), what
        # dmaccl reduces bf16 in fp32 in rank order, rounded once
        # (include/dmaccl.h), as gloo does here: four bf16 values of like
        # size add exactly in fp32, so the order does not matter
        assert r["rel_diff"] == 0.0 and r["rel_exact"] == 0.0, what


def paths_body(uid, rank, n):
    sys.path.insert(0, E2E)
    import dmaccl
    from comms import DmacclComm
    from dense import DENSE_MODELS, DenseModel, DenseStep
    from measure import Streams
    from moe import MOE_MODELS, MoeModel, MoeStep
    from order import rel

    cpu = torch.device("cpu")
    comm = DmacclComm(dmaccl.Communicator(unique_id=uid, rank=rank, world_size=n,
                                          executor="host"))
    st = Streams(cpu)

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


def notify_body(uid, rank, n):
    """sp-notify on the host executor, with its stream order recorded."""
    sys.path.insert(0, E2E)
    import dense
    import dmaccl
    from comms import DmacclComm, NoComm
    from dense import DENSE_MODELS, DenseModel, DenseStep
    from measure import Streams
    from order import rel

    cpu = torch.device("cpu")
    log = []

    class Rec(Streams):  # the side stream's work, marks and waits, in order
        def mark(self):
            log.append("mark")
            return len(log)

        def wait(self, ev):
            log.append(("wait", ev))

        def on_side(self):
            import contextlib

            @contextlib.contextmanager
            def side():
                log.append("side{")
                yield
                log.append("}side")
            return side()

    class Comm(DmacclComm):
        def all_gather_notify(self, out, inp, words, value):
            log.append(("gather", words.tolist(), value))  # the words were set back
            super().all_gather_notify(out, inp, words, value)

        def wait_arrived(self, words, p, value):
            log.append(("wait_arrived", p, value))
            super().wait_arrived(words, p, value)

    class Mm:  # dense's torch, with its GEMMs logged (rows of the output)
        def __getattr__(self, name):
            return getattr(torch, name)

        @staticmethod
        def mm(a, b, out=None):
            if out is not None:
                log.append(("mm", a.shape[0]))
            return torch.mm(a, b, out=out)

    comm = Comm(dmaccl.Communicator(unique_id=uid, rank=rank, world_size=n, executor="host"))
    d = DenseModel(DENSE_MODELS["tiny"], 1, n, rank, torch.bfloat16, cpu, seed=3)
    ids = torch.randint(0, d.cfg.vocab, (16,), generator=torch.Generator().manual_seed(9))
    caches = d.make_caches(16, 8, 1, seed=3)

    def run(step):
        step()
        return step.output().clone()

    ar = run(DenseStep(d, comm, Streams(cpu), "ar", 16, 1, ids, caches, 8))
    step = DenseStep(d, comm, Rec(cpu), "sp-notify", 16, 1, ids, caches, 8)
    saved, dense.torch = dense.torch, Mm()
    try:
        step.words.fill_(7)  # as a replay finds them: the gather must see them set back
        log.clear()
        step._gather_mm_notify(d.layers[0].qkv, torch.empty(16, d.layers[0].qkv.shape[1],
                                                            dtype=torch.bfloat16))
        ns = 16 // n
        assert log == ["mark", "side{", ("wait", 1), ("gather", [0] * n, 1), "mark", "}side",
                       ("mm", ns)] + \
            [x for k in range(1, n) for x in (("wait_arrived", (rank + k) % n, 1), ("mm", ns))] + \
            [("wait", 5)], log
        assert step.words.tolist() == [1] * n
    finally:
        dense.torch = saved
    assert rel(run(step), ar) <= TOL  # the whole step, twice: words set back between
    assert rel(run(step), ar) <= TOL
    notify_out = run(step)

    class Plain(DmacclComm):  # a backend without words: gathers, then the same GEMMs
        notify = False

        def all_gather(self, out, inp):
            log.append("gather")
            super().all_gather(out, inp)

    plain = DenseStep(d, Plain(comm.comm), Rec(cpu), "sp-notify", 16, 1, ids, caches, 8)
    assert plain.words is None
    dense.torch = Mm()
    try:
        log.clear()
        plain._gather_mm(d.layers[0].qkv)
        assert log == ["gather"] + [("mm", ns)] * n, log
    finally:
        dense.torch = saved
    assert torch.equal(run(plain), notify_out)  # the same GEMMs: the same bytes
    assert DenseStep(d, NoComm(n, rank, False), Streams(cpu), "sp-notify", 16, 1, ids, caches,
                     8).words is None
    comm.comm.destroy()


def test_graph_paths_on_cpu():
    run_ranks(paths_body, 2, timeout=120)


def test_sp_notify_on_cpu():
    """sp-notify on 4 ranks: the order of its marks, waits and GEMMs, and
    the result of ar."""
    run_ranks(notify_body, 4, timeout=120)


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


def test_exact_control():
    """The control on four virtual ranks (threads, bench/e2e/order.py), 32
    tiny layers, the reference rounding after every hop as NCCL's ring does:
    the backend that rounds once (dmaccl's arithmetic) ends beyond TOL of it,
    as dmaccl did on 4 GPUs, but is the exact result (the ring in fp32,
    whatever the order) and passes; another bf16 order passes within K;
    errors in the sums still fail."""
    sys.path.insert(0, E2E)
    try:
        import order
        from dense import DENSE_MODELS
        from worker import EXACT_K, verdict
    finally:
        sys.path.remove(E2E)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the same GEMM blocking in every run
    try:
        models = order.dense_models(DENSE_MODELS["tiny"], 32, 4)
        make = order.dense_step(models, 4, 16)

        def out(add, wide=False):
            return order.run_virtual(4, add, make, wide)[0][0]

        ring = out(order.ring_sum)
        exact = out(order.ring_sum, wide=True)
        assert torch.equal(exact, out(order.ORDERS["fp32"]))
        assert torch.equal(exact, out(order.ORDERS["fp32-rev"]))
        ref_exact = order.rel(ring, exact)  # the reference's own rounding
        assert TOL < ref_exact < 0.1

        def check(o):
            return verdict(order.rel(o, ring), order.rel(o, exact), ref_exact, TOL)[0]

        assert verdict(order.rel(exact, ring), 0.0, ref_exact, TOL) == \
            ("ok-exact", EXACT_K * ref_exact)

        def tree(p):  # (p0 + p1) + (p2 + p3), rounded after each addition
            def add(a, b):
                return (a.float() + b.float()).to(a.dtype)
            return add(add(p[0], p[1]), add(p[2], p[3]))

        assert check(out(tree)) in ("ok", "ok-exact")

        def dropped(p):  # rank 3's partial missing from the last eighth
            q = p[3].clone().view(-1)
            q[q.numel() * 7 // 8:] = 0
            return order.fp32_sum(p[:3] + [q.view(p[3].shape)], range(4))

        def scaled(p):  # rank 3's partial 10% too large
            return order.fp32_sum(p[:3] + [p[3] * 1.1], range(4))

        assert check(out(dropped)) == "FAIL"
        assert check(out(scaled)) == "FAIL"
    finally:
        torch.set_num_threads(threads)


def test_verdict():
    """With an exact reference (2 ranks, gloo) the bound is --tol: the rule is
    the old one. A row without a control is checked against the reference only."""
    sys.path.insert(0, E2E)
    try:
        from worker import verdict
    finally:
        sys.path.remove(E2E)
    assert verdict(0.01, 0.01, 0.0, TOL) == ("ok", TOL)
    assert verdict(0.03, 0.03, 0.0, TOL) == ("FAIL", TOL)
    assert verdict(0.03, 0.0, 0.03, TOL) == ("ok-exact", 0.06)
    assert verdict(0.09, 0.07, 0.03, TOL) == ("FAIL", 0.06)
    assert verdict(0.03, None, None, TOL) == ("FAIL", None)
    assert verdict(0.01, None, None, TOL) == ("ok", None)
