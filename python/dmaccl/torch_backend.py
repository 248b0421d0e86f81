"""The torch.distributed backend "dmaccl".

    import dmaccl.torch_backend  # registers it
    torch.distributed.init_process_group("cpu:gloo,cuda:dmaccl")

CUDA tensors run on the copy engines of their GPU; CPU tensors on the host
executor (so the backend can be tested without a GPU:
``init_process_group("dmaccl")`` with CPU tensors). A communicator per
device kind is made on first use, its unique id passed through the process
group's store.

Work runs on the caller's current CUDA stream, so ``async_op=True`` returns a
Work whose ``wait()`` orders the then-current stream after it (an event), and
whose future is complete. Coalesced calls (``_coalescing_manager``,
``all_reduce_coalesced``...) are one dmaccl group. send/recv match in order
per pair of ranks (no receive from any source; tags are ignored).
"""

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import Backend as _C10dBackend
from torch._C._distributed_c10d import Work as _C10dWork

from .communicator import Communicator, group

BACKEND_NAME = "dmaccl"


def _python_backends_supported():
    """Whether this torch lets Python subclass its c10d Backend (2.15 does;
    2.11 has no constructor for it)."""
    class _Probe(_C10dBackend):
        pass

    try:
        _Probe(0, 1)
        return True
    except TypeError:
        return False


if not _python_backends_supported():
    raise ImportError(
        f"dmaccl.torch_backend: torch {torch.__version__} cannot host a c10d backend written in "
        "Python (its Backend class has no Python constructor); use dmaccl.Communicator directly "
        "(vLLM-shaped), or a torch that allows it (2.15 does)")


class _Work(_C10dWork):
    """Done on the host side once made; CUDA work is ordered by an event."""

    def __init__(self, result, event=None):
        super().__init__()
        self._result = result
        self._event = event
        self._future = torch.futures.Future()
        self._future.set_result(result)

    def wait(self, timeout=None):
        if self._event is not None:
            torch.cuda.current_stream().wait_event(self._event)
        return True

    def is_completed(self):
        return self._event is None or self._event.query()

    def is_success(self):
        return True

    def get_future(self):
        return self._future

    def result(self):
        return self._result


