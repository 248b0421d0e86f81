"""dmaccl.Communicator: the calls of vLLM's PyNcclCommunicator on dmaccl.

Method names, argument order and semantics follow vLLM's communicator
(``all_reduce(in, out=None, op, stream) -> out``, ``all_gather(out, in,
stream)``, ...): code written for it runs on this class. ``stream=None`` is
torch's current stream; a communicator of one rank made from a process group
is disabled (every call returns None), as vLLM's is. Calls are captured by
``torch.cuda.graph`` like any other work on the stream.

Every call checks its arguments in Python before anything reaches the
library; a wrong argument raises ValueError or TypeError naming it, nothing
is written, and the communicator stays usable. A failure inside the library
raises DmacclError with the library's sentence.
"""

import contextlib
import ctypes
import functools
import math
import os
import operator
import sys
import threading

from . import _buffers as B
from . import _lib
from ._lib import DmacclError, check, lib


class ReduceOp:
    """Reduction operations, with NCCL's numbers."""

    SUM, PROD, MAX, MIN, AVG = 0, 1, 2, 3, 4


_OP_NAMES = {"sum": 0, "prod": 1, "product": 1, "max": 2, "min": 3, "avg": 4}


class PreMulSum:
    """A premultiplied sum, the op of all_reduce, reduce_scatter,
    reduce_scatterv and reduce (NCCL's PreMulSum; made with premul_sum):
    the sum of every rank's input times `scalar`, computed as avg is with the
    multiplication in place of the division (dmacclRedOpCreatePreMulSum in
    include/dmaccl.h). scalar: a Python number, converted to the tensors'
    type at the call; or a one-element tensor of that type on the
    communicator's device (CPU on the host executor), read when the
    operation runs (a CUDA graph's replay reads its value of that moment),
    which the caller keeps alive until then. Every rank passes the same
    scalar (NCCL scales each rank's input by its own; with equal scalars the
    two differ only in rounding); numbers that differ are reported as
    ranks that pass different counts are."""

    __slots__ = ("scalar",)

    def __init__(self, scalar):
        self.scalar = scalar

    def __repr__(self):
        return f"premul_sum({self.scalar!r})"


def premul_sum(scalar):
    """The op that multiplies the sum by scalar (PreMulSum)."""
    return PreMulSum(scalar)


def _redop(op, what):
    """A dmaccl op number from ReduceOp, an int, a name, or torch's ReduceOp;
    a PreMulSum as it is (the call makes its operator)."""
    if isinstance(op, PreMulSum):
        return op
    if isinstance(op, bool):
        raise TypeError(f"{what}: op must be a ReduceOp, not bool")
    if isinstance(op, int):
        if 0 <= op <= 4:
            return op
        raise ValueError(f"{what}: op {op} is not a reduction (0 sum, 1 prod, 2 max, 3 min, 4 avg)")
    if isinstance(op, str) and op.lower() in _OP_NAMES:
        return _OP_NAMES[op.lower()]
    orig, op = op, getattr(op, "op", op)  # torch's ReduceOp (options objects) holds a RedOpType
    name = str(op).rsplit(".", 1)[-1].lower()  # RedOpType.SUM
    if name in _OP_NAMES:
        return _OP_NAMES[name]
    if name == "premul_sum":
        # torch's ReduceOp.PREMUL_SUM(factor) (dist._make_nccl_premul_sum): its
        # factor, a float or a tensor, where torch shows it to Python
        factor = getattr(orig, "factor", None)
        if factor is not None:
            return PreMulSum(factor)
        raise ValueError(f"{what}: this torch's PREMUL_SUM does not show its factor to Python; "
                         "pass dmaccl.premul_sum(factor) instead")
    raise ValueError(f"{what}: op {op!r} is not supported (sum, prod, max, min, avg, or "
                     "premul_sum(scalar))")


# --- groups: one per thread, as in the library -----------------------------------------------
_tls = threading.local()


def _group_state():
    if not hasattr(_tls, "depth"):
        _tls.depth = 0
        _tls.finish = []  # callables run once the outermost group has ended
        _tls.failed = None  # the first call that raised inside the open group
    return _tls


def group_start():
    """dmacclGroupStart: calls until group_end are recorded and issued together."""
    check(lib().dmacclGroupStart())
    st = _group_state()
    if st.depth == 0:
        st.failed = None
    st.depth += 1


def group_end():
    """dmacclGroupEnd: issues the group's calls (the outermost end only). A
    call that raised inside the group (a Python check or the library's) fails
    the group, as in the library and NCCL: none of its calls is issued, and
    group_end raises DmacclError naming the first failure."""
    st = _group_state()
    if st.depth == 0:
        raise RuntimeError("group_end: no group is open (call group_start first)")
    if st.depth == 1 and st.failed is not None:
        failed = st.failed
        _group_drop()
        raise DmacclError(getattr(failed, "code", 4),  # dmacclInvalidArgument
                          f"group_end: a call inside the group failed, so none of its calls "
                          f"was issued (the first failure: {failed})") from failed
    st.depth -= 1
    rc = lib().dmacclGroupEnd()
    if st.depth == 0:
        # (a failure while posting leaves the group's other calls issued:
        # their copies back run all the same)
        finish, st.finish = st.finish, []
        errors = []
        for f in finish:
            try:
                f()
            except DmacclError as e:
                errors.append(e)
        if errors and rc == 0:
            raise errors[0]
    check(rc)


def _group_drop():
    """dmacclGroupDrop: ends the innermost group issuing nothing; at the
    outermost level every call recorded since group_start is dropped, and
    the calls' pending host work with them (undone last call first: each
    gives back the part of the shared buffer it took)."""
    st = _group_state()
    st.depth -= 1
    rc = lib().dmacclGroupDrop()
    if st.depth == 0:
        finish, st.finish, st.failed = st.finish, [], None
        for f in reversed(finish):
            drop = getattr(f, "on_drop", None)
            if drop is not None:
                drop()
    check(rc)


