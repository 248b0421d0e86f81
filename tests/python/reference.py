"""Expected results of the collectives, computed from every rank's data.

Data comes from data(seed, rank, count, dtype), so each rank regenerates its
peers' inputs and checks every element of its own outputs. Reductions follow
the library's documented arithmetic (include/dmaccl.h): rank order; float32
and float64 in their own precision; integers wrap; Avg divides the sum; a premultiplied
sum multiplies it.
"""

import numpy as np


def data(seed, rank, count, dtype):
    rs = np.random.RandomState(seed * 1000 + rank)
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rs.randint(info.min, info.max, size=count, dtype=dt)  # full range: sums wrap
    return (rs.standard_normal(count) * 4).astype(dt)


def reduce(arrays, op, scalar=None):
    """op "premul": the sum times scalar (in the arrays' type, integers wrapping)."""
    acc = arrays[0].copy()
    with np.errstate(over="ignore"):
        for x in arrays[1:]:
            if op in ("sum", "avg", "premul"):
                acc = (acc + x).astype(acc.dtype)
            elif op == "prod":
                acc = (acc * x).astype(acc.dtype)
            elif op == "max":
                acc = np.maximum(acc, x)
            elif op == "min":
                acc = np.minimum(acc, x)
        if op == "avg":
            acc = (acc / acc.dtype.type(len(arrays))).astype(acc.dtype)
        if op == "premul":
            acc = (acc * np.asarray(scalar, acc.dtype)).astype(acc.dtype)
    return acc


def poison(a):
    """Fills a (numpy) with a byte pattern no collective produces by chance."""
    a.view(np.uint8)[...] = 0xA5
    return a
