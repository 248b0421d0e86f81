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

Two forms, the same collectives (``_Dmaccl``):
- torch 2.14 and later let Python subclass c10d's ``Backend``:
  ``ProcessGroupDmaccl`` is one, and torch's own ProcessGroup sends it the
  devices mapped to "dmaccl" (gloo keeps the others).
- torch 2.11 to 2.13 give ``Backend`` no Python constructor, but let Python
  subclass ``ProcessGroup`` (torch's Python process groups), and a creator
  that returns one makes it the whole group. ``PythonProcessGroupDmaccl`` is
  that group; CPU tensors go to gloo when the group maps "cpu" to gloo, as
  torch would send them.
"""

import sys

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import Backend as _C10dBackend
from torch._C._distributed_c10d import PrefixStore as _PrefixStore
from torch._C._distributed_c10d import ProcessGroup as _C10dProcessGroup
from torch._C._distributed_c10d import Work as _C10dWork

from .communicator import Communicator, group

BACKEND_NAME = "dmaccl"


def _python_backends_supported():
    """Whether this torch lets Python subclass its c10d Backend (2.14 on do;
    2.11-2.13 have no constructor for it: "No constructor defined!")."""
    class _Probe(_C10dBackend):
        pass

    try:
        _Probe(0, 1)
        return True
    except TypeError:
        return False


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


class _Dmaccl:
    """The collectives, on one communicator per device kind; the classes below
    add the c10d base. The names torch 2.13 renamed are served under both."""

    # torch's own supports_* properties recurse for a backend written in
    # Python (2.15: the property asks the C++ method, which asks Python's
    # attribute of that name, the property again), so each is answered here.
    # Without coalescing, batch_isend_irecv issues its calls one by one, and
    # a send returns without waiting for its receiver up to the staged sizes.
    supports_coalescing = False
    # No split (torch then makes new groups through the store, and
    # split_group says the backend cannot), shrink, reconfigure, windows or
    # time estimates. torch asks supports_splitting in split_group (where
    # the recursion was seen), new_group and init_process_group with a
    # device_id.
    supports_splitting = False
    supports_shrinking = False
    supports_reconfigure = False
    supports_window = False
    _supports_time_estimate = False
    supports_abort_hooks = False
    supports_completion_hooks = False

    def _setup(self, store, rank, size):
        self._store = store
        self._rank, self._size = rank, size
        self._comms = {}

    def getBackendName(self):
        return BACKEND_NAME

    def _uid_name(self, key):
        """The store key of the unique id of the communicator for device
        `key` (-1: CPU). It must be the same on every rank, so not the device
        index, which differs per rank with one GPU each. Ranks make their
        communicators in the same order (on their first collective of each
        kind of tensor), so a count tells them apart."""
        made = sum(1 for k in self._comms if (k < 0) == (key < 0))
        return f"dmaccl_unique_id_{'cpu' if key < 0 else 'cuda'}_{made}"

    def _comm(self, t):
        key = t.device.index if t.is_cuda else -1
        c = self._comms.get(key)
        if c is None:
            name = self._uid_name(key)
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

    def _per_rank(self, what, name, tensors, numel):
        """A list form's per-rank tensors, checked before anything moves: one
        per rank, each of numel elements (as gloo checks them)."""
        if len(tensors) != self._size:
            raise ValueError(f"{what}: {name} has {len(tensors)} tensors, the group has "
                             f"{self._size} ranks (one per rank)")
        for r, t in enumerate(tensors):
            if t.numel() != numel:
                raise ValueError(f"{what}: {name}[{r}] has {t.numel()} elements, not {numel}")

    @staticmethod
    def _dense(t, op=None):
        """t as the library takes it, as gloo takes any tensor: itself, or a
        contiguous copy (non-contiguous, channels_last: written back by
        _back); complex data as its real view where the reduction is
        elementwise on the parts (SUM, AVG), as torch's all_reduce does."""
        d = t if t.is_contiguous() else t.contiguous()
        if op is not None and d.is_complex() and (op == dist.ReduceOp.SUM or op == dist.ReduceOp.AVG):
            d = torch.view_as_real(d)
        return d

    @staticmethod
    def _back(t, d):
        """The result in d, into t where d is a copy."""
        if d.data_ptr() != t.data_ptr() or not t.is_contiguous():
            t.copy_(torch.view_as_complex(d) if t.is_complex() and not d.is_complex() else d)

    # --- collectives ------------------------------------------------------------------------------
    def allreduce(self, tensors, opts):
        comms = [self._comm(t) for t in tensors]  # made outside the group
        dense = [self._dense(t) for t in tensors]
        with group():
            for c, d in zip(comms, dense):
                c.all_reduce(d, d, op=opts.reduceOp)
        for t, d in zip(tensors, dense):
            self._back(t, d)
        return self._work(tensors, tensors[0])

    def allreduce_coalesced(self, tensors, opts):
        return self.allreduce(tensors, opts)

    def all_gather_single(self, output, input, opts=None):
        out = self._dense(output)
        self._comm(input).all_gather(out, self._dense(input))
        self._back(output, out)
        return self._work([output], input)

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts=None):
        comms = [self._comm(i) for i in inputs]
        with group():
            for c, o, i in zip(comms, outputs, inputs):
                c.all_gather(o, i)
        return self._work(outputs, inputs[0])

    def allgather(self, output_tensors, input_tensors, opts):
        for outs, i in zip(output_tensors, input_tensors):
            self._per_rank("all_gather", "output_tensor_list", outs, i.numel())
        for outs, i in zip(output_tensors, input_tensors):
            flat = i.new_empty((self._size * i.numel(),))
            self._comm(i).all_gather(flat, i.contiguous())
            for r, o in enumerate(outs):
                o.copy_(flat[r * i.numel():(r + 1) * i.numel()].view_as(o))
        return self._work(output_tensors, input_tensors[0])

    def reduce_scatter_single(self, output, input, opts):
        return self.reduce_scatter_tensor_coalesced([output], [input], opts)

    def reduce_scatter_tensor_coalesced(self, outputs, inputs, opts):
        comms = [self._comm(i) for i in inputs]
        op = opts.reduceOp
        dense = [(self._dense(o, op), self._dense(i, op)) for o, i in zip(outputs, inputs)]
        with group():
            for c, (o, i) in zip(comms, dense):
                c.reduce_scatter(o, i, op=op)
        for t, (o, _) in zip(outputs, dense):
            self._back(t, o)
        return self._work(outputs, inputs[0])

    def reduce_scatter(self, output_tensors, input_tensors, opts):
        for o, ins in zip(output_tensors, input_tensors):
            self._per_rank("reduce_scatter", "input_list", ins, o.numel())
        for o, ins in zip(output_tensors, input_tensors):
            flat = torch.cat([x.reshape(-1) for x in ins])
            out = o if o.is_contiguous() else o.contiguous()
            self._comm(o).reduce_scatter(out, flat, op=opts.reduceOp)
            if out is not o:
                o.copy_(out)
        return self._work(output_tensors, output_tensors[0])

    def all_to_all_single(self, output, input, output_split_sizes, input_split_sizes, opts):
        out, inp = self._dense(output), self._dense(input)
        if inp.data_ptr() == out.data_ptr():  # in place, as gloo allows: from a copy
            inp = inp.clone()
        self._comm(input).all_to_all_single(out, inp, list(output_split_sizes) or None,
                                            list(input_split_sizes) or None)
        self._back(output, out)
        return self._work([output], input)

    def alltoall(self, output_tensors, input_tensors, opts):
        for name, ts in (("output_tensor_list", output_tensors), ("input_tensor_list",
                                                                  input_tensors)):
            if len(ts) != self._size:
                raise ValueError(f"all_to_all: {name} has {len(ts)} tensors, the group has "
                                 f"{self._size} ranks (one per rank)")
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
        dense = [self._dense(t) for t in tensors]
        with group():
            for c, d in zip(comms, dense):
                c.broadcast(d, opts.rootRank)
        for t, d in zip(tensors, dense):
            self._back(t, d)
        return self._work(tensors, tensors[0])

    def reduce(self, tensors, opts):
        comms = [self._comm(t) for t in tensors]
        dense = [self._dense(t, opts.reduceOp) for t in tensors]
        with group():
            for c, d in zip(comms, dense):
                c.reduce(d, d, opts.rootRank, op=opts.reduceOp)
        if self._rank == opts.rootRank:
            for t, d in zip(tensors, dense):
                self._back(t, d)
        return self._work(tensors, tensors[0])

    def gather(self, output_tensors, input_tensors, opts):
        i = input_tensors[0]
        root = opts.rootRank
        if self._rank == root:
            self._per_rank("gather", "gather_list", output_tensors[0], i.numel())
        flat = i.new_empty((self._size * i.numel(),)) if self._rank == root else None
        self._comm(i).gather(flat, i.contiguous(), root)
        if self._rank == root:
            for r, o in enumerate(output_tensors[0]):
                o.copy_(flat[r * i.numel():(r + 1) * i.numel()].view_as(o))
        return self._work(output_tensors, i)

    def scatter(self, output_tensors, input_tensors, opts):
        o = output_tensors[0]
        root = opts.rootRank
        if self._rank == root:
            self._per_rank("scatter", "scatter_list", input_tensors[0], o.numel())
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
        self._comm(t).send(self._dense(t), dst)
        return self._work(tensors, t)

    def recv(self, tensors, src, tag):
        t = tensors[0]
        d = self._dense(t)
        self._comm(t).recv(d, src)
        self._back(t, d)
        return self._work(tensors, t)

    def shutdown(self):
        for c in self._comms.values():
            c.destroy()
        self._comms.clear()

    # torch 2.11-2.12 call these names (2.13 renamed them); 2.14 on still
    # accept the old ones from a Python subclass
    _allgather_base = all_gather_single
    all_gather_single_coalesced = allgather_into_tensor_coalesced
    _reduce_scatter_base = reduce_scatter_single
    reduce_scatter_single_coalesced = reduce_scatter_tensor_coalesced
    alltoall_base = all_to_all_single


