"""The torch.distributed backend "dmaccl" on CPU tensors (host executor),
checked against gloo in the same processes, and the Communicator built from
a gloo process group, as vLLM builds its communicator.

Both forms of the backend run: the c10d Backend subclass (torch 2.14 on) and
the whole Python ProcessGroup (the only one torch 2.11-2.13 allow; on a newer
torch the tests register it as "dmaccl_pg"). Mixed configs ("cpu:gloo,
cuda:dmaccl") must leave CPU tensors to gloo."""

import os

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")

tb = pytest.importorskip("dmaccl.torch_backend")

from ranks import free_port, run_ranks  # noqa: E402

ROUTES = ["backend", "process_group"]


def route_param(route):
    """Skips the Backend form where torch has no Python constructor for it."""
    if route == "backend" and not tb._python_backends_supported():
        pytest.skip(f"torch {torch.__version__}: c10d Backend has no Python constructor")


def backend_name(route):
    """The name to give init_process_group for this form, in a rank."""
    import dmaccl.torch_backend as tb

    if route == "process_group" and tb._python_backends_supported():
        if "DMACCL_PG" not in dist.Backend._plugins:  # the 2.11-2.13 form, on this torch
            dist.Backend.register_backend("dmaccl_pg", tb._create_process_group,
                                          devices=["cpu", "cuda"])
        return "dmaccl_pg"
    return "dmaccl"


def dmaccl_of(pg, device):
    """The dmaccl object serving device in pg: the group itself in the
    ProcessGroup form, else its backend for the device."""
    import dmaccl.torch_backend as tb

    if isinstance(pg, tb.PythonProcessGroupDmaccl):
        return pg
    b = pg._get_backend(torch.device(device))
    assert isinstance(b, tb.ProcessGroupDmaccl), type(b)
    return b


