"""Samples of the ops whose stub is csrc/operations/int_mm.mm."""

from __future__ import annotations

import torch

from . import Sample

_DTYPES = (torch.int8, torch.uint8)


def _operands(dt, rows, inner, columns):
    """self of dt (int8 or uint8), mat2 int8, over each one's whole range."""
    info = torch.iinfo(dt)
    return dict(self=torch.randint(info.min, info.max + 1, (rows, inner), dtype=dt),
                mat2=torch.randint(-128, 128, (inner, columns), dtype=torch.int8))


OVERLOAD_SAMPLES = [
    Sample("_int_mm", lambda dt: _operands(dt, 5, 8, 3), dtypes=_DTYPES,
           large=lambda dt: _operands(dt, 130, 100, 140)),
    Sample("_int_mm.out", lambda dt: dict(_operands(dt, 5, 8, 3), out=torch.empty(5, 3, dtype=torch.int32)),
           dtypes=_DTYPES),
]
