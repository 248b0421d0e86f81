"""dmaccl.Communicator on the host executor: every collective, every byte.

Ranks are processes (as under PyTorch and vLLM) or, for init_all, one
process driving every rank. Inputs are random, outputs are poisoned first,
and every element is compared with the reference (reference.py).
"""

import os
import re

import numpy as np
import pytest

from ranks import run_ranks

import dmaccl
from reference import data, poison, reduce

HEADER = os.path.join(os.path.dirname(__file__), "..", "..", "include", "dmaccl.h")


def test_versions_agree():
    text = open(HEADER).read()
    major, minor, patch = (int(re.search(rf"#define DMACCL_{k} (\d+)", text).group(1))
                           for k in ("MAJOR", "MINOR", "PATCH"))
    assert dmaccl.library_version() == major * 10000 + minor * 100 + patch
    assert dmaccl.__version__ == f"{major}.{minor}.{patch}"


def _as(lib, a):
    if lib == "torch":
        import torch

        return torch.from_numpy(a)
    return a


def _np(x):
    return x.numpy() if hasattr(x, "numpy") else x


def collectives_body(uid, rank, n, lib, seed):
    comm = dmaccl.Communicator(unique_id=uid, rank=rank, world_size=n, executor="host")
    count = 1000 + 17 * seed
    everyone = {dt: [data(seed, r, count, dt) for r in range(n)]
                for dt in ("float32", "int32", "float64", "int8")}

    def out(shape, dt):
        return _as(lib, poison(np.empty(shape, dt)))

    for dt, xs in everyone.items():
        mine = _as(lib, xs[rank].copy())
        ops = ("sum", "prod", "max", "min") + (("avg",) if dt.startswith("float") else ())
        for op in ops:
            want = reduce(xs, op)
            got = comm.all_reduce(mine, out(count, dt), op=op)
            np.testing.assert_array_equal(_np(got), want, err_msg=f"all_reduce {dt} {op}")
            # reduce_scatter: rank r gets block r of the reduction
            blk = count // n
            rs = comm.reduce_scatter(out(blk, dt), _as(lib, xs[rank][:blk * n].copy()), op=op)
            np.testing.assert_array_equal(_np(rs), want[rank * blk:(rank + 1) * blk],
                                          err_msg=f"reduce_scatter {dt} {op}")
        # premultiplied sums: a number, then a one-element array of the type
        # (read when the call runs), every rank the same
        sc = -3 if dt.startswith("int") else 0.3
        want = reduce(xs, "premul", sc)
        got = comm.all_reduce(mine, out(count, dt), op=dmaccl.premul_sum(sc))
        np.testing.assert_array_equal(_np(got), want, err_msg=f"all_reduce {dt} premul")
        blk = count // n
        on = _as(lib, np.array([sc], dt))
        rs = comm.reduce_scatter(out(blk, dt), _as(lib, xs[rank][:blk * n].copy()),
                                 op=dmaccl.premul_sum(on))
        np.testing.assert_array_equal(_np(rs), reduce([x[:blk * n] for x in xs], "premul", sc)[
            rank * blk:(rank + 1) * blk], err_msg=f"reduce_scatter {dt} premul")
        red = comm.reduce(mine, out(count, dt) if rank == n - 1 else None, n - 1,
                          op=dmaccl.premul_sum(on))
        if rank == n - 1:
            np.testing.assert_array_equal(_np(red), want, err_msg=f"reduce {dt} premul")
        # in place: out is in
        inplace = _as(lib, xs[rank].copy())
        comm.all_reduce(inplace, inplace, op="max")
        np.testing.assert_array_equal(_np(inplace), reduce(xs, "max"))
        # all_gather
        g = comm.all_gather(out(count * n, dt), mine)
        np.testing.assert_array_equal(_np(g), np.concatenate(xs), err_msg=f"all_gather {dt}")

    xs = everyone["float32"]
    # uneven V forms: rank i has i+1 rows of 3
    sizes = [i + 1 for i in range(n)]
    rows = [x[:3 * s].reshape(s, 3) for x, s in zip(xs, sizes)]
    gv = comm.all_gatherv(out((sum(sizes), 3), "float32"), _as(lib, rows[rank].copy()), sizes)
    np.testing.assert_array_equal(_np(gv), np.concatenate(rows))
    # arrival words: every rank's word holds the value once the call is done
    arrived = _as(lib, np.zeros(n, np.int32))
    g = comm.all_gather(out(16 * n, "float32"), _as(lib, xs[rank][:16].copy()), arrived=arrived,
                        value=123457)
    np.testing.assert_array_equal(_np(g), np.concatenate([x[:16] for x in xs]))
    np.testing.assert_array_equal(_np(arrived), np.full(n, 123457, np.int32))
    for p in range(n):  # the consumer's side: the words hold the value, so each returns
        comm.wait_arrived(arrived, p, 123457)
    arrived = _as(lib, np.zeros(n, np.int32))
    gv = comm.all_gatherv(out((sum(sizes), 3), "float32"), _as(lib, rows[rank].copy()), sizes,
                          arrived=arrived, value=99)
    np.testing.assert_array_equal(_np(gv), np.concatenate(rows))
    np.testing.assert_array_equal(_np(arrived), np.full(n, 99, np.int32))
    full = [x[:3 * sum(sizes)].reshape(sum(sizes), 3) for x in xs]
    rsv = comm.reduce_scatterv(out((sizes[rank], 3), "float32"), _as(lib, full[rank].copy()), sizes)
    off = sum(sizes[:rank])
    np.testing.assert_array_equal(_np(rsv), reduce(full, "sum")[off:off + sizes[rank]])
    # all_to_all_single, equal and split
    a2a = comm.all_to_all_single(out(n * 5, "float32"), _as(lib, xs[rank][:n * 5].copy()))
    want = np.concatenate([xs[q][rank * 5:(rank + 1) * 5] for q in range(n)])
    np.testing.assert_array_equal(_np(a2a), want)

    def split(src, dst):  # rows rank src sends to rank dst
        return (src + 2 * dst) % 3 + 1

    ins = [split(rank, d) for d in range(n)]
    outs = [split(s, rank) for s in range(n)]
    sendbuf = xs[rank][:2 * sum(ins)].reshape(sum(ins), 2)
    got = comm.all_to_all_single(out((sum(outs), 2), "float32"), _as(lib, sendbuf.copy()),
                                 outs, ins)
    want = []
    for s in range(n):
        sins = [split(s, d) for d in range(n)]
        sb = xs[s][:2 * sum(sins)].reshape(sum(sins), 2)
        o = sum(sins[:rank])
        want.append(sb[o:o + sins[rank]])
    np.testing.assert_array_equal(_np(got), np.concatenate(want))
    # a rank that receives nothing: rank 0 gets no rows (its output has none)
    def split0(src, dst):
        return 0 if dst == 0 else src + 1

    ins = [split0(rank, d) for d in range(n)]
    outs = [split0(s, rank) for s in range(n)]
    sendbuf = xs[rank][:2 * sum(ins)].reshape(sum(ins), 2)
    got = comm.all_to_all_single(out((sum(outs), 2), "float32"), _as(lib, sendbuf.copy()),
                                 outs, ins)
    want = [xs[s][:2 * sum(split0(s, d) for d in range(n))].reshape(-1, 2)
            [sum(split0(s, d) for d in range(rank)):][:split0(s, rank)] for s in range(n)]
    np.testing.assert_array_equal(_np(got), np.concatenate(want).reshape(-1, 2))
    # rooted
    for root in range(n):
        b = _as(lib, xs[rank][:64].copy())
        comm.broadcast(b, root)
        np.testing.assert_array_equal(_np(b), xs[root][:64])
        red = out(64, "float32")
        untouched = _np(red).copy()
        comm.reduce(_as(lib, xs[rank][:64].copy()), red, root, op="sum")
        np.testing.assert_array_equal(
            _np(red), reduce([x[:64] for x in xs], "sum") if rank == root else untouched)
        ga = out(n * 8, "float32") if rank == root else None
        comm.gather(ga, _as(lib, xs[rank][:8].copy()), root)
        if rank == root:
            np.testing.assert_array_equal(_np(ga), np.concatenate([x[:8] for x in xs]))
        sc = out(8, "float32")
        comm.scatter(sc, _as(lib, xs[rank][:8 * n].copy()) if rank == root else None, root)
        np.testing.assert_array_equal(_np(sc), xs[root][8 * rank:8 * (rank + 1)])
    # a type without a dmaccl number moves as bytes
    if lib == "numpy":
        i16 = [data(seed, r, 50, "int16") for r in range(n)]
        g16 = comm.all_gather(out(50 * n, "int16"), i16[rank].copy())
        np.testing.assert_array_equal(g16, np.concatenate(i16))
    # a group of calls: issued together, each checked
    with dmaccl.group():
        o1 = comm.all_reduce(_as(lib, xs[rank][:100].copy()), out(100, "float32"))
        o2 = comm.all_gather(out(20 * n, "float32"), _as(lib, xs[rank][:20].copy()))
    np.testing.assert_array_equal(_np(o1), reduce([x[:100] for x in xs], "sum"))
    np.testing.assert_array_equal(_np(o2), np.concatenate([x[:20] for x in xs]))
    comm.destroy()


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("lib", ["numpy", "torch"])
def test_collectives_across_processes(n, lib):
    if lib == "torch":
        pytest.importorskip("torch")
    run_ranks(collectives_body, n, lib, n)