def backend_body(uid, rank, n, port, route):
    import dmaccl
    import dmaccl.torch_backend as tb  # registers "dmaccl"

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group(backend_name(route), rank=rank, world_size=n)
    assert isinstance(dist.group.WORLD, tb.PythonProcessGroupDmaccl) == (
        route == "process_group"), type(dist.group.WORLD)
    gloo = dist.new_group(backend="gloo")
    gen = torch.Generator().manual_seed(100 + rank)

    def rand(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=gen).mul_(4).to(dtype)

    def poisoned(*shape, dtype=torch.float32):
        return torch.full(shape, float("nan")).to(dtype) if dtype.is_floating_point \
            else torch.full(shape, -77, dtype=dtype)

    def same(a, b, what):
        assert torch.equal(a, b), f"{what}: {a} != {b}"

    for dtype in (torch.float32, torch.float64, torch.int64):
        for op in (dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.MIN, dist.ReduceOp.PRODUCT):
            x = rand(257, dtype=dtype) if dtype.is_floating_point else \
                torch.randint(-1000, 1000, (257,), generator=gen, dtype=dtype)
            y = x.clone()
            dist.all_reduce(x, op=op)
            dist.all_reduce(y, op=op, group=gloo)
            if dtype.is_floating_point and op in (dist.ReduceOp.SUM, dist.ReduceOp.PRODUCT) \
                    and n > 2:
                # gloo's order of operations is its own: compare within rounding
                torch.testing.assert_close(x, y)
            else:
                same(x, y, f"all_reduce {dtype} {op}")
    # bf16 Avg: float accumulation in rank order, one rounding (include/dmaccl.h)
    xs = [torch.randn(300, generator=torch.Generator().manual_seed(100 + r)).mul_(4)
          .to(torch.bfloat16) for r in range(n)]
    acc = xs[0].float()
    for v in xs[1:]:
        acc = acc + v.float()
    mine = xs[rank].clone()
    dist.all_reduce(mine, op=dist.ReduceOp.AVG)
    same(mine, (acc / n).to(torch.bfloat16), "all_reduce bf16 avg")
    # PREMUL_SUM (a float factor, and a one-element tensor of the data's
    # type): the bf16 sum in float times the factor, one rounding; where
    # torch does not show the factor to Python the call says so
    for factor in (0.375, torch.tensor([-1.5], dtype=torch.bfloat16)):
        f = float(factor)
        mine = xs[rank].clone()
        op = dist._make_nccl_premul_sum(factor)
        if getattr(op, "factor", None) is None:
            with pytest.raises(Exception, match="premul_sum"):
                dist.all_reduce(mine, op=op)
            break
        dist.all_reduce(mine, op=op)
        same(mine, (acc * f).to(torch.bfloat16), f"all_reduce bf16 premul_sum {f}")
        rs = poisoned(300 // n, dtype=torch.bfloat16)
        dist.reduce_scatter_tensor(rs, xs[rank][:300 // n * n].clone(), op=op)
        blk = 300 // n
        same(rs, (acc[rank * blk:(rank + 1) * blk] * f).to(torch.bfloat16),
             f"reduce_scatter_tensor bf16 premul_sum {f}")

    x = rand(96)
    out, ref = poisoned(96 * n), poisoned(96 * n)
    dist.all_gather_into_tensor(out, x)
    dist.all_gather_into_tensor(ref, x, group=gloo)
    same(out, ref, "all_gather_into_tensor")
    outs = [poisoned(5, 3) for _ in range(n)]
    refs = [poisoned(5, 3) for _ in range(n)]
    x = rand(5, 3)
    dist.all_gather(outs, x)
    dist.all_gather(refs, x, group=gloo)
    for a, b in zip(outs, refs):
        same(a, b, "all_gather")
    # reduce_scatter: gloo has none; the reference is all_reduce then a slice
    inp = torch.randint(-50, 50, (8 * n,), generator=gen, dtype=torch.int32)
    full = inp.clone()
    dist.all_reduce(full, group=gloo)
    got = poisoned(8, dtype=torch.int32)
    dist.reduce_scatter_tensor(got, inp)
    same(got, full[8 * rank:8 * (rank + 1)], "reduce_scatter_tensor")
    got_list = poisoned(8, dtype=torch.int32)
    dist.reduce_scatter(got_list, list(inp.chunk(n)))
    same(got_list, full[8 * rank:8 * (rank + 1)], "reduce_scatter")
    # all_to_all_single, equal and with splits; all_to_all
    x = rand(4 * n)
    a, b = poisoned(4 * n), poisoned(4 * n)
    dist.all_to_all_single(a, x)
    dist.all_to_all_single(b, x, group=gloo)
    same(a, b, "all_to_all_single")
    ins = [(rank + d) % 3 + 1 for d in range(n)]
    outs_sp = [(s + rank) % 3 + 1 for s in range(n)]
    x = rand(sum(ins), 2)
    a, b = poisoned(sum(outs_sp), 2), poisoned(sum(outs_sp), 2)
    dist.all_to_all_single(a, x, outs_sp, ins)
    dist.all_to_all_single(b, x, outs_sp, ins, group=gloo)
    same(a, b, "all_to_all_single with splits")
    xin = [rand(3) for _ in range(n)]
    aout = [poisoned(3) for _ in range(n)]
    dist.all_to_all(aout, xin)
    # torch 2.11's gloo has no all_to_all (list form): the reference is its all_to_all_single
    bflat = poisoned(3 * n)
    dist.all_to_all_single(bflat, torch.cat(xin), group=gloo)
    bout = list(bflat.chunk(n))
    for p, q in zip(aout, bout):
        same(p, q, "all_to_all")
    # rooted
    for root in range(n):
        t = rand(33)
        u = t.clone()
        dist.broadcast(t, root)
        dist.broadcast(u, root, group=gloo)
        same(t, u, "broadcast")
        t = rand(33)
        u = t.clone()
        dist.reduce(t, root)
        dist.reduce(u, root, group=gloo)
        if rank == root:
            torch.testing.assert_close(t, u)
        g = [poisoned(4) for _ in range(n)] if rank == root else None
        h = [poisoned(4) for _ in range(n)] if rank == root else None
        x = rand(4)
        dist.gather(x, g, root)
        dist.gather(x, h, root, group=gloo)
        if rank == root:
            for p, q in zip(g, h):
                same(p, q, "gather")
        sl = [rand(4) for _ in range(n)] if rank == root else None
        a, b = poisoned(4), poisoned(4)
        dist.scatter(a, sl, root)
        dist.scatter(b, sl, root, group=gloo)
        same(a, b, "scatter")
    # async work, coalescing, barrier
    x = rand(10)
    y = x.clone()
    w = dist.all_reduce(x, async_op=True)
    w.wait()
    dist.all_reduce(y, group=gloo)
    torch.testing.assert_close(x, y)
    p, q = rand(6), rand(7)
    p2, q2 = p.clone(), q.clone()
    with dist._coalescing_manager(async_ops=True) as cm:
        dist.all_reduce(p)
        dist.all_reduce(q)
    cm.wait()
    dist.all_reduce(p2, group=gloo)
    dist.all_reduce(q2, group=gloo)
    torch.testing.assert_close(p, p2)
    torch.testing.assert_close(q, q2)
    # list forms with a wrong list: refused before anything moves (as gloo
    # refuses them), every output left as it was
    x = rand(4)
    outs = [poisoned(4) for _ in range(n - 1)] + [poisoned(3)]
    keep = [o.clone() for o in outs]
    wrong = [
        (lambda: dist.all_gather(outs[:1], x), "output_tensor_list has 1 tensors"),
        (lambda: dist.all_gather(outs, x), f"output_tensor_list\\[{n - 1}\\] has 3 elements"),
        (lambda: dist.reduce_scatter(outs[0], [rand(3)] + [rand(4)] * (n - 1)),
         "input_list\\[0\\] has 3 elements"),
        (lambda: dist.all_to_all(outs[:1], [x]), "output_tensor_list has 1 tensors"),
    ]
    for call, word in wrong:
        with pytest.raises((ValueError, RuntimeError), match=word):
            call()
        for o, k in zip(outs, keep):
            assert torch.equal(o.view(torch.uint8), k.view(torch.uint8)), \
                "a refused list form wrote its output"
    # what gloo takes as it is: non-contiguous and channels_last tensors
    # (moved through a contiguous copy), complex reductions (their real
    # view), an in-place all_to_all_single (from a copy of the input).
    # Against references here: gloo's broadcast of a [::2] view wrote a
    # contiguous prefix of its storage instead.
    def views(k):  # three layouts of known values k * 1000 + i
        return [(torch.arange(12.) + k * 1000).reshape(4, 3).t(),
                (torch.arange(120.) + k * 1000).reshape(2, 3, 4, 5).to(
                    memory_format=torch.channels_last),
                (torch.arange(8.) + k * 1000)[::2]]
    for i in range(3):
        a = views(rank)[i]
        dist.all_reduce(a)
        same(a, sum(views(r)[i] for r in range(n)), f"all_reduce of layout {i}")
        a = views(rank)[i]
        dist.broadcast(a, n - 1)
        same(a, views(n - 1)[i], f"broadcast of layout {i}")
    c = torch.complex(rand(6), rand(6))
    d = c.clone()
    dist.reduce(c, 0)
    dist.reduce(d, 0, group=gloo)
    if rank == 0:  # (gloo leaves partial sums in a non-root's tensor; its order of sums
        torch.testing.assert_close(c, d)  # is not dmaccl's rank order: close, not equal)
    o, q = torch.zeros(3, dtype=torch.complex64), torch.zeros(3, dtype=torch.complex64)
    rs = torch.complex(rand(3 * n), rand(3 * n))
    dist.reduce_scatter_tensor(o, rs)
    dist.reduce_scatter_tensor(q, rs.clone(), group=gloo)
    torch.testing.assert_close(o, q)
    z = rand(4 * n)
    w = z.clone()
    dist.all_to_all_single(z, z)
    dist.all_to_all_single(w, w.clone(), group=gloo)
    same(z, w, "all_to_all_single in place")
    dist.barrier()
    # point to point: a pipeline with send/recv, then a ring in batch_isend_irecv
    nxt, prv = (rank + 1) % n, (rank - 1) % n
    torch.manual_seed(500 + rank)
    mine = torch.randn(33)
    torch.manual_seed(500 + prv)
    theirs = torch.randn(33)
    got = poisoned(33)
    if rank > 0:
        dist.recv(got, prv)
        same(got, theirs, "recv")
    if rank < n - 1:
        dist.send(mine, nxt)
    a, b = poisoned(33), poisoned(33)
    reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, nxt),
                                   dist.P2POp(dist.irecv, a, prv)])
    for r in reqs:
        r.wait()
    same(a, theirs, "batch_isend_irecv")
    # all of it ran on dmaccl's host communicator, not on gloo
    assert list(dmaccl_of(dist.group.WORLD, "cpu")._comms) == [-1]

    # vLLM's way: a Communicator over a gloo group (rank 0's id broadcast on it)
    comm = dmaccl.Communicator(group=gloo, executor="host")
    x = rand(50)
    y = comm.all_reduce(x)
    z = x.clone()
    dist.all_reduce(z, group=gloo)
    torch.testing.assert_close(y, z)
    comm.destroy()
    dist.destroy_process_group()


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("n", [2, 3])
def test_backend_against_gloo(n, route):
    route_param(route)
    run_ranks(backend_body, n, free_port(), route)


