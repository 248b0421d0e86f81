"""Streams, graph capture, step timing and GPU energy for the benchmark."""

import contextlib
import ctypes
import os
import time

import torch


class Streams:
    """A side stream and events on it; on the CPU every method is a no-op and
    the "side" work runs in order on the caller's thread."""

    def __init__(self, device):
        self.cuda = device.type == "cuda"
        self.side = torch.cuda.Stream(device) if self.cuda else None

    def mark(self):
        """An event recorded on the current stream now."""
        if not self.cuda:
            return None
        ev = torch.cuda.Event()
        ev.record()
        return ev

    @staticmethod
    def wait(ev):
        """The current stream waits for `ev`."""
        if ev is not None:
            torch.cuda.current_stream().wait_event(ev)

    def on_side(self):
        return torch.cuda.stream(self.side) if self.cuda else contextlib.nullcontext()


def capture(fn):
    """fn captured in a CUDA graph (fn has run eagerly before: warm). Each
    graph has its own memory pool: a pool shared by graphs that are freed in
    turn trips an assertion in torch 2.11's caching allocator."""
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g


def time_steps(fn, steps, cuda):
    """Microseconds of each of `steps` back-to-back calls: CUDA events around
    each call on the GPU (so a host-bound eager step counts its host time),
    the host clock on the CPU."""
    return time_rounds([fn], steps, cuda, wait=False)[0]


def time_rounds(fns, steps, cuda, wait=True):
    """Several step functions timed in `steps` rounds: round i calls each
    function once, starting with function i mod len(fns). On the GPU (CUDA
    events around each call) each step is then waited for (`wait`), so the
    next one starts on an idle GPU: a step's time is its host issue and its
    GPU work, whatever ran before it (back to back, a host-bound step after
    one whose GPU work still runs would hide part of its host time). One
    list of microseconds per function."""
    k = len(fns)
    orders = [[(i + j) % k for j in range(k)] for i in range(steps)]
    out = [[] for _ in fns]
    if not cuda:
        for order in orders:
            for f in order:
                t0 = time.perf_counter()
                fns[f]()
                out[f].append((time.perf_counter() - t0) * 1e6)
        return out
    ev = [[(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
           for _ in range(steps)] for _ in fns]
    torch.cuda.synchronize()
    for i, order in enumerate(orders):
        for f in order:
            s, e = ev[f][i]
            s.record()
            fns[f]()
            e.record()
            if wait:
                torch.cuda.synchronize()
    torch.cuda.synchronize()
    return [[s.elapsed_time(e) * 1e3 for s, e in evs] for evs in ev]


def percentile(xs, q):
    """The q-th percentile (0..100) of xs, linear between ranks."""
    xs = sorted(xs)
    pos = (len(xs) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


class Energy:
    """The GPU's energy counter through NVML (ctypes on libnvidia-ml.so.1:
    pynvml may be missing). `why` says why there is none."""

    def __init__(self, device):
        self.handle, self.why = None, None
        if device.type != "cuda":
            self.why = "no GPU"
            return
        try:
            nvml = ctypes.CDLL("libnvidia-ml.so.1")
        except OSError:
            self.why = "libnvidia-ml.so.1 not found"
            return
        if nvml.nvmlInit_v2() != 0:
            self.why = "nvmlInit failed"
            return
        handle = ctypes.c_void_p()
        uuid = getattr(torch.cuda.get_device_properties(device), "uuid", None)
        if uuid is not None:  # torch prints it without NVML's "GPU-" prefix
            uuid = str(uuid) if str(uuid).startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"
            rc = nvml.nvmlDeviceGetHandleByUUID(uuid.encode(), ctypes.byref(handle))
        elif "CUDA_VISIBLE_DEVICES" not in os.environ:
            rc = nvml.nvmlDeviceGetHandleByIndex_v2(device.index, ctypes.byref(handle))
        else:
            self.why = "cannot map the CUDA device to NVML (no uuid in this torch)"
            return
        if rc != 0:
            self.why = f"NVML could not open the GPU (error {rc})"
            return
        self.nvml, self.handle = nvml, handle
        if self.read() is None:
            self.handle, self.why = None, "nvmlDeviceGetTotalEnergyConsumption unsupported"

    def read(self):
        """Joules since the driver loaded, or None (always on the CPU)."""
        if self.handle is None:
            return None
        mj = ctypes.c_ulonglong()
        if self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle, ctypes.byref(mj)) != 0:
            return None
        return mj.value / 1e3
