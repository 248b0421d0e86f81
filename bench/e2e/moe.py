"""An expert-parallel MoE block with synthetic weights: RMSNorm, router
(softmax, top-k, weights renormalized), routed experts (SiLU-gated), the
residual; no attention, no shared expert. Each of the EP ranks owns
experts/EP consecutive experts and brings `tokens` tokens of its own.

Dispatch and combine, the variants:

- agrs: vLLM's default. AllGatherV of every rank's tokens, the router on all
  of them (its weights are the same on every rank), this rank's experts on
  the tokens routed to them, ReduceScatterV of the weighted sums back to the
  tokens' ranks.
- a2a: AlltoAllv. A token goes once to each rank owning one of its experts,
  with its expert ids and weights packed in the same row (int32 and fp32
  after the hidden state); results come back by the reverse AlltoAllv and are
  summed. Eager: the send counts are exchanged first (an AlltoAll of
  counts, then a host sync for the splits). In a graph shapes must be
  static: every rank sends `tokens` rows to every rank (fixed capacity; rows
  of tokens not routed there carry expert id -1 and contribute zero), so no
  count exchange. With top-8 over 128 or 256 experts on 2 ranks almost every
  token goes to both ranks, so the padding moves few extra bytes.
- -tbo (two-batch overlap): the tokens are split in two micro-batches; one
  micro-batch's dispatch and combine run on a side stream under the other's
  expert compute.

The experts of a rank run as two grouped GEMMs (torch._grouped_mm) over the
rows sorted by expert, with device-side group offsets: no host sync, so the
step can be captured in a graph (bf16 on SM90 and newer: other dtypes take
torch's fallback, which syncs).
"""

from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class MoeConfig:
    hidden: int
    experts: int
    topk: int
    ffn: int  # one expert's intermediate size
    layers: int  # default layer count
    eps: float = 1e-6


MOE_MODELS = {
    "qwen3-30b-a3b": MoeConfig(2048, 128, 8, 768, 2),
    "deepseek-v3": MoeConfig(7168, 256, 8, 2048, 2),
    "tiny-moe": MoeConfig(128, 8, 2, 64, 2),  # CPU functional check
}

MOE_VARIANTS = ("agrs", "a2a", "agrs-tbo", "a2a-tbo")


class _Layer:
    pass


