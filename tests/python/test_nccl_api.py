"""dmaccl's libnccl.so.2 (NCCL 2.28's C API over dmaccl) from Python, the
way bindings written for NCCL load it: ctypes, NCCL's function names and
signatures, the unique id as a 128-byte struct passed by value, pointers
and a stream handle as integers (vLLM and SGLang reach NCCL so, and take
the library's path from VLLM_NCCL_SO_PATH).

CPU: ranks as processes on the host executor, buffers in the shared memory
dmacclMemAlloc gives the communicator NCCL's call made. GPU (skipped
without one): torch tensors on GPU r % GPUs (ranks share a GPU on a
one-GPU machine), on torch's current stream, eager and in a CUDA graph.
Every result is compared exactly with numpy or torch on small integers.
"""

import ctypes
import os

import numpy as np
import pytest

from ranks import run_ranks

import dmaccl

ncclSuccess, ncclInvalidArgument = 0, 4
ncclInt32, ncclFloat32, ncclBfloat16 = 2, 7, 9
ncclSum, ncclMax = 0, 2


class NcclUniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_byte * 128)]


def load_nccl():
    """The library with NCCL's prototypes, as a binding for NCCL declares them."""
    L = ctypes.CDLL(dmaccl.nccl_library_path())
    p, i, sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
    protos = {
        "ncclGetVersion": [ctypes.POINTER(i)],
        "ncclGetUniqueId": [ctypes.POINTER(NcclUniqueId)],
        "ncclCommInitRank": [ctypes.POINTER(p), i, NcclUniqueId, i],
        "ncclCommDestroy": [p],
        "ncclCommCount": [p, ctypes.POINTER(i)],
        "ncclCommUserRank": [p, ctypes.POINTER(i)],
        "ncclAllReduce": [p, p, sz, i, i, p, p],
        "ncclAllGather": [p, p, sz, i, p, p],
        "ncclReduceScatter": [p, p, sz, i, i, p, p],
        "ncclBroadcast": [p, p, sz, i, i, p, p],
        "ncclSend": [p, sz, i, i, p, p],
        "ncclRecv": [p, sz, i, i, p, p],
        "ncclGroupStart": [],
        "ncclGroupEnd": [],
        "ncclCommFinalize": [p],
        "ncclCommSplit": [p, i, i, p, p],
    }
    for name, args in protos.items():
        fn = getattr(L, name)
        fn.argtypes = args
        fn.restype = i
    L.ncclGetErrorString.argtypes = [i]
    L.ncclGetErrorString.restype = ctypes.c_char_p
    L.ncclGetLastError.argtypes = [p]
    L.ncclGetLastError.restype = ctypes.c_char_p
    return L


def ok(L, rc, comm=None):
    assert rc == ncclSuccess, (L.ncclGetErrorString(rc), L.ncclGetLastError(comm))


def init(L, uid, rank, n):
    nid = NcclUniqueId.from_buffer_copy(uid)
    comm = ctypes.c_void_p()
    ok(L, L.ncclCommInitRank(ctypes.byref(comm), n, nid, rank))
    got = ctypes.c_int()
    ok(L, L.ncclCommCount(comm, ctypes.byref(got)), comm)
    assert got.value == n
    ok(L, L.ncclCommUserRank(comm, ctypes.byref(got)), comm)
    assert got.value == rank
    return comm


def values(seed, r, count):
    """Rank r's small integers: every sum exact in any order."""
    return ((np.arange(count, dtype=np.int64) * 7 + seed * 13 + r * 29) % 61 - 30)


def test_version_and_errors():
    L = load_nccl()
    v = ctypes.c_int()
    ok(L, L.ncclGetVersion(ctypes.byref(v)))
    assert v.value == 22800  # NCCL_VERSION(2, 28, 0): the API level served
    assert L.ncclGetErrorString(ncclInvalidArgument)
    uid = NcclUniqueId()
    ok(L, L.ncclGetUniqueId(ctypes.byref(uid)))
    assert any(uid.internal)


