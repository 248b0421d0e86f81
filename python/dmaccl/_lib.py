"""ctypes binding of libdmaccl: the library's C API, one prototype per call.

ctypes rather than a compiled extension: the package then loads the same
libdmaccl.so that C users link, needs no build against a Python or PyTorch
ABI, and a ctypes call costs about 0.6 us (docs/python.md), which a CUDA
graph replay does not pay at all. vLLM reaches NCCL the same way.
"""

import ctypes
import os
import pathlib
import threading

_HERE = pathlib.Path(__file__).resolve().parent

UNIQUE_ID_BYTES = 128


class UniqueIdStruct(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * UNIQUE_ID_BYTES)]


class ConfigStruct(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("magic", ctypes.c_uint),
        ("version", ctypes.c_uint),
        ("executor", ctypes.c_int),
        ("algorithm", ctypes.c_char_p),
        ("ctaPolicy", ctypes.c_int),
    ]


CONFIG_MAGIC = 0xD3ACC10F
CONFIG_UNDEF_INT = -(2**31)
EXECUTOR_DEFAULT, EXECUTOR_CUDA, EXECUTOR_HOST = 0, 1, 2
# dmacclCtaPolicy_t (NCCL's NCCL_CTA_POLICY_* numbers)
CTA_POLICIES = {"default": 0, "efficiency": 1, "zero": 2}


def cta_policy_value(cta_policy):
    """The config's ctaPolicy for a Python argument: None (DMACCL_CTA_POLICY,
    else default) or one of CTA_POLICIES' names; ValueError otherwise."""
    if cta_policy is None:
        return CONFIG_UNDEF_INT
    if isinstance(cta_policy, str) and cta_policy.lower() in CTA_POLICIES:
        return CTA_POLICIES[cta_policy.lower()]
    raise ValueError(f"cta_policy {cta_policy!r} is not one of "
                     f"{', '.join(repr(k) for k in CTA_POLICIES)} or None")

_c = ctypes
_p = _c.c_void_p
_sz = _c.c_size_t
_i = _c.c_int
_szp = _c.POINTER(_c.c_size_t)

# name: argument types (every call returns dmacclResult_t, an int)
_PROTOS = {
    "dmacclGetVersion": [_c.POINTER(_i)],
    "dmacclGetUniqueId": [_c.POINTER(UniqueIdStruct)],
    "dmacclCommInitRank": [_c.POINTER(_p), _i, UniqueIdStruct, _i, _c.POINTER(ConfigStruct)],
    "dmacclCommInitAll": [_c.POINTER(_p), _i, _c.POINTER(_i), _c.POINTER(ConfigStruct)],
    "dmacclCommSplit": [_p, _i, _i, _c.POINTER(_p), _c.POINTER(ConfigStruct)],
    "dmacclCommDestroy": [_p],
    "dmacclCommAbort": [_p],
    "dmacclCommCount": [_p, _c.POINTER(_i)],
    "dmacclCommUserRank": [_p, _c.POINTER(_i)],
    "dmacclCommCuDevice": [_p, _c.POINTER(_i)],
    "dmacclCommSynchronize": [_p],
    "dmacclCommGetAsyncError": [_p, _c.POINTER(_i)],
    "dmacclMemAlloc": [_p, _sz, _c.POINTER(_p)],
    "dmacclMemFree": [_p, _p],
    "dmacclCommRegister": [_p, _p, _sz, _c.POINTER(_p)],
    "dmacclCommDeregister": [_p, _p],
    "dmacclGroupStart": [],
    "dmacclGroupEnd": [],
    "dmacclGroupDrop": [],
    "dmacclAllGather": [_p, _p, _sz, _i, _p, _p],
    "dmacclAlltoAll": [_p, _p, _sz, _i, _p, _p],
    "dmacclAllReduce": [_p, _p, _sz, _i, _i, _p, _p],
    "dmacclReduceScatter": [_p, _p, _sz, _i, _i, _p, _p],
    "dmacclBroadcast": [_p, _p, _sz, _i, _i, _p, _p],
    "dmacclSend": [_p, _sz, _i, _i, _p, _p],
    "dmacclRecv": [_p, _sz, _i, _i, _p, _p],
    "dmacclReduce": [_p, _p, _sz, _i, _i, _i, _p, _p],
    "dmacclGather": [_p, _p, _sz, _i, _i, _p, _p],
    "dmacclScatter": [_p, _p, _sz, _i, _i, _p, _p],
    "dmacclAllGatherV": [_p, _p, _szp, _szp, _i, _p, _p],
    "dmacclAllGatherNotify": [_p, _p, _sz, _i, _p, _c.c_uint32, _p, _p],
    "dmacclAllGatherVNotify": [_p, _p, _szp, _szp, _i, _p, _c.c_uint32, _p, _p],
    "dmacclStreamWaitArrival": [_p, _i, _c.c_uint32, _p, _p],
    "dmacclReduceScatterV": [_p, _p, _szp, _szp, _i, _i, _p, _p],
    "dmacclAlltoAllv": [_p, _szp, _szp, _p, _szp, _szp, _i, _p, _p],
    "dmacclRedOpCreatePreMulSum": [_c.POINTER(_i), _p, _i, _i, _p],
    "dmacclRedOpDestroy": [_i, _p],
}