class MoeModel:
    """This rank's experts (random, seeded) and the replicated router."""

    def __init__(self, cfg, layers, ep, rank, dtype, device, seed):
        if cfg.experts % ep:
            raise ValueError(f"EP={ep} does not divide the model's {cfg.experts} experts")
        self.cfg, self.ep, self.rank, self.dtype, self.device = cfg, ep, rank, dtype, device
        self.el = cfg.experts // ep
        self.e0 = rank * self.el
        h, f = cfg.hidden, cfg.ffn
        mine = torch.Generator(device=device).manual_seed(seed * 1009 + rank)
        shared = torch.Generator(device=device).manual_seed(seed * 1009 + 1000003)

        def rand(g, *shape, scale):
            return torch.randn(*shape, generator=g, device=device, dtype=dtype).mul_(scale)

        self.layers = []
        for _ in range(layers):
            w = _Layer()
            w.ln = 1 + rand(shared, h, scale=0.1)
            w.router = rand(shared, h, cfg.experts, scale=h ** -0.5)
            # stored [experts, out, in]: _grouped_mm takes the transposed view
            w.gate_up = rand(mine, self.el, 2 * f, h, scale=h ** -0.5)
            w.down = rand(mine, self.el, h, f, scale=f ** -0.5)
            self.layers.append(w)
        # a packed dispatch row: hidden state, then top-k ids (int32), weights (fp32)
        self.hb = h * torch.finfo(dtype).bits // 8
        self.row_bytes = self.hb + 8 * cfg.topk

    def rms(self, x, w):
        return F.rms_norm(x, (x.shape[-1],), w, self.cfg.eps)

    def route(self, w, h):
        """(top-k expert ids, their weights renormalized to sum 1), fp32 softmax."""
        p = torch.softmax((h @ w.router).float(), dim=-1)
        wt, ids = torch.topk(p, self.cfg.topk, dim=-1)
        return ids, wt / wt.sum(dim=-1, keepdim=True)

    def experts(self, w, x, ids, wt, out):
        """out[r] = sum over j of wt[r, j] * expert ids[r, j](x[r]), over this
        rank's experts only (other ids, and -1, contribute zero)."""
        rows, k = ids.shape
        f = self.cfg.ffn
        local = ids - self.e0
        valid = (local >= 0) & (local < self.el)
        key = torch.where(valid, local, self.el).flatten().long()  # not ours: past the end
        order = torch.argsort(key, stable=True)
        counts = torch.zeros(self.el + 1, dtype=torch.int64, device=x.device)
        counts.scatter_add_(0, key, torch.ones_like(key))
        offs = counts[:self.el].cumsum(0).to(torch.int32)  # rows past offs[-1] are not computed
        xg = x.index_select(0, order // k)
        h = torch._grouped_mm(xg, w.gate_up.transpose(-2, -1), offs=offs)
        a = F.silu(h[:, :f]) * h[:, f:]
        yg = torch._grouped_mm(a, w.down.transpose(-2, -1), offs=offs)
        back = torch.empty_like(order).scatter_(
            0, order, torch.arange(rows * k, device=x.device))
        y = yg.index_select(0, back).view(rows, k, -1)
        y = torch.where(valid.unsqueeze(-1), y, 0) * wt.unsqueeze(-1).to(y.dtype)
        torch.sum(y, dim=1, out=out)

    def pack(self, h, ids, wt):
        """Rows of [hidden | ids int32 | weights fp32] bytes."""
        k = self.cfg.topk
        out = torch.empty(h.shape[0], self.row_bytes, dtype=torch.uint8, device=h.device)
        out[:, :self.hb].copy_(h.contiguous().view(torch.uint8))
        out[:, self.hb:self.hb + 4 * k].copy_(ids.to(torch.int32).view(torch.uint8))
        out[:, self.hb + 4 * k:].copy_(wt.float().view(torch.uint8))
        return out

    def unpack(self, rows):
        k = self.cfg.topk
        return (rows[:, :self.hb].view(self.dtype),
                rows[:, self.hb:self.hb + 4 * k].view(torch.int32),
                rows[:, self.hb + 4 * k:].view(torch.float32))


class _Micro:
    """One micro-batch's buffers and per-step state."""

    def __init__(self, tokens):
        self.t = tokens


class MoeStep:
    """The MoE layers over this rank's `tokens` tokens (x0), buffers static.
    padded: a2a with fixed capacity (graphs). Calling it runs the layers;
    output() is the final hidden state [tokens, hidden]."""

    def __init__(self, model, comm, streams, variant, x0, padded):
        self.m, self.comm, self.st = model, comm, streams
        self.a2a, self.padded = variant.startswith("a2a"), padded
        t = x0.shape[0]
        self.sizes = [t // 2, t - t // 2] if variant.endswith("-tbo") else [t]
        self.x0 = x0
        self.mbs = [self._buffers(s) for s in self.sizes]
        self.out = torch.empty_like(x0)
        comm.buffers_ready()

    def _buffers(self, t):
        m, c, n = self.m, self.comm, self.m.ep
        dev, dt, h = m.device, m.dtype, m.cfg.hidden
        mb = _Micro(t)
        if self.a2a:
            mb.send = c.empty((n * t, m.row_bytes), torch.uint8, dev)
            mb.recv = c.empty((n * t, m.row_bytes), torch.uint8, dev)
            mb.ysend = c.empty((n * t, h), dt, dev)
            mb.yback = c.empty((n * t, h), dt, dev)
            if not self.padded:
                mb.cnt_in = c.empty((n,), torch.int64, dev)
                mb.cnt_out = c.empty((n,), torch.int64, dev)
        else:
            mb.agin = c.empty((t, h), dt, dev)
            mb.agout = c.empty((n * t, h), dt, dev)
            mb.rsin = c.empty((n * t, h), dt, dev)
            mb.rsout = c.empty((t, h), dt, dev)
        return mb

    def __call__(self):
        xs = list(self.x0.split(self.sizes))
        for w in self.m.layers:
            xs = self._layer(w, xs)
        torch.cat(xs, out=self.out)

    def output(self):
        return self.out

    def _layer(self, w, xs):
        """One MoE layer over the micro-batches: in order with one, with two
        the schedule of two-batch overlap (communication on the side stream)."""
        st = self.st
        if len(xs) == 1:
            mb = self.mbs[0]
            self._pre(w, mb, xs[0])
            self._dispatch(mb)
            self._compute(w, mb)
            self._combine(mb)
            return [self._post(mb, xs[0])]
        a, b = self.mbs
        self._pre(w, a, xs[0])
        pre_a = st.mark()
        with st.on_side():
            st.wait(pre_a)
            self._dispatch(a)
            disp_a = st.mark()
        self._pre(w, b, xs[1])
        pre_b = st.mark()
        with st.on_side():
            st.wait(pre_b)
            self._dispatch(b)
            disp_b = st.mark()
        st.wait(disp_a)
        self._compute(w, a)
        comp_a = st.mark()
        with st.on_side():
            st.wait(comp_a)
            self._combine(a)
            comb_a = st.mark()
        st.wait(disp_b)
        self._compute(w, b)
        comp_b = st.mark()
        with st.on_side():
            st.wait(comp_b)
            self._combine(b)
            comb_b = st.mark()
        st.wait(comb_a)
        ya = self._post(a, xs[0])
        st.wait(comb_b)
        return [ya, self._post(b, xs[1])]

    # --- the stages: compute (_pre, _compute, _post) and communication ------------------------
    def _pre(self, w, mb, x):
        m = self.m
        h = m.rms(x, w.ln)
        if not self.a2a:
            mb.agin.copy_(h)
            return
        n, t = m.ep, mb.t
        ids, wt = m.route(w, h)
        # to[i, r]: token i has an expert on rank r
        to = ((ids // m.el).unsqueeze(-1) == torch.arange(n, device=ids.device)).any(dim=1)
        packed = m.pack(h, ids, wt)
        if self.padded:
            send = mb.send.view(n, t, m.row_bytes)
            send.copy_(packed.unsqueeze(0).expand(n, t, m.row_bytes))
            k = m.cfg.topk
            ids_to = torch.where(to.t().unsqueeze(-1), ids.to(torch.int32).unsqueeze(0), -1)
            send[:, :, m.hb:m.hb + 4 * k].copy_(ids_to.view(torch.uint8))
            return
        pairs = to.t().nonzero()  # (rank, token), by rank then token: the send order
        mb.tok = pairs[:, 1]
        mb.cnt_in.copy_(to.sum(dim=0))
        torch.index_select(packed, 0, mb.tok, out=mb.send[:mb.tok.numel()])

    def _dispatch(self, mb):
        n = self.m.ep
        if not self.a2a:
            self.comm.all_gatherv(mb.agout, mb.agin, [mb.t] * n)
        elif self.padded:
            self.comm.all_to_all(mb.recv, mb.send)
        else:
            self.comm.all_to_all(mb.cnt_out, mb.cnt_in)
            mb.in_splits, mb.out_splits = mb.cnt_in.tolist(), mb.cnt_out.tolist()
            mb.s, mb.r = sum(mb.in_splits), sum(mb.out_splits)
            self.comm.all_to_all(mb.recv[:mb.r], mb.send[:mb.s], mb.out_splits, mb.in_splits)

    def _compute(self, w, mb):
        m = self.m
        if not self.a2a:
            ids, wt = m.route(w, mb.agout)
            m.experts(w, mb.agout, ids, wt, mb.rsin)
            return
        r = mb.recv.shape[0] if self.padded else mb.r
        if r:  # eager a2a: no token may have come
            x, ids, wt = m.unpack(mb.recv[:r])
            m.experts(w, x, ids, wt, mb.ysend[:r])

    def _combine(self, mb):
        n = self.m.ep
        if not self.a2a:
            self.comm.reduce_scatterv(mb.rsout, mb.rsin, [mb.t] * n)
        elif self.padded:
            self.comm.all_to_all(mb.yback, mb.ysend)
        else:
            self.comm.all_to_all(mb.yback[:mb.s], mb.ysend[:mb.r], mb.in_splits, mb.out_splits)

    def _post(self, mb, x):
        if not self.a2a:
            return x + mb.rsout
        if self.padded:
            return x + mb.yback.view(self.m.ep, mb.t, -1).sum(dim=0)
        # One index_add per source rank: within one, every token appears at
        # most once. A single index_add over all of them would add a token's
        # rows by atomics in no fixed order (bf16 sums that may differ from
        # run to run).
        off = 0
        for c in mb.in_splits:
            if c:
                x = x.index_add(0, mb.tok[off:off + c], mb.yback[off:off + c])
            off += c
        return x