class _Dropped:
    """A group's entry with work only if the group is dropped (a send's
    part of the shared buffer, given back)."""

    def __init__(self, undo):
        self.on_drop = undo

    def __call__(self):
        pass


def _fails_group(method):
    """A Communicator call that raises inside a group fails the group."""

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except BaseException as e:
            st = _group_state()
            if st.depth > 0 and st.failed is None:
                st.failed = e
            raise

    return call


class group:
    """Context manager: ``with dmaccl.group(): ...`` is group_start/group_end.
    An exception that leaves the outermost ``with`` drops the group instead,
    and so does a call that raised inside it (caught or not): none of its
    calls is issued, so nothing is left half-done, such as a send whose
    receive was refused."""

    def __enter__(self):
        group_start()
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            group_end()
        else:
            _group_drop()
        return False


def _in_group():
    return _group_state().depth > 0


def get_unique_id():
    """A fresh unique id (128 bytes) for Communicator(unique_id=..., rank=..., world_size=...)."""
    uid = _lib.UniqueIdStruct()
    check(lib().dmacclGetUniqueId(ctypes.byref(uid)))
    return ctypes.string_at(ctypes.addressof(uid), _lib.UNIQUE_ID_BYTES)


def _resolve_executor(executor):
    if executor is None:
        executor = os.environ.get("DMACCL_EXECUTOR") or None
    if executor is None:
        torch = sys.modules.get("torch")
        executor = "cuda" if torch is not None and torch.cuda.is_available() else "host"
    if executor not in ("cuda", "host"):
        raise ValueError(f"executor must be 'cuda' or 'host', not {executor!r}")
    return executor


def _cuda_device(device):
    import torch

    if device is None:
        return torch.device("cuda", torch.cuda.current_device())
    if isinstance(device, int):
        return torch.device("cuda", device)
    device = torch.device(device)
    if device.type != "cuda":
        raise ValueError(f"device {device} is not a CUDA device (use executor='host' for CPU)")
    return torch.device("cuda", device.index if device.index is not None
                        else torch.cuda.current_device())


def _init_all_device(d, executor):
    """One entry of init_all's devices as a device index: an int, or a CUDA
    device (cuda executor); on the host executor an int or "cpu" (0)."""
    i = _as_int(d)
    if i is not None:
        return i
    if executor == "host":
        kind = d.split(":")[0] if isinstance(d, str) else getattr(d, "type", None)
        if kind != "cpu":
            raise ValueError(f"init_all: device {d!r} on the host executor (give ints or 'cpu')")
        return 0
    return _cuda_device(d).index


# The arguments a call writes (a read-only numpy array there is refused).
_WRITTEN = frozenset(("out_tensor", "output_tensor", "output", "tensor"))