def mixed_body(uid, rank, n, port, route, config):
    """CPU tensors in a group that maps cpu to gloo go to gloo; dmaccl makes
    no communicator for them."""
    import dmaccl.torch_backend  # noqa: F401 (registers "dmaccl")

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    config = config.replace("dmaccl", backend_name(route))
    dist.init_process_group(config, rank=rank, world_size=n)
    assert dist.get_backend() == config, dist.get_backend()
    gloo = dist.new_group(backend="gloo")
    gen = torch.Generator().manual_seed(300 + rank)
    x = torch.randn(65, generator=gen)
    y = x.clone()
    dist.all_reduce(x)
    dist.all_reduce(y, group=gloo)
    assert torch.equal(x, y)
    out, ref = torch.empty(65 * n), torch.empty(65 * n)
    dist.all_gather_into_tensor(out, x)
    dist.all_gather_into_tensor(ref, x, group=gloo)
    assert torch.equal(out, ref)
    t = torch.full((9,), float(rank))
    dist.broadcast(t, 1)
    assert torch.equal(t, torch.full((9,), 1.0))
    p, q = torch.randn(6, generator=gen), torch.randn(7, generator=gen)
    p2, q2 = p.clone(), q.clone()
    with dist._coalescing_manager(async_ops=True) as cm:
        dist.all_reduce(p)
        dist.all_reduce(q)
    cm.wait()
    dist.all_reduce(p2, group=gloo)
    dist.all_reduce(q2, group=gloo)
    assert torch.equal(p, p2) and torch.equal(q, q2)
    w = dist.all_reduce(x, async_op=True)
    w.wait()
    objs = [None] * n
    dist.all_gather_object(objs, {"rank": rank})
    assert objs == [{"rank": r} for r in range(n)], objs
    got = torch.zeros(5)
    if rank == 0:
        dist.send(torch.arange(5.0), 1)
    elif rank == 1:
        dist.recv(got, 0)
        assert torch.equal(got, torch.arange(5.0))
    dist.barrier()
    assert dmaccl_of(dist.group.WORLD, "cuda")._comms == {}
    dist.destroy_process_group()


