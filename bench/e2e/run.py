"""End-to-end LLM inference benchmark: tensor-parallel decode and prefill
(Llama-3 shapes) and expert-parallel MoE layers (Qwen3-30B-A3B and
DeepSeek-V3 shapes) on synthetic weights, with the collectives on NCCL
(torch.distributed), dmaccl (dmaccl.Communicator) and no communication at
all, eager and in CUDA graphs, in the same processes.

    python3 bench/e2e/run.py --quick                  # a few minutes on 2 GPUs
    python3 bench/e2e/run.py --models llama3-8b --modes dense --kv 1024
    python3 bench/e2e/run.py --device cpu             # functional check on gloo

One process per rank (rank r on GPU r % GPUs: with fewer GPUs than ranks,
ranks share GPUs and NCCL's rows are skipped). Writes e2e.json (one record
per row), e2e.txt (the table) and plots into --out (default $OUT if set,
else build/e2e). The method: bench/e2e/README.md.
"""

import argparse
import importlib.util
import os
import queue
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# NVLink multicast stays off: set before torch.distributed or NCCL starts
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
if importlib.util.find_spec("dmaccl") is None:  # not installed: the source tree's
    sys.path.insert(0, os.path.join(ROOT, "python"))

from dense import DENSE_MODELS, DENSE_VARIANTS  # noqa: E402
from moe import MOE_MODELS, MOE_VARIANTS  # noqa: E402
from results import plot, ratios, table, write  # noqa: E402

MODES = ("dense", "prefill", "moe")
BACKENDS = ("nccl", "nccl-graph", "nccl-ce", "nccl-ce-graph", "gloo", "dmaccl",
            "dmaccl-graph", "dmaccl-zero", "dmaccl-zero-graph", "none", "none-graph")
CPU_BACKENDS = ("gloo", "dmaccl", "dmaccl-zero", "none")

# Defaults per device; --quick replaces some (explicit options win over both).
DEFAULTS = {
    "cuda": dict(models="llama3-8b,llama3-70b,qwen3-30b-a3b,deepseek-v3",
                 backends="nccl,nccl-graph,dmaccl,dmaccl-graph,none,none-graph",
                 batches="1,8,32,64,128,256", kv="1024,4096", tokens="1,16,64,128,256,4096",
                 prefill="512,2048", steps=200, prefill_reps=10),
    "cpu": dict(models="tiny,tiny-moe", backends="gloo,dmaccl,none", batches="1,4", kv="64",
                tokens="1,4", prefill="32", steps=20, prefill_reps=5),
}
# sp-notify is asked for by name: on 2x H100 it did not pay (bench/e2e/README.md)
COMMON = dict(modes="dense,prefill,moe", dense_variants="ar,sp,sp-overlap",
              moe_variants=",".join(MOE_VARIANTS))
QUICK = {
    "cuda": dict(models="llama3-8b,qwen3-30b-a3b", batches="1,32,256", kv="1024",
                 tokens="1,128,4096", prefill="512", moe_variants="agrs,a2a,agrs-tbo"),
    "cpu": {},
}
SHARED_BACKENDS = "gloo,dmaccl,dmaccl-graph,none,none-graph"


def names(choices, what):
    """argparse type: a comma-separated list of names from `choices`."""
    def parse(s):
        items = list(dict.fromkeys(x.strip() for x in s.split(",") if x.strip()))
        if not items:
            raise argparse.ArgumentTypeError(f"empty list of {what}")
        bad = [x for x in items if x not in choices]
        if bad:
            raise argparse.ArgumentTypeError(
                f"unknown {what} {', '.join(bad)} (choose from {', '.join(choices)})")
        return items
    return parse


def counts(what):
    """argparse type: a comma-separated list of positive ints."""
    def parse(s):
        try:
            items = list(dict.fromkeys(int(x) for x in s.split(",") if x.strip()))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be comma-separated integers, "
                                             f"not {s!r}") from None
        if not items or min(items) < 1:
            raise argparse.ArgumentTypeError(f"{what} must be positive integers, not {s!r}")
        return items
    return parse