def _as_int(value):
    """value as a Python int where it is an integer (Python's or numpy's,
    anything with __index__), else None; bools are not integers here."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None

# Host executor across processes: the library reaches only dmacclMemAlloc
# memory (shared memory), so calls move data through one such buffer.
_HOST_BUFFER_DEFAULT = 32 << 20
_HOST_BUFFER_MAX = 1 << 48  # (a size_t; far past any machine's memory)


class Communicator:
    """One rank of a dmaccl communicator.

    Made from a torch process group (gloo) or vLLM's StatelessProcessGroup
    (rank 0's unique id is broadcast over it), from a unique id, rank and
    world size, or, for one process driving several GPUs, by
    ``Communicator.init_all``.

    executor: "cuda" (copy engines; torch tensors on the communicator's GPU),
    "host" (ranks on the CPU; numpy arrays or CPU tensors: tests, machines
    without a GPU), or None (DMACCL_EXECUTOR, else "cuda" when torch sees a
    GPU). algorithm: a selection string (docs/algorithms.md). cta_policy:
    the SMs the library may take, as NCCL's CTA policies: "default" (the
    fastest; small messages move with a kernel of up to 32 blocks),
    "efficiency" (the same as "default" for now), "zero" (no kernel moves
    data: copy engines at every size; reductions keep their kernel for the
    arithmetic), or None (DMACCL_CTA_POLICY, else "default"). Across
    processes the host executor moves data through a shared buffer of
    host_buffer_bytes (default 32 MiB), which bounds the bytes one call (or
    one group) may use.
    """

    def __init__(self, group=None, device=None, *, unique_id=None, rank=None, world_size=None,
                 executor=None, algorithm=None, host_buffer_bytes=None, cta_policy=None):
        self._comm = None
        self._host_buf = None
        self.disabled = False
        self.available = True
        if _in_group():  # (the library would make it only at the group's end)
            raise ValueError("Communicator: not made inside a group (dmaccl.group / group_start)")
        _lib.cta_policy_value(cta_policy)  # checked before anything is made
        if group is not None:
            rank, world_size = _group_rank_size(group)
            if world_size == 1:  # as vLLM: nothing to communicate
                self.disabled, self.available = True, False
                self.rank, self.world_size = rank, world_size
                self.executor, self.device = None, None
                return
        if rank is None or world_size is None:
            raise ValueError("Communicator needs a group, or unique_id with rank and world_size")
        ws, rk = _as_int(world_size), _as_int(rank)
        if ws is None or ws < 1:
            raise ValueError(f"world_size must be a positive int, not {world_size!r}")
        if rk is None or not 0 <= rk < ws:
            raise ValueError(f"rank {rank!r} is out of range for world_size {ws}")
        rank, world_size = rk, ws
        self.rank, self.world_size = rank, world_size
        self.executor = _resolve_executor(executor)
        if self.executor == "host":  # checked before anything is made (collective allocation)
            name = "host_buffer_bytes"
            if host_buffer_bytes is None:
                env = os.environ.get("DMACCL_PY_HOST_BUFFER_BYTES")
                if env is not None:
                    name = "DMACCL_PY_HOST_BUFFER_BYTES"
                    try:
                        host_buffer_bytes = int(env)
                    except ValueError:
                        host_buffer_bytes = env
                else:
                    host_buffer_bytes = _HOST_BUFFER_DEFAULT
            hb = _as_int(host_buffer_bytes)
            if hb is None or not 4096 <= hb <= _HOST_BUFFER_MAX:
                raise ValueError(f"{name} {host_buffer_bytes!r} must be an int of at least 4096 "
                                 f"and at most 2**{_HOST_BUFFER_MAX.bit_length() - 1}")
            host_buffer_bytes = hb
        if group is not None:
            unique_id = _broadcast_unique_id(group, rank)
        if not isinstance(unique_id, (bytes, bytearray)) or len(unique_id) != _lib.UNIQUE_ID_BYTES:
            raise ValueError(f"unique_id must be the {_lib.UNIQUE_ID_BYTES} bytes of "
                             "dmaccl.get_unique_id()")
        uid = _lib.UniqueIdStruct()
        ctypes.memmove(ctypes.addressof(uid), bytes(unique_id), _lib.UNIQUE_ID_BYTES)
        cfg = _lib.make_config(
            _lib.EXECUTOR_CUDA if self.executor == "cuda" else _lib.EXECUTOR_HOST, algorithm,
            cta_policy)
        comm = ctypes.c_void_p()
        if self.executor == "cuda":
            import torch

            self.device = _cuda_device(device)
            with torch.cuda.device(self.device):
                check(lib().dmacclCommInitRank(ctypes.byref(comm), world_size, uid, rank,
                                               ctypes.byref(cfg)))
        else:
            self.device = None
            check(lib().dmacclCommInitRank(ctypes.byref(comm), world_size, uid, rank,
                                           ctypes.byref(cfg)))
        self._comm = comm
        self._mp = True
        if self.executor == "host":
            try:
                self._alloc_host_buffer(host_buffer_bytes)
            except BaseException:
                self._comm = None  # a failed constructor leaves no communicator behind
                lib().dmacclCommDestroy(comm)
                raise

    @classmethod
    def init_all(cls, devices, executor=None, algorithm=None, cta_policy=None):
        """One communicator per device (or per rank: an int n means devices
        0..n-1), all driven by this process; put calls for several ranks from
        one thread inside ``dmaccl.group()``. A device may repeat: its ranks
        share the GPU. executor, algorithm and cta_policy as for the
        constructor."""
        executor = _resolve_executor(executor)
        count = _as_int(devices)
        if count is not None:
            if count < 1:
                raise ValueError(f"init_all: need at least one rank, not {devices}")
            devices = list(range(count))
        elif isinstance(devices, (str, bytes)) or not hasattr(devices, "__iter__"):
            raise TypeError(f"init_all: devices must be a number of ranks or a list of devices, "
                            f"not {type(devices).__name__}")
        devices = [_init_all_device(d, executor) for d in devices]
        n = len(devices)
        if n < 1:
            raise ValueError("init_all: devices is empty")
        cfg = _lib.make_config(
            _lib.EXECUTOR_CUDA if executor == "cuda" else _lib.EXECUTOR_HOST, algorithm,
            cta_policy)
        comms = (ctypes.c_void_p * n)()
        devlist = (ctypes.c_int * n)(*devices)
        check(lib().dmacclCommInitAll(comms, n, devlist, ctypes.byref(cfg)))
        out = []
        for r in range(n):
            c = cls.__new__(cls)
            c._comm, c._host_buf, c._mp = ctypes.c_void_p(comms[r]), None, False
            c.disabled, c.available = False, True
            c.rank, c.world_size, c.executor = r, n, executor
            if executor == "cuda":
                import torch

                c.device = torch.device("cuda", devices[r])
            else:
                c.device = None
            out.append(c)
        return out

    def split(self, color, key=None, *, algorithm=None, cta_policy=None):
        """A new Communicator of the ranks that pass the same color, ordered by
        key (default: this rank), as ncclCommSplit; None for a rank whose color
        is None (it joins none). Collective: every rank of this communicator
        calls it, outside a group (inside one every rank's call fails); a
        wrong argument on one rank raises there (ValueError, TypeError) and
        DmacclError on the others. With neither algorithm nor cta_policy the new one inherits
        this one's configuration; the host executor's shared buffer has this
        one's size. Ranks of ``init_all`` cannot split (DmacclError)."""
        self._live("split")
        why = None  # (inside a group the library refuses it, after taking part)
        if color is not None and (isinstance(color, bool) or not isinstance(color, int) or
                                  not 0 <= color < 2**31):
            why = ValueError(f"split: color {color!r} must be an int in 0..2**31-1, or None")
        elif key is not None and (isinstance(key, bool) or not isinstance(key, int) or
                                  not -2**31 <= key < 2**31):
            why = ValueError(f"split: key {key!r} must be a 32-bit int")
        elif algorithm is not None and not isinstance(algorithm, str):
            why = TypeError(f"split: algorithm must be a selection string or None, not "
                            f"{type(algorithm).__name__}")
        else:
            try:
                _lib.cta_policy_value(cta_policy)
            except ValueError as e:
                why = e
        cfg = None
        if why is None and (algorithm is not None or cta_policy is not None):
            try:
                cfg = _lib.make_config(
                    _lib.EXECUTOR_CUDA if self.executor == "cuda" else _lib.EXECUTOR_HOST,
                    algorithm, cta_policy)
            except (ValueError, TypeError, UnicodeError) as e:
                why = e
        if why is not None:
            # still take part in the exchange, so that every rank fails, in step
            # (the library's sentence on this rank is then "newcomm is NULL")
            lib().dmacclCommSplit(self._comm, 0, 0, None, None)
            raise why
        if key is None:
            key = self.rank
        out = ctypes.c_void_p()
        check(lib().dmacclCommSplit(self._comm, -1 if color is None else color, key,
                                    ctypes.byref(out), ctypes.byref(cfg) if cfg else None),
              self._comm)
        if color is None:
            return None
        c = type(self).__new__(type(self))
        c._comm, c._host_buf, c._mp = out, None, True
        c.disabled, c.available = False, True
        c.executor, c.device = self.executor, self.device
        n, r = ctypes.c_int(), ctypes.c_int()
        try:
            check(lib().dmacclCommCount(out, ctypes.byref(n)), out)
            check(lib().dmacclCommUserRank(out, ctypes.byref(r)), out)
        except BaseException:
            c._comm = None
            lib().dmacclCommDestroy(out)
            raise
        c.rank, c.world_size = r.value, n.value
        if self.executor == "host":
            try:
                c._alloc_host_buffer(self._host_buf[1])
            except BaseException:
                c._comm = None
                lib().dmacclCommDestroy(out)
                raise
        return c

    # --- lifetime -----------------------------------------------------------------------------
    def destroy(self):
        """Waits for this rank's queued work and frees the communicator."""
        if self._comm is None:
            return
        comm, self._comm = self._comm, None
        if self._host_buf is not None:
            lib().dmacclCommSynchronize(comm)  # sends may still read the buffer (errors: below)
            lib().dmacclMemFree(comm, self._host_buf[0])
            self._host_buf = None
        check(lib().dmacclCommDestroy(comm))

    def abort(self):
        """Releases every wait this rank has queued (after a peer failed) and frees it."""
        if self._comm is None:
            return
        comm, self._comm, self._host_buf = self._comm, None, None
        check(lib().dmacclCommAbort(comm))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()
        return False

    def synchronize(self):
        """Blocks until every call issued on this rank has completed."""
        self._live("synchronize")
        check(lib().dmacclCommSynchronize(self._comm), self._comm)
        if self._mp and self.executor == "host" and not _in_group():
            self._host_used, self._host_pending = 0, False

    def register_comm_window(self, tensor):
        """Registers a CUDA tensor's memory for peers ahead of its first use
        (optional: first use registers it). Returns a handle for
        deregister_comm_window."""
        self._live("register_comm_window")
        b = B.describe(tensor, "tensor", what="register_comm_window")
        self._check_device([b], "register_comm_window")
        h = ctypes.c_void_p()
        check(lib().dmacclCommRegister(self._comm, b.ptr, b.nbytes, ctypes.byref(h)), self._comm)
        return h

    def deregister_comm_window(self, handle):
        self._live("deregister_comm_window")
        check(lib().dmacclCommDeregister(self._comm, handle), self._comm)

    group_start = staticmethod(group_start)
    group_end = staticmethod(group_end)

    # --- collectives (vLLM's signatures) ------------------------------------------------------
    def all_reduce(self, in_tensor, out_tensor=None, op=ReduceOp.SUM, stream=None):
        if self.disabled:
            return None
        what = "all_reduce"
        self._live(what)
        if out_tensor is None:
            out_tensor = _empty_like(in_tensor)
        s, r, t, k = self._typed(what, True, in_tensor=in_tensor, out_tensor=out_tensor)
        _same_numel(what, r, s)
        with self._op(what, op, t, s) as o:
            self._issue("dmacclAllReduce", s, r, lambda sp, rp: (sp, rp, s.numel, t, o), stream)
        return out_tensor

    def all_gather(self, output_tensor, input_tensor, stream=None, arrived=None, value=1):
        """arrived: None, or world_size 32-bit integers (int32 or uint32) on
        the communicator's device (host executor: CPU), apart from the two
        tensors; `value` is stored into arrived[i] once rank i's block of
        output_tensor has landed, so another stream may wait for it
        (dmacclAllGatherNotify in include/dmaccl.h)."""
        if self.disabled:
            return None
        what = "all_gather"
        self._live(what)
        r, s, t, k = self._typed(what, False, output_tensor=output_tensor,
                                 input_tensor=input_tensor)
        _numel_is(what, r, s.numel * self.world_size, f"world_size * input_tensor.numel()")
        if arrived is None:
            self._issue("dmacclAllGather", s, r, lambda sp, rp: (sp, rp, s.numel * k, t), stream)
        else:
            w, v = self._arrival(what, arrived, value, apart=(r, s))
            self._issue("dmacclAllGatherNotify", s, r,
                        lambda sp, rp, wp: (sp, rp, s.numel * k, t, wp, v), stream, words=w)
        return output_tensor

    def all_gatherv(self, output_tensor, input_tensor, sizes, stream=None, arrived=None, value=1):
        """sizes[i]: rows (first dimension) that rank i contributes. arrived
        and value: as all_gather's (dmacclAllGatherVNotify)."""
        if self.disabled:
            return None
        what = "all_gatherv"
        self._live(what)
        r, s, t, k = self._typed(what, False, output_tensor=output_tensor,
                                 input_tensor=input_tensor)
        sizes = self._sizes(what, "sizes", sizes)
        row = _row(what, r, sum(sizes), "output_tensor", "sum(sizes)")
        _numel_is(what, s, sizes[self.rank] * row, f"sizes[{self.rank}] rows")
        counts = [n * row * k for n in sizes]
        displs = _prefix(counts)
        ca, da = _lib.size_array(counts), _lib.size_array(displs)
        if arrived is None:
            self._issue("dmacclAllGatherV", s, r, lambda sp, rp: (sp, rp, ca, da, t), stream)
        else:
            w, v = self._arrival(what, arrived, value, apart=(r, s))
            self._issue("dmacclAllGatherVNotify", s, r,
                        lambda sp, rp, wp: (sp, rp, ca, da, t, wp, v), stream, words=w)
        return output_tensor

    def wait_arrived(self, arrived, rank, value=1, stream=None):
        """Work queued on `stream` (default: the current stream) after this
        call waits until arrived[rank] == value: the consumer's side of
        all_gather's and all_gatherv's arrival words, one stream memory wait
        (capturable in a CUDA graph, no SM). Call it after the collective,
        outside a group. Host executor: returns once the word holds value
        (dmacclStreamWaitArrival in include/dmaccl.h)."""
        if self.disabled:
            return None
        what = "wait_arrived"
        self._live(what)
        w, v = self._arrival(what, arrived, value, writable=False)
        r = _as_int(rank)
        if r is None or not 0 <= r < self.world_size:
            raise ValueError(f"{what}: rank {rank!r} is not a rank of the communicator "
                             f"(0 to {self.world_size - 1})")
        rank = r
        st = self._stream(stream)
        check(lib().dmacclStreamWaitArrival(w.ptr, rank, v, self._comm, st), self._comm)
        return None

    def _arrival(self, what, arrived, value, writable=True, apart=()):
        """The arrival words' Buf and the value, checked (writable: the
        collective stores them; a wait only reads them; apart: the call's
        other Bufs, which the words must not overlap)."""
        w = B.describe(arrived, "arrived", writable=writable, what=what)
        for b in apart:
            if b.nbytes and w.nbytes and b.ptr < w.ptr + w.nbytes and w.ptr < b.ptr + b.nbytes:
                raise ValueError(f"{what}: arrived overlaps {b.name} (the words must lie apart "
                                 "from the collective's tensors)")
        self._check_device([w], what)
        if w.itemsize != 4 or str(w.dtype).split(".")[-1] not in ("int32", "uint32"):
            raise TypeError(f"{what}: arrived must hold int32 or uint32 words, not {w.dtype}")
        if w.numel != self.world_size:
            raise ValueError(f"{what}: arrived has {w.numel} words, world_size is "
                             f"{self.world_size} (one per rank)")
        v = _as_int(value)
        if v is None or not 0 <= v < 1 << 32:
            raise ValueError(f"{what}: value {value!r} is not a 32-bit unsigned int")
        return w, v

    def reduce_scatter(self, output_tensor, input_tensor, op=ReduceOp.SUM, stream=None):
        if self.disabled:
            return None
        what = "reduce_scatter"
        self._live(what)
        r, s, t, k = self._typed(what, True, output_tensor=output_tensor,
                                 input_tensor=input_tensor)
        _numel_is(what, s, r.numel * self.world_size, "world_size * output_tensor.numel()")
        with self._op(what, op, t, s) as o:
            self._issue("dmacclReduceScatter", s, r, lambda sp, rp: (sp, rp, r.numel, t, o),
                        stream)
        return output_tensor

    def reduce_scatterv(self, output_tensor, input_tensor, sizes, op=ReduceOp.SUM, stream=None):
        """sizes[i]: rows (first dimension) of the result that land on rank i."""
        if self.disabled:
            return None
        what = "reduce_scatterv"
        self._live(what)
        r, s, t, k = self._typed(what, True, output_tensor=output_tensor,
                                 input_tensor=input_tensor)
        sizes = self._sizes(what, "sizes", sizes)
        row = _row(what, s, sum(sizes), "input_tensor", "sum(sizes)")
        _numel_is(what, r, sizes[self.rank] * row, f"sizes[{self.rank}] rows")
        counts = [n * row for n in sizes]
        ca, da = _lib.size_array(counts), _lib.size_array(_prefix(counts))
        with self._op(what, op, t, s) as o:
            self._issue("dmacclReduceScatterV", s, r, lambda sp, rp: (sp, rp, ca, da, t, o),
                        stream)
        return output_tensor

    def broadcast(self, tensor, src, stream=None):
        """In place: rank src's tensor lands in every rank's tensor."""
        if self.disabled:
            return None
        what = "broadcast"
        self._live(what)
        src = self._root(what, "src", src)
        root = self.rank == src  # (the root's tensor is only read)
        b, t, k = self._typed(what, False, read_only=("tensor",) if root else (), tensor=tensor)
        self._issue("dmacclBroadcast", b, b, lambda sp, rp: (sp, rp, b.numel * k, t, src), stream,
                    written=not root)
        return tensor

    def reduce(self, in_tensor, out_tensor, root, op=ReduceOp.SUM, stream=None):
        """The reduction lands in out_tensor on rank root (out_tensor may be
        None on the other ranks)."""
        if self.disabled:
            return None
        what = "reduce"
        self._live(what)
        root = self._root(what, "root", root)
        stand_in = out_tensor is None
        if stand_in:
            if self.rank == root:
                raise ValueError(f"{what}: out_tensor is None on the root rank")
            out_tensor = in_tensor  # not written on a non-root rank
        s, r, t, k = self._typed(what, True, read_only=("out_tensor",) if stand_in else (),
                                 in_tensor=in_tensor, out_tensor=out_tensor)
        _same_numel(what, r, s)
        with self._op(what, op, t, s) as o:
            self._issue("dmacclReduce", s, r, lambda sp, rp: (sp, rp, s.numel, t, o, root),
                        stream, written=not stand_in)
        return out_tensor

    def gather(self, output_tensor, input_tensor, root, stream=None):
        """Every rank's input_tensor, in rank order, in output_tensor of rank
        root (output_tensor may be None on the other ranks)."""
        if self.disabled:
            return None
        what = "gather"
        self._live(what)
        root = self._root(what, "root", root)
        stand_in = output_tensor is None  # (input_tensor stands in, only read)
        if stand_in and self.rank == root:
            raise ValueError(f"{what}: output_tensor is None on the root rank")
        r, s, t, k = self._typed(what, False, read_only=("output_tensor",) if stand_in else (),
                                 output_tensor=input_tensor if stand_in else output_tensor,
                                 input_tensor=input_tensor)
        if self.rank == root:
            _numel_is(what, r, s.numel * self.world_size, "world_size * input_tensor.numel()")
        self._issue("dmacclGather", s, r, lambda sp, rp: (sp, rp, s.numel * k, t, root), stream,
                    written=not stand_in)
        return output_tensor

    def scatter(self, output_tensor, input_tensor, root, stream=None):
        """Block i of rank root's input_tensor lands in rank i's output_tensor
        (input_tensor may be None on the other ranks)."""
        if self.disabled:
            return None
        what = "scatter"
        self._live(what)
        root = self._root(what, "root", root)
        if input_tensor is None and self.rank == root:
            raise ValueError(f"{what}: input_tensor is None on the root rank")
        r, s, t, k = self._typed(what, False, output_tensor=output_tensor,
                                 input_tensor=input_tensor
                                 if input_tensor is not None else output_tensor)
        if self.rank == root:
            _numel_is(what, s, r.numel * self.world_size, "world_size * output_tensor.numel()")
        self._issue("dmacclScatter", s, r, lambda sp, rp: (sp, rp, r.numel * k, t, root), stream)
        return output_tensor

    def all_to_all_single(self, output, input, output_split_sizes=None, input_split_sizes=None,
                          stream=None):
        """torch's all_to_all_single: without splits, equal blocks; with
        splits, rows (first dimension) to and from each rank."""
        if self.disabled:
            return None
        what = "all_to_all_single"
        self._live(what)
        r, s, t, k = self._typed(what, False, output=output, input=input)
        if r.nbytes and s.nbytes and r.ptr < s.ptr + s.nbytes and s.ptr < r.ptr + r.nbytes:
            raise ValueError(f"{what}: output and input overlap (an all-to-all is not done in "
                             "place: give output its own memory)")
        n = self.world_size
        if output_split_sizes is None and input_split_sizes is None:
            if s.numel % n:
                raise ValueError(f"{what}: input has {s.numel} elements, not a multiple of "
                                 f"world_size {n} (give split sizes)")
            _same_numel(what, r, s)
            self._issue("dmacclAlltoAll", s, r, lambda sp, rp: (sp, rp, s.numel // n * k, t),
                        stream)
            return output
        ins = self._sizes(what, "input_split_sizes", input_split_sizes) \
            if input_split_sizes is not None else None
        outs = self._sizes(what, "output_split_sizes", output_split_sizes) \
            if output_split_sizes is not None else None
        if ins is None:
            ins = [_even(what, s, n, "input")] * n
        if outs is None:
            outs = [_even(what, r, n, "output")] * n
        srow = _row(what, s, sum(ins), "input", "sum(input_split_sizes)")
        rrow = _row(what, r, sum(outs), "output", "sum(output_split_sizes)")
        if srow != rrow:
            raise ValueError(f"{what}: a row of input has {srow} elements but a row of output "
                             f"{rrow}")
        sc = [x * srow * k for x in ins]
        rc = [x * rrow * k for x in outs]
        arrays = [_lib.size_array(a) for a in (sc, _prefix(sc), rc, _prefix(rc))]
        self._issue("dmacclAlltoAllv", s, r,
                    lambda sp, rp: (sp, arrays[0], arrays[1], rp, arrays[2], arrays[3], t), stream)
        return output

    # --- point to point (vLLM's signatures) ---------------------------------------------------
    def send(self, tensor, dst, stream=None):
        """tensor to rank dst; matched, in order, with dst's recv from this rank.
        dst may be this rank inside a group holding the matching recv (a local
        copy, as NCCL and torch's grouped all-to-alls use it)."""
        if self.disabled:
            return None
        what = "send"
        self._live(what)
        b, t, k = self._typed(what, False, read_only=("tensor",), tensor=tensor)
        dst = self._peer(what, "dst", dst)
        self._issue("dmacclSend", b, None, lambda sp, rp: (sp, b.numel * k, t, dst), stream)
        return tensor

    def recv(self, tensor, src, stream=None):
        """Fills tensor with what rank src sends this rank (same size and dtype)."""
        if self.disabled:
            return None
        what = "recv"
        self._live(what)
        b, t, k = self._typed(what, False, tensor=tensor)
        src = self._peer(what, "src", src)
        self._issue("dmacclRecv", None, b, lambda sp, rp: (rp, b.numel * k, t, src), stream)
        return tensor

    def batch_isend_irecv(self, p2p_ops, stream=None):
        """Sends and receives issued together (one group), as torch's
        batch_isend_irecv: items are torch.distributed.P2POp, or any object
        with op (dist.isend/dist.send or dist.irecv/dist.recv, or "send" /
        "recv"), tensor and peer."""
        if self.disabled:
            return None
        what = "batch_isend_irecv"
        calls = []
        for i, p in enumerate(p2p_ops):
            op = getattr(p, "op", None)
            kind = op if isinstance(op, str) else getattr(op, "__name__", "")
            if kind in ("send", "isend"):
                calls.append((self.send, p))
            elif kind in ("recv", "irecv"):
                calls.append((self.recv, p))
            else:
                raise ValueError(f"{what}: p2p_ops[{i}].op is {op!r}; expected "
                                 "torch.distributed.isend/irecv (or send/recv, or 'send'/'recv')")
        with group():
            for fn, p in calls:
                fn(p.tensor, p.peer, stream)

    # --- internals ----------------------------------------------------------------------------
    def _live(self, what):
        if self._comm is None:
            raise ValueError(f"{what}: the communicator was destroyed")

    def _typed(self, what, reduces, read_only=(), **named):
        """The named tensors' Bufs (checked, in order), then the call's dmaccl
        type and count scale (_buffers.common_type)."""
        bufs = [B.describe(obj, name, writable=name in _WRITTEN and name not in read_only,
                           what=what) for name, obj in named.items()]
        self._check_device(bufs, what)
        return (*bufs, *B.common_type(bufs, reduces, what))

    @contextlib.contextmanager
    def _op(self, what, op, t, data):
        """The op number for a call on `data` (dmaccl type t): a built-in
        one, or a PreMulSum's operator, made for the call and destroyed once
        it has returned (the library keeps what the call needs)."""
        o = _redop(op, what)
        if not isinstance(o, PreMulSum):
            yield o
            return
        sc = o.scalar
        if isinstance(sc, bool) or B.is_number(sc):
            keep = ctypes.create_string_buffer(B.scalar_bytes(sc, t, what), 8)
            ptr, residence = ctypes.addressof(keep), 1  # dmacclScalarHostImmediate
        else:
            b = B.describe(sc, "scalar", writable=False, what=what)
            self._check_device([b], what)
            if b.numel != 1:
                raise ValueError(f"{what}: the premul_sum scalar has {b.numel} elements (one, "
                                 "please)")
            if b.dtype != data.dtype:
                raise TypeError(f"{what}: the premul_sum scalar is {b.dtype} but "
                                f"{data.name} is {data.dtype}")
            ptr, residence = b.ptr, 0  # dmacclScalarDevice
        made = ctypes.c_int(0)
        check(lib().dmacclRedOpCreatePreMulSum(ctypes.byref(made), ptr, t, residence, self._comm),
              self._comm)
        try:
            yield made.value
        finally:
            check(lib().dmacclRedOpDestroy(made.value, self._comm), self._comm)

    def _check_device(self, bufs, what):
        for b in bufs:
            if self.executor == "cuda":
                if b.device < 0:
                    raise ValueError(f"{what}: {b.name} is in host memory; this communicator "
                                     f"runs on {self.device} (executor 'cuda')")
                if b.device != self.device.index:
                    raise ValueError(f"{what}: {b.name} is on cuda:{b.device}, this "
                                     f"communicator on {self.device}")
            elif b.device >= 0:
                raise ValueError(f"{what}: {b.name} is on cuda:{b.device}; this communicator "
                                 "uses the host executor (CPU tensors or numpy arrays)")

    def _sizes(self, what, name, sizes):
        if isinstance(sizes, (str, bytes)):
            sizes = None
        try:
            sizes = [_as_int(x) for x in sizes]
        except TypeError:
            sizes = [None]
        if None in sizes:
            raise TypeError(f"{what}: {name} must be a list of {self.world_size} ints") from None
        if len(sizes) != self.world_size:
            raise ValueError(f"{what}: {name} has {len(sizes)} entries, world_size is "
                             f"{self.world_size}")
        for i, x in enumerate(sizes):
            if x < 0:
                raise ValueError(f"{what}: {name}[{i}] is negative ({x})")
        return sizes

    def _peer(self, what, name, peer):
        """peer as an int, checked: a rank, not this one outside a group."""
        p = _as_int(peer)
        if p is None:
            raise TypeError(f"{what}: {name} must be an int rank, not {type(peer).__name__}")
        peer = p
        if not 0 <= peer < self.world_size:
            raise ValueError(f"{what}: {name} {peer} is not a rank (0 to "
                             f"{self.world_size - 1}, this rank is {self.rank})")
        if peer == self.rank and _group_state().depth == 0:
            raise ValueError(f"{what}: {name} {peer} is this rank itself; a send/recv to "
                             "oneself runs only inside a group that holds its match "
                             "(dmaccl.group(), batch_isend_irecv)")
        return peer

    def _root(self, what, name, root):
        """root as an int, checked."""
        r = _as_int(root)
        if r is None or not 0 <= r < self.world_size:
            raise ValueError(f"{what}: {name} {root!r} is not a rank of world_size "
                             f"{self.world_size}")
        return r

    def _stream(self, stream):
        if self.executor != "cuda":
            if stream not in (None, 0):
                raise ValueError("stream: the host executor takes no stream (pass None)")
            return None
        if stream is None:
            return _current_stream(self.device.index)
        if isinstance(stream, int):
            return stream
        handle = getattr(stream, "cuda_stream", None)
        if handle is None:
            raise TypeError(f"stream must be a torch.cuda.Stream, an int handle or None, not "
                            f"{type(stream).__name__}")
        return handle

    def _issue(self, fn, send, recv, args, stream, words=None, written=True):
        """Calls fn(*args(sendptr, recvptr), comm, stream); with words (the
        arrival words' Buf), args(sendptr, recvptr, wordsptr). Host executor
        across processes: through the shared buffer, complete on return (at
        the group's end inside one); written=False: the call leaves recv
        alone on this rank (nothing is copied back into it)."""
        L = lib()
        st = self._stream(stream)
        if words is not None:  # one argument more: the words, where the call can reach them
            plain, args = args, lambda sp, rp, wp=words.ptr: plain(sp, rp, wp)
        if self.executor == "cuda":
            check(getattr(L, fn)(*args(send and send.ptr, recv and recv.ptr), self._comm, st),
                  self._comm)
            return
        if not self._mp:
            # one process (init_all): the ranks' calls come from a group or
            # from one thread each; results are there at the group's end or
            # after synchronize(), as in C
            check(getattr(L, fn)(*args(send and send.ptr, recv and recv.ptr), self._comm, None),
                  self._comm)
            if _in_group():
                comm = self._comm
                _group_state().finish.append(
                    lambda: check(L.dmacclCommSynchronize(comm), comm))
            return
        # across processes: recv's contents first (blocks the call leaves alone
        # keep them), send aliased into it where the caller's buffers overlap;
        # None: the call has no such buffer (send, recv)
        before = (self._host_used, self._host_pending)

        def undo():  # the call never ran: its part of the shared buffer is free again
            self._host_used, self._host_pending = before

        rp = sp = wp = None
        try:
            if recv is not None:
                rp = self._host_take(recv.nbytes, fn)
                ctypes.memmove(rp, recv.ptr, recv.nbytes)
            if send is not None and recv is not None and recv.ptr <= send.ptr and \
                    send.ptr + send.nbytes <= recv.ptr + recv.nbytes:
                sp = rp + (send.ptr - recv.ptr)
            elif send is not None:
                sp = self._host_take(send.nbytes, fn)
                ctypes.memmove(sp, send.ptr, send.nbytes)
            if words is not None:  # the words too: the worker stores into the shared buffer
                wp = self._host_take(words.nbytes, fn)
                ctypes.memmove(wp, words.ptr, words.nbytes)
            check(getattr(L, fn)(*((args(sp, rp) if wp is None else args(sp, rp, wp))),
                                 self._comm, None), self._comm)
        except BaseException:
            if _in_group():
                undo()  # (parts taken after this call's, in the group, are none yet)
            else:
                self._host_release()
            raise
        if recv is None:
            # a send: its data was copied out of the caller's buffer, so it
            # need not wait for its receiver; its part of the shared buffer
            # stays taken until the next wait (a receive, synchronize)
            self._host_pending = True
            if _in_group():
                self._finish(_Dropped(undo))
            return

        def done():
            try:
                check(L.dmacclCommSynchronize(self._comm), self._comm)
                if written:
                    ctypes.memmove(recv.ptr, rp, recv.nbytes)
                if wp is not None:
                    ctypes.memmove(words.ptr, wp, words.nbytes)
            finally:
                self._host_used, self._host_pending = 0, False

        # a dropped group: nothing ran, nothing to copy back, and the part
        # of the buffer goes back (a send before the group may still read
        # its own part: the offset returns to where this call found it)
        done.on_drop = undo
        self._finish(done)

    def _finish(self, f):
        if _in_group():
            _group_state().finish.append(f)
        else:
            f()

    def _alloc_host_buffer(self, nbytes):
        ptr = ctypes.c_void_p()
        check(lib().dmacclMemAlloc(self._comm, nbytes, ctypes.byref(ptr)), self._comm)
        self._host_buf = (ptr, nbytes)
        self._host_used, self._host_pending = 0, False

    def _host_take(self, nbytes, what):
        base, size = self._host_buf
        off = (self._host_used + 255) & ~255
        if off + nbytes > size and self._host_pending and not _in_group():
            self.synchronize()  # sends still reading the buffer: let them finish first
            off = 0
        if off + nbytes > size:
            self._host_release()
            raise ValueError(f"{what}: the host executor across processes moves data through a "
                             f"shared buffer of {size} bytes and this call needs more; make the "
                             "Communicator with a larger host_buffer_bytes "
                             "(or DMACCL_PY_HOST_BUFFER_BYTES)")
        self._host_used = off + nbytes
        return base.value + off

    def _host_release(self):
        if not _in_group() and not self._host_pending:
            self._host_used = 0


# The calls a group records: one that raises inside a group fails the group.
for _name in ("all_reduce", "all_gather", "all_gatherv", "reduce_scatter", "reduce_scatterv",
              "broadcast", "reduce", "gather", "scatter", "all_to_all_single", "send", "recv",
              "batch_isend_irecv"):
    setattr(Communicator, _name, _fails_group(getattr(Communicator, _name)))
del _name


def _current_stream(index):
    """torch's current stream on device `index`, as a handle."""
    import torch

    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # what torch's own kernels use
    return raw(index) if raw is not None else torch.cuda.current_stream(index).cuda_stream


def _group_rank_size(group):
    if hasattr(group, "broadcast_obj"):  # vLLM's StatelessProcessGroup
        return group.rank, group.world_size
    import torch.distributed as dist

    return dist.get_rank(group), dist.get_world_size(group)


def _broadcast_unique_id(group, rank):
    uid = get_unique_id() if rank == 0 else None
    if hasattr(group, "broadcast_obj"):
        return group.broadcast_obj(uid, src=0)
    import torch.distributed as dist

    box = [uid]
    dist.broadcast_object_list(box, src=dist.get_global_rank(group, 0), group=group)
    return box[0]


def _empty_like(t):
    np = sys.modules.get("numpy")
    if np is not None and isinstance(t, np.ndarray):
        return np.empty_like(t)
    return t.new_empty(t.shape)


def _same_numel(what, a, b):
    if a.numel != b.numel:
        raise ValueError(f"{what}: {a.name} has {a.numel} elements but {b.name} {b.numel}")


def _numel_is(what, b, n, how):
    if b.numel != n:
        raise ValueError(f"{what}: {b.name} has {b.numel} elements; it needs {n} ({how})")


def _row(what, b, rows, name, how):
    """Elements per row of b, which must have `rows` rows (with none, what
    its shape says a row would hold: a rank may receive or send nothing)."""
    if b.rows != rows:
        raise ValueError(f"{what}: {name} has {b.rows} rows (first dimension) but {how} is {rows}")
    if rows:
        return b.numel // rows
    shape = tuple(getattr(b.obj, "shape", ()))
    return math.prod(shape[1:]) if len(shape) > 1 else 1


def _even(what, b, n, name):
    if b.rows % n:
        raise ValueError(f"{what}: {name} has {b.rows} rows, not a multiple of world_size {n} "
                         f"(give {name}_split_sizes)")
    return b.rows // n


def _prefix(counts):
    out, acc = [], 0
    for c in counts:
        out.append(acc)
        acc += c
    return out