def p2p_body(uid, rank, n, lib):
    """A pipeline (recv from the previous rank, send to the next, outside a
    group), then a ring both ways in one batch_isend_irecv, then several
    messages to one peer in order."""
    comm = dmaccl.Communicator(unique_id=uid, rank=rank, world_size=n, executor="host")
    nxt, prv = (rank + 1) % n, (rank - 1) % n

    def msg(frm, to, k, count=777):
        return data(100 + k, frm * n + to, count, "float32")

    got = _as(lib, poison(np.empty(777, np.float32)))
    if rank > 0:
        comm.recv(got, prv)
        np.testing.assert_array_equal(_np(got), msg(prv, rank, 0), err_msg="pipeline")
    if rank < n - 1:
        mine = msg(rank, nxt, 0)
        mine.flags.writeable = False  # a send never writes its tensor
        comm.send(_as(lib, mine) if lib == "numpy" else _as(lib, mine.copy()), nxt)

    class Op:
        def __init__(self, op, tensor, peer):
            self.op, self.tensor, self.peer = op, tensor, peer

    a, b = poison(np.empty(777, np.float32)), poison(np.empty(777, np.float32))
    ops = [Op("send", _as(lib, msg(rank, nxt, 1)), nxt), Op("recv", _as(lib, a), prv),
           Op("send", _as(lib, msg(rank, prv, 2)), prv), Op("recv", _as(lib, b), nxt)]
    # any order inside the batch (with 2 ranks both messages go one way: order counts)
    comm.batch_isend_irecv(ops[::-1] if rank % 2 and n > 2 else ops)
    np.testing.assert_array_equal(a, msg(prv, rank, 1), err_msg="ring, from previous")
    np.testing.assert_array_equal(b, msg(nxt, rank, 2), err_msg="ring, from next")
    # in order: the k-th send meets the k-th recv; sizes differ, so a mix-up would show
    if rank == 0:
        with dmaccl.group():
            for k in range(3):
                comm.send(msg(0, 1, 10 + k, 50 + k), 1)
    elif rank == 1:
        outs = [poison(np.empty(50 + k, np.float32)) for k in range(3)]
        for k in range(3):
            comm.recv(outs[k], 0)
        for k in range(3):
            np.testing.assert_array_equal(outs[k], msg(0, 1, 10 + k, 50 + k))
    # to itself inside a group, beside the ring (matched in order: sizes
    # differ), then one without its match: refused at the group's end, nothing
    # written, the communicator usable after
    c, d = poison(np.empty(30, np.float32)), poison(np.empty(31, np.float32))
    with dmaccl.group():
        comm.send(_as(lib, msg(rank, rank, 3, 30)), rank)
        comm.send(_as(lib, msg(rank, nxt, 4)), nxt)
        comm.send(_as(lib, msg(rank, rank, 5, 31)), rank)
        comm.recv(_as(lib, a), prv)
        comm.recv(_as(lib, c), rank)
        comm.recv(_as(lib, d), rank)
    np.testing.assert_array_equal(a, msg(prv, rank, 4), err_msg="ring beside the self pairs")
    np.testing.assert_array_equal(c, msg(rank, rank, 3, 30), err_msg="first pair to itself")
    np.testing.assert_array_equal(d, msg(rank, rank, 5, 31), err_msg="second pair to itself")
    a = poison(np.empty(777, np.float32))
    before = a.copy()
    with pytest.raises(dmaccl.DmacclError, match="no matching dmacclRecv from itself"):
        with dmaccl.group():
            comm.send(_as(lib, msg(rank, rank, 6, 30)), rank)
            comm.send(_as(lib, msg(rank, nxt, 7)), nxt)
            comm.recv(_as(lib, a), prv)
    np.testing.assert_array_equal(a.view(np.uint8), before.view(np.uint8))  # not issued
    with dmaccl.group():  # usable after
        comm.send(_as(lib, msg(rank, nxt, 8)), nxt)
        comm.recv(_as(lib, a), prv)
    np.testing.assert_array_equal(a, msg(prv, rank, 8), err_msg="ring after the refusal")
    # bad peers: refused before the library, nothing written
    y = poison(np.empty(4, np.float32))
    before = y.copy()
    for call, exc, word in [(lambda: comm.send(y, rank), ValueError, "dst .* only inside a group"),
                            (lambda: comm.recv(y, n), ValueError, "src"),
                            (lambda: comm.recv(y, 1.0), TypeError, "src"),
                            (lambda: comm.batch_isend_irecv([Op("bcast", y, 0)]), ValueError,
                             "op")]:
        with pytest.raises(exc, match=word):
            call()
        np.testing.assert_array_equal(y.view(np.uint8), before.view(np.uint8))
    comm.destroy()


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("lib", ["numpy", "torch"])
def test_send_recv_across_processes(n, lib):
    if lib == "torch":
        pytest.importorskip("torch")
    run_ranks(p2p_body, n, lib)


