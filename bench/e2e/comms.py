"""The communication backends the benchmark's models call, behind one interface.

Every collective runs on torch's current stream (the model picks the stream)
and writes into buffers the caller passes; the buffers come from
``Comm.empty`` so that a backend needing special memory (NCCL's copy-engine
path: symmetric windows) can provide it.

- TorchComm: torch.distributed's NCCL on a process group (NcclCeComm: with
  the zero-CTA policy and symmetric buffers). torch.distributed has no V
  collectives; the benchmark always calls them with equal sizes, where
  NCCL's AllGather and ReduceScatter are what an engine would call (vLLM's
  PyNccl emulates the V forms with grouped Broadcasts and Reduces, slower
  than this).
- GlooComm: gloo as the numerical reference. gloo has no ReduceScatter
  (AllReduce, then this rank's block) and no GPU tensors (staged through
  host memory, bf16 as fp32, which is exact).
- DmacclComm: dmaccl.Communicator, the calls vLLM's PyNcclCommunicator makes.
- NoComm ("none"): every collective replaced by the cheapest local copy that
  leaves realistic contents in the output (this rank's data where a peer's
  would be), so the compute that follows (routing above all) does the same
  work. The step time without communication comes from it.
- WideComm: the numerical control, not a backend of its own: another
  backend (the reference) with every reduction run in fp32 and rounded once.
"""

import torch
import torch.distributed as dist


def _equal(sizes, what):
    if len(set(sizes)) != 1:
        raise ValueError(f"{what}: torch.distributed has no V form; the benchmark passes equal "
                         f"sizes, not {sizes}")


class Comm:
    """The interface. `world`, `rank`: the group's; `graphable`: calls can be
    captured in a CUDA graph; `notify`: all_gather_notify and wait_arrived
    exist (per-rank arrival words)."""

    graphable = True
    notify = False

    def __init__(self, world, rank):
        self.world, self.rank = world, rank

    def empty(self, shape, dtype, device):
        """A buffer that collectives read or write."""
        return torch.empty(shape, dtype=dtype, device=device)

    def buffers_ready(self):
        """Called once a step's buffers are all allocated (before any call)."""

    def release(self):
        """Called when a step's buffers are dropped."""

    def all_reduce(self, t):
        """Sum, in place."""
        raise NotImplementedError

    def all_gather(self, out, inp):
        raise NotImplementedError

    def reduce_scatter(self, out, inp):
        raise NotImplementedError

    def all_gatherv(self, out, inp, sizes):
        """sizes: rows per rank. Backends without a V form run the uniform
        one, which the benchmark's equal sizes allow."""
        _equal(sizes, "all_gatherv")
        self.all_gather(out, inp)

    def reduce_scatterv(self, out, inp, sizes):
        _equal(sizes, "reduce_scatterv")
        self.reduce_scatter(out, inp)

    def all_to_all(self, out, inp, out_splits=None, in_splits=None):
        """torch's all_to_all_single: equal blocks, or rows to and from each rank."""
        raise NotImplementedError


class TorchComm(Comm):
    """torch.distributed's NCCL on `group`."""

    def __init__(self, group):
        super().__init__(dist.get_world_size(group), dist.get_rank(group))
        self.group = group

    def all_reduce(self, t):
        dist.all_reduce(t, group=self.group)

    def all_gather(self, out, inp):
        dist.all_gather_into_tensor(out, inp, group=self.group)

    def reduce_scatter(self, out, inp):
        dist.reduce_scatter_tensor(out, inp, group=self.group)

    def all_to_all(self, out, inp, out_splits=None, in_splits=None):
        dist.all_to_all_single(out, inp, out_splits, in_splits, group=self.group)


