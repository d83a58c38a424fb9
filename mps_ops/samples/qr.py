"""Samples of the ops whose stub is csrc/operations/qr.mm."""

from __future__ import annotations

import torch

from . import empty, Sample

_F32 = (torch.float32,)

# The sweeps' layouts repeat rows or columns (expanded, doubled), which
# leaves trailing reflectors of rounding noise that no two implementations
# share (the registry's `differs`): the sweeps compare shapes, dtypes and
# errors; test/test_qr.py the values, full-rank ones against the CPU's and
# rank-deficient ones by what they rebuild.
OVERLOAD_SAMPLES = [
    Sample("geqrf", lambda dt: dict(self=torch.randn(2, 5, 3).to(dt)), dtypes=_F32, unpinned=True,
           large=lambda dt: dict(self=torch.randn(3, 90, 70).to(dt))),
    Sample("geqrf.a", lambda dt: dict(self=torch.randn(3, 4).to(dt), a=empty(dt), tau=empty(dt)), dtypes=_F32,
           unpinned=True),
    Sample("linalg_qr", lambda dt: dict(A=torch.randn(2, 5, 3).to(dt), mode="complete"), dtypes=_F32, unpinned=True,
           large=lambda dt: dict(A=torch.randn(3, 70, 90).to(dt), mode="reduced")),
    Sample("linalg_qr.out", lambda dt: dict(A=torch.randn(4, 3).to(dt), mode="reduced", Q=empty(dt), R=empty(dt)),
           dtypes=_F32, unpinned=True),
]
