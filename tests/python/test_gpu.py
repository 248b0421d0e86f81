"""dmaccl from Python on GPUs: the Communicator (one process per rank, and
one process driving every rank), CUDA graph capture, and the torch backend
"cuda:dmaccl". Rank r uses GPU r % GPUs, so one GPU runs these with ranks
sharing it. Skipped without a GPU.

Every result is compared element for element with a reference computed on
the CPU from every rank's inputs (the library's arithmetic is defined:
include/dmaccl.h).
"""

import os

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no GPU: the GPU tests are skipped", allow_module_level=True)

from ranks import free_port, run_ranks  # noqa: E402

GPUS = torch.cuda.device_count()


def inputs(seed, n, count, dtype):
    return [torch.randn(count, generator=torch.Generator().manual_seed(seed * 100 + r))
            .mul_(4).to(dtype) for r in range(n)]


def rank_sum(xs, avg=False):
    acc = xs[0].float() if xs[0].dtype in (torch.bfloat16, torch.float16) else xs[0].clone()
    for x in xs[1:]:
        acc = acc + (x.float() if x.dtype != acc.dtype else x)
    if avg:
        acc = acc / len(xs)
    return acc.to(xs[0].dtype)


def premul_ref(xs, scalar):
    """The premultiplied sum: rank_sum's accumulation, times the scalar in the
    tensors' type, rounded once."""
    acc = xs[0].float() if xs[0].dtype in (torch.bfloat16, torch.float16) else xs[0].clone()
    for x in xs[1:]:
        acc = acc + (x.float() if x.dtype != acc.dtype else x)
    return (acc * torch.tensor(scalar, dtype=xs[0].dtype).to(acc.dtype)).to(xs[0].dtype)


def poisoned(count, dtype, dev):
    return torch.full((count,), float("nan"), device=dev).to(dtype)


def same(got, want, what):
    got = got.cpu()
    assert torch.equal(got.view(torch.uint8) if got.dtype != torch.bool else got,
                       want.view(torch.uint8)), f"{what}: first differences " \
        f"{(got.float() - want.float()).abs().argmax()}"


