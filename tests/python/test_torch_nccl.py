"""PyTorch's own "nccl" backend (ProcessGroupNCCL) on dmaccl.

torch's libtorch_cuda calls NCCL's C API; dmaccl's libnccl.so.2 put first
in the process (LD_PRELOAD, set before the ranks' interpreters start)
answers those calls, so `init_process_group("nccl")` runs on dmaccl with no
change to the program (docs/nccl.md, "PyTorch's nccl backend"). Rank r uses
GPU r % GPUs: on a one-GPU machine the ranks share it, which NCCL itself
refuses, so the run also shows that dmaccl, not NCCL, answered.

Every collective torch's backend issues for these calls is compared
exactly with a reference computed from every rank's inputs (small integers,
so sums, products and averages of two ranks are exact in bf16 too), on
outputs filled with NaN first: eager, async, the list forms torch builds
from grouped Send/Recv (a rank's own block sent to itself), coalesced, on a
new group (a split of the eagerly made world communicator, or a fresh one
when the world is made lazily), and captured in a CUDA graph and replayed
with new inputs; PREMUL_SUM with a float and a tensor factor; the same
with torch's non-blocking communicators. Then DDP and FSDP2 (also with a
custom gradient divide factor: PREMUL_SUM) train against an unsharded
reference, and split_group.
Skipped without a GPU or a CUDA build of torch.
"""

import os

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no GPU: the GPU tests are skipped", allow_module_level=True)

from ranks import free_port, run_ranks  # noqa: E402

import dmaccl  # noqa: E402

GPUS = torch.cuda.device_count()


def ints(seed, r, count, dtype):
    g = torch.Generator().manual_seed(seed * 100 + r)
    return torch.randint(-8, 9, (count,), generator=g).to(dtype)


def exact(got, want, what, errors):
    got = got.cpu()
    if got.dtype != want.dtype or got.shape != want.shape:
        errors.append(f"{what}: got {got.dtype} {tuple(got.shape)}, "
                      f"want {want.dtype} {tuple(want.shape)}")
    elif not torch.equal(got.view(torch.uint8), want.view(torch.uint8)):
        bad = (got.float() != want.float()).nonzero()
        errors.append(f"{what}: {bad.numel()} elements differ, first at {bad[0].tolist()}"
                      if bad.numel() else f"{what}: bits differ (NaN?)")


