"""Reduction order alone, on the CPU: how far apart the benchmark's own
models (dense.py, moe.py) end when the partial sums of their reductions are
added in another order. TP (EP) ranks are threads of one process, and every
reduction sums the ranks' bf16 partials with `add`:

- ring: as NCCL's ring: chunk c of the buffer is summed from rank c+1 round
  to rank c, rounded to the tensor's dtype after every addition (hop);
- fp32: in fp32 in rank order, rounded once (dmaccl's documented arithmetic;
  gloo's; and the benchmark's control, WideComm, whatever order it adds in);
- fp32-rev: the same in reverse rank order.

    python3 bench/e2e/order.py          # dense decode, 32 layers, TP=4 (~15 s)
    python3 bench/e2e/order.py --moe    # Qwen3-30B-A3B's MoE block, EP=4 (~30 s)

Prints rel diff = max |x - y| / max |y| (run.py's) of each order against
fp32: per layer for the residual stream and for the logits it would give
(the final norm and lm_head applied after that layer), and for the step's
logits; for MoE, the output and how many tokens' top-k sets differ.
tests/python/test_e2e.py uses VirtualComm to check the control.
"""

import argparse
import os
import sys
import threading

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from comms import Comm, WideComm  # noqa: E402
from dense import DenseConfig, DenseModel, DenseStep  # noqa: E402
from measure import Streams  # noqa: E402
from moe import MOE_MODELS, MoeModel, MoeStep  # noqa: E402

CPU = torch.device("cpu")


def fp32_sum(parts, ranks):
    acc = None
    for r in ranks:
        acc = parts[r].float() if acc is None else acc + parts[r].float()
    return acc.to(parts[0].dtype)