def collectives_body(uid, rank, n, policy="default"):
    import dmaccl

    dev = torch.device("cuda", rank % GPUS)
    torch.cuda.set_device(dev)
    comm = dmaccl.Communicator(unique_id=uid, rank=rank, world_size=n, device=dev,
                               cta_policy=policy)
    assert comm.executor == "cuda"
    for count in (4096, 1 << 21):  # 8-16 KB (staged) and 4-8 MB (direct)
        for dtype in (torch.float32, torch.bfloat16):
            xs = inputs(count % 97, n, count, dtype)
            mine = xs[rank].to(dev)
            for avg in (False, True):
                out = comm.all_reduce(mine, poisoned(count, dtype, dev),
                                      op=dmaccl.ReduceOp.AVG if avg else dmaccl.ReduceOp.SUM)
                same(out, rank_sum(xs, avg), f"all_reduce {count} {dtype} avg={avg}")
            blk = count // n
            rs = comm.reduce_scatter(poisoned(blk, dtype, dev), mine[:blk * n])
            same(rs, rank_sum([x[:blk * n] for x in xs])[rank * blk:(rank + 1) * blk],
                 f"reduce_scatter {count} {dtype}")
            # premultiplied sums: the scalar as a number, then as a one-element
            # tensor on the device
            out = comm.all_reduce(mine, poisoned(count, dtype, dev), op=dmaccl.premul_sum(0.3))
            same(out, premul_ref(xs, 0.3), f"all_reduce premul 0.3 {count} {dtype}")
            sc = torch.tensor([-3.0], dtype=dtype, device=dev)
            rs = comm.reduce_scatter(poisoned(blk, dtype, dev), mine[:blk * n],
                                     op=dmaccl.premul_sum(sc))
            same(rs, premul_ref([x[:blk * n] for x in xs], -3.0)[rank * blk:(rank + 1) * blk],
                 f"reduce_scatter premul tensor -3 {count} {dtype}")
            ag = comm.all_gather(poisoned(count * n, dtype, dev), mine)
            same(ag, torch.cat(xs), f"all_gather {count} {dtype}")
            t = mine.clone()
            comm.broadcast(t, n - 1)
            same(t, xs[n - 1], "broadcast")
        # V forms, rows of 8: rank i has i+1 rows
        sizes = [i + 1 for i in range(n)]
        rows = [x[:8 * s].view(s, 8) for x, s in zip(inputs(5, n, 8 * n, torch.float32), sizes)]
        gv = comm.all_gatherv(poisoned(8 * sum(sizes), torch.float32, dev).view(-1, 8),
                              rows[rank].to(dev), sizes)
        same(gv, torch.cat(rows), "all_gatherv")
        full = [x.view(-1, 8) for x in inputs(6, n, 8 * sum(sizes), torch.float32)]
        rv = comm.reduce_scatterv(poisoned(8 * sizes[rank], torch.float32, dev).view(-1, 8),
                                  full[rank].to(dev), sizes)
        off = sum(sizes[:rank])
        same(rv, rank_sum(full)[off:off + sizes[rank]], "reduce_scatterv")
        ins = [(rank + d) % 3 + 1 for d in range(n)]
        xs = [x.view(-1, 4) for x in inputs(7, n, 4 * 3 * n, torch.float32)]
        outs = [(s + rank) % 3 + 1 for s in range(n)]
        got = comm.all_to_all_single(poisoned(4 * sum(outs), torch.float32, dev).view(-1, 4),
                                     xs[rank][:sum(ins)].to(dev), outs, ins)
        want = []
        for s in range(n):
            sins = [(s + d) % 3 + 1 for d in range(n)]
            o = sum(sins[:rank])
            want.append(xs[s][o:o + sins[rank]])
        same(got, torch.cat(want), "all_to_all_single with splits")
    # arrival words: a consumer stream copies each block once its word holds
    # the value (wait_arrived), while the gather may still move the others
    count = 1 << 21
    xs = inputs(8, n, count, torch.float32)
    arrived = torch.zeros(n, dtype=torch.int32, device=dev)
    ag = comm.all_gather(poisoned(count * n, torch.float32, dev), xs[rank].to(dev),
                         arrived=arrived, value=77)
    side, chk = torch.cuda.Stream(device=dev), poisoned(count * n, torch.float32, dev)
    for p in reversed(range(n)):
        comm.wait_arrived(arrived, p, 77, stream=side)
        with torch.cuda.stream(side):
            chk[p * count:(p + 1) * count].copy_(ag[p * count:(p + 1) * count])
    torch.cuda.synchronize()
    same(chk, torch.cat(xs), "blocks copied after wait_arrived")
    same(arrived.cpu(), torch.full((n,), 77, dtype=torch.int32), "arrival words")
    # a call refused inside a group drops the group (dmacclGroupDrop): the
    # send before the refused receive is not issued alone, so the next
    # batch's receive meets the next batch's send
    peer, frm = (rank + 1) % n, (rank - 1) % n
    mine = xs[rank][:4096].to(dev)
    with pytest.raises(ValueError, match="recv: tensor is in host memory"):
        with dmaccl.group():
            comm.send(mine, peer)
            comm.recv(torch.zeros(4096), frm)
    got = poisoned(4096, torch.float32, dev)
    with dmaccl.group():
        comm.send(mine * 2, peer)
        comm.recv(got, frm)
    same(got, xs[frm][:4096] * 2, "the batch after a dropped group")
    torch.cuda.synchronize()
    comm.destroy()


# CTA policy zero selects copy-engine forms everywhere (and, in graphs, staged
# reductions that wait on the stream): the same results are asserted.
POLICIES = ("default", "zero")


@pytest.mark.parametrize("policy", POLICIES)
def test_collectives_one_process_per_rank(policy):
    run_ranks(collectives_body, 2, policy)