class ProcessGroupDmaccl(_Dmaccl, _C10dBackend):
    """The backend on torch 2.14 and later: torch's ProcessGroup routes the
    devices mapped to "dmaccl" to it."""

    def __init__(self, store, rank, size, timeout):
        _C10dBackend.__init__(self, rank, size)
        self._setup(store, rank, size)


# the ops whose CPU tensors go to gloo in PythonProcessGroupDmaccl (every name
# torch 2.11-2.15 call on a group)
_ROUTED = ("allreduce", "allreduce_coalesced", "all_gather_single", "_allgather_base",
           "allgather", "allgather_into_tensor_coalesced", "all_gather_single_coalesced",
           "reduce_scatter_single", "_reduce_scatter_base", "reduce_scatter",
           "reduce_scatter_tensor_coalesced", "reduce_scatter_single_coalesced",
           "all_to_all_single", "alltoall_base", "alltoall", "broadcast", "reduce", "gather",
           "scatter", "send", "recv")


def _first_tensor(args):
    for a in args:
        if isinstance(a, torch.Tensor):
            return a
        if isinstance(a, (list, tuple)):
            t = _first_tensor(a)
            if t is not None:
                return t
    return None


def _routed(name):
    ours = getattr(_Dmaccl, name)

    def op(self, *args):
        t = _first_tensor(args)
        if self._cpu_group is not None and t is not None and not t.is_cuda:
            return getattr(self._cpu_group, name)(*args)
        return ours(self, *args)

    op.__name__ = op.__qualname__ = name
    return op


