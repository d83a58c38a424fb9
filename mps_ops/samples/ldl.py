"""Samples of the ops whose stub is csrc/operations/ldl.mm."""

from __future__ import annotations

import torch

from . import empty, INDEX, Sample


def _symmetric(*shape):
    a = torch.randn(*shape)
    return a + a.mT


def _factored(dt, *shape):
    """LD and pivots, the pivots as int64 (ldl_solve takes any integer
    dtype; the index sweeps put int64 extremes into them)."""
    ld, pivots, _ = torch.linalg.ldl_factor_ex(_symmetric(*shape))
    return ld.to(dt), pivots.long()


_F32 = (torch.float32,)

OVERLOAD_SAMPLES = [
    Sample("linalg_ldl_factor_ex", lambda dt: dict(self=_symmetric(2, 5, 5).to(dt)), dtypes=_F32,
           large=lambda dt: dict(self=_symmetric(3, 300, 300).to(dt))),
    Sample("linalg_ldl_factor_ex.out", lambda dt: dict(self=_symmetric(5, 5).to(dt), LD=empty(dt),
                                                       pivots=empty(torch.int32), info=empty(torch.int32)),
           dtypes=_F32),
    Sample("linalg_ldl_solve", lambda dt: dict(zip(("LD", "pivots"), _factored(dt, 2, 5, 5)), B=torch.randn(2, 5, 3).to(dt)),
           roles={"pivots": INDEX}, dtypes=_F32,
           large=lambda dt: dict(zip(("LD", "pivots"), _factored(dt, 2, 40, 40)), B=torch.randn(2, 40, 600).to(dt))),
    Sample("linalg_ldl_solve.out", lambda dt: dict(zip(("LD", "pivots"), _factored(dt, 5, 5)), B=torch.randn(5, 3).to(dt),
                                                   out=empty(dt)),
           roles={"pivots": INDEX}, dtypes=_F32),
]