def one_rank_body(uid, rank, n, policy):
    """A group of one: out of place every collective is one local copy
    (under zero the runtime's copy), in place nothing; a premultiplied sum is
    the reduction kernel's scaling, in place too (12 MB: more than 1 MB, where
    the copy is the runtime's)."""
    import dmaccl

    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    comm = dmaccl.Communicator(unique_id=uid, rank=rank, world_size=n, device=dev,
                               cta_policy=policy)
    for count in (1000, 1 << 20, 3 << 21):
        x = inputs(count % 91, 1, count, torch.bfloat16)[0]
        same(comm.all_reduce(x.to(dev), poisoned(count, torch.bfloat16, dev)), x,
             f"one rank all_reduce {count}")
        same(comm.all_gather(poisoned(count, torch.bfloat16, dev), x.to(dev)), x,
             f"one rank all_gather {count}")
        same(comm.reduce_scatter(poisoned(count, torch.bfloat16, dev), x.to(dev)), x,
             f"one rank reduce_scatter {count}")
        t = x.to(dev)
        comm.all_reduce(t, t)  # (all_reduce(t) alone returns a new tensor, as vLLM's does)
        same(t, x, f"one rank all_reduce in place {count}")
        # a premultiplied sum of one input is that input scaled (a kernel)
        same(comm.all_reduce(x.to(dev), poisoned(count, torch.bfloat16, dev),
                             op=dmaccl.premul_sum(0.3)), premul_ref([x], 0.3),
             f"one rank all_reduce premul {count}")
        comm.all_reduce(t, t, op=dmaccl.premul_sum(torch.tensor([-3.0], dtype=torch.bfloat16,
                                                                device=dev)))
        same(t, premul_ref([x], -3.0), f"one rank all_reduce premul in place {count}")
    torch.cuda.synchronize()
    comm.destroy()


@pytest.mark.parametrize("policy", POLICIES)
def test_one_rank(policy):
    run_ranks(one_rank_body, 1, policy)