class NcclCeComm(TorchComm):
    """NCCL 2.28's copy-engine path as torch can reach it: a group whose
    communicator has CTAPolicy = NCCL_CTA_POLICY_ZERO, with every buffer in
    a pool of ncclMemAlloc memory registered as symmetric windows (NCCL takes
    the copy engines only for such buffers, and only for AllGather and
    AlltoAll; reductions still run kernels). Each step's buffers get a pool
    of their own, registered once allocated."""

    # Captured, NCCL 2.28.9's first AllGather here failed with "Cuda failure
    # 'invalid argument'" and its abort took every rank down (2x H100,
    # docs/results/e2e-2xh100/README.md). Its copy-engine collectives issue
    # cudaMemcpyBatchAsync (NVIDIA/nccl issue 1840), which CUDA cannot
    # capture, so its graph rows are skipped and its eager rows run.
    graphable = False
    no_graph = ("NCCL's copy-engine collectives cannot be captured (cudaMemcpyBatchAsync has "
                "no graph form; NCCL 2.28.9 failed inside capture)")

    def __init__(self, group, device):
        super().__init__(group)
        self.backend = group._get_backend(device)
        self.pool, self.registered = None, False

    @staticmethod
    def options():
        """(ProcessGroupNCCL.Options with the zero-CTA policy, None), or
        (None, why this torch cannot)."""
        P = getattr(dist, "ProcessGroupNCCL", None)
        if P is None:
            return None, "this torch has no ProcessGroupNCCL"
        opts = P.Options()
        if not hasattr(opts.config, "cta_policy"):
            return None, "ProcessGroupNCCL.Options().config has no cta_policy in this torch"
        if "symm" not in (P.register_mem_pool.__doc__ or ""):
            return None, ("ProcessGroupNCCL.register_mem_pool takes no symm argument in this "
                          "torch (NCCL's copy-engine path needs symmetric windows)")
        if not hasattr(torch.cuda, "MemPool") or not hasattr(torch.cuda, "use_mem_pool"):
            return None, "this torch has no torch.cuda.MemPool/use_mem_pool"
        # nccl.h: #define NCCL_CTA_POLICY_ZERO 0x02 (NCCL 2.28)
        opts.config.cta_policy = getattr(P, "NCCL_CTA_POLICY_ZERO", 2)
        return opts, None

    def empty(self, shape, dtype, device):
        if self.pool is None:
            self.pool = torch.cuda.MemPool(self.backend.mem_allocator)
        with torch.cuda.use_mem_pool(self.pool):
            return torch.empty(shape, dtype=dtype, device=device)

    def buffers_ready(self):
        self.backend.register_mem_pool(self.pool, symm=True)
        self.registered = True

    def release(self):
        if self.registered:
            self.backend.deregister_mem_pool(self.pool)
        self.pool, self.registered = None, False


class GlooComm(Comm):
    """gloo, the reference where NCCL cannot run. Eager only."""

    graphable = False

    def __init__(self, group):
        super().__init__(dist.get_world_size(group), dist.get_rank(group))
        self.group = group

    @staticmethod
    def _host(t):
        """A copy of t as gloo takes it: on the CPU, half types widened to fp32."""
        wide = torch.float32 if t.dtype in (torch.bfloat16, torch.float16) else t.dtype
        return t.detach().to("cpu", wide, copy=True)

    def all_reduce(self, t):
        h = self._host(t)
        dist.all_reduce(h, group=self.group)
        t.copy_(h)

    def all_gather(self, out, inp):
        h = self._host(out)
        dist.all_gather_into_tensor(h, self._host(inp), group=self.group)
        out.copy_(h)

    def reduce_scatter(self, out, inp):
        h = self._host(inp)
        dist.all_reduce(h, group=self.group)
        out.copy_(h.view(self.world, -1)[self.rank].view(out.shape))

    def all_to_all(self, out, inp, out_splits=None, in_splits=None):
        h = self._host(out)
        dist.all_to_all_single(h, self._host(inp), out_splits, in_splits, group=self.group)
        out.copy_(h)


