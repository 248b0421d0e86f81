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


def describe(obj, name, writable=False, what=None):
    """A Buf for obj (a torch tensor or numpy array); TypeError/ValueError
    naming it (and the call `what`, where given).

    device: the CUDA device index, or -1 for host memory. rows: the size of
    the first dimension (1 for a 0-d tensor). Refused: what would not travel
    as its values' bytes (numpy object arrays, byte orders other than the
    machine's, torch's lazy conjugate and negative views) and read-only
    arrays where `writable`."""
    b = Buf()
    where = f"{what}: " if what else ""
    b.obj, b.name = obj, name
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.Tensor):
        # (the cheapest accessors: this runs twice per call, and device.type
        # alone costs more than all the rest)
        cuda = obj.is_cuda
        if not (cuda or obj.is_cpu):
            raise ValueError(f"{where}{name} is on {obj.device}; dmaccl takes CUDA or CPU "
                             "tensors")
        if obj.layout != torch.strided:
            raise ValueError(f"{where}{name} is a {obj.layout} tensor; dmaccl takes dense "
                             "(strided) tensors")
        if not obj.is_contiguous():
            raise ValueError(f"{where}{name} must be contiguous (call .contiguous() first)")
        if obj.is_conj() or obj.is_neg():
            # a lazy view: its memory holds the values before the conjugation
            # or negation, which the library would move or reduce as they are
            raise ValueError(f"{where}{name} is a lazy {'conjugate' if obj.is_conj() else 'negative'}"
                             " view; call .resolve_conj() / .resolve_neg() first")
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
            raise TypeError(f"{where}{name} must be a torch.Tensor or numpy.ndarray, not "
                            f"{type(obj).__name__}")
        if obj.dtype.hasobject:
            raise TypeError(f"{where}{name} holds Python objects (dtype {obj.dtype}); dmaccl "
                            "moves values, not references")
        if not obj.dtype.isnative:
            raise TypeError(f"{where}{name} is in the other byte order (dtype {obj.dtype.str}); "
                            "convert it with .astype(dtype.newbyteorder('='))")
        if not obj.flags.c_contiguous:
            raise ValueError(f"{where}{name} must be C-contiguous (numpy.ascontiguousarray)")
        if writable and not obj.flags.writeable:
            raise ValueError(f"{where}{name} is read-only (the call writes it)")
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
            if type(b.obj).__module__.split(".")[0] != type(first.obj).__module__.split(".")[0]:
                raise TypeError(f"{what}: {b.name} is a {type(b.obj).__name__} and {first.name} "
                                f"a {type(first.obj).__name__}; one call takes torch tensors or "
                                "numpy arrays, not both")
            raise TypeError(f"{what}: {b.name} is {b.dtype} but {first.name} is {first.dtype}; "
                            "dmaccl does not convert types")
    if first.type is not None:
        return first.type, 1
    if reduces:
        raise TypeError(f"{what}: dmaccl cannot reduce {first.dtype} (it reduces "
                        + ", ".join(TYPE_NAMES.values()) + ")")
    return UINT8, first.itemsize


def is_number(value):
    """A real number that is not a bool: Python's, or a numpy scalar."""
    import numbers

    return isinstance(value, numbers.Real) and not isinstance(value, bool) and \
        type(value).__name__ != "bool_"


def scalar_bytes(value, type_, what):
    """One value of dmaccl type `type_` as its bytes (little-endian), from a
    number (Python's or numpy's): integers must fit the type; floats round
    to nearest even (bfloat16 from float32's bits, the 8-bit floats through
    torch); a value past the type's range is a ValueError."""
    import math
    import numbers
    import struct

    if not is_number(value):
        raise TypeError(f"{what}: the scalar must be a number or a one-element tensor, not "
                        f"{type(value).__name__}")
    if isinstance(value, numbers.Integral):
        value = int(value)
    else:
        value = float(value)
    ints = {INT8: ("b", -1 << 7, 1 << 7), UINT8: ("B", 0, 1 << 8), INT32: ("i", -1 << 31, 1 << 31),
            UINT32: ("I", 0, 1 << 32), INT64: ("q", -1 << 63, 1 << 63), UINT64: ("Q", 0, 1 << 64)}
    if type_ in ints:
        fmt, lo, hi = ints[type_]
        if not isinstance(value, int) or not lo <= value < hi:
            raise ValueError(f"{what}: the scalar {value!r} is not a {TYPE_NAMES[type_]} value")
        return struct.pack("<" + fmt, value)
    if type_ == FLOAT16:
        try:
            return struct.pack("<e", float(value))
        except OverflowError:
            raise ValueError(f"{what}: the scalar {value!r} overflows float16") from None
    if type_ == FLOAT32:
        try:
            return struct.pack("<f", float(value))
        except OverflowError:
            raise ValueError(f"{what}: the scalar {value!r} overflows float32") from None
    if type_ == FLOAT64:
        try:
            return struct.pack("<d", float(value))
        except OverflowError:
            raise ValueError(f"{what}: the scalar {value!r} overflows float64") from None
    if type_ == BFLOAT16:
        try:
            (u,) = struct.unpack("<I", struct.pack("<f", float(value)))
        except OverflowError:
            raise ValueError(f"{what}: the scalar {value!r} overflows bfloat16") from None
        if (u & 0x7FFFFFFF) > 0x7F800000:
            return struct.pack("<H", 0x7FC0)
        b = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF
        if (b & 0x7FFF) == 0x7F80 and (u & 0x7FFFFFFF) != 0x7F800000:
            raise ValueError(f"{what}: the scalar {value!r} overflows bfloat16")
        return struct.pack("<H", b)
    torch = sys.modules.get("torch")
    if torch is None or not hasattr(torch, TYPE_NAMES.get(type_, "")):
        raise TypeError(f"{what}: a {TYPE_NAMES.get(type_, type_)} scalar needs torch to "
                        "convert it; pass a one-element tensor of that type")
    # past the largest finite value by half an ulp or more: an overflow (torch
    # would saturate or give NaN), as for the wider floats above
    limit = {FLOAT8E4M3: 464.0, FLOAT8E5M2: 61440.0}[type_]
    try:
        f = float(value)
    except OverflowError:
        f = math.inf
    if abs(f) >= limit and not (math.isinf(f) and type_ == FLOAT8E5M2 and
                                not isinstance(value, numbers.Integral)):
        raise ValueError(f"{what}: the scalar {value!r} overflows {TYPE_NAMES[type_]}")
    t = torch.tensor([f], dtype=torch.float32).to(getattr(torch, TYPE_NAMES[type_]))
    return bytes([int(t.view(torch.uint8).item())])
