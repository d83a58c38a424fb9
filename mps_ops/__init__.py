"""mps_ops: native Metal kernels for PyTorch operators the MPS backend lacks.

    import torch, mps_ops
    torch.special.ndtri(torch.rand(10, device="mps"))   # a Metal kernel, not the CPU fallback
    mps_ops.ops()                                        # what is registered, and how

On Linux the same kernels run through the CPU emulator (``mps_ops.backend ==
"emulator"``); ``mps_ops.testing.emulate()`` routes CPU tensors to them.
"""

import torch  # noqa: F401  (loads libtorch before the extension)

from . import _C
from ._registry import OpRecord, enable_overrides, ops
from .profiling import Dispatch, Profile, profile

backend: str = _C.backend()

__all__ = ["backend", "ops", "OpRecord", "enable_overrides", "profile", "Profile", "Dispatch"]
