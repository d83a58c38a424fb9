"""Samples of the ops whose stub is csrc/operations/cholesky_solve.mm."""

from __future__ import annotations

import torch

from . import empty, Sample


def _factor(*shape):
    """Lower Cholesky factors of well-conditioned symmetric positive
    definite matrices."""
    a = torch.randn(*shape)
    n = shape[-1]
    return torch.linalg.cholesky(a @ a.mT + n * torch.eye(n))


OVERLOAD_SAMPLES = [
    Sample("_cholesky_solve_helper", lambda dt: dict(self=torch.randn(2, 5, 3).to(dt), A=_factor(2, 5, 5).to(dt),
                                                     upper=False),
           dtypes=(torch.float32,),
           large=lambda dt: dict(self=torch.randn(3, 60, 300).to(dt), A=_factor(3, 60, 60).to(dt), upper=False)),
    Sample("cholesky_inverse", lambda dt: dict(self=_factor(2, 5, 5).to(dt), upper=False), dtypes=(torch.float32,),
           large=lambda dt: dict(self=_factor(3, 300, 300).to(dt), upper=True)),
    Sample("cholesky_inverse.out", lambda dt: dict(self=_factor(5, 5).to(dt), upper=False, out=empty(dt)),
           dtypes=(torch.float32,)),
]