def graph_body(uid, rank, n, policy="default"):
    """Every collective method captured in one CUDA graph, at 16 KB (staged
    eagerly, direct in graphs) and 8 MB bf16, replayed four times on new
    inputs; every output poisoned before each replay and compared with the
    CPU reference."""
    import dmaccl

    dev = torch.device("cuda", rank % GPUS)
    torch.cuda.set_device(dev)
    comm = dmaccl.Communicator(unique_id=uid, rank=rank, world_size=n, device=dev,
                               cta_policy=policy)
    bf = torch.bfloat16
    for count in (8192, 1 << 22):
        blk = count // n
        sizes = [i + 1 for i in range(n)]          # V forms: rank i has i+1 rows of 8
        ins = [(rank + d) % 3 + 1 for d in range(n)]  # all_to_all_single splits, rows of 4
        outs = [(s_ + rank) % 3 + 1 for s_ in range(n)]
        x = torch.zeros(count, dtype=bf, device=dev)
        vrows = torch.zeros(sizes[rank], 8, dtype=bf, device=dev)
        vfull = torch.zeros(sum(sizes), 8, dtype=bf, device=dev)
        a2a_in = torch.zeros(sum(ins), 4, dtype=bf, device=dev)
        o = {"ar": torch.empty_like(x), "rs": torch.empty(blk, dtype=bf, device=dev),
             "ag": torch.empty(count * n, dtype=bf, device=dev), "bc": torch.empty_like(x),
             "agv": torch.empty(sum(sizes), 8, dtype=bf, device=dev),
             "rsv": torch.empty(sizes[rank], 8, dtype=bf, device=dev),
             "a2a": torch.empty(sum(outs), 4, dtype=bf, device=dev)}

        def issue():
            comm.all_reduce(x, o["ar"])
            comm.reduce_scatter(o["rs"], x[:blk * n])
            comm.all_gather(o["ag"], x)
            o["bc"].copy_(x)
            comm.broadcast(o["bc"], n - 1)
            comm.all_gatherv(o["agv"], vrows, sizes)
            comm.reduce_scatterv(o["rsv"], vfull, sizes)
            comm.all_to_all_single(o["a2a"], a2a_in, outs, ins)

        s = torch.cuda.Stream(dev)
        s.wait_stream(torch.cuda.current_stream(dev))
        with torch.cuda.stream(s):  # warm up outside the capture, as vLLM does
            issue()
        torch.cuda.current_stream(dev).wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            issue()
        for step in range(4):
            xs = inputs(20 + step, n, count, bf)
            vr = [v[:8 * sz].view(sz, 8) for v, sz in zip(inputs(40 + step, n, 8 * n, bf), sizes)]
            vf = [v.view(-1, 8) for v in inputs(50 + step, n, 8 * sum(sizes), bf)]
            aa = [v.view(-1, 4) for v in inputs(60 + step, n, 4 * 3 * n, bf)]
            x.copy_(xs[rank])
            vrows.copy_(vr[rank])
            vfull.copy_(vf[rank])
            a2a_in.copy_(aa[rank][:sum(ins)])
            for t in o.values():
                t.fill_(float("nan"))
            g.replay()
            torch.cuda.synchronize()
            tag = f"graph replay {step}, {count} elements"
            want = rank_sum(xs)
            same(o["ar"], want, f"{tag}: all_reduce")
            part = rank_sum([v[:blk * n] for v in xs])[rank * blk:(rank + 1) * blk]
            same(o["rs"], part, f"{tag}: reduce_scatter")
            same(o["ag"], torch.cat(xs), f"{tag}: all_gather")
            same(o["bc"], xs[n - 1], f"{tag}: broadcast")
            same(o["agv"], torch.cat(vr), f"{tag}: all_gatherv")
            off = sum(sizes[:rank])
            same(o["rsv"], rank_sum(vf)[off:off + sizes[rank]], f"{tag}: reduce_scatterv")
            want_a2a = []
            for src in range(n):
                sins = [(src + d) % 3 + 1 for d in range(n)]
                at = sum(sins[:rank])
                want_a2a.append(aa[src][at:at + sins[rank]])
            same(o["a2a"], torch.cat(want_a2a), f"{tag}: all_to_all_single")
        del g
    comm.destroy()


@pytest.mark.parametrize("policy", POLICIES)
def test_cuda_graph_capture_and_replay(policy):
    run_ranks(graph_body, 2, policy)


def p2p_body(uid, rank, n):
    """send/recv on GPUs: a pipeline, a ring both ways in one batch (8 KB and
    8 MB: staged and direct), and the ring captured in a CUDA graph."""
    import dmaccl

    dev = torch.device("cuda", rank % GPUS)
    torch.cuda.set_device(dev)
    comm = dmaccl.Communicator(unique_id=uid, rank=rank, world_size=n, device=dev)
    nxt, prv = (rank + 1) % n, (rank - 1) % n
    for count in (4096, 1 << 22):
        xs = inputs(count % 89, n, count, torch.bfloat16)
        got = poisoned(count, torch.bfloat16, dev)
        if rank > 0:
            comm.recv(got, prv)
            torch.cuda.synchronize()
            same(got, xs[prv], f"pipeline {count}")
        if rank < n - 1:
            comm.send(xs[rank].to(dev), nxt)
        a = poisoned(count, torch.bfloat16, dev)
        mine = xs[rank].to(dev)
        with dmaccl.group():
            comm.send(mine, nxt)
            comm.recv(a, prv)
        torch.cuda.synchronize()
        same(a, xs[prv], f"ring {count}")
    count = 4096
    static_out = poisoned(count, torch.bfloat16, dev)
    static_in = torch.zeros(count, dtype=torch.bfloat16, device=dev)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        with dmaccl.group():
            comm.send(static_in, nxt)
            comm.recv(static_out, prv)
    for step in range(3):
        xs = inputs(40 + step, n, count, torch.bfloat16)
        static_in.copy_(xs[rank])
        static_out.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        same(static_out, xs[prv], f"graph replay {step}: send/recv")
    del g
    comm.destroy()