def errors_body(uid, rank, n):
    comm = dmaccl.Communicator(unique_id=uid, rank=rank, world_size=n, executor="host")
    x = np.arange(12, dtype=np.float32) + rank
    y = poison(np.empty(12, np.float32))
    before = y.copy()
    yy = poison(np.empty(12 * n, np.float32))
    yy_before = yy.copy()
    bad = [
        (lambda: comm.all_reduce(x, np.empty(11, np.float32)), ValueError, "out_tensor"),
        (lambda: comm.all_reduce(x, np.empty(12, np.float64)), TypeError, "float64"),
        (lambda: comm.all_reduce(x, y, op="xor"), ValueError, "op"),
        (lambda: comm.all_reduce(np.empty(12, np.int16), np.empty(12, np.int16)), TypeError,
         "cannot reduce"),
        (lambda: comm.all_reduce([1.0, 2.0], y), TypeError, "in_tensor"),
        (lambda: comm.all_reduce(x[::2], y[:6]), ValueError, "contiguous"),
        (lambda: comm.all_gather(y, x), ValueError, "output_tensor"),
        (lambda: comm.all_gatherv(np.empty((5, 2), np.float32), x[:4].reshape(2, 2), [1, 2, 3]),
         ValueError, "sizes"),
        (lambda: comm.all_gatherv(np.empty((5, 2), np.float32), x[:4].reshape(2, 2), [1, -1]),
         ValueError, "negative"),
        (lambda: comm.broadcast(y, n), ValueError, "src"),
        (lambda: comm.gather(None, x, 0) if rank == 0 else comm.gather(None, x, 99), ValueError,
         "root"),
        (lambda: comm.all_to_all_single(y, x, [1] * n, [2] * n), ValueError, "rows"),
        (lambda: comm.all_reduce(x, y, stream=5), ValueError, "stream"),
        (lambda: comm.all_reduce(x, y, op=dmaccl.premul_sum(np.ones(2, np.float32))), ValueError,
         "2 elements"),
        (lambda: comm.all_reduce(x, y, op=dmaccl.premul_sum(np.ones(1, np.float64))), TypeError,
         "scalar is float64"),
        (lambda: comm.all_reduce(x, y, op=dmaccl.premul_sum(True)), TypeError, "number"),
        (lambda: comm.all_reduce(x, y, op=dmaccl.premul_sum("2")), TypeError, "scalar"),
        (lambda: comm.all_reduce(np.arange(12, dtype=np.int8), np.empty(12, np.int8),
                                 op=dmaccl.premul_sum(300)), ValueError, "not a int8 value"),
        (lambda: comm.all_reduce(np.arange(12, dtype=np.int32), np.empty(12, np.int32),
                                 op=dmaccl.premul_sum(1.5)), ValueError, "not a int32 value"),
        (lambda: comm.all_gather(np.empty(12 * n, np.float32), x,
                                 arrived=np.zeros(n + 1, np.uint32)), ValueError, "arrived has"),
        (lambda: comm.all_gather(np.empty(12 * n, np.float32), x,
                                 arrived=np.zeros(n, np.float32)), TypeError, "int32 or uint32"),
        (lambda: comm.all_gather(np.empty(12 * n, np.float32), x, arrived=np.zeros(n, np.uint32),
                                 value=-1), ValueError, "value"),
        (lambda: comm.wait_arrived(np.zeros(n, np.uint32), n), ValueError, "rank"),
        (lambda: comm.wait_arrived(np.zeros(n, np.uint32), 0, value=1 << 32), ValueError, "value"),
        (lambda: comm.wait_arrived(np.zeros(n, np.float32), 0), TypeError, "int32 or uint32"),
        (lambda: comm.wait_arrived(np.zeros(n, np.uint32), 0, stream=5), ValueError, "stream"),
        (lambda: comm.all_reduce(x, np.frombuffer(y.tobytes(), np.float32)), ValueError,
         "read-only"),
        (lambda: comm.all_gather(np.empty(10 ** 7, np.float32), np.empty(10 ** 7 // n,
                                                                         np.float32)),
         ValueError, "host_buffer_bytes"),
        # what would not travel as its values' bytes
        (lambda: comm.broadcast(np.array([None] * 3, dtype=object), 0), TypeError,
         "broadcast: tensor holds Python objects"),
        (lambda: comm.all_reduce(x.astype(">f4"), y.astype(">f4")), TypeError, "byte order"),
        # integers only, where the call takes integers
        (lambda: comm.all_gatherv(np.empty((4, 2), np.float32), x[:4].reshape(2, 2), [2.9, 2.2]),
         TypeError, "sizes must be a list"),
        (lambda: comm.all_gatherv(np.empty((4, 2), np.float32), x[:4].reshape(2, 2), "22"),
         TypeError, "sizes must be a list"),
        (lambda: comm.all_gatherv(np.empty((4, 2), np.float32), x[:4].reshape(2, 2),
                                  [True] * n), TypeError, "sizes must be a list"),
        (lambda: comm.send(x, 1.0 - rank), TypeError, "dst must be an int"),
        (lambda: comm.all_to_all_single(yy, yy), ValueError, "output and input overlap"),
        # the arrival words apart from the collective's tensors
        (lambda: comm.all_gather(yy, x, arrived=yy.view(np.uint32)[:n]), ValueError,
         "arrived overlaps output_tensor"),
    ]
    for call, exc, word in bad:
        with pytest.raises(exc, match=word):
            call()
        np.testing.assert_array_equal(y.view(np.uint8), before.view(np.uint8))
        np.testing.assert_array_equal(yy.view(np.uint8), yy_before.view(np.uint8))
    # a call refused inside a group drops the group: the send before it is
    # not issued, so the next batch's receive gets the next batch's send
    peer = (rank + 1) % n
    frm = (rank - 1) % n
    ro = np.zeros(12, np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="recv: tensor is read-only"):
        with dmaccl.group():
            comm.send(x, peer)
            comm.recv(ro, frm)
    got = poison(np.empty(12, np.float32))
    with dmaccl.group():
        comm.send(x * 2, peer)
        comm.recv(got, frm)
    np.testing.assert_array_equal(got, (np.arange(12, dtype=np.float32) + frm) * 2)
    # read-only where the call only reads: a non-root's reduce and gather
    # input (out None), the broadcast root's tensor
    rx = x.copy()
    rx.flags.writeable = False
    red = poison(np.empty(12, np.float32))
    comm.reduce(rx, red if rank == 0 else None, 0)
    gat = poison(np.empty(12 * n, np.float32))
    comm.gather(gat if rank == 0 else None, rx, 0)
    bc = rx if rank == 0 else poison(np.empty(12, np.float32))
    comm.broadcast(bc, 0)
    if rank == 0:
        np.testing.assert_array_equal(red, sum(np.arange(12, dtype=np.float32) + r
                                               for r in range(n)))
        np.testing.assert_array_equal(gat, np.concatenate([np.arange(12, dtype=np.float32) + r
                                                           for r in range(n)]))
    np.testing.assert_array_equal(bc, np.arange(12, dtype=np.float32))
    # numpy integers where the call takes an int
    comm.broadcast(bc, np.int64(0))
    # still usable, and the library's own checks speak through DmacclError
    comm.all_reduce(x, y)
    np.testing.assert_array_equal(y, sum(np.arange(12, dtype=np.float32) + r for r in range(n)))
    comm.destroy()
    with pytest.raises(ValueError, match="destroyed"):
        comm.all_reduce(x, y)


