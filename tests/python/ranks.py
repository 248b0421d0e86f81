"""Runs a test body in n processes (one per rank), as PyTorch and vLLM do.

run_ranks(body, n, *args) starts n spawned processes; process r calls
body(uid, r, n, *args) with one fresh dmaccl unique id. Any exception in a
rank fails the test with that rank's traceback; a rank that hangs fails it
after `timeout` seconds. Spawned, not forked: a rank touches CUDA only in
its own process.
"""

import multiprocessing as mp
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
try:  # the installed package (scripts/test installs it), else the source tree's
    import dmaccl  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")

import dmaccl  # noqa: E402


def _entry(body, uid, rank, n, args, q):
    sys.path.insert(0, HERE)
    try:
        body(uid, rank, n, *args)
        q.put((rank, None))
    except BaseException:
        q.put((rank, traceback.format_exc()))


def run_ranks(body, n, *args, timeout=180):
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    uid = dmaccl.get_unique_id()
    procs = [ctx.Process(target=_entry, args=(body, uid, r, n, args, q)) for r in range(n)]
    for p in procs:
        p.start()
    errors, seen = [], 0
    try:
        while seen < n:
            try:
                rank, err = q.get(timeout=timeout if not errors else 30)
            except Exception:
                errors.append(f"ranks did not finish within {timeout} s")
                break
            seen += 1
            if err:
                errors.append(f"rank {rank}:\n{err}")
    finally:
        for p in procs:
            p.join(timeout=10 if not errors else 1)
            if p.is_alive():
                p.kill()
    assert not errors, "\n".join(errors)


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
