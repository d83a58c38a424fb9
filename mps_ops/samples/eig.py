"""Samples of the ops whose stub is csrc/operations/eig.mm."""

from __future__ import annotations

import torch

from . import empty, Sample

_F32 = (torch.float32,)
_COMPLEX = torch.complex64

# The results' order and phases are not pinned down (the registry's
# `differs`): the sweeps compare shapes, dtypes and errors; test/test_eig.py
# the values.
OVERLOAD_SAMPLES = [
    Sample("linalg_eig", lambda dt: dict(self=torch.randn(2, 5, 5).to(dt)), dtypes=_F32, unpinned=True,
           large=lambda dt: dict(self=torch.randn(3, 70, 70).to(dt))),
    Sample("linalg_eig.out", lambda dt: dict(self=torch.randn(4, 4).to(dt), eigenvalues=empty(_COMPLEX),
                                             eigenvectors=empty(_COMPLEX)), dtypes=_F32, unpinned=True),
    Sample("_linalg_eigvals", lambda dt: dict(self=torch.randn(2, 5, 5).to(dt)), dtypes=_F32, unpinned=True,
           large=lambda dt: dict(self=torch.randn(3, 70, 70).to(dt))),
    Sample("linalg_eigvals.out", lambda dt: dict(self=torch.randn(4, 4).to(dt), out=empty(_COMPLEX)), dtypes=_F32,
           unpinned=True),
]