def test_bad_arguments_leave_everything_usable():
    run_ranks(errors_body, 2)


def group_failure_body(uid, rank, n):
    """A group that fails gives back only its own part of the shared buffer
    (a send before it, still waiting for its receiver, keeps its bytes), and
    group_end after a call refused inside the group issues nothing."""
    import time

    comm = dmaccl.Communicator(unique_id=uid, rank=rank, world_size=n, executor="host")
    x = np.arange(12, dtype=np.float32)
    if rank == 0:
        comm.send(np.full(12, 7, np.float32), 1)
        with pytest.raises(RuntimeError, match="boom"):
            with dmaccl.group():
                comm.all_reduce(x, poison(np.empty(12, np.float32)))
                raise RuntimeError("boom")
        comm.send(np.full(12, 9, np.float32), 1)
    else:
        time.sleep(0.5)  # both sends wait for this rank
        a, b = poison(np.empty(12, np.float32)), poison(np.empty(12, np.float32))
        comm.recv(a, 0)
        comm.recv(b, 0)
        np.testing.assert_array_equal(a, np.full(12, 7, np.float32))
        np.testing.assert_array_equal(b, np.full(12, 9, np.float32))
    # group_start/group_end: a refusal caught inside fails the group
    peer = 1 - rank
    ro = np.zeros(12, np.float32)
    ro.flags.writeable = False
    dmaccl.group_start()
    comm.send(x + rank, peer)
    with pytest.raises(ValueError, match="read-only"):
        comm.recv(ro, peer)
    with pytest.raises(dmaccl.DmacclError, match="group_end: a call inside the group failed"):
        dmaccl.group_end()
    got = poison(np.empty(12, np.float32))
    with dmaccl.group():
        comm.send(x * 3 + rank, peer)
        comm.recv(got, peer)
    np.testing.assert_array_equal(got, x * 3 + peer)
    comm.destroy()