def pg_body(uid, rank, n, port, eager, lib):
    import torch.distributed as dist

    maps = open("/proc/self/maps").read()
    assert os.path.realpath(lib) in maps, "dmaccl's libnccl.so.2 is not loaded"
    dev = torch.device("cuda", rank % GPUS)
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=n, device_id=dev if eager else None)
    errors = []

    def step(what, fn):
        # after a failure the ranks may no longer call alike: stop there
        # (the destroy still runs), rather than wait in a mismatched call
        if errors and what != "destroy_process_group":
            return
        try:
            fn()
        except Exception as e:  # noqa: BLE001  (each failure is listed, then asserted)
            errors.append(f"{what}: {type(e).__name__}: {e}")
            print(f"rank {rank}: {errors[-1]}", flush=True)

    def nan(count, dtype):
        return torch.full((count,), float("nan"), device=dev).to(dtype)

    ops = {dist.ReduceOp.SUM: lambda xs: sum(x.double() for x in xs),
           dist.ReduceOp.AVG: lambda xs: sum(x.double() for x in xs) / len(xs),
           dist.ReduceOp.MAX: lambda xs: torch.stack(xs).double().max(0).values,
           dist.ReduceOp.MIN: lambda xs: torch.stack(xs).double().min(0).values,
           dist.ReduceOp.PRODUCT: lambda xs: torch.stack(xs).double().prod(0)}
    for count in (1000, (1 << 20) + 3):
        for dtype in (torch.float32, torch.bfloat16, torch.int32):
            xs = [ints(count % 89, r, count, dtype) for r in range(n)]
            for op, ref in ops.items():
                if op == dist.ReduceOp.AVG and dtype == torch.int32:
                    continue

                def allreduce():
                    t = xs[rank].to(dev)
                    dist.all_reduce(t, op=op)
                    exact(t, ref(xs).to(dtype), f"all_reduce {op} {dtype} {count}", errors)
                step(f"all_reduce {op} {dtype} {count}", allreduce)

            def gathers():
                out = nan(count * n, dtype)
                dist.all_gather_into_tensor(out, xs[rank].to(dev))
                exact(out, torch.cat(xs), f"all_gather_into_tensor {dtype} {count}", errors)
                lst = [nan(count, dtype) for _ in range(n)]
                dist.all_gather(lst, xs[rank].to(dev))
                exact(torch.cat(lst), torch.cat(xs), f"all_gather {dtype} {count}", errors)
                blk = count // n
                rs = nan(blk, dtype)
                dist.reduce_scatter_tensor(rs, xs[rank][:blk * n].to(dev))
                want = sum(x[:blk * n].double() for x in xs)[rank * blk:(rank + 1) * blk]
                exact(rs, want.to(dtype), f"reduce_scatter_tensor {dtype} {count}", errors)
                for root in range(n):
                    t = xs[rank].to(dev) if rank == root else nan(count, dtype)
                    dist.broadcast(t, src=root)
                    exact(t, xs[root], f"broadcast root {root} {dtype} {count}", errors)
                    t = xs[rank].to(dev)
                    dist.reduce(t, dst=root)
                    if rank == root:
                        exact(t, ops[dist.ReduceOp.SUM](xs).to(dtype),
                              f"reduce root {root} {dtype} {count}", errors)
                a2a = nan(blk * n, dtype)
                dist.all_to_all_single(a2a, xs[rank][:blk * n].to(dev))
                want = torch.cat([x[rank * blk:(rank + 1) * blk] for x in xs])
                exact(a2a, want, f"all_to_all_single {dtype} {count}", errors)
            step(f"gathers {dtype} {count}", gathers)

    def premul():
        # PREMUL_SUM: a float factor (ncclScalarHostImmediate) and a
        # one-element tensor of the data's type (ncclScalarDevice), in
        # all_reduce and reduce_scatter_tensor (FSDP2's custom divide
        # factor). Not bfloat16: torch up to pytorch/pytorch#190747 passes
        # a float32 factor for it, of which NCCL (and dmaccl, NCCL's ABI)
        # reads the first two bytes as the bfloat16 scalar: 0 for 0.25
        # (pytorch/pytorch#190745); its tensor factor must be float32.
        for dtype in (torch.float32, torch.float16):
            count = 1000
            xs = [ints(5, r, count, dtype) for r in range(n)]
            # dmaccl scales the sum (exact here: small integers) once, in
            # float: the factor in the data's type times the float sum,
            # rounded to float, then to the type; 0.3 is no power of two, so
            # scaling each input first (NCCL's order) would differ
            for f, factor in ((0.3, 0.3), (-0.3, torch.tensor([-0.3], device=dev, dtype=dtype))):
                try:
                    op = dist._make_nccl_premul_sum(factor)
                except TypeError:  # an older torch's list of tensors
                    op = dist._make_nccl_premul_sum([factor])
                scale = torch.tensor(f, dtype=dtype).float()

                def scaled(xs_):
                    return (sum(x.float() for x in xs_) * scale).to(dtype)
                t = xs[rank].to(dev)
                dist.all_reduce(t, op=op)
                exact(t, scaled(xs), f"all_reduce premul {f} {dtype}", errors)
                blk = count // n
                rs = nan(blk, dtype)
                dist.reduce_scatter_tensor(rs, xs[rank][:blk * n].to(dev), op=op)
                want = scaled([x[:blk * n] for x in xs])[rank * blk:(rank + 1) * blk]
                exact(rs, want, f"reduce_scatter_tensor premul {f} {dtype}", errors)
    step("premul_sum", premul)

    def uneven():
        # rank s sends (s + d) % 3 rows of 4 to rank d: a rank may send nothing
        xs = [ints(7, r, 4 * 3 * n, torch.float32).view(-1, 4) for r in range(n)]
        ins = [(rank + d) % 3 for d in range(n)]
        outs = [(s + rank) % 3 for s in range(n)]
        got = nan(4 * sum(outs), torch.float32).view(-1, 4)
        dist.all_to_all_single(got, xs[rank][:sum(ins)].to(dev), outs, ins)
        want = []
        for s in range(n):
            o = sum((s + d) % 3 for d in range(rank))
            want.append(xs[s][o:o + (s + rank) % 3])
        exact(got, torch.cat(want), "all_to_all_single with splits", errors)
    step("all_to_all_single with splits", uneven)

    def p2p():
        xs = [ints(9, r, 4099, torch.bfloat16) for r in range(n)]
        nxt, prv = (rank + 1) % n, (rank - 1) % n
        got = nan(4099, torch.bfloat16)
        reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, xs[rank].to(dev), nxt),
                                       dist.P2POp(dist.irecv, got, prv)])
        for r in reqs:
            r.wait()
        exact(got, xs[prv], "batch_isend_irecv ring", errors)
        got = nan(4099, torch.bfloat16)
        if rank == 0:
            dist.send(xs[0].to(dev), dst=n - 1)
        elif rank == n - 1:
            dist.recv(got, src=0)
            exact(got, xs[0], "send / recv", errors)
    step("send / recv", p2p)

    def async_and_objects():
        xs = [ints(11, r, 1 << 16, torch.float32) for r in range(n)]
        t = xs[rank].to(dev)
        work = dist.all_reduce(t, async_op=True)
        work.wait()
        exact(t, sum(xs), "async all_reduce", errors)
        objs = [None] * n
        dist.all_gather_object(objs, {"rank": rank})
        if objs != [{"rank": r} for r in range(n)]:
            errors.append(f"all_gather_object: {objs}")
        dist.barrier()
    step("async, objects, barrier", async_and_objects)

    def groups():
        g = dist.new_group(list(range(n)))
        xs = [ints(13, r, 5000, torch.bfloat16) for r in range(n)]
        t = xs[rank].to(dev)
        dist.all_reduce(t, group=g)
        exact(t, sum(x.double() for x in xs).to(torch.bfloat16), "all_reduce on new_group",
              errors)
        for r in range(n):  # a group of one rank each, made on every rank
            one = dist.new_group([r])
            if r == rank:
                t = xs[rank].to(dev)
                dist.all_reduce(t, group=one)
                exact(t, xs[rank], "all_reduce on a group of one", errors)
        dist.destroy_process_group(g)
    step("new_group", groups)

    def list_forms():
        # the list forms torch builds from grouped Send/Recv (a rank's own
        # block to itself) or from its coalescing manager
        xs = [[ints(15, 10 * r + q, 777 + q, torch.float32) for q in range(n)] for r in range(n)]
        outs = [nan(777 + rank, torch.float32) for _ in range(n)]
        dist.all_to_all(outs, [x.to(dev) for x in xs[rank]])
        exact(torch.cat(outs), torch.cat([xs[q][rank] for q in range(n)]), "all_to_all (lists)",
              errors)
        for root in range(n):
            got = [nan(777, torch.float32) for _ in range(n)] if rank == root else None
            dist.gather(xs[rank][0].to(dev), got, dst=root)
            if rank == root:
                exact(torch.cat(got), torch.cat([xs[q][0] for q in range(n)]),
                      f"gather root {root}", errors)
            out = nan(777, torch.float32)  # (torch wants every block the output's size)
            dist.scatter(out, [x[:777].to(dev) for x in xs[root]] if rank == root else None,
                         src=root)
            exact(out, xs[root][rank][:777], f"scatter root {root}", errors)
        blocks = [[ints(16, 10 * r + q, 999, torch.bfloat16) for q in range(n)] for r in range(n)]
        out = nan(999, torch.bfloat16)
        dist.reduce_scatter(out, [b.to(dev) for b in blocks[rank]])
        exact(out, sum(blocks[r][rank].double() for r in range(n)).to(torch.bfloat16),
              "reduce_scatter (lists)", errors)
        ins = [ints(17, r, 3000, torch.float32) for r in range(n)]
        outs = [nan(3000 * n, torch.float32) for _ in range(3)]
        with dist._coalescing_manager(device=dev):
            for k in range(3):
                dist.all_gather_into_tensor(outs[k], (ins[rank] + k).to(dev))
        for k in range(3):
            exact(outs[k], torch.cat([x + k for x in ins]), f"coalesced all_gather {k}", errors)
    step("list forms and coalescing", list_forms)

    def graph():
        count = 8192
        x = nan(count, torch.bfloat16)
        out = nan(count * n, torch.bfloat16)
        side = torch.cuda.Stream(device=dev)
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm up outside the capture, as torch asks
            dist.all_reduce(x.clone())
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            dist.all_reduce(x)
            dist.all_gather_into_tensor(out, x)
        for it in range(3):
            xs = [ints(20 + it, r, count, torch.bfloat16) for r in range(n)]
            x.copy_(xs[rank].to(dev))
            out.fill_(float("nan"))
            g.replay()
            torch.cuda.synchronize()
            s = sum(v.double() for v in xs).to(torch.bfloat16)
            exact(x, s, f"graph replay {it}: all_reduce", errors)
            exact(out, torch.cat([s] * n), f"graph replay {it}: all_gather", errors)
        dist.barrier()
    step("CUDA graph", graph)

    step("synchronize", torch.cuda.synchronize)
    step("destroy_process_group", dist.destroy_process_group)
    assert not errors, f"rank {rank}:\n" + "\n".join(errors)


