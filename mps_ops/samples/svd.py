"""Samples of the ops whose stub is csrc/operations/svd.mm."""

from __future__ import annotations

import torch

from . import empty, Sample

_F32 = (torch.float32,)

# The singular vectors' signs are not pinned down (the registry's
# `differs`): the sweeps compare shapes, dtypes and errors; test/test_svd.py
# the values.
OVERLOAD_SAMPLES = [
    Sample("_linalg_svd", lambda dt: dict(A=torch.randn(2, 5, 3).to(dt), full_matrices=True, compute_uv=True),
           dtypes=_F32, unpinned=True,
           large=lambda dt: dict(A=torch.randn(3, 90, 70).to(dt), full_matrices=True, compute_uv=True)),
    Sample("_linalg_svd.U", lambda dt: dict(A=torch.randn(3, 4).to(dt), full_matrices=False, compute_uv=True,
                                            U=empty(dt), S=empty(dt), Vh=empty(dt)),
           dtypes=_F32, unpinned=True),
]