def test_group_failure():
    run_ranks(group_failure_body, 2)


def split_body(uid, rank, n):
    comm = dmaccl.Communicator(unique_id=uid, rank=rank, world_size=n, executor="host",
                               host_buffer_bytes=1 << 16)
    # parity colors, keys reversing the order; rank 0 joins none when n > 2
    color = None if n > 2 and rank == 0 else rank % 2
    sub = comm.split(color, key=-rank)
    xs = [data(11, r, 257, "int32") for r in range(n)]
    # the parent still works (every rank)
    s = comm.all_reduce(xs[rank], poison(np.empty(257, np.int32)))
    np.testing.assert_array_equal(s, reduce(xs, "sum"))
    if color is None:
        assert sub is None
        comm.destroy()
    else:
        mates = sorted((r for r in range(n) if r % 2 == color and not (n > 2 and r == 0)),
                       reverse=True)
        assert (sub.rank, sub.world_size, sub.executor) == (mates.index(rank), len(mates), "host")
        g = sub.all_gather(poison(np.empty(257 * len(mates), np.int32)), xs[rank])
        np.testing.assert_array_equal(g, np.concatenate([xs[r] for r in mates]))
        s = sub.all_reduce(xs[rank], poison(np.empty(257, np.int32)), op="max")
        np.testing.assert_array_equal(s, reduce([xs[r] for r in mates], "max"))
        # a split of the split, with a config of its own, after the parent is gone
        comm.destroy()
        again = sub.split(0, cta_policy="zero")
        assert again.world_size == len(mates)
        g = again.all_gather(poison(np.empty(257 * len(mates), np.int32)), xs[rank])
        np.testing.assert_array_equal(g, np.concatenate([xs[r] for r in mates]))
        again.destroy()
        sub.destroy()