def test_send_recv_and_graphs():
    run_ranks(p2p_body, 2)


def backend_body(uid, rank, n, port):
    import torch.distributed as dist

    import dmaccl.torch_backend  # noqa: F401

    dev = torch.device("cuda", rank % GPUS)
    torch.cuda.set_device(dev)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("cpu:gloo,cuda:dmaccl", rank=rank, world_size=n)
    xs = inputs(30, n, 1000 * n, torch.float32)
    x = xs[rank].to(dev)
    dist.all_reduce(x)
    same(x, rank_sum(xs), "dist.all_reduce")
    out = poisoned(1000 * n * n, torch.float32, dev)
    dist.all_gather_into_tensor(out, xs[rank].to(dev))
    same(out, torch.cat(xs), "dist.all_gather_into_tensor")
    rs = poisoned(1000, torch.float32, dev)
    dist.reduce_scatter_tensor(rs, xs[rank].to(dev))
    same(rs, rank_sum(xs)[1000 * rank:1000 * (rank + 1)], "dist.reduce_scatter_tensor")
    a = poisoned(1000 * n, torch.float32, dev)
    w = dist.all_to_all_single(a, xs[rank].to(dev), async_op=True)
    w.wait()
    same(a, torch.cat([xs[s][1000 * rank:1000 * (rank + 1)] for s in range(n)]),
         "dist.all_to_all_single")
    # functional collectives and DTensor, what torch's tensor parallelism calls
    import torch.distributed._functional_collectives as funcol
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard

    world = dist.group.WORLD
    same(funcol.wait_tensor(funcol.all_reduce(xs[rank].to(dev), "sum", world)), rank_sum(xs),
         "funcol.all_reduce")
    ag = getattr(funcol, "all_gather_single", None) or funcol.all_gather_tensor
    same(funcol.wait_tensor(ag(xs[rank].to(dev), 0, world)), torch.cat(xs), "funcol all-gather")
    mesh = init_device_mesh("cuda", (n,))
    p = DTensor.from_local(xs[rank].to(dev), mesh, [Partial()])
    same(p.redistribute(mesh, [Replicate()]).to_local(), rank_sum(xs),
         "DTensor Partial -> Replicate")
    same(p.redistribute(mesh, [Shard(0)]).to_local(),
         rank_sum(xs)[1000 * rank:1000 * (rank + 1)], "DTensor Partial -> Shard(0)")
    # ... all of it on dmaccl's CUDA communicator (gloo runs some CUDA ops too)
    import dmaccl.torch_backend as tb

    ours = world if isinstance(world, tb.PythonProcessGroupDmaccl) else world._get_backend(dev)
    assert isinstance(ours, tb._Dmaccl) and any(k >= 0 for k in ours._comms), ours
    dist.barrier()
    dist.destroy_process_group()


def test_torch_backend_cuda():
    pytest.importorskip("dmaccl.torch_backend", reason="the backend needs torch.distributed",
                        exc_type=ImportError)
    run_ranks(backend_body, 2, free_port())


def test_init_all_one_process():
    import dmaccl

    n = 2
    devs = [r % GPUS for r in range(n)]
    comms = dmaccl.Communicator.init_all(devs)
    xs = inputs(40, n, 1 << 16, torch.bfloat16)
    ins = [xs[r].to(f"cuda:{devs[r]}") for r in range(n)]
    outs = [poisoned(1 << 16, torch.bfloat16, f"cuda:{devs[r]}") for r in range(n)]
    streams = [torch.cuda.current_stream(d) for d in devs]
    with dmaccl.group():
        for r in range(n):
            comms[r].all_reduce(ins[r], outs[r], stream=streams[r])
    for r in range(n):
        torch.cuda.synchronize(devs[r])
        same(outs[r], rank_sum(xs), f"init_all rank {r}")
    for c in comms:
        c.destroy()