class PythonProcessGroupDmaccl(_Dmaccl, _C10dProcessGroup):
    """The whole process group on torch 2.11-2.13, whose c10d Backend has no
    Python constructor. torch makes a group whose creator returns a
    ProcessGroup that group itself, dropping the backends it made for the
    other devices; so when the group maps "cpu" to gloo, CPU tensors go to a
    torch ProcessGroup holding gloo: torch's own, when it made gloo before
    this, else one made here."""

    def __init__(self, store, rank, size, timeout, device_backends, torch_group=None,
                 device_id=None):
        _C10dProcessGroup.__init__(self, rank, size)  # (store, rank, size) makes no subclass
        self._setup(store, rank, size)
        self._cpu_group = None
        for dev, name in device_backends.items():
            if dev == "cpu" and name == "gloo":
                self._cpu_group = self._gloo_group(store, rank, size, timeout, torch_group)
            elif not _is_dmaccl(name):
                raise ValueError(
                    f"dmaccl on torch {torch.__version__} is the whole process group (torch's "
                    f"Backend has no Python constructor before 2.14): it can leave only the CPU, "
                    f"to gloo, not {dev} to {name}")
        # no backend registered here, as torch expects of such a group (2.15's
        # flight recorder skips a group without one, else asks its default)
        if device_id is not None:
            self.bound_device_id = device_id
        self._group_name = None

    def _set_group_name(self, name):
        """torch names the group once made. c10d answers a group's name from
        its first backend, and this group registers none, so its name (what
        functional collectives and DTensor find the group by) is kept here."""
        self._group_name = name
        _C10dProcessGroup._set_group_name(self, name)

    @property
    def group_name(self):
        if self._group_name is None:
            raise RuntimeError("ProcessGroup name not set")
        return self._group_name

    @staticmethod
    def _gloo_group(store, rank, size, timeout, torch_group):
        cpu = torch.device("cpu")
        if torch_group is not None and cpu in torch_group._device_types:
            return torch_group  # gloo came first in the config: torch made it
        from torch._C._distributed_c10d import ProcessGroupGloo

        gloo = ProcessGroupGloo(_PrefixStore("gloo/", store), rank, size, timeout)
        pg = _C10dProcessGroup(rank, size)
        pg._set_default_backend(_C10dProcessGroup.BackendType.GLOO)
        pg._register_backend(cpu, _C10dProcessGroup.BackendType.GLOO, gloo)
        return pg

    def barrier(self, opts=None):
        dev = getattr(opts, "device", None)
        if self._cpu_group is not None and dev is not None and dev.type == "cpu":
            return self._cpu_group.barrier(opts)
        return _Dmaccl.barrier(self, opts)

    def _get_backend(self, device):
        """torch asks a group for its device's backend (init_process_group's
        device_id, split sources, time estimates): gloo's for the CPU when it
        has it, else this group, for the devices dmaccl serves."""
        kind = torch.device(device).type
        if kind == "cpu" and self._cpu_group is not None:
            return self._cpu_group._get_backend(device)
        if kind in ("cpu", "cuda"):
            return self
        return _C10dProcessGroup._get_backend(self, device)  # raises, as torch's

    def shutdown(self):
        _Dmaccl.shutdown(self)
        if self._cpu_group is not None:
            self._cpu_group.shutdown()
            self._cpu_group = None


