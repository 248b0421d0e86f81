"""Tensors and arrays as the C library sees them: address, bytes, element type.

Accepts torch tensors (GPU, or CPU for the host executor) and numpy arrays
(host executor). Types with a dmaccl number (NCCL's numbers) are passed as
that type; any other type (bool, int16, complex, ...) can still be moved,
as bytes, by the collectives that do no arithmetic.
"""

import sys

# NCCL's numbers (include/dmaccl.h)
INT8, UINT8, INT32, UINT32, INT64, UINT64 = 0, 1, 2, 3, 4, 5
FLOAT16, FLOAT32, FLOAT64, BFLOAT16, FLOAT8E4M3, FLOAT8E5M2 = 6, 7, 8, 9, 10, 11
TYPE_NAMES = {
    INT8: "int8", UINT8: "uint8", INT32: "int32", UINT32: "uint32", INT64: "int64",
    UINT64: "uint64", FLOAT16: "float16", FLOAT32: "float32", FLOAT64: "float64",
    BFLOAT16: "bfloat16", FLOAT8E4M3: "float8_e4m3fn", FLOAT8E5M2: "float8_e5m2",
}
_BY_NAME = {v: k for k, v in TYPE_NAMES.items()}
_torch_map = None


def torch_type(dtype):
    """The dmaccl number of a torch dtype, or None."""
    global _torch_map
    if _torch_map is None:
        torch = sys.modules["torch"]
        _torch_map = {getattr(torch, n): v for n, v in _BY_NAME.items() if hasattr(torch, n)}
    return _torch_map.get(dtype)


class Buf:
    """One tensor or array as the library sees it."""

    __slots__ = ("obj", "name", "ptr", "nbytes", "numel", "itemsize", "type", "dtype", "device",
                 "rows")

    def __repr__(self):
        return f"<{self.name}: {self.dtype}, {self.numel} elements, device {self.device}>"


def describe(obj, name, writable=False):
    """A Buf for obj (a torch tensor or numpy array); TypeError/ValueError naming it.

    device: the CUDA device index, or -1 for host memory. rows: the size of
    the first dimension (1 for a 0-d tensor)."""
    b = Buf()
    b.obj, b.name = obj, name
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.Tensor):
        # (the cheapest accessors: this runs twice per call, and device.type
        # alone costs more than all the rest)
        cuda = obj.is_cuda
        if not (cuda or obj.is_cpu):
            raise ValueError(f"{name} is on {obj.device}; dmaccl takes CUDA or CPU tensors")
        if not obj.is_contiguous():
            raise ValueError(f"{name} must be contiguous (call .contiguous() first)")
        b.ptr = obj.data_ptr()
        b.numel = obj.numel()
        b.itemsize = obj.element_size()
        b.dtype = dtype = obj.dtype
        b.type = _torch_map.get(dtype) if _torch_map is not None else torch_type(dtype)
        b.device = obj.get_device() if cuda else -1
        b.rows = obj.shape[0] if obj.dim() else 1
    else:
        np = sys.modules.get("numpy")
        if np is None or not isinstance(obj, np.ndarray):
            raise TypeError(f"{name} must be a torch.Tensor or numpy.ndarray, not "
                            f"{type(obj).__name__}")
        if not obj.flags.c_contiguous:
            raise ValueError(f"{name} must be C-contiguous (numpy.ascontiguousarray)")
        if writable and not obj.flags.writeable:
            raise ValueError(f"{name} is read-only")
        b.ptr = obj.ctypes.data
        b.numel = obj.size
        b.itemsize = obj.itemsize
        b.type = _BY_NAME.get(obj.dtype.name)
        b.dtype = obj.dtype
        b.device = -1
        b.rows = obj.shape[0] if obj.ndim else 1
    b.nbytes = b.numel * b.itemsize
    return b


def common_type(bufs, reduces, what):
    """(type, scale) for a call on bufs, which must share one dtype: counts
    are multiplied by scale (a dtype without a dmaccl number moves as bytes)."""
    first = bufs[0]
    for b in bufs[1:]:
        if b.dtype != first.dtype:
            raise TypeError(f"{what}: {b.name} is {b.dtype} but {first.name} is {first.dtype}; "
                            "dmaccl does not convert types")
    if first.type is not None:
        return first.type, 1
    if reduces:
        raise TypeError(f"{what}: dmaccl cannot reduce {first.dtype} (it reduces "
                        + ", ".join(TYPE_NAMES.values()) + ")")
    return UINT8, first.itemsize
