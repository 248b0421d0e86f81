"""Time per call of dmaccl's Python communicator against torch.distributed's
NCCL, in the same run: eager and inside a CUDA graph, AllReduce, AllGather
and a Send/Recv ring (send to the next rank, receive from the previous, in
one group: batch_isend_irecv for NCCL), 8 KB to 8 MB (the decode region).

    python3 bench/comm_latency.py [-n RANKS] [--sizes 8K,64K,...] [--dtype bf16]

One process per GPU (ranks share GPUs when there are fewer; NCCL then
refuses and only dmaccl rows are printed). Columns: device time per call
(CUDA events around `iters` back-to-back calls), and the host time a call
takes to return (the Python and library overhead a CPU-bound decode loop
pays). Rank 0 prints the table and, with -J, writes JSON.

With --gap-us G, every call in the graph follows a kernel that spins for
about G us (torch.cuda._sleep), as a collective of a decode step follows a
GEMM: the ranks then enter each call together and nothing of one call
overlaps the next, so the graph column is a call's latency (the time the
same graph of sleeps alone takes is subtracted), not the throughput of
calls back to back. `allreduce_ip` is dmaccl's in-place form (torch's
all_reduce, which the NCCL column always is).
"""

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * mult[s[-1].upper()] if s[-1].upper() in mult else int(s)


def timed(fn, iters, torch):
    """(device us per call, host us per call) over iters back-to-back calls."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    host = (time.perf_counter() - t0) / iters * 1e6
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3 / iters, host


def graphed(fn, calls, replays, torch, gap=None):
    """Device us per call with `calls` calls captured in one graph, each
    after gap() when given."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            if gap:
                gap()
            fn()
    g.replay()
    dev, _ = timed(g.replay, replays, torch)
    del g
    return dev / calls


def sleeper(gap_us, torch):
    """A function queuing a kernel of about gap_us us, and the time per
    call of a graph of such kernels alone (to subtract)."""
    cycles = 1000
    for _ in range(4):  # calibrate: cycles per us of this GPU's _sleep
        t, _ = timed(lambda: torch.cuda._sleep(cycles), 20, torch)
        cycles = max(1000, int(cycles * gap_us / max(t, 1e-3)))
    fn = lambda: torch.cuda._sleep(cycles)  # noqa: E731
    return fn, graphed(lambda: None, 20, 20, torch, gap=fn)


def body(rank, n, args, port, q):
    import torch
    import torch.distributed as dist

    import dmaccl

    ngpu = torch.cuda.device_count()
    dev = torch.device("cuda", rank % ngpu)
    torch.cuda.set_device(dev)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("cpu:gloo,cuda:nccl", rank=rank, world_size=n, device_id=dev)
    nccl_ok = ngpu >= n
    comm = dmaccl.Communicator(group=dist.new_group(backend="gloo"), device=dev)
    dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[args.dtype]
    rows = []
    gap, gap_us = sleeper(args.gap_us, torch) if args.gap_us else (None, 0.0)
    for size in [parse_size(s) for s in args.sizes.split(",")]:
        count = size // torch.tensor([], dtype=dtype).element_size()
        x = torch.randn(count, device=dev).to(dtype)
        y = torch.empty_like(x)
        big = torch.empty(count * n, device=dev, dtype=dtype)
        nxt, prv = (rank + 1) % n, (rank - 1) % n

        def dm_ring():  # send to the next rank, receive from the previous, one group
            with dmaccl.group():
                comm.send(x, nxt)
                comm.recv(y, prv)

        def nc_ring():
            for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, x, nxt),
                                             dist.P2POp(dist.irecv, y, prv)]):
                w.wait()

        cases = {
            "allreduce": (lambda: comm.all_reduce(x, y),
                          lambda: dist.all_reduce(y)),
            "allreduce_ip": (lambda: comm.all_reduce(y, y),
                             lambda: dist.all_reduce(y)),
            "allgather": (lambda: comm.all_gather(big, x),
                          lambda: dist.all_gather_into_tensor(big, x)),
            "sendrecv": (dm_ring, nc_ring),
        }
        for coll, (dm, nc) in cases.items():
            if coll not in args.colls.split(","):
                continue
            row = {"coll": coll, "bytes": size, "gap_us": gap_us}
            for name, fn in (("dmaccl", dm), ("nccl", nc)):
                if name == "nccl" and not nccl_ok:
                    continue
                for _ in range(args.warmup):
                    fn()
                row[f"{name}_eager_us"], row[f"{name}_host_us"] = timed(fn, args.iters, torch)
                row[f"{name}_graph_us"] = graphed(fn, args.graph_calls, args.iters, torch,
                                                  gap) - gap_us
            rows.append(row)
    comm.destroy()
    dist.destroy_process_group()
    if rank == 0:
        q.put(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=2, help="ranks (processes)")
    ap.add_argument("--sizes", default="8K,64K,512K,1M,4M,8M")
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp32"])
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--graph-calls", type=int, default=10)
    ap.add_argument("--colls", default="allreduce,allreduce_ip,allgather,sendrecv",
                    help="cases to run, comma separated")
    ap.add_argument("--gap-us", type=float, default=0.0,
                    help="in graphs, a kernel of about this many us before each call: "
                         "the graph column is then a call's latency (the sleeps' time "
                         "subtracted)")
    ap.add_argument("-J", help="write the rows as JSON here")
    args = ap.parse_args()
    import multiprocessing as mp
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=body, args=(r, args.n, args, port, q)) for r in range(args.n)]
    for p in procs:
        p.start()
    rows = None
    deadline = time.time() + 600
    while rows is None:  # a rank that dies must not leave the others waiting
        try:
            rows = q.get(timeout=1)
        except Exception:
            dead = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
            if dead or time.time() > deadline:
                for p in procs:
                    p.kill()
                sys.exit(f"a rank failed (exit codes {dead}) or the run passed 600 s")
    for p in procs:
        p.join()
    print(f"{'coll':10} {'bytes':>8} | {'eager us':>17} {'ratio':>6} | {'graph us':>17} "
          f"{'ratio':>6} | {'host us/call':>15}")
    print(f"{'':10} {'':>8} | {'dmaccl':>8} {'nccl':>8} {'':>6} | {'dmaccl':>8} {'nccl':>8} "
          f"{'':>6} | {'dmaccl':>7} {'nccl':>7}")
    for r in rows:
        def g(k):
            return r.get(k, float("nan"))
        print(f"{r['coll']:10} {r['bytes']:>8} | {g('dmaccl_eager_us'):8.1f} "
              f"{g('nccl_eager_us'):8.1f} {g('nccl_eager_us') / g('dmaccl_eager_us'):6.2f} | "
              f"{g('dmaccl_graph_us'):8.1f} {g('nccl_graph_us'):8.1f} "
              f"{g('nccl_graph_us') / g('dmaccl_graph_us'):6.2f} | "
              f"{g('dmaccl_host_us'):7.1f} {g('nccl_host_us'):7.1f}")
    print("ratio: NCCL's time / dmaccl's (above 1: dmaccl faster)")
    if rows and rows[0]["gap_us"]:
        print(f"graph: each call after a {rows[0]['gap_us']:.1f} us kernel, which is subtracted "
              "(a call's latency)")
    if args.J:
        with open(args.J, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