@pytest.mark.parametrize("mode", ["device_id", "lazy", "nonblocking"])
def test_torch_nccl_backend_on_dmaccl(mode, monkeypatch):
    """nonblocking: torch's TORCH_NCCL_USE_COMM_NONBLOCKING, whose init
    and split return at once and are polled with ncclCommGetAsyncError."""
    lib = dmaccl.nccl_library_path()
    monkeypatch.setenv("LD_PRELOAD", lib)
    if mode == "nonblocking":
        monkeypatch.setenv("TORCH_NCCL_USE_COMM_NONBLOCKING", "1")
    run_ranks(pg_body, 2, free_port(), mode != "lazy", lib, timeout=150)


def training_body(uid, rank, n, port, lib):
    """DistributedDataParallel (bucketed all-reduces, the parameters'
    broadcast) against one model trained on every rank's batch; FSDP2's
    fully_shard (all-gathers of the parameters, reduce-scatter of the
    gradients) against the unsharded module; split_group."""
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    assert os.path.realpath(lib) in open("/proc/self/maps").read()
    dev = torch.device("cuda", rank % GPUS)
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=n, device_id=dev)

    def mlp():
        torch.manual_seed(0)  # the same start on every rank
        return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                   torch.nn.Linear(16, 4)).to(dev)

    model, ref = mlp(), mlp()
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[dev])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.05)
    for step in range(3):
        batches = [torch.randn(5, 8, generator=torch.Generator().manual_seed(10 * step + r))
                   .to(dev) for r in range(n)]
        opt.zero_grad()
        ddp(batches[rank]).square().sum().backward()
        opt.step()
        ref_opt.zero_grad()  # DDP averages the ranks' gradients
        (sum(ref(b).square().sum() for b in batches) / n).backward()
        ref_opt.step()
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)

    mesh = init_device_mesh("cuda", (n,))
    sharded, ref = mlp(), mlp()
    fully_shard(sharded, mesh=mesh)
    xs = [torch.randn(6, 8, generator=torch.Generator().manual_seed(99 + r)).to(dev)
          for r in range(n)]  # each rank its own batch: the reduce-scatter must average
    y = sharded(xs[rank])
    torch.testing.assert_close(y, ref(xs[rank]), rtol=1e-6, atol=1e-6)
    y.square().sum().backward()
    (sum(ref(x).square().sum() for x in xs) / n).backward()  # the ranks' mean gradient
    for p, q in zip(sharded.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad.full_tensor(), q.grad, rtol=1e-5, atol=1e-6)
    # a divide factor other than the world size: the reduce-scatter's
    # PREMUL_SUM(1/4) (the ranks' gradient sum over 4)
    sharded, ref = mlp(), mlp()
    fully_shard(sharded, mesh=mesh)
    sharded.set_gradient_divide_factor(4.0)
    sharded(xs[rank]).square().sum().backward()
    (sum(ref(x).square().sum() for x in xs) / 4).backward()
    for p, q in zip(sharded.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad.full_tensor(), q.grad, rtol=1e-5, atol=1e-6)

    if hasattr(dist, "split_group"):  # a group per rank, split from the world's (a smoke test)
        mine = dist.split_group(split_ranks=[[r] for r in range(n)])
        t = torch.full((5,), float(rank + 1), device=dev)
        dist.all_reduce(t, group=mine)
        assert torch.equal(t.cpu(), torch.full((5,), float(rank + 1)))
    t = torch.full((5,), float(rank + 1), device=dev)
    dist.all_reduce(t)
    assert torch.equal(t.cpu(), torch.full((5,), float(n * (n + 1) // 2)))
    torch.cuda.synchronize()
    dist.destroy_process_group()


def test_torch_nccl_training_on_dmaccl(monkeypatch):
    lib = dmaccl.nccl_library_path()
    monkeypatch.setenv("LD_PRELOAD", lib)
    run_ranks(training_body, 2, free_port(), lib, timeout=150)
