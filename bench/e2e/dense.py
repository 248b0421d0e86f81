"""A tensor-parallel Llama-style decoder with synthetic weights: one decode
step (or one prefill pass) as vLLM runs it, with the collectives left to a
backend (comms.py).

Each rank holds 1/TP of the query and KV heads (column-parallel qkv), of the
FFN (column-parallel gate_up, row-parallel down; o_proj row-parallel), and
of the vocabulary (vocab-parallel embedding and lm_head). Variants:

- ar: AllReduce after o_proj and down_proj (and after the embedding); the
  logits are all-gathered (vLLM's default).
- sp: sequence parallel. The residual stream is split by rows across the
  ranks: AllGather before qkv and gate_up (and lm_head), ReduceScatter after
  o_proj and down_proj (and the embedding). Rows are padded to a multiple of
  TP, as vLLM pads.
- sp-overlap: sp with each AllGather and ReduceScatter cut into `chunks`
  pieces on a side stream, each overlapped with the GEMM on the neighbouring
  piece (async TP). Rank r's share of the residual is then rows
  {j*TP*cs + r*cs + i}: chunk j's gather lands in rows j*TP*cs.., where its
  GEMM reads them.
- sp-notify: sp whose AllGathers are one call each with per-rank arrival
  words (dmaccl's all_gather(arrived=...), dmacclAllGatherNotify) on a side
  stream: the GEMM on this rank's own rows starts at once (it reads the
  gather's input), and each peer's rows once that peer's word has landed (a
  stream memory wait, no SM, capturable). Backends without arrival words
  (NCCL, gloo, none) gather first and then run the same row-block GEMMs in
  the same order, so every backend computes the same bytes and the ratio
  measures the overlap (a GEMM of fewer rows may take another cuBLAS kernel
  and round otherwise than one GEMM of all rows).

Decode attention reads a KV cache prefilled to `kv` tokens: each step writes
its K/V at position kv and attends over kv + 1 positions, so every step costs
what the step at that context costs and the cache does not grow (the inputs
are the same each step; the logits of every step are the same).
"""

from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class DenseConfig:
    hidden: int
    ffn: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    layers: int  # default layer count
    rope_theta: float = 500000.0
    eps: float = 1e-5


DENSE_MODELS = {
    # Llama-3-8B: all 32 layers
    "llama3-8b": DenseConfig(4096, 14336, 32, 8, 128, 128256, 32),
    # Llama-3-70B has 80 layers; 70 are ~60 GB of bf16 weights per GPU at TP=2
    "llama3-70b": DenseConfig(8192, 28672, 64, 8, 128, 128256, 70),
    # CPU functional check
    "tiny": DenseConfig(256, 512, 8, 4, 32, 1024, 2),
}

DENSE_VARIANTS = ("ar", "sp", "sp-overlap", "sp-notify")