def ring_sum(parts):
    n = len(parts)
    flat = [p.reshape(-1) for p in parts]
    out = torch.empty_like(flat[0])
    cut = [out.numel() * c // n for c in range(n + 1)]
    for c in range(n):
        s = slice(cut[c], cut[c + 1])
        acc = flat[(c + 1) % n][s]
        for k in range(2, n + 1):  # each hop adds in float and rounds to the dtype
            acc = (acc.float() + flat[(c + k) % n][s].float()).to(acc.dtype)
        out[s] = acc
    return out.view(parts[0].shape)


ORDERS = {"ring": ring_sum,
          "fp32": lambda p: fp32_sum(p, range(len(p))),
          "fp32-rev": lambda p: fp32_sum(p, reversed(range(len(p))))}


class Hub:
    """What the thread-ranks share: a slot each and a barrier."""

    def __init__(self, n, add):
        self.n, self.add = n, add
        self.slots = [None] * n
        self.bar = threading.Barrier(n, timeout=300)

    def exchange(self, rank, t):
        """Every rank's t (copies), once all have given theirs."""
        self.slots[rank] = t.clone()
        self.bar.wait()
        parts = list(self.slots)
        self.bar.wait()  # nobody overwrites a slot before all have read it
        return parts


class VirtualComm(Comm):
    """One thread-rank's collectives; reductions sum with hub.add. `log`
    keeps every AllReduce's result (the ar variant's residual updates)."""

    graphable = False

    def __init__(self, hub, rank):
        super().__init__(hub.n, rank)
        self.hub, self.log, self.gathered = hub, [], []

    def _sum(self, t):
        return self.hub.add(self.hub.exchange(self.rank, t))

    def all_reduce(self, t):
        t.copy_(self._sum(t))
        self.log.append(t.clone())

    def reduce_scatter(self, out, inp):
        out.copy_(self._sum(inp).view(self.world, -1)[self.rank].view(out.shape))

    def all_gather(self, out, inp):
        parts = self.hub.exchange(self.rank, inp)
        out.view(self.world, -1).copy_(torch.stack([p.reshape(-1) for p in parts]))
        self.gathered.append(out.clone())


class Logged(WideComm):
    """WideComm whose AllReduce results (rounded) are kept as VirtualComm's."""

    def __init__(self, inner):
        super().__init__(inner)
        self.log, self.gathered = [], inner.gathered

    def all_reduce(self, t):
        super().all_reduce(t)
        self.log.append(t.clone())


def run_virtual(n, add, make_step, wide=False):
    """One step on n thread-ranks: make_step(rank, comm) builds rank's step;
    wide: through WideComm (the control). Returns [(output, comm)] by rank."""
    hub, res, errors = Hub(n, add), [None] * n, []

    def body(r):
        try:
            comm = VirtualComm(hub, r)
            comm = Logged(comm) if wide else comm
            step = make_step(r, comm)
            step()
            res[r] = (step.output().clone(), comm)
        except BaseException as e:
            errors.append(e)
            hub.bar.abort()  # the other ranks stop waiting
            raise

    threads = [threading.Thread(target=body, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return res


def rel(a, b):
    return ((a.float() - b.float()).abs().max() / b.float().abs().max()).item()


def dense_models(cfg, layers, tp, seed=0):
    return [DenseModel(cfg, layers, tp, r, torch.bfloat16, CPU, seed) for r in range(tp)]


def dense_step(models, batch, kv, variant="ar", seed=0):
    """make_step for run_virtual: a decode step of the models (their ranks)."""
    ids = torch.randint(0, models[0].cfg.vocab, (batch,),
                        generator=torch.Generator().manual_seed(seed))
    caches = [m.make_caches(batch, kv, len(m.layers), seed) for m in models]
    st = Streams(CPU)
    return lambda r, comm: DenseStep(models[r], comm, st, variant, batch, 1, ids, caches[r], kv)


def per_layer(models, res):
    """(residual stream, logits) after the embedding and after each layer,
    rebuilt from the ar variant's AllReduce results: x is the embedding's,
    then x += each layer's two (bf16 additions, as the step makes them)."""
    xs, logits = [], []
    for m, (_, comm) in zip(models, res):
        x, mine = None, []
        for i, s in enumerate(comm.log):
            x = s.clone() if x is None else x + s
            if i % 2 == 0:
                mine.append(x)
        xs.append(mine)
        logits.append([m.rms(x, m.lnf) @ m.lm_head for x in mine])
    return ([xs[0][i] for i in range(len(xs[0]))],
            [torch.cat([lg[i] for lg in logits], dim=1) for i in range(len(logits[0]))])


def dense(a):
    cfg = DenseConfig(a.hidden, a.ffn, a.heads, a.kv_heads, a.head_dim, a.vocab, a.layers)
    models = dense_models(cfg, a.layers, a.ranks)
    make = dense_step(models, a.batch, a.kv)
    runs = {o: run_virtual(a.ranks, ORDERS[o], make) for o in ORDERS}
    runs["control"] = run_virtual(a.ranks, ring_sum, make, wide=True)
    ref = runs["fp32"]
    layers = {o: per_layer(models, r) for o, r in runs.items()}
    others = ("ring", "fp32-rev", "control")
    print(f"dense decode, TP={a.ranks}: hidden {a.hidden}, FFN {a.ffn}, heads {a.heads}/"
          f"{a.kv_heads}, {a.layers} layers, batch {a.batch}, KV {a.kv}; rel diff against "
          "fp32 (control: the ring in fp32, rounded once)")
    print("layer " + " ".join(f"{'x ' + o:>11}" for o in others) + " "
          + " ".join(f"{'logits ' + o:>16}" for o in others))
    for i in range(a.layers + 1):
        xs = " ".join(f"{rel(layers[o][0][i], layers['fp32'][0][i]):11.2e}" for o in others)
        lg = " ".join(f"{rel(layers[o][1][i], layers['fp32'][1][i]):16.2e}" for o in others)
        print(f"{i:5d} {xs} {lg}")
    print("step logits: " + ", ".join(f"{o} {rel(runs[o][0][0], ref[0][0]):.2e}"
                                      for o in others))


def moe(a):
    cfg = MOE_MODELS[a.moe_model]
    layers = a.moe_layers
    models = [MoeModel(cfg, layers, a.ranks, r, torch.bfloat16, CPU, 0) for r in range(a.ranks)]
    st = Streams(CPU)
    print(f"MoE {a.moe_model}, EP={a.ranks}, agrs, {layers} layers; rel diff against fp32")
    for tokens in a.tokens:
        x0 = [torch.randn(tokens, cfg.hidden, generator=torch.Generator().manual_seed(131 + r))
              .to(torch.bfloat16) for r in range(a.ranks)]

        def make(r, comm):
            return MoeStep(models[r], comm, st, "agrs", x0[r], padded=False)

        out, routes = {}, {}
        for o in ORDERS:
            res = run_virtual(a.ranks, ORDERS[o], make)
            out[o] = torch.cat([x for x, _ in res])
            # each layer's routing, from the gathered normed tokens (rank 0's)
            routes[o] = [models[0].route(w, g)[0].sort(dim=-1).values
                         for w, g in zip(models[0].layers, res[0][1].gathered)]
        flips = [(x != y).any(dim=-1) for x, y in zip(routes["ring"], routes["fp32"])]
        alike = ~torch.stack(flips).any(dim=0)
        print(f"{tokens:5d} tokens/rank: ring {rel(out['ring'], out['fp32']):.2e}, fp32-rev "
              f"{rel(out['fp32-rev'], out['fp32']):.2e}; tokens routed otherwise per layer "
              f"(ring): {[int(f.sum()) for f in flips]} of {tokens * a.ranks}; ring over the "
              f"tokens routed alike {rel(out['ring'][alike], out['fp32'][alike]):.2e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--moe", action="store_true", help="the MoE block instead")
    # dense: Llama-3-8B's layer narrowed to hidden 1024 (a 4096-wide run grows alike)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--ffn", type=int, default=3584)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--vocab", type=int, default=32768)
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--kv", type=int, default=128)
    ap.add_argument("--moe-model", default="qwen3-30b-a3b", choices=tuple(MOE_MODELS))
    ap.add_argument("--moe-layers", type=int, default=2)
    ap.add_argument("--tokens", type=lambda s: [int(x) for x in s.split(",")],
                    default=[1, 16, 128])
    a = ap.parse_args()
    torch.set_num_threads(1)  # the thread-ranks share the cores
    if a.moe:
        moe(a)
    else:
        dense(a)


if __name__ == "__main__":
    main()