for _name in _ROUTED:
    setattr(PythonProcessGroupDmaccl, _name, _routed(_name))
del _name


def _create(store, rank, size, timeout):
    return ProcessGroupDmaccl(store, rank, size, timeout)


def _group_being_made():
    """The device -> backend map of the group whose creator is running, the
    ProcessGroup torch made first, and its device_id: locals of torch's
    _new_process_group_helper, which calls the creator (2.11-2.13 pass a
    creator none of them)."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_name != "_new_process_group_helper":
        f = f.f_back
    config = f.f_locals.get("backend_config") if f is not None else None
    if config is None:
        raise RuntimeError(
            f"dmaccl: torch {torch.__version__} made the group elsewhere than "
            "_new_process_group_helper, so dmaccl cannot see which devices it has")
    return config.get_device_backend_map(), f.f_locals.get("pg"), f.f_locals.get("device_id")


def _create_process_group(store, rank, size, timeout):
    device_backends, torch_group, device_id = _group_being_made()
    return PythonProcessGroupDmaccl(store, rank, size, timeout, device_backends, torch_group,
                                    device_id)


def _is_dmaccl(name):
    plugin = dist.Backend._plugins.get(str(name).upper())
    return plugin is not None and plugin.creator_fn in (_create, _create_process_group)


if BACKEND_NAME.upper() not in dist.Backend._plugins:
    dist.Backend.register_backend(
        BACKEND_NAME, _create if _python_backends_supported() else _create_process_group,
        devices=["cpu", "cuda"])