def padded_rows(rows, tp, variant, chunks):
    """(rows the step computes, chunks it uses): sp pads to a multiple of TP,
    sp-overlap to TP * chunks with chunks cut to what the rows allow."""
    if variant == "ar":
        return rows, 1
    c = max(1, min(chunks, rows // tp)) if variant == "sp-overlap" else 1
    return -(-rows // (tp * c)) * (tp * c), c


def _has_enable_gqa():
    """scaled_dot_product_attention takes enable_gqa (torch >= 2.5)."""
    z = torch.zeros(1, 2, 1, 8)
    try:
        F.scaled_dot_product_attention(z, z[:, :1], z[:, :1], enable_gqa=True)
        return True
    except TypeError:
        return False


class _Layer:
    pass


class DenseModel:
    """This rank's shard of the model's weights (random, seeded)."""

    def __init__(self, cfg, layers, tp, rank, dtype, device, seed):
        for what, n in (("heads", cfg.heads), ("KV heads", cfg.kv_heads), ("FFN", cfg.ffn),
                        ("vocabulary", cfg.vocab)):
            if n % tp:
                raise ValueError(f"TP={tp} does not divide the model's {what} ({n})")
        self.cfg, self.tp, self.rank, self.dtype, self.device = cfg, tp, rank, dtype, device
        self.hq, self.hkv, self.hd = cfg.heads // tp, cfg.kv_heads // tp, cfg.head_dim
        self.ffn, self.vl = cfg.ffn // tp, cfg.vocab // tp
        self.v0 = rank * self.vl
        self.gqa = _has_enable_gqa()
        mine = torch.Generator(device=device).manual_seed(seed * 1009 + rank)
        shared = torch.Generator(device=device).manual_seed(seed * 1009 + 1000003)
        d = cfg.hidden

        def rand(*shape, scale, g=mine):
            return torch.randn(*shape, generator=g, device=device, dtype=dtype).mul_(scale)

        def norm():  # norm weights are replicated: the same on every rank
            return 1 + rand(d, scale=0.1, g=shared)

        # scales from the full fan-in, so that the sums across ranks stay O(1)
        self.embed = rand(self.vl, d, scale=1.0)
        self.layers = []
        for _ in range(layers):
            w = _Layer()
            w.ln1, w.ln2 = norm(), norm()
            w.qkv = rand(d, (self.hq + 2 * self.hkv) * self.hd, scale=d ** -0.5)
            w.o = rand(self.hq * self.hd, d, scale=(cfg.heads * self.hd) ** -0.5)
            w.gate_up = rand(d, 2 * self.ffn, scale=d ** -0.5)
            w.down = rand(self.ffn, d, scale=cfg.ffn ** -0.5)
            self.layers.append(w)
        self.lnf = norm()
        self.lm_head = rand(d, self.vl, scale=d ** -0.5)
        half = self.hd // 2
        self.inv_freq = cfg.rope_theta ** (-torch.arange(half, device=device).double() / half)

    def kv_bytes(self, rows, kv):
        """Bytes of one layer's K and V cache for `rows` sequences."""
        return 2 * rows * self.hkv * (kv + 1) * self.hd * torch.finfo(self.dtype).bits // 8

    def make_caches(self, rows, kv, buffers, seed):
        """Per-layer (K, V) caches of kv + 1 positions, random (prefilled):
        `buffers` distinct ones, layer i using buffer i % buffers."""
        g = torch.Generator(device=self.device).manual_seed(seed * 7919 + self.rank)
        ring = [tuple(torch.randn(rows, self.hkv, kv + 1, self.hd, generator=g,
                                  device=self.device, dtype=self.dtype) for _ in range(2))
                for _ in range(buffers)]
        return [ring[i % buffers] for i in range(len(self.layers))]

    def rope(self, positions):
        """(cos, sin) for the positions, shaped [rows, 1, head_dim / 2]."""
        ang = positions.double()[:, None] * self.inv_freq[None]
        return (ang.cos().to(self.dtype)[:, None], ang.sin().to(self.dtype)[:, None])

    @staticmethod
    def rotate(x, cos, sin):
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)

    def rms(self, x, w):
        return F.rms_norm(x, (x.shape[-1],), w, self.cfg.eps)

    def embed_partial(self, ids, out):
        """This rank's part of the vocab-parallel embedding (rows of other
        ranks' tokens are zero); the sum over ranks is the embedding."""
        local = ids - self.v0
        inside = (local >= 0) & (local < self.vl)
        e = F.embedding(local.clamp(0, self.vl - 1), self.embed)
        torch.mul(e, inside.unsqueeze(1).to(self.dtype), out=out)


class DenseStep:
    """One decode step (kv given) or one prefill pass (kv None) over `rows`
    sequences (decode) or prompt tokens (prefill), with static buffers, so
    that it can be captured in a CUDA graph. Calling it runs the step;
    logits() returns what it computed: [rows, vocab] for decode, the last
    prompt token's [1, vocab] for prefill."""

    def __init__(self, model, comm, streams, variant, rows, chunks, ids, caches=None, kv=None):
        m = self.m = model
        self.comm, self.st, self.variant = comm, streams, variant
        self.rows, self.kv = rows, kv
        self.n, self.c = padded_rows(rows, m.tp, variant, chunks)
        n, d, dev, dt = self.n, m.cfg.hidden, m.device, m.dtype
        self.ids = ids[:n]
        self.caches = [(k[:n], v[:n]) for k, v in caches] if caches is not None else None
        pos = torch.full((n,), kv, device=dev) if kv is not None else torch.arange(n, device=dev)
        self.cos, self.sin = m.rope(pos)
        self.lrows = n if kv is not None else 1  # prefill: the last token's logits only
        self.red = comm.empty((n, d), dt, dev)  # AllReduce / ReduceScatter input
        if variant != "ar":
            self.shard = comm.empty((n // m.tp, d), dt, dev)  # ReduceScatter output
            self.agin = comm.empty((n // m.tp, d), dt, dev)
            self.agout = comm.empty((n, d), dt, dev)
        # sp-notify: the AllGathers' arrival words, where the backend has them
        self.words = None
        if variant == "sp-notify" and comm.notify:
            self.words = torch.zeros(m.tp, dtype=torch.int32, device=dev)
        self.logit_l = comm.empty((self.lrows, m.vl), dt, dev)
        self.logit_all = comm.empty((m.tp * self.lrows, m.vl), dt, dev)
        comm.buffers_ready()

    # --- the step ---------------------------------------------------------------------------
    def __call__(self):
        m, sp = self.m, self.variant != "ar"
        m.embed_partial(self.ids, self.red)
        if sp:
            self._scatter()
            x = self.shard.clone()
        else:
            self.comm.all_reduce(self.red)
            x = self.red.clone()
        for i, w in enumerate(m.layers):
            if sp:
                self.agin.copy_(m.rms(x, w.ln1))
                a = self._attend(self._gather_mm(w.qkv), i)
                self._mm_scatter(a, w.o)
                x += self.shard
                self.agin.copy_(m.rms(x, w.ln2))
                gu = self._gather_mm(w.gate_up)
                self._mm_scatter(F.silu(gu[:, :m.ffn]) * gu[:, m.ffn:], w.down)
                x += self.shard
            else:
                torch.mm(self._attend(m.rms(x, w.ln1) @ w.qkv, i), w.o, out=self.red)
                self.comm.all_reduce(self.red)
                x += self.red
                gu = m.rms(x, w.ln2) @ w.gate_up
                torch.mm(F.silu(gu[:, :m.ffn]) * gu[:, m.ffn:], w.down, out=self.red)
                self.comm.all_reduce(self.red)
                x += self.red
        if sp:
            self.agin.copy_(m.rms(x, m.lnf))
            self._gather()
            h = self.agout
        else:
            h = m.rms(x, m.lnf)
        if self.kv is None:
            h = h[self.rows - 1:self.rows]
        torch.mm(h, m.lm_head, out=self.logit_l)
        self.comm.all_gather(self.logit_all, self.logit_l)

    def output(self):
        m = self.m
        full = self.logit_all.view(m.tp, self.lrows, m.vl).permute(1, 0, 2).reshape(self.lrows, -1)
        return full[:self.rows] if self.kv is not None else full

    def _attend(self, qkv, i):
        """Attention for the rows' queries: decode over the cache (its
        position kv written first), prefill causal over the prompt."""
        m, n = self.m, self.n
        q, k, v = qkv.split([m.hq * m.hd, m.hkv * m.hd, m.hkv * m.hd], dim=-1)
        q = m.rotate(q.view(n, m.hq, m.hd), self.cos, self.sin)
        k = m.rotate(k.view(n, m.hkv, m.hd), self.cos, self.sin)
        v = v.view(n, m.hkv, m.hd)
        if self.kv is not None:
            kc, vc = self.caches[i]
            kc[:, :, self.kv].copy_(k)
            vc[:, :, self.kv].copy_(v)
            # one query per sequence: the query heads of a KV head are the
            # query positions of one attention over that head (exact GQA)
            o = F.scaled_dot_product_attention(q.view(n, m.hkv, m.hq // m.hkv, m.hd), kc, vc)
            return o.reshape(n, m.hq * m.hd)
        q, k, v = (t.transpose(0, 1).unsqueeze(0) for t in (q, k, v))
        if m.gqa:
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        else:
            g = m.hq // m.hkv
            o = F.scaled_dot_product_attention(q, k.repeat_interleave(g, 1),
                                               v.repeat_interleave(g, 1), is_causal=True)
        return o[0].transpose(0, 1).reshape(n, m.hq * m.hd)

    # --- sequence-parallel collectives, whole or in overlapped chunks --------------------------
    def _blocks(self):
        """(rows of this rank's shard, rows of the full tensor) for each chunk."""
        cs = self.n // (self.m.tp * self.c)
        b = cs * self.m.tp
        return [(slice(j * cs, (j + 1) * cs), slice(j * b, (j + 1) * b)) for j in range(self.c)]

    def _gather(self):
        for mine, full in self._blocks():
            self.comm.all_gather(self.agout[full], self.agin[mine])

    def _scatter(self):
        for mine, full in self._blocks():
            self.comm.reduce_scatter(self.shard[mine], self.red[full])

    def _gather_mm(self, w):
        """AllGather(agin) @ w; with chunks, gathers on the side stream and
        each chunk's GEMM starts once its rows are in."""
        out = torch.empty(self.n, w.shape[1], device=w.device, dtype=w.dtype)
        if self.words is not None:
            return self._gather_mm_notify(w, out)
        if self.variant == "sp-notify":  # a backend without words: the same GEMMs
            self._gather()
            self._block_mms(self.agin, w, out)
            return out
        if self.c == 1:
            self._gather()
            torch.mm(self.agout, w, out=out)
            return out
        ready, landed = self.st.mark(), []
        with self.st.on_side():
            self.st.wait(ready)
            for mine, full in self._blocks():
                self.comm.all_gather(self.agout[full], self.agin[mine])
                landed.append(self.st.mark())
        for ev, (_, full) in zip(landed, self._blocks()):
            self.st.wait(ev)
            torch.mm(self.agout[full], w, out=out[full])
        return out

    def _gather_mm_notify(self, w, out):
        """sp-notify's AllGather(agin) @ w: one gather with arrival words on
        the side stream; the own rows' GEMM reads agin at once, each peer's
        waits for that peer's word. The words are set back to 0 first (on
        this stream, before the gather: a graph's replays store the same
        value)."""
        self.words.zero_()
        ready = self.st.mark()
        with self.st.on_side():
            self.st.wait(ready)
            self.comm.all_gather_notify(self.agout, self.agin, self.words, 1)
            done = self.st.mark()
        self._block_mms(self.agin, w, out, lambda p: self.comm.wait_arrived(self.words, p, 1))
        self.st.wait(done)  # the gather's stream joins this one (graphs need it)
        return out

    def _block_mms(self, own, w, out, before=None):
        """sp-notify's GEMMs: the own rows (read from `own`) first, then
        each peer's rows of agout in ring order, before(p) ahead of peer
        p's."""
        tp, me = self.m.tp, self.comm.rank
        ns = self.n // tp
        torch.mm(own, w, out=out[me * ns:(me + 1) * ns])
        for d in range(1, tp):
            p = (me + d) % tp
            if before is not None:
                before(p)
            torch.mm(self.agout[p * ns:(p + 1) * ns], w, out=out[p * ns:(p + 1) * ns])

    def _mm_scatter(self, a, w):
        """ReduceScatter(a @ w) into shard; with chunks, each chunk's
        ReduceScatter runs on the side stream under the next chunk's GEMM."""
        if self.c == 1:
            torch.mm(a, w, out=self.red)
            self._scatter()
            return
        for mine, full in self._blocks():
            torch.mm(a[full], w, out=self.red[full])
            done = self.st.mark()
            with self.st.on_side():
                self.st.wait(done)
                self.comm.reduce_scatter(self.shard[mine], self.red[full])
        with self.st.on_side():
            finished = self.st.mark()
        self.st.wait(finished)

