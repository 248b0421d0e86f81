"""One rank of the benchmark: process groups and backends, the model
weights, and the rows of the matrix. Rank 0 sends each finished row to the
parent (run.py) through a queue; every rank takes part in every row."""

import math
import os
import time
from collections import namedtuple

import torch
import torch.distributed as dist

from comms import DmacclComm, GlooComm, NcclCeComm, NoComm, TorchComm, WideComm
from dense import DENSE_MODELS, DenseModel, DenseStep, padded_rows
from measure import Energy, Streams, capture, percentile, time_rounds, time_steps
from moe import MOE_MODELS, MoeModel, MoeStep

BASES = ("nccl", "nccl-ce", "gloo", "dmaccl", "dmaccl-zero", "none")  # backends, graph or not
REFERENCES = ("nccl", "gloo")  # the first one that runs is the numerical reference
# A row within --tol of the reference passes; so does one no further from the
# exact result (the reference's collectives in fp32) than EXACT_K times the
# reference itself is (its own rounding): bench/e2e/README.md, "The numerical
# control".
EXACT_K = 2.0

# The reference's output of a (variant, graph), the control's (None where
# none ran) and the reference's distance from it.
Ref = namedtuple("Ref", "out exact rel_exact")


class Prep:
    """A row ready to time: its record, backend (name, graph), step, graph,
    the function a timed step calls, and when its building started."""

    def __init__(self, rec, name, graph, comm, step, g, fn, started):
        self.rec, self.name, self.graph, self.comm = rec, name, graph, comm
        self.step, self.g, self.fn, self.started = step, g, fn, started


def verdict(rel_diff, rel_exact, ref_rel_exact, tol):
    """(check, bound): "ok" within tol of the reference; "ok-exact" beyond
    that but within bound = max(tol, EXACT_K * ref_rel_exact) of the exact
    result (reduction order: the reference rounds otherwise); else "FAIL"."""
    bound = None if rel_exact is None else max(tol, EXACT_K * ref_rel_exact)
    if rel_diff <= tol:
        return "ok", bound
    return ("ok-exact" if bound is not None and rel_exact <= bound else "FAIL"), bound


def split_backend(name):
    """"dmaccl-graph" -> ("dmaccl", True)."""
    return (name[:-len("-graph")], True) if name.endswith("-graph") else (name, False)


def ordered(items, first):
    """items with `first` (if present) moved to the front."""
    return ([first] if first in items else []) + [x for x in items if x != first]