class ProcessGroupDmaccl(_C10dBackend):
    # torch's own property recurses for a backend written in Python (2.15);
    # without coalescing, batch_isend_irecv issues its calls one by one, and
    # a send returns without waiting for its receiver up to the staged sizes
    supports_coalescing = False

    def __init__(self, store, rank, size, timeout):
        super().__init__(rank, size)
        self._store = store
        self._rank, self._size = rank, size
        self._comms = {}

    def getBackendName(self):
        return BACKEND_NAME

    def _comm(self, t):
        key = t.device.index if t.is_cuda else -1
        c = self._comms.get(key)
        if c is None:
            name = f"dmaccl_unique_id_{'cpu' if key < 0 else key}"
            if self._rank == 0:
                from .communicator import get_unique_id

                uid = get_unique_id()
                self._store.set(name, uid)
            else:
                uid = self._store.get(name)
            c = Communicator(unique_id=bytes(uid), rank=self._rank, world_size=self._size,
                             executor="cuda" if key >= 0 else "host",
                             device=t.device if key >= 0 else None)
            self._comms[key] = c
        return c

    def _work(self, result, t):
        if t.is_cuda:
            ev = torch.cuda.Event()
            ev.record(torch.cuda.current_stream(t.device))
            return _Work(result, ev)
        return _Work(result)

    # --- collectives ------------------------------------------------------------------------------
    def allreduce(self, tensors, opts):
        comms = [self._comm(t) for t in tensors]  # made outside the group
        with group():
            for c, t in zip(comms, tensors):
                c.all_reduce(t, t, op=opts.reduceOp)
        return self._work(tensors, tensors[0])

    def allreduce_coalesced(self, tensors, opts):
        return self.allreduce(tensors, opts)

    def all_gather_single(self, output, input, opts):
        self._comm(input).all_gather(output, input)
        return self._work([output], input)

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts):
        comms = [self._comm(i) for i in inputs]
        with group():
            for c, o, i in zip(comms, outputs, inputs):
                c.all_gather(o, i)
        return self._work(outputs, inputs[0])

    def allgather(self, output_tensors, input_tensors, opts):
        for outs, i in zip(output_tensors, input_tensors):
            flat = i.new_empty((self._size * i.numel(),))
            self._comm(i).all_gather(flat, i.contiguous())
            for r, o in enumerate(outs):
                o.copy_(flat[r * i.numel():(r + 1) * i.numel()].view_as(o))
        return self._work(output_tensors, input_tensors[0])

    def reduce_scatter_single(self, output, input, opts):
        self._comm(input).reduce_scatter(output, input, op=opts.reduceOp)
        return self._work([output], input)

    def reduce_scatter_tensor_coalesced(self, outputs, inputs, opts):
        comms = [self._comm(i) for i in inputs]
        with group():
            for c, o, i in zip(comms, outputs, inputs):
                c.reduce_scatter(o, i, op=opts.reduceOp)
        return self._work(outputs, inputs[0])

    def reduce_scatter(self, output_tensors, input_tensors, opts):
        for o, ins in zip(output_tensors, input_tensors):
            flat = torch.cat([x.reshape(-1) for x in ins])
            out = o if o.is_contiguous() else o.contiguous()
            self._comm(o).reduce_scatter(out, flat, op=opts.reduceOp)
            if out is not o:
                o.copy_(out)
        return self._work(output_tensors, output_tensors[0])

    def all_to_all_single(self, output, input, output_split_sizes, input_split_sizes, opts):
        self._comm(input).all_to_all_single(output, input, list(output_split_sizes) or None,
                                            list(input_split_sizes) or None)
        return self._work([output], input)

    def alltoall(self, output_tensors, input_tensors, opts):
        flat_in = torch.cat([x.reshape(-1) for x in input_tensors])
        flat_out = flat_in.new_empty((sum(o.numel() for o in output_tensors),))
        self._comm(flat_in).all_to_all_single(flat_out, flat_in,
                                              [o.numel() for o in output_tensors],
                                              [x.numel() for x in input_tensors])
        off = 0
        for o in output_tensors:
            o.copy_(flat_out[off:off + o.numel()].view_as(o))
            off += o.numel()
        return self._work(output_tensors, flat_in)

    def broadcast(self, tensors, opts):
        comms = [self._comm(t) for t in tensors]
        with group():
            for c, t in zip(comms, tensors):
                c.broadcast(t, opts.rootRank)
        return self._work(tensors, tensors[0])

    def reduce(self, tensors, opts):
        comms = [self._comm(t) for t in tensors]
        with group():
            for c, t in zip(comms, tensors):
                c.reduce(t, t, opts.rootRank, op=opts.reduceOp)
        return self._work(tensors, tensors[0])

    def gather(self, output_tensors, input_tensors, opts):
        i = input_tensors[0]
        root = opts.rootRank
        flat = i.new_empty((self._size * i.numel(),)) if self._rank == root else None
        self._comm(i).gather(flat, i.contiguous(), root)
        if self._rank == root:
            for r, o in enumerate(output_tensors[0]):
                o.copy_(flat[r * i.numel():(r + 1) * i.numel()].view_as(o))
        return self._work(output_tensors, i)

    def scatter(self, output_tensors, input_tensors, opts):
        o = output_tensors[0]
        root = opts.rootRank
        flat = torch.cat([x.reshape(-1) for x in input_tensors[0]]) if self._rank == root \
            else None
        out = o if o.is_contiguous() else o.contiguous()
        self._comm(o).scatter(out, flat, root)
        if out is not o:
            o.copy_(out)
        return self._work(output_tensors, o)

    def barrier(self, opts):
        dev = next((k for k in self._comms if k >= 0), None)
        t = torch.zeros(1, device=f"cuda:{dev}" if dev is not None else "cpu")
        self._comm(t).all_reduce(t, t)
        if t.is_cuda:
            torch.cuda.current_stream(t.device).synchronize()
        return _Work([t])

    def send(self, tensors, dst, tag):
        t = tensors[0]
        self._comm(t).send(t, dst)
        return self._work(tensors, t)

    def recv(self, tensors, src, tag):
        t = tensors[0]
        self._comm(t).recv(t, src)
        return self._work(tensors, t)

    def shutdown(self):
        for c in self._comms.values():
            c.destroy()
        self._comms.clear()


def _create(store, rank, size, timeout):
    return ProcessGroupDmaccl(store, rank, size, timeout)


if BACKEND_NAME.upper() not in dist.Backend._plugins:
    dist.Backend.register_backend(BACKEND_NAME, _create, devices=["cpu", "cuda"])