class DmacclComm(Comm):
    """dmaccl.Communicator (copy engines; the host executor on CPU tensors)."""

    notify = True

    def __init__(self, comm):
        super().__init__(comm.world_size, comm.rank)
        self.comm = comm
        self.graphable = comm.executor == "cuda"

    def release(self):
        self.comm.synchronize()  # a sync point: the library closes retired peer mappings

    def all_reduce(self, t):
        self.comm.all_reduce(t, t)

    def all_gather(self, out, inp):
        self.comm.all_gather(out, inp)

    def reduce_scatter(self, out, inp):
        self.comm.reduce_scatter(out, inp)

    def all_gatherv(self, out, inp, sizes):
        self.comm.all_gatherv(out, inp, sizes)

    def all_gather_notify(self, out, inp, words, value):
        """all_gather that stores value into words[p] once rank p's block
        of out has landed."""
        self.comm.all_gather(out, inp, arrived=words, value=value)

    def wait_arrived(self, words, rank, value):
        """The current stream waits until words[rank] == value."""
        self.comm.wait_arrived(words, rank, value)

    def reduce_scatterv(self, out, inp, sizes):
        self.comm.reduce_scatterv(out, inp, sizes)

    def all_to_all(self, out, inp, out_splits=None, in_splits=None):
        self.comm.all_to_all_single(out, inp, out_splits, in_splits)


class NoComm(Comm):
    """No communication: local copies that put this rank's data where the
    peers' would be (see the module's docstring)."""

    def __init__(self, world, rank, graphable):
        super().__init__(world, rank)
        self.graphable = graphable

    def empty(self, shape, dtype, device):
        return torch.zeros(shape, dtype=dtype, device=device)

    def all_reduce(self, t):
        pass

    def all_gather(self, out, inp):
        out.view(self.world, -1).copy_(inp.reshape(1, -1).expand(self.world, -1))

    def reduce_scatter(self, out, inp):
        out.copy_(inp.view(self.world, -1)[self.rank].view(out.shape))

    def all_to_all(self, out, inp, out_splits=None, in_splits=None):
        n = min(out.shape[0], inp.shape[0])  # the splits exchange returns ours: same rows
        out[:n].copy_(inp[:n])


class WideComm(Comm):
    """`inner` with its reductions in fp32: a bf16 (fp16) input is widened,
    reduced in fp32 and the result rounded once. The sum of a few bf16 values
    is exact (or within an fp32 ulp) in fp32, so the result does not depend
    on the order inner adds in, where inner's own bf16 sums (NCCL's ring
    rounds after every hop) do from 3 ranks on. Data movement passes
    through: it does not round. Eager only (it allocates per call)."""

    graphable = False

    def __init__(self, inner):
        super().__init__(inner.world, inner.rank)
        self.inner = inner

    @staticmethod
    def _wide(t):
        return t.float() if t.dtype in (torch.bfloat16, torch.float16) else t

    def empty(self, shape, dtype, device):
        return self.inner.empty(shape, dtype, device)

    def buffers_ready(self):
        self.inner.buffers_ready()

    def release(self):
        self.inner.release()

    def all_reduce(self, t):
        w = self._wide(t)
        self.inner.all_reduce(w)
        if w is not t:
            t.copy_(w)

    def _scatter(self, out, inp, reduce):
        w = self._wide(inp)
        o = torch.empty(out.shape, dtype=w.dtype, device=out.device)
        reduce(o, w)
        out.copy_(o)

    def reduce_scatter(self, out, inp):
        self._scatter(out, inp, self.inner.reduce_scatter)

    def reduce_scatterv(self, out, inp, sizes):
        self._scatter(out, inp, lambda o, w: self.inner.reduce_scatterv(o, w, sizes))

    def all_gather(self, out, inp):
        self.inner.all_gather(out, inp)

    def all_gatherv(self, out, inp, sizes):
        self.inner.all_gatherv(out, inp, sizes)

    def all_to_all(self, out, inp, out_splits=None, in_splits=None):
        self.inner.all_to_all(out, inp, out_splits, in_splits)