def positive(kind):
    def parse(s):
        try:
            v = kind(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {s!r}") from None
        if v <= 0:
            raise argparse.ArgumentTypeError(f"must be positive, not {s}")
        return v
    return parse


LISTS = {  # dest: (argparse type, help)
    "models": (names(tuple(DENSE_MODELS) + tuple(MOE_MODELS), "models"), "models to run"),
    "modes": (names(MODES, "modes"), "dense (decode), prefill, moe"),
    "dense_variants": (names(DENSE_VARIANTS, "dense variants"),
                       "decode and prefill variants: ar, sp, sp-overlap (default), "
                       "sp-notify"),
    "moe_variants": (names(MOE_VARIANTS, "MoE variants"),
                     "MoE dispatch/combine: agrs, a2a, agrs-tbo, a2a-tbo"),
    "backends": (names(BACKENDS, "backends"), "backends (-graph: in CUDA graphs)"),
    "batches": (counts("batches"), "decode batch sizes"),
    "kv": (counts("KV lengths"), "decode KV cache lengths (prefilled tokens)"),
    "tokens": (counts("tokens"), "MoE tokens per rank"),
    "prefill": (counts("prompt lengths"), "prefill prompt lengths"),
}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="Lists are comma-separated. Defaults depend on --device "
                                        "and --quick: bench/e2e/README.md.")
    for dest, (kind, help_) in LISTS.items():
        ap.add_argument("--" + dest.replace("_", "-"), type=kind, help=help_)
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                    help="cpu: tiny shapes on gloo and dmaccl's host executor, eager only")
    ap.add_argument("--ranks", type=positive(int), default=2, help="processes (TP = EP size)")
    ap.add_argument("--quick", action="store_true", help="the few-minute preset")
    ap.add_argument("--layers", type=positive(int), help="decoder layers (default per model)")
    ap.add_argument("--moe-layers", type=positive(int), help="MoE layers (default per model)")
    ap.add_argument("--steps", type=positive(int), help="timed steps per row")
    ap.add_argument("--warmup", type=positive(int), default=10, help="untimed steps first")
    ap.add_argument("--prefill-reps", type=positive(int), help="timed prefill passes per row")
    ap.add_argument("--interleave", action="store_true",
                    help="time the backends of a shape together, one step of each in turn "
                         "(rotating order), each step waited for: a slow period of the host "
                         "falls on every backend alike")
    ap.add_argument("--chunks", type=positive(int), default=2,
                    help="pieces of each collective in sp-overlap")
    ap.add_argument("--dtype", choices=("bf16", "fp32"), default="bf16")
    ap.add_argument("--tol", type=positive(float),
                    help="numerical check: max|x - ref| / max|ref| (default 2e-2 bf16, "
                         "1e-4 fp32)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--energy-min-s", type=positive(float), default=0.2,
                    help="energy is read over at least this many seconds of steps")
    ap.add_argument("--reserve-gb", type=float, default=8.0,
                    help="GPU memory left free when sizing the KV caches")
    ap.add_argument("--timeout", type=positive(float), default=180.0,
                    help="seconds without a finished row before the run is stopped")
    ap.add_argument("--out", help="output folder (default $OUT, else build/e2e)")
    args = ap.parse_args(argv)
    fill_defaults(args)
    check(ap, args)
    return args


def fill_defaults(args):
    """Options not given: from --quick's preset, else the device's defaults."""
    preset = QUICK[args.device] if args.quick else {}
    fallback = dict(COMMON, **DEFAULTS[args.device])
    if args.device == "cuda" and args.backends is None and args.ranks > gpu_count():
        fallback["backends"] = SHARED_BACKENDS  # NCCL cannot run: gloo is the reference
    for key, value in fallback.items():
        if getattr(args, key) is None:
            value = preset.get(key, value)
            setattr(args, key, LISTS[key][0](value) if key in LISTS else value)
    if args.tol is None:
        args.tol = 2e-2 if args.dtype == "bf16" else 1e-4
    if args.out is None:
        args.out = os.environ.get("OUT") or os.path.join(ROOT, "build", "e2e")


def check(ap, args):
    if args.ranks < 2:
        ap.error("--ranks must be at least 2 (one rank has nothing to communicate)")
    if args.device == "cuda" and gpu_count() == 0:
        ap.error("--device cuda: torch sees no GPU (--device cpu runs the functional check)")
    if args.device == "cpu":
        bad = [b for b in args.backends if b not in CPU_BACKENDS]
        if bad:
            ap.error(f"--device cpu runs {', '.join(CPU_BACKENDS)} (eager), not "
                     f"{', '.join(bad)}")
    for m in args.models:
        wanted = {"dense", "prefill"} if m in DENSE_MODELS else {"moe"}
        if not wanted & set(args.modes):
            ap.error(f"model {m} runs in --modes {' or '.join(sorted(wanted))}, not "
                     f"{','.join(args.modes)}")


def gpu_count():
    import torch

    return torch.cuda.device_count()


# --- the run --------------------------------------------------------------------------------
def main(argv=None):
    args = parse_args(argv)
    import multiprocessing as mp

    import worker

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=worker.main, args=(r, args.ranks, args, port, q))
             for r in range(args.ranks)]
    for p in procs:
        p.start()
    meta, rows, notes = {"args": vars(args)}, [], []
    last, failure = time.time(), None
    print(table([]), flush=True)
    while True:  # a rank that dies or hangs must not leave the others waiting
        try:
            kind, payload = q.get(timeout=1)
        except queue.Empty:
            dead = [(r, p.exitcode) for r, p in enumerate(procs) if p.exitcode is not None]
            if any(code != 0 for _, code in dead) or len(dead) == len(procs):
                failure = f"ranks exited early (rank, exit code): {dead}"
            elif time.time() - last > args.timeout:
                failure = f"no row finished in {args.timeout:.0f} s"
            if failure:
                break
            continue
        last = time.time()
        if kind == "meta":
            meta.update(payload)
        elif kind == "note":
            notes.append(payload)
            print(f"note: {payload}")
        elif kind == "row":
            rows.append(payload)
            print(table([payload]).splitlines()[-1], flush=True)
            write(args.out, meta, rows, notes)
        else:
            break
    if failure:
        for p in procs:
            p.kill()
    for p in procs:
        p.join()
    write(args.out, meta, rows, notes)
    print()
    print(table(rows))
    if meta.get("reference"):
        print()
        print(ratios(rows, meta["reference"]))
    print(f"\nrows: {os.path.join(args.out, 'e2e.json')}")
    if failure:
        sys.exit(f"run stopped: {failure} (rows so far are written)")
    plot(args.out, rows)
    near = sum(r.get("check") == "ok-exact" for r in rows)
    if near:
        print(f"{near} rows beyond --tol of the reference are within the bound from the exact "
              "(fp32-communication) result: ok-exact (bench/e2e/README.md, 'The numerical "
              "control')")
    failed = [r for r in rows if r.get("check") == "FAIL"]
    if failed:
        sys.exit(f"{len(failed)} rows failed the numerical check (tolerance {args.tol})")


if __name__ == "__main__":
    main()
