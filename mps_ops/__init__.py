"""mps_ops: native Metal kernels for PyTorch operators the MPS backend lacks.

    import torch, mps_ops
    torch.special.ndtri(torch.rand(10, device="mps"))   # a Metal kernel, not the CPU fallback
    mps_ops.ops()                                        # what is registered, and how

On Linux the same kernels run through the CPU emulator (``mps_ops.backend ==
"emulator"``); ``mps_ops.testing.emulate()`` routes CPU tensors to them. A
build with the CUDA backend (``"cuda"``) runs them on an NVIDIA GPU as a
stand-in for an Apple GPU, and ``emulate()`` routes CUDA tensors to them.
"""

import torch  # noqa: F401  (loads libtorch before the extension)

from . import _C

backend: str = _C.backend()

from . import emulator  # noqa: E402
from ._error_checks import check_errors, error_checks, pending_error_checks, set_error_checks  # noqa: E402
from ._registry import OpRecord, disable_overrides, enable_overrides, ops  # noqa: E402
from .profiling import Dispatch, Profile, profile  # noqa: E402
from .shaders import ShaderLibrary, compile_shader, load_metallib  # noqa: E402



def __getattr__(name: str):
    # mps_ops.audit loads on first use: it imports torch's fake-tensor machinery.
    if name == "audit":
        import importlib

        return importlib.import_module(".audit", __name__)
    raise AttributeError(f"module 'mps_ops' has no attribute {name!r}")


__all__ = ["backend", "ops", "audit", "OpRecord", "enable_overrides", "disable_overrides", "profile", "Profile", "Dispatch",
           "compile_shader", "load_metallib", "ShaderLibrary", "emulator", "set_error_checks", "error_checks",
           "check_errors", "pending_error_checks"]