@pytest.mark.parametrize("config", ["cpu:gloo,cuda:dmaccl", "cuda:dmaccl,cpu:gloo"])
@pytest.mark.parametrize("route", ROUTES)
def test_mixed_cpu_on_gloo(route, config):
    route_param(route)
    run_ranks(mixed_body, 2, free_port(), route, config)


def funcol_body(uid, rank, n, port, route):
    """PyTorch's functional collectives (what DTensor and torch.compile
    call), eager and compiled, DTensor redistributions and a tensor-parallel
    MLP on the dmaccl group, each result compared exactly with gloo's, with
    the tensor it was cut from or with the module unsharded."""
    import torch.distributed._functional_collectives as funcol
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor

    import dmaccl.torch_backend  # noqa: F401 (registers "dmaccl")

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group(backend_name(route), rank=rank, world_size=n)
    world = dist.group.WORLD
    gloo = dist.new_group(backend="gloo")
    gen = torch.Generator().manual_seed(500 + rank)

    def ints(*shape):  # integers in float: every sum exact, in any order
        return torch.randint(-1000, 1000, shape, generator=gen).to(torch.float32)

    def gathered(x):
        out = [torch.empty_like(x) for _ in range(n)]
        dist.all_gather(out, x, group=gloo)
        return torch.cat(out)

    x = ints(24)
    ref = x.clone()
    dist.all_reduce(ref, group=gloo)
    assert torch.equal(funcol.wait_tensor(funcol.all_reduce(x, "sum", world)), ref)
    ag = getattr(funcol, "all_gather_single", None) or funcol.all_gather_tensor
    assert torch.equal(funcol.wait_tensor(ag(x, 0, world)), gathered(x))
    rs = getattr(funcol, "reduce_scatter_single", None) or funcol.reduce_scatter_tensor
    big = ints(8 * n)
    whole = big.clone()
    dist.all_reduce(whole, group=gloo)
    got = funcol.wait_tensor(rs(big, "sum", 0, world))
    assert torch.equal(got, whole[8 * rank:8 * (rank + 1)])
    # uneven splits, not symmetric (a swap of the two lists would show):
    # rank i sends rank j (2i + j) % 3 + 1 elements
    send_split = [(2 * rank + j) % 3 + 1 for j in range(n)]
    recv_split = [(2 * i + rank) % 3 + 1 for i in range(n)]
    src = ints(sum(send_split))
    got = funcol.wait_tensor(funcol.all_to_all_single(src, recv_split, send_split, world))
    ref = torch.empty(sum(recv_split))
    dist.all_to_all_single(ref, src, recv_split, send_split, group=gloo)
    assert torch.equal(got, ref)
    b = ints(10)
    ref = b.clone()
    dist.broadcast(ref, 1, group=gloo)
    assert torch.equal(funcol.wait_tensor(funcol.broadcast(b, 1, world)), ref)

    # the same calls traced by torch.compile into one graph (aot_eager: no
    # code generated), against the eager calls
    def twice(t):
        return ag(funcol.all_reduce(t * 2, "sum", world) + 1, 0, world)

    compiled = torch.compile(twice, backend="aot_eager", fullgraph=True)
    assert torch.equal(compiled(x), twice(x))

    # DTensor on a mesh over the dmaccl group: shards gathered (AllGather),
    # partial sums made whole (AllReduce) and scattered (ReduceScatter)
    mesh = init_device_mesh("cpu", (n,))
    torch.manual_seed(7)  # the same tensor on every rank
    t = torch.randint(-50, 50, (4 * n, 6)).to(torch.float32)
    d = distribute_tensor(t, mesh, [Shard(0)])
    assert torch.equal(d.to_local(), t[4 * rank:4 * (rank + 1)])
    assert torch.equal(d.redistribute(mesh, [Replicate()]).to_local(), t)
    part = ints(4 * n, 6)
    total = part.clone()
    dist.all_reduce(total, group=gloo)
    p = DTensor.from_local(part, mesh, [Partial()])
    assert torch.equal(p.redistribute(mesh, [Replicate()]).to_local(), total)
    assert torch.equal(p.redistribute(mesh, [Shard(0)]).to_local(),
                       total[4 * rank:4 * (rank + 1)])
    # tensor parallelism as torch writes it: a column- then a row-parallel
    # Linear (the second's partial sums made whole on the group), against
    # the same module unsharded; small integers make every sum exact
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                                   parallelize_module)

    torch.manual_seed(11)  # the same module and input on every rank
    mlp = torch.nn.Sequential(torch.nn.Linear(8, 4 * n, bias=False), torch.nn.ReLU(),
                              torch.nn.Linear(4 * n, 8, bias=False))
    with torch.no_grad():
        for m in (mlp[0], mlp[2]):
            m.weight.copy_(torch.randint(-3, 4, m.weight.shape).to(torch.float32))
    inp = torch.randint(-3, 4, (5, 8)).to(torch.float32)
    want = mlp(inp)
    tp = parallelize_module(mlp, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
    assert torch.equal(tp(inp), want)
    # all of it ran on dmaccl's host communicator, not on gloo
    assert list(dmaccl_of(world, "cpu")._comms) == [-1]
    dist.destroy_process_group()


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("n", [2, 3])
def test_functional_collectives_and_dtensor(n, route):
    route_param(route)
    run_ranks(funcol_body, n, free_port(), route)


def mesh2d_body(uid, rank, n, port, route):
    """A 2 x 2 device mesh (data parallel x tensor parallel) over dmaccl:
    its row and column groups are dmaccl subgroups that functional
    collectives and DTensor find by name; sums checked exactly."""
    import torch.distributed._functional_collectives as funcol
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Partial, Replicate

    import dmaccl.torch_backend  # noqa: F401 (registers "dmaccl")

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group(backend_name(route), rank=rank, world_size=n)
    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    # every rank's inputs, the same on every rank, so each knows the sums
    torch.manual_seed(13)
    mine = [torch.randint(-1000, 1000, (6,)).to(torch.float32) for _ in range(n)]
    for dim in ("dp", "tp"):
        g = mesh[dim].get_group()
        peers = dist.get_process_group_ranks(g)
        assert rank in peers and len(peers) == 2, (dim, peers)
        want = mine[peers[0]] + mine[peers[1]]
        got = funcol.wait_tensor(funcol.all_reduce(mine[rank], "sum", g))
        assert torch.equal(got, want), (dim, got, want)
        x = mine[rank].clone()
        dist.all_reduce(x, group=g)
        assert torch.equal(x, want), (dim, x, want)
        # ... on a dmaccl subgroup, which made its own host communicator
        assert list(dmaccl_of(g, "cpu")._comms) == [-1], dim
    tp_peers = dist.get_process_group_ranks(mesh["tp"].get_group())
    p = DTensor.from_local(mine[rank].reshape(3, 2), mesh, [Replicate(), Partial()])
    got = p.redistribute(mesh, [Replicate(), Replicate()]).to_local()
    assert torch.equal(got, (mine[tp_peers[0]] + mine[tp_peers[1]]).reshape(3, 2))
    dist.destroy_process_group()


@pytest.mark.parametrize("route", ROUTES)
def test_two_dim_mesh(route):
    route_param(route)
    run_ranks(mesh2d_body, 4, free_port(), route)


def training_body(uid, rank, n, port, route):
    """Data parallelism as PyTorch users write it, on the dmaccl group:
    DistributedDataParallel (its bucket all-reduces and parameter
    broadcast) against one model trained on every rank's batch, and FSDP2's
    fully_shard (all-gathers of the parameters, reduce-scatter of the
    gradients) against the unsharded module's forward and gradients."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    import dmaccl.torch_backend  # noqa: F401 (registers "dmaccl")

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group(backend_name(route), rank=rank, world_size=n)

    def mlp():
        torch.manual_seed(0)  # the same start on every rank
        return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                   torch.nn.Linear(16, 4))

    model, ref = mlp(), mlp()
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.05)
    for step in range(3):
        batches = [torch.randn(5, 8, generator=torch.Generator().manual_seed(10 * step + r))
                   for r in range(n)]
        opt.zero_grad()
        ddp(batches[rank]).square().sum().backward()
        opt.step()
        ref_opt.zero_grad()  # DDP averages the ranks' gradients
        (sum(ref(b).square().sum() for b in batches) / n).backward()
        ref_opt.step()
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)

    mesh = init_device_mesh("cpu", (n,))
    sharded, ref = mlp(), mlp()
    fully_shard(sharded, mesh=mesh)
    x = torch.randn(6, 8, generator=torch.Generator().manual_seed(99))  # the same on every rank
    y, want = sharded(x), ref(x)
    torch.testing.assert_close(y, want, rtol=1e-6, atol=1e-6)
    y.square().sum().backward()
    want.square().sum().backward()  # every rank's gradient is this one: their mean too
    for p, q in zip(sharded.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad.full_tensor(), q.grad, rtol=1e-5, atol=1e-6)
    dist.destroy_process_group()


@pytest.mark.parametrize("route", ROUTES)
def test_ddp_and_fsdp(route):
    route_param(route)
    run_ranks(training_body, 2, free_port(), route)


def flags_body(uid, rank, n, port, route):
    """Every supports_* answer of the group and of its backend is a bool
    (torch 2.15's own properties recursed for a backend written in Python:
    split_group, new_group and init_process_group with a device_id ask
    supports_splitting), and split_group says the group cannot be split
    instead of recursing (torch 2.15: the backend does not support
    splitting; 2.11: no device is bound); the group still works after."""
    import sys

    import dmaccl.torch_backend  # noqa: F401 (registers "dmaccl")

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group(backend_name(route), rank=rank, world_size=n)
    sys.setrecursionlimit(400)  # a recursion fails fast
    pg = dist.group.WORLD
    for obj in (pg, dmaccl_of(pg, "cpu")):
        for name in dir(obj):
            if not name.lstrip("_").startswith("supports"):
                continue
            v = getattr(obj, name)
            v = v(torch.device("cpu")) if callable(v) else v
            assert isinstance(v, bool), (type(obj).__name__, name, v)
    if hasattr(dist, "split_group"):  # refused by torch, in its words (2.15's, then 2.11's)
        with pytest.raises(RuntimeError, match="support splitting|not safe to split"):
            dist.split_group(split_ranks=[[r] for r in range(n)])
    x = torch.full((5,), float(rank + 1))
    dist.all_reduce(x)
    assert torch.equal(x, torch.full((5,), float(n * (n + 1) // 2)))
    dist.destroy_process_group()


@pytest.mark.parametrize("route", ROUTES)
def test_supports_flags_and_split(route):
    route_param(route)
    run_ranks(flags_body, 2, free_port(), route)


def test_unique_id_names_agree_across_devices():
    """With one GPU per rank, rank 0's tensor is on cuda:0 and rank 1's on
    cuda:1: both must ask the store for the same unique id (a key named by
    the device index left rank 1 waiting for a key no one set)."""
    names = []
    for rank, device in ((0, 0), (1, 1), (2, 5)):
        b = tb._Dmaccl()
        b._setup(store=None, rank=rank, size=3)
        first = b._uid_name(device)
        b._comms[device] = object()  # as _comm keeps the communicator it made
        names.append((first, b._uid_name(device + 1), b._uid_name(-1)))
    assert len(set(names)) == 1, names
    first, second, cpu = names[0]
    assert len({first, second, cpu}) == 3