@pytest.mark.parametrize("n", [2, 3, 4])
def test_split(n):
    run_ranks(split_body, n)


def split_errors_body(uid, rank, n):
    comm = dmaccl.Communicator(unique_id=uid, rank=rank, world_size=n, executor="host",
                               host_buffer_bytes=1 << 16)
    # wrong on every rank: each raises its own error
    for bad in (-1, "a", True, 2**32 - 1, 2**31):
        with pytest.raises(ValueError, match="color"):
            comm.split(bad)
    with pytest.raises(ValueError, match="key"):
        comm.split(0, key=2**40)
    with pytest.raises(ValueError, match="key"):
        comm.split(0, key=False)
    with pytest.raises(ValueError, match="cta_policy"):
        comm.split(0, cta_policy="fast")
    with pytest.raises(TypeError, match="algorithm"):
        comm.split(0, algorithm=5)
    # wrong on one rank: it raises its own, the others the library's, in step
    if rank == 1:
        with pytest.raises(ValueError, match="color"):
            comm.split(-3)
    else:
        with pytest.raises(dmaccl.DmacclError, match="rank 1"):
            comm.split(0)
    # inside a group on one rank: refused there, and the other learns it
    if rank == 0:
        with dmaccl.group():
            with pytest.raises(dmaccl.DmacclError, match="inside a group"):
                comm.split(0)
    else:
        with pytest.raises(dmaccl.DmacclError, match="rank 0"):
            comm.split(0)
    with dmaccl.group():
        with pytest.raises(ValueError, match="group"):
            dmaccl.Communicator(unique_id=uid, rank=rank, world_size=n, executor="host")
    # refused by the library on one rank: every rank learns it, nothing is made
    with pytest.raises(dmaccl.DmacclError, match="algorithm" if rank == 0 else "rank 0"):
        comm.split(0, algorithm="allgather:nosuch" if rank == 0 else None)
    x = np.arange(8, dtype=np.float32) + rank
    np.testing.assert_array_equal(comm.all_reduce(x, np.empty(8, np.float32)),
                                  sum(np.arange(8, dtype=np.float32) + r for r in range(n)))
    comm.destroy()