class DmacclError(RuntimeError):
    """A dmaccl call failed; .code is the dmacclResult_t, the message names the call."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def _candidates():
    env = os.environ.get("DMACCL_LIBRARY")
    if env:
        return [env]
    # installed wheel: next to this file; source tree: the CMake build folder
    return [str(_HERE / "libdmaccl.so")] + [
        str(_HERE.parent.parent / b / "libdmaccl.so") for b in ("build", "build-gpu")
    ]


_lib = None
_lock = threading.Lock()


def lib():
    """The loaded library, with prototypes set (loaded on first use)."""
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        for path in _candidates():
            if not os.path.exists(path):
                tried.append(f"{path} (missing)")
                continue
            try:
                handle = ctypes.CDLL(path)
            except OSError as e:
                tried.append(f"{path} ({e})")
                continue
            for name, args in _PROTOS.items():
                fn = getattr(handle, name)
                fn.argtypes = args
                fn.restype = _i
            handle.dmacclGetErrorString.argtypes = [_i]
            handle.dmacclGetErrorString.restype = _c.c_char_p
            handle.dmacclCommGetLastError.argtypes = [_p]
            handle.dmacclCommGetLastError.restype = _c.c_char_p
            handle.path = path
            _lib = handle
            return _lib
        raise ImportError(
            "dmaccl: cannot load libdmaccl.so; tried " + "; ".join(tried) +
            ". Install the package (pip install .) or set DMACCL_LIBRARY to the library's path."
        )


def nccl_library_path():
    """The path of dmaccl's NCCL-compatible library (libnccl.so.2: NCCL 2.28's
    C API over dmaccl, docs/nccl.md), for whatever loads NCCL by path, e.g.
    ``VLLM_NCCL_SO_PATH`` (SGLang: ``SGLANG_NCCL_SO_PATH``). DMACCL_NCCL_LIBRARY
    if set; else the one beside the libdmaccl.so this package loads
    (``nccl/libnccl.so.2``), which it links. FileNotFoundError when there is
    none; ImportError when libdmaccl.so itself cannot be loaded."""
    env = os.environ.get("DMACCL_NCCL_LIBRARY")
    if env:
        if not os.path.exists(env):
            raise FileNotFoundError(f"DMACCL_NCCL_LIBRARY={env} does not exist")
        return env
    path = os.path.join(os.path.dirname(os.path.abspath(lib().path)), "nccl", "libnccl.so.2")
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"dmaccl: no NCCL-compatible library at {path}; build the project (it makes "
            "nccl/libnccl.so.2 beside libdmaccl.so) or set DMACCL_NCCL_LIBRARY")
    return path


def check(rc, comm=None):
    """Raises DmacclError for a failed call, with the library's sentence."""
    if rc == 0:
        return
    L = lib()
    why = L.dmacclCommGetLastError(comm).decode(errors="replace")
    if not why and comm is not None:
        why = L.dmacclCommGetLastError(None).decode(errors="replace")
    what = L.dmacclGetErrorString(rc).decode(errors="replace")
    raise DmacclError(rc, f"{why} ({what})" if why else what)


def version():
    v = ctypes.c_int()
    check(lib().dmacclGetVersion(ctypes.byref(v)))
    return v.value


def size_array(values):
    return (ctypes.c_size_t * len(values))(*values)


def make_config(executor, algorithm, cta_policy=None):
    cfg = ConfigStruct()
    cfg.size = ctypes.sizeof(ConfigStruct)
    cfg.magic = CONFIG_MAGIC
    cfg.version = version()
    cfg.executor = executor
    if algorithm is not None and not isinstance(algorithm, str):
        raise TypeError(f"algorithm must be a selection string or None, not "
                        f"{type(algorithm).__name__}")
    cfg.algorithm = algorithm.encode() if algorithm else None
    cfg.ctaPolicy = cta_policy_value(cta_policy)
    return cfg
