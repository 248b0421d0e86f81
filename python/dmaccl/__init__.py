"""dmaccl: collectives on the GPUs' copy engines, from Python and PyTorch.

    import dmaccl
    comm = dmaccl.Communicator(group=gloo_group, device=local_rank)   # vLLM-shaped
    comm.all_reduce(x)

    import dmaccl.torch_backend   # registers the torch.distributed backend "dmaccl"
    torch.distributed.init_process_group("cpu:gloo,cuda:dmaccl")

The C library (libdmaccl.so) is loaded on first use: from the installed
package, the source tree's build folder, or DMACCL_LIBRARY.
nccl_library_path() names its NCCL-compatible twin (libnccl.so.2) for
bindings that load NCCL by path (vLLM: VLLM_NCCL_SO_PATH).
"""

from ._lib import DmacclError, nccl_library_path, version as _version
from ._buffers import TYPE_NAMES
from .communicator import (
    Communicator,
    ReduceOp,
    get_unique_id,
    group,
    group_end,
    group_start,
    premul_sum,
)

__version__ = "0.2.0"


def library_version():
    """The loaded C library's DMACCL_VERSION_CODE (major*10000 + minor*100 + patch)."""
    return _version()


__all__ = [
    "Communicator",
    "DmacclError",
    "ReduceOp",
    "TYPE_NAMES",
    "get_unique_id",
    "premul_sum",
    "group",
    "group_end",
    "group_start",
    "library_version",
    "nccl_library_path",
]