def test_split_errors():
    run_ranks(split_errors_body, 2)
    comms = dmaccl.Communicator.init_all(2, executor="host")
    with pytest.raises(dmaccl.DmacclError, match="dmacclCommInitAll"):
        comms[0].split(0)
    for c in comms:
        c.destroy()


def test_init_all_one_process_drives_every_rank():
    n = 3
    comms = dmaccl.Communicator.init_all(n, executor="host")
    xs = [data(7, r, 300, "float32") for r in range(n)]
    ys = [poison(np.empty(300, np.float32)) for _ in range(n)]
    gs = [poison(np.empty(300 * n, np.float32)) for _ in range(n)]
    with dmaccl.group():
        for r in range(n):
            comms[r].all_reduce(xs[r], ys[r], op=dmaccl.ReduceOp.MIN)
            comms[r].all_gather(gs[r], xs[r])
    for r in range(n):
        np.testing.assert_array_equal(ys[r], reduce(xs, "min"))
        np.testing.assert_array_equal(gs[r], np.concatenate(xs))
    # a thread driving several ranks outside a group is refused by the
    # library, and the set stays usable: the other ranks' calls join rank 0's
    comms[0].all_reduce(xs[0], poison(ys[0]))
    with pytest.raises(dmaccl.DmacclError, match="group"):
        comms[1].all_reduce(xs[1], ys[1])
    with dmaccl.group():
        for r in (1, 2):
            comms[r].all_reduce(xs[r], poison(ys[r]))
    for r in range(n):
        comms[r].synchronize()
        np.testing.assert_array_equal(ys[r], reduce(xs, "sum"))
    # send/recv: every rank to every other, one group
    ins = {(a, b): data(40 + a, b, 64 + a + b, "int32") for a in range(n) for b in range(n)
           if a != b}
    outs = {k: poison(np.empty_like(v)) for k, v in ins.items()}
    with dmaccl.group():
        for (a, b), v in ins.items():
            comms[a].send(v, b)
            comms[b].recv(outs[(a, b)], a)
    for r in range(n):
        comms[r].synchronize()
    for k, v in ins.items():
        np.testing.assert_array_equal(outs[k], v, err_msg=f"send/recv {k}")
    for c in comms:
        c.destroy()


class _OneRankGroup:
    """vLLM's StatelessProcessGroup shape, one rank."""

    rank, world_size = 0, 1

    def broadcast_obj(self, obj, src):
        return obj


def test_one_rank_group_is_disabled():
    c = dmaccl.Communicator(group=_OneRankGroup())
    assert c.disabled and not c.available
    assert c.all_reduce(np.ones(3, np.float32)) is None
    with pytest.raises(ValueError, match="cta_policy"):  # checked all the same
        dmaccl.Communicator(group=_OneRankGroup(), cta_policy="fast")


