"""Puts dmaccl under vLLM's (or SGLang's) communicator. UNTESTED: vLLM and
SGLang are not installed on our machines (docs/python.md).

vLLM builds `PyNcclCommunicator(group=cpu_group, device=device)` in every
worker and calls all_reduce / all_gather / reduce_scatter / all_gatherv /
reduce_scatterv / broadcast on it, also while capturing CUDA graphs.
dmaccl.Communicator takes the same arguments and has the same methods, so
the swap is a replacement of the class before the workers build it:

  * as a vLLM general plugin (loaded in every process): install a package
    whose pyproject.toml has
        [project.entry-points."vllm.general_plugins"]
        dmaccl = "dmaccl_vllm:register"
  * or, in a script that builds the engine in-process, call register() first.

Point-to-point (send/recv: pipeline parallelism) runs on dmaccl too. vLLM
warms up before it captures graphs, which also makes dmaccl's Send/Recv
channels (the first Send/Recv between two ranks cannot be captured).
"""

import importlib

import dmaccl

_TARGETS = [
    # module that defines or imports the class, attribute name
    ("vllm.distributed.device_communicators.pynccl", "PyNcclCommunicator"),
    ("vllm.distributed.device_communicators.cuda_communicator", "PyNcclCommunicator"),
    ("sglang.srt.distributed.device_communicators.pynccl", "PyNcclCommunicator"),
    ("sglang.srt.distributed.parallel_state", "PyNcclCommunicator"),
]


def _make_adapter():
    class DmacclCommunicator(dmaccl.Communicator):
        """dmaccl for every call vLLM makes (collectives and send/recv)."""

        def __init__(self, group, device, library_path=None, **kwargs):
            super().__init__(group=group, device=device)

    return DmacclCommunicator


def register():
    """Replaces PyNcclCommunicator wherever vLLM or SGLang is importable."""
    replaced = []
    for mod_name, attr in _TARGETS:
        try:
            mod = importlib.import_module(mod_name)
        except ImportError:
            continue
        original = getattr(mod, attr, None)
        if original is None or getattr(original, "_dmaccl", False):
            continue
        adapter = _make_adapter()
        adapter._dmaccl = True
        setattr(mod, attr, adapter)
        replaced.append(f"{mod_name}.{attr}")
    return replaced
