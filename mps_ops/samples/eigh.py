"""Samples of the ops whose stub is csrc/operations/eigh.mm."""

from __future__ import annotations

import torch

from . import empty, Sample

_F32 = (torch.float32,)

# The eigenvectors' signs are not pinned down (the registry's `differs`):
# the sweeps compare shapes, dtypes and errors; test/test_eigh.py the values.
OVERLOAD_SAMPLES = [
    Sample("_linalg_eigh", lambda dt: dict(A=torch.randn(2, 5, 5).to(dt), UPLO="L", compute_v=True), dtypes=_F32,
           unpinned=True, large=lambda dt: dict(A=torch.randn(3, 70, 70).to(dt), UPLO="U", compute_v=True)),
    Sample("_linalg_eigh.eigenvalues", lambda dt: dict(A=torch.randn(4, 4).to(dt), UPLO="U", compute_v=True,
                                                       eigenvalues=empty(dt), eigenvectors=empty(dt)),
           dtypes=_F32, unpinned=True),
]