def test_unique_id_is_checked():
    with pytest.raises(ValueError, match="unique_id"):
        dmaccl.Communicator(unique_id=b"short", rank=0, world_size=2, executor="host")
    with pytest.raises(ValueError, match="rank"):
        dmaccl.Communicator(unique_id=dmaccl.get_unique_id(), rank=2, world_size=2,
                            executor="host")
    with pytest.raises(ValueError, match="host_buffer_bytes"):
        dmaccl.Communicator(unique_id=dmaccl.get_unique_id(), rank=0, world_size=2,
                            executor="host", host_buffer_bytes=100)
    for size in (2**64 + 8192, True):  # (2**64 + 8192 wrapped to 8 KiB in a size_t)
        with pytest.raises(ValueError, match="host_buffer_bytes"):
            dmaccl.Communicator(unique_id=dmaccl.get_unique_id(), rank=0, world_size=2,
                                executor="host", host_buffer_bytes=size)
    with pytest.raises(ValueError, match="world_size"):
        dmaccl.Communicator(unique_id=dmaccl.get_unique_id(), rank=0, world_size=True,
                            executor="host")
    with pytest.raises(TypeError, match="algorithm"):
        dmaccl.Communicator(unique_id=dmaccl.get_unique_id(), rank=0, world_size=2,
                            executor="host", algorithm=5)
    with pytest.raises(TypeError, match="init_all: devices"):
        dmaccl.Communicator.init_all(2.0, executor="host")
    with pytest.raises(ValueError, match="init_all: device 'cuda:0' on the host"):
        dmaccl.Communicator.init_all(["cuda:0", "cpu"], executor="host")
    with pytest.raises(ValueError, match="executor"):
        dmaccl.Communicator(unique_id=dmaccl.get_unique_id(), rank=0, world_size=2,
                            executor="tpu")
    with pytest.raises(ValueError, match="cta_policy"):
        dmaccl.Communicator(unique_id=dmaccl.get_unique_id(), rank=0, world_size=2,
                            executor="host", cta_policy="none")


@pytest.mark.parametrize("policy", ["default", "efficiency", "zero", "ZERO", None])
def test_cta_policy(policy):
    """The library's CTA policy (NCCL's names) from Python: every policy runs
    correct collectives (what each selects is the C tests'); a wrong one is
    refused before a communicator exists."""
    n = 2
    comms = dmaccl.Communicator.init_all(n, executor="host", cta_policy=policy)
    xs = [data(11, r, 1000, "float32") for r in range(n)]
    ys = [poison(np.empty(1000, np.float32)) for _ in range(n)]
    gs = [poison(np.empty(1000 * n, np.float32)) for _ in range(n)]
    with dmaccl.group():
        for r in range(n):
            comms[r].all_reduce(xs[r], ys[r])
            comms[r].all_gather(gs[r], xs[r])
    for r in range(n):
        comms[r].synchronize()
        np.testing.assert_array_equal(ys[r], reduce(xs, "sum"))
        np.testing.assert_array_equal(gs[r], np.concatenate(xs))
    for c in comms:
        c.destroy()
    for bad in ("none", 2, ""):
        with pytest.raises(ValueError, match="cta_policy"):
            dmaccl.Communicator.init_all(n, executor="host", cta_policy=bad)


def test_buffers_refuse_what_would_not_travel_as_its_bytes():
    """Lazy conjugate and negative views hold the values before the view's
    operation; an fp8 premul scalar past the type's range overflows as the
    wider floats' do."""
    torch = pytest.importorskip("torch")
    from dmaccl import _buffers as B

    c = torch.tensor([1 + 2j, 3 + 4j], dtype=torch.complex64)
    with pytest.raises(ValueError, match="f: t is a lazy conjugate view"):
        B.describe(c.conj(), "t", what="f")
    B.describe(c.conj().resolve_conj(), "t")
    with pytest.raises(ValueError, match="lazy negative view"):
        B.describe(torch._neg_view(torch.ones(3)), "t")
    with pytest.raises(ValueError, match="sparse|layout"):
        B.describe(torch.ones(3).to_sparse(), "t")
    for t in (B.FLOAT8E4M3, B.FLOAT8E5M2):
        if not hasattr(torch, B.TYPE_NAMES[t]):
            continue
        for v in (1e10, 10 ** 400, -1e6):
            with pytest.raises(ValueError, match="overflows"):
                B.scalar_bytes(v, t, "f")
        assert B.scalar_bytes(2.0, t, "f") == bytes(
            [int(torch.tensor([2.0]).to(getattr(torch, B.TYPE_NAMES[t])).view(torch.uint8))])