class Rank:
    def __init__(self, rank, n, args, port, queue):
        self.rank, self.n, self.args, self.queue = rank, n, args, queue
        self.dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[args.dtype]
        self.cuda = args.device == "cuda"
        bases = {split_backend(b)[0] for b in args.backends}
        if self.cuda:
            self.ngpu = torch.cuda.device_count()
            self.dev = torch.device("cuda", rank % self.ngpu)
            torch.cuda.set_device(self.dev)
        else:
            self.ngpu, self.dev = 0, torch.device("cpu")
            torch.set_num_threads(max(1, (os.cpu_count() or 1) // n))  # ranks share the cores
        self.shared = self.cuda and self.ngpu < n
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        if self.cuda and not self.shared and bases & {"nccl", "nccl-ce"}:
            dist.init_process_group("cpu:gloo,cuda:nccl", rank=rank, world_size=n,
                                    device_id=self.dev)
        else:
            dist.init_process_group("gloo", rank=rank, world_size=n)
        self.ctrl = dist.new_group(backend="gloo")  # agreements and statistics
        self.comms, self.why = {}, {}
        for b in BASES:  # every rank makes the same groups in the same order
            if b in bases:
                self._make(b)
        self.reference = next((b for b in REFERENCES if b in self.comms), None)
        # the control rounds once where the model's dtype rounds per addition
        self.wide = self.dtype in (torch.bfloat16, torch.float16)
        self.st = Streams(self.dev)
        self.energy = Energy(self.dev)
        if self.reference is None:
            self.note("no reference backend (nccl or gloo) runs: rows have no numerical check")
        self.send("meta", self._meta())

    def _make(self, b):
        if b in ("nccl", "nccl-ce") and self.shared:
            self.why[b] = (f"NCCL refuses two ranks on one GPU ({self.n} ranks on "
                           f"{self.ngpu} GPUs)")
        elif b == "nccl":
            self.comms[b] = TorchComm(dist.group.WORLD)
        elif b == "nccl-ce":
            opts, why = NcclCeComm.options()
            if opts is None:
                self.why[b] = f"TODO: NCCL's copy-engine path is not reachable: {why}"
            else:
                self.comms[b] = NcclCeComm(dist.new_group(backend="nccl", pg_options=opts),
                                           self.dev)
        elif b == "gloo":
            self.comms[b] = GlooComm(dist.new_group(backend="gloo"))
        elif b in ("dmaccl", "dmaccl-zero"):  # -zero: CTA policy zero, no kernel moves data
            import dmaccl

            comm = dmaccl.Communicator(group=dist.new_group(backend="gloo"),
                                       device=self.dev if self.cuda else None,
                                       executor="cuda" if self.cuda else "host",
                                       cta_policy="zero" if b == "dmaccl-zero" else "default")
            self.comms[b] = DmacclComm(comm)
        else:
            self.comms[b] = NoComm(self.n, self.rank, graphable=self.cuda)

    def _meta(self):
        import sys

        import dmaccl

        meta = {"torch": torch.__version__, "python": sys.version.split()[0],
                "dmaccl_library": dmaccl.library_version(), "ranks": self.n,
                "device": self.args.device, "dtype": self.args.dtype,
                "reference": self.reference, "energy": self.energy.why or "NVML",
                "exact": self._control(),
                "unavailable": self.why}
        if self.cuda:
            meta.update(gpu=torch.cuda.get_device_name(self.dev), gpus=self.ngpu,
                        shared_gpu=self.shared,
                        nccl=".".join(map(str, torch.cuda.nccl.version())))
        return meta

    def _control(self):
        """What the numerical control is, or why there is none (meta.exact)."""
        if self.reference is None:
            return "none: no reference"
        if not self.wide:
            return "none: the collectives already run in fp32"
        return (f"{self.reference}'s collectives in fp32, rounded once; rows pass within "
                f"--tol of the reference or within max(--tol, k * the reference's own "
                f"rel_exact) of it; k = {EXACT_K:g}")

    # --- messages and agreements --------------------------------------------------------------
    def send(self, kind, payload):
        if self.rank == 0:
            self.queue.put((kind, payload))

    def note(self, text):
        self.send("note", text)

    def reduce(self, values, op):
        t = torch.tensor(values, dtype=torch.float64)
        dist.all_reduce(t, op=op, group=self.ctrl)
        return t.tolist()

    def agree(self, ok):
        """True when every rank says ok."""
        return self.reduce([1.0 if ok else 0.0], dist.ReduceOp.MIN)[0] == 1.0

    def close(self):
        for c in self.comms.values():
            if isinstance(c, DmacclComm):
                c.comm.destroy()
        dist.destroy_process_group()

    # --- one row ------------------------------------------------------------------------------
    def run_row(self, rec, backend, build, steps, refs, base_variant, tokens, skip=None):
        """Builds the step on the backend, warms it up, captures it for a
        graph backend, times `steps` steps, reads the energy, compares its
        output with the reference's, and sends the row. The reference
        backend's row also runs the control (_exact) and keeps both outputs
        in refs[(variant, graph)] (a Ref). Returns the output (None when
        skipped)."""
        p = self._prepare(rec, backend, build, steps, skip)
        if p is None:
            return None
        if self.cuda:
            torch.cuda.synchronize()
        e0 = self.energy.read()
        t0 = time.perf_counter()
        times = time_steps(p.fn, steps, self.cuda)
        out = self._measured(p, times, tokens, e0, time.perf_counter() - t0)
        self._drop(p)
        self._checked(p, out, build, refs, base_variant)
        return out

    def run_rows(self, rec, backends, build, steps, refs, base_variant, tokens, skip_of):
        """The rows of one shape and variant, one per backend in order (the
        reference first: the others are checked against it). With
        --interleave every backend's step is built (and captured) first, and
        the steps are timed in rounds, each round one step of every backend
        in a rotated order, each step waited for (time_rounds), so that a
        slow period of the host or the GPU falls on every backend alike;
        each backend's energy is then read over a loop of its own. Otherwise
        one row after the other, its steps back to back (run_row)."""
        if not self.args.interleave:
            for b in backends:
                self.run_row(rec, b, build, steps, refs, base_variant, tokens, skip=skip_of(b))
            return
        preps = []
        for b in backends:
            p = self._prepare(dict(rec, interleaved=True), b, build, steps, skip_of(b))
            if p is not None:
                preps.append(p)
        if not preps:
            return
        if self.cuda:
            torch.cuda.synchronize()
        timed = time_rounds([p.fn for p in preps], steps, self.cuda)
        outs = [self._measured(p, times, tokens) for p, times in zip(preps, timed)]
        for p in preps:  # every step and graph goes before the control is built
            self._drop(p)
        for p, out in zip(preps, outs):
            self._checked(p, out, build, refs, base_variant)

    def _prepare(self, rec, backend, build, steps, skip):
        """The row's step built, warmed up and (graph backends) captured: a
        Prep, or None when the row is skipped (and sent as such)."""
        a = self.args
        name, graph = split_backend(backend)
        rec = dict(rec, backend=backend, graph=graph, ranks=self.n, steps=steps)
        why = skip or self.why.get(name)
        if why is None and graph and not self.comms[name].graphable:
            why = getattr(self.comms[name], "no_graph", None) or \
                f"{name} cannot be captured in a CUDA graph"
        if why:
            self.send("row", dict(rec, status=f"skipped: {why}"))
            return None
        comm = self.comms[name]
        started = time.perf_counter()
        # running out of memory while building or capturing (no collective
        # runs there) skips the row on every rank; anywhere else it is fatal
        try:
            step = build(comm, graph)
        except torch.cuda.OutOfMemoryError:
            step = None
        if not self._agree_built(step, comm, rec):
            return None
        for _ in range(a.warmup):  # NCCL's and dmaccl's first calls set up
            step()
        g = None
        if graph:
            try:
                g = capture(step)
            except torch.cuda.OutOfMemoryError:
                g = None
            if not self._agree_built(g, comm, rec):
                return None
        return Prep(rec, name, graph, comm, step, g, g.replay if graph else step, started)

    def _measured(self, p, times, tokens, e0=None, wall=None):
        """Fills p.rec from the step times (us) and the energy, and returns a
        copy of the step's output. The energy is read over the timed steps
        (e0: the counter before them, None where it could not be read; wall:
        their seconds) when they lasted --energy-min-s, else over a loop of
        its own (_joules); wall None (interleaved steps, no window of the
        row's own): always over a loop of its own."""
        p50 = percentile(times, 50)
        if wall is None:
            e0, wall = self.energy.read(), 0.0
        joules = self._joules(p.fn, e0, wall, len(times), p50)
        out = p.step.output().clone()
        p50_max, = self.reduce([p50], dist.ReduceOp.MAX)
        p.rec.update(p50_us=p50, p99_us=percentile(times, 99), mean_us=sum(times) / len(times),
                     p50_us_max=p50_max, us_per_layer=p50 / p.rec["layers"],
                     tok_s=tokens / p50 * 1e6, joules=joules, status="ok",
                     row_s=time.perf_counter() - p.started)
        return out

    def _drop(self, p):
        """Frees the row's step and graph and releases its backend's buffers."""
        p.step = p.g = p.fn = None
        self._release(p.comm)

    def _checked(self, p, out, build, refs, base_variant):
        """The numerical check of the row's output (the reference's row runs
        the control and keeps both in refs), then the row is sent."""
        rec = p.rec
        if p.name == self.reference:
            exact = self._exact(build, p.comm, p.graph) if self.wide else None
            refs[(rec["variant"], p.graph)] = Ref(out, exact, self._diff(out, exact)[1])
        if p.name != "none":  # without communication the outputs are not the model's
            rec.update(self._check(out, self._ref(refs, rec["variant"], p.graph),
                                   p.name == self.reference))
        if p.name != "none" and rec["variant"] != base_variant:
            base = self._ref(refs, base_variant, p.graph)
            d, rel = self._diff(out, base and base.out)
            rec.update(maxdiff_base=d, rel_diff_base=rel)
        self.send("row", rec)

    def _exact(self, build, comm, graph):
        """The control: the reference's step with its reductions in fp32
        (WideComm), run once, eagerly and untimed, on the same inputs and
        weights. Its output is the exact result up to one rounding per
        reduction, whatever order the reference adds in. None where a rank
        could not build it (out of memory)."""
        wide = WideComm(comm)
        try:
            step = build(wide, graph)
        except torch.cuda.OutOfMemoryError:
            step = None
        if not self.agree(step is not None):
            self._release(wide)
            self.note("the fp32 control did not fit in GPU memory on a rank: rows of this "
                      "shape are checked against the reference only")
            return None
        step()
        out = step.output().clone()
        del step
        self._release(wide)
        return out

    @staticmethod
    def _ref(refs, variant, graph):
        """The reference's output of variant in the same mode: graph rows
        against the reference's graph row (a captured step may compute
        otherwise, e.g. MoE a2a with fixed capacity), else its eager row."""
        return refs.get((variant, graph), refs.get((variant, False)))

    def _agree_built(self, built, comm, rec):
        """Whether every rank built it; if not, the row is skipped everywhere."""
        if self.agree(built is not None):
            return True
        self._release(comm)
        why = "out of GPU memory on a rank"
        if rec.get("interleaved"):
            why += " (--interleave: the shape's other steps were alive)"
        self.send("row", dict(rec, status=f"skipped: {why}"))
        return False

    def _release(self, comm):
        comm.release()
        if self.cuda:
            torch.cuda.empty_cache()

    def _joules(self, fn, e0, wall, steps, p50):
        """Joules per step on all the group's GPUs: NVML's counter over the
        timed steps, or over a longer run of steps when those took less than
        --energy-min-s (the counter's resolution; every rank runs the same
        extra steps). None without NVML."""
        e1 = self.energy.read()
        have = e0 is not None and e1 is not None
        extra = math.ceil(self.args.energy_min_s * 1e6 / max(p50, 1.0)) \
            if have and wall < self.args.energy_min_s else 0
        extra = int(self.reduce([min(extra, 100000)], dist.ReduceOp.MAX)[0])
        if extra:
            torch.cuda.synchronize()
            e0 = self.energy.read()
            for _ in range(extra):
                fn()
            torch.cuda.synchronize()
            e1 = self.energy.read()
            steps, have = extra, e0 is not None and e1 is not None
        owner = self.rank < max(self.ngpu, 1)  # the first rank on its GPU counts it
        j, missing = self.reduce([(e1 - e0) / steps if have and owner else 0.0,
                                  0.0 if have else 1.0], dist.ReduceOp.SUM)
        return None if missing else j

    def _diff(self, out, ref):
        """(max |out - ref|, that / max |ref|) over all ranks, or (None, None)."""
        if ref is None:
            return None, None
        d = (out.float() - ref.float()).abs().max().item()
        s = ref.float().abs().max().item()
        d, s = self.reduce([d, s], dist.ReduceOp.MAX)
        return d, (d / s if s > 0 else math.inf)

    def _check(self, out, ref, is_reference):
        """maxdiff, rel_diff against the reference's output, rel_exact
        against the control's, and the verdict (see verdict)."""
        if ref is None:
            return {"maxdiff": None, "rel_diff": None, "check": "no reference"}
        if is_reference:
            return {"maxdiff": 0.0, "rel_diff": 0.0, "rel_exact": ref.rel_exact,
                    "check": "reference"}
        d, rel = self._diff(out, ref.out)
        rel_exact = self._diff(out, ref.exact)[1]
        check, bound = verdict(rel, rel_exact, ref.rel_exact, self.args.tol)
        return {"maxdiff": d, "rel_diff": rel, "rel_exact": rel_exact, "exact_bound": bound,
                "check": check}

    # --- the matrix ---------------------------------------------------------------------------
    def backends(self, eager_only=False):
        """The selected backends, the reference first (eager_only: graph
        backends replaced by their eager form, once)."""
        names = [split_backend(b)[0] if eager_only else b for b in self.args.backends]
        names = list(dict.fromkeys(names))
        return ordered(names, self.reference)

    def run(self):
        for name in self.args.models:
            if name in DENSE_MODELS:
                self.dense(name)
            else:
                self.moe(name)
            if self.cuda:  # the model's weights go before the next one's come
                torch.cuda.empty_cache()
        self.send("done", None)

    def dense(self, name):
        a, cfg = self.args, DENSE_MODELS[name]
        layers = a.layers or cfg.layers
        try:
            model = DenseModel(cfg, layers, self.n, self.rank, self.dtype, self.dev, a.seed)
        except torch.cuda.OutOfMemoryError:
            raise SystemExit(f"{name}: the weights of {layers} layers do not fit in GPU memory "
                             "(pass fewer with --layers)") from None
        variants = ordered(a.dense_variants, "ar")
        if "dense" in a.modes:
            for batch in a.batches:
                for kv in a.kv:
                    self.decode_group(model, name, layers, variants, batch, kv)
        if "prefill" in a.modes:
            for prompt in a.prefill:
                self.prefill_group(model, name, layers, variants, prompt)

    def _ids(self, rows, vocab, salt):
        """Token ids, the same on every rank (TP ranks see the same tokens)."""
        g = torch.Generator(device=self.dev).manual_seed(self.args.seed * 31 + salt)
        return torch.randint(0, vocab, (rows,), generator=g, device=self.dev)

    def _kv_buffers(self, model, rows, kv, layers):
        """How many distinct per-layer KV caches fit (at most one per layer)."""
        if not self.cuda:
            return layers
        torch.cuda.empty_cache()  # the previous shape's caches are gone
        free = torch.cuda.mem_get_info(self.dev)[0] / math.ceil(self.n / self.ngpu)
        fit = int((free - self.args.reserve_gb * 2 ** 30) // model.kv_bytes(rows, kv))
        return int(self.reduce([max(0, min(layers, fit))], dist.ReduceOp.MIN)[0])

    def decode_group(self, model, name, layers, variants, batch, kv):
        a = self.args
        rows = max(padded_rows(batch, self.n, v, a.chunks)[0] for v in variants)
        buffers = self._kv_buffers(model, rows, kv, layers)
        base = dict(mode="dense", model=name, batch=batch, kv=kv, layers=layers,
                    kv_buffers=buffers)
        caches = model.make_caches(rows, kv, buffers, a.seed) if buffers else None
        ids = self._ids(rows, model.cfg.vocab, batch)
        refs = {}
        for variant in variants:
            chunks = padded_rows(batch, self.n, variant, a.chunks)[1]
            rec = dict(base, variant=variant, chunks=chunks)
            skip = None if buffers else "one layer's KV cache does not fit in memory"
            self.run_rows(
                rec, self.backends(),
                lambda comm, graph: DenseStep(model, comm, self.st, variant, batch, a.chunks,
                                              ids, caches, kv),
                a.steps, refs, "ar", batch, lambda b: skip)

    def prefill_group(self, model, name, layers, variants, prompt):
        a = self.args
        rows = max(padded_rows(prompt, self.n, v, a.chunks)[0] for v in variants)
        ids = self._ids(rows, model.cfg.vocab, prompt)
        refs = {}
        for variant in variants:
            chunks = padded_rows(prompt, self.n, variant, a.chunks)[1]
            rec = dict(mode="prefill", model=name, batch=1, prompt=prompt, layers=layers,
                       variant=variant, chunks=chunks)
            self.run_rows(
                rec, self.backends(eager_only=True),
                lambda comm, graph: DenseStep(model, comm, self.st, variant, prompt, a.chunks,
                                              ids),
                a.prefill_reps, refs, "ar", prompt, lambda b: None)

    def moe(self, name):
        a, cfg = self.args, MOE_MODELS[name]
        layers = a.moe_layers or cfg.layers
        try:
            model = MoeModel(cfg, layers, self.n, self.rank, self.dtype, self.dev, a.seed)
        except torch.cuda.OutOfMemoryError:
            raise SystemExit(f"{name}: the weights of {layers} layers do not fit in GPU memory "
                             "(pass fewer with --moe-layers)") from None
        variants = ordered(a.moe_variants, "agrs")
        # torch._grouped_mm syncs the host (no capture) except in bf16 on SM90+
        no_graph = None
        if self.cuda and (self.dtype != torch.bfloat16
                          or torch.cuda.get_device_capability(self.dev)[0] < 9):
            no_graph = "the grouped GEMM cannot be captured (bf16 on SM90+ only)"
        for tokens in a.tokens:
            g = torch.Generator(device=self.dev).manual_seed(a.seed * 131 + self.rank)
            x0 = torch.randn(tokens, cfg.hidden, generator=g, device=self.dev, dtype=self.dtype)
            refs = {}
            for variant in variants:
                rec = dict(mode="moe", model=name, batch=tokens, layers=layers, variant=variant)

                def skip_of(backend):
                    if variant.endswith("-tbo") and tokens < 2:
                        return "two micro-batches need 2 tokens per rank"
                    return no_graph if split_backend(backend)[1] else None

                # a graph backend's step pads its dispatch (fixed capacity)
                self.run_rows(
                    rec, self.backends(),
                    lambda comm, graph: MoeStep(model, comm, self.st, variant, x0, padded=graph),
                    a.steps, refs, "agrs", tokens * self.n, skip_of)


def main(rank, n, args, port, queue):
    """Entry point of a spawned rank."""
    r = Rank(rank, n, args, port, queue)
    try:
        r.run()
    finally:
        r.close()
