"""Samples of the ops whose stub is csrc/operations/lu_solve.mm."""

from __future__ import annotations

import torch

from . import INDEX, Sample

_F32 = (torch.float32,)


def _factors(*shape):
    """linalg_lu_factor of well-conditioned matrices: (LU, pivots)."""
    n = shape[-1]
    return torch.linalg.lu_factor(torch.randn(*shape) + n * torch.eye(n))


def _call(shape, rhs, **extra):
    def build(dt):
        lu, pivots = _factors(*shape)
        return dict(LU=lu.to(dt), pivots=pivots, B=torch.randn(*rhs).to(dt), **extra)
    return build


OVERLOAD_SAMPLES = [
    Sample("linalg_lu_solve", _call((2, 5, 5), (2, 5, 3), left=True, adjoint=False), roles=dict(pivots=INDEX),
           dtypes=_F32, large=_call((3, 60, 60), (3, 60, 300), left=True, adjoint=True)),
]