def host_body(uid, rank, n):
    os.environ["DMACCL_EXECUTOR"] = "host"
    L = load_nccl()
    D = dmaccl._lib.lib()  # the same libdmaccl.so the NCCL library links
    comm = init(L, uid, rank, n)
    count = 1001
    nbytes = 4 * count * (n + 2)
    ptr = ctypes.c_void_p()
    assert D.dmacclMemAlloc(comm, nbytes, ctypes.byref(ptr)) == 0
    buf = np.ctypeslib.as_array((ctypes.c_int32 * (nbytes // 4)).from_address(ptr.value))
    send, recv = ptr.value, ptr.value + 4 * count
    mine = values(1, rank, count).astype(np.int32)
    everyone = [values(1, r, count).astype(np.int32) for r in range(n)]

    def fresh():
        buf[:] = -0x5A5A5A5B
        buf[:count] = mine

    fresh()  # AllReduce, int32 max
    ok(L, L.ncclAllReduce(send, recv, count, ncclInt32, ncclMax, comm, None), comm)
    ok(L, L.ncclCommFinalize(comm), comm)
    assert np.array_equal(buf[count:2 * count], np.max(everyone, axis=0))
    assert np.all(buf[2 * count:] == -0x5A5A5A5B)

    fresh()  # AllGather
    ok(L, L.ncclAllGather(send, recv, count, ncclInt32, comm, None), comm)
    ok(L, L.ncclCommFinalize(comm), comm)
    assert np.array_equal(buf[count:count * (n + 1)], np.concatenate(everyone))

    fresh()  # ReduceScatter of each rank's first n * chunk values, sum
    chunk = count // n
    ok(L, L.ncclReduceScatter(send, recv, chunk, ncclInt32, ncclSum, comm, None), comm)
    ok(L, L.ncclCommFinalize(comm), comm)
    total = np.sum([e[:n * chunk].astype(np.int64) for e in everyone], axis=0)
    assert np.array_equal(buf[count:count + chunk], total[rank * chunk:(rank + 1) * chunk])
    assert np.all(buf[count + chunk:] == -0x5A5A5A5B)

    fresh()  # Broadcast from the last rank
    ok(L, L.ncclBroadcast(send, recv, count, ncclInt32, n - 1, comm, None), comm)
    ok(L, L.ncclCommFinalize(comm), comm)
    assert np.array_equal(buf[count:2 * count], everyone[n - 1])

    if n > 1:  # a ring of Send/Recv in one group
        fresh()
        ok(L, L.ncclGroupStart())
        ok(L, L.ncclSend(send, count, ncclInt32, (rank + 1) % n, comm, None), comm)
        ok(L, L.ncclRecv(recv, count, ncclInt32, (rank - 1) % n, comm, None), comm)
        ok(L, L.ncclGroupEnd())
        ok(L, L.ncclCommFinalize(comm), comm)
        assert np.array_equal(buf[count:2 * count], everyone[(rank - 1) % n])

    # a wrong type: refused, named, nothing written; then the comm still works
    fresh()
    assert L.ncclAllReduce(send, recv, count, 12, ncclSum, comm, None) == ncclInvalidArgument
    assert b"datatype" in L.ncclGetLastError(comm)
    assert np.all(buf[count:] == -0x5A5A5A5B)
    assert L.ncclCommSplit(comm, 0, rank, None, None) == ncclInvalidArgument
    assert b"newcomm" in L.ncclGetLastError(comm)
    ok(L, L.ncclAllReduce(send, recv, count, ncclInt32, ncclSum, comm, None), comm)
    ok(L, L.ncclCommFinalize(comm), comm)
    assert np.array_equal(buf[count:2 * count], np.sum(everyone, axis=0, dtype=np.int64))

    # ncclCommSplit by parity, keys reversing the order
    sub = ctypes.c_void_p(7)
    ok(L, L.ncclCommSplit(comm, rank % 2, -rank, ctypes.byref(sub), None), comm)
    mates = [r for r in range(n) if r % 2 == rank % 2][::-1]
    got = ctypes.c_int()
    ok(L, L.ncclCommCount(sub, ctypes.byref(got)), sub)
    assert got.value == len(mates)
    ok(L, L.ncclCommUserRank(sub, ctypes.byref(got)), sub)
    assert got.value == mates.index(rank)
    sptr = ctypes.c_void_p()
    assert D.dmacclMemAlloc(sub, 8 * count * (n + 1), ctypes.byref(sptr)) == 0
    sbuf = np.ctypeslib.as_array((ctypes.c_int32 * (2 * count * (n + 1))).from_address(sptr.value))
    sbuf[:] = -1
    sbuf[:count] = mine
    ok(L, L.ncclAllGather(sptr.value, sptr.value + 4 * count, count, ncclInt32, sub, None), sub)
    ok(L, L.ncclCommFinalize(sub), sub)
    assert np.array_equal(sbuf[count:count * (len(mates) + 1)],
                          np.concatenate([everyone[r] for r in mates]))
    assert D.dmacclMemFree(sub, sptr) == 0
    ok(L, L.ncclCommDestroy(sub))

    assert D.dmacclMemFree(comm, ptr) == 0
    ok(L, L.ncclCommDestroy(comm))


@pytest.mark.parametrize("n", [1, 2, 3])
def test_host_ranks(n):
    run_ranks(host_body, n)


def gpu_body(uid, rank, n):
    import torch

    dev = torch.device("cuda", rank % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    L = load_nccl()
    comm = init(L, uid, rank, n)
    stream = torch.cuda.current_stream()
    s = ctypes.c_void_p(stream.cuda_stream)
    count = 4099
    everyone = [torch.from_numpy(values(2, r, count)).to(torch.bfloat16) for r in range(n)]
    x = everyone[rank].to(dev)
    y = torch.full((count,), float("nan"), dtype=torch.bfloat16, device=dev)
    ok(L, L.ncclAllReduce(x.data_ptr(), y.data_ptr(), count, ncclBfloat16, ncclSum, comm, s), comm)
    stream.synchronize()
    assert torch.equal(y.cpu(), torch.stack(everyone).float().sum(0).to(torch.bfloat16))

    # a CUDA graph of AllReduce then AllGather, replayed on fresh inputs
    a = torch.zeros(count, dtype=torch.float32, device=dev)
    b = torch.empty_like(a)
    g = torch.empty(n * count, dtype=torch.float32, device=dev)
    graph = torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        with torch.cuda.graph(graph, stream=side):
            cs = ctypes.c_void_p(side.cuda_stream)
            ok(L, L.ncclAllReduce(a.data_ptr(), b.data_ptr(), count, ncclFloat32, ncclSum, comm,
                                  cs), comm)
            ok(L, L.ncclAllGather(b.data_ptr(), g.data_ptr(), count, ncclFloat32, comm, cs), comm)
    torch.cuda.current_stream().wait_stream(side)
    for rep in range(3):
        ins = [torch.from_numpy(values(10 + rep, r, count)).float() for r in range(n)]
        a.copy_(ins[rank])
        g.fill_(float("nan"))
        torch.cuda.synchronize()
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(g.cpu(), torch.stack(ins).sum(0).repeat(n))
    del graph

    # ncclCommSplit: one color, keys reversing the order; an AllGather shows it
    sub = ctypes.c_void_p()
    ok(L, L.ncclCommSplit(comm, 0, -rank, ctypes.byref(sub), None), comm)
    g.fill_(float("nan"))
    a.copy_(torch.from_numpy(values(20, rank, count)).float())
    ok(L, L.ncclAllGather(a.data_ptr(), g.data_ptr(), count, ncclFloat32, sub, s), sub)
    stream.synchronize()
    want = torch.cat([torch.from_numpy(values(20, r, count)).float() for r in reversed(range(n))])
    assert torch.equal(g.cpu(), want)
    ok(L, L.ncclCommDestroy(sub))
    ok(L, L.ncclCommFinalize(comm), comm)
    ok(L, L.ncclCommDestroy(comm))


def test_gpu_ranks():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    run_ranks(gpu_body, 2)
