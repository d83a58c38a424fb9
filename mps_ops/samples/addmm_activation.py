"""Samples of the ops whose stub is csrc/operations/addmm_activation.mm."""

from __future__ import annotations

import torch

from . import empty, Sample

_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int64)


def _values(dt, *shape):
    x = torch.randn(*shape) * 3
    return x.to(dt) if dt.is_floating_point else x.round().to(dt)


def _operands(dt, rows=3, inner=4, columns=5, full_self=False):
    self = _values(dt, rows, columns) if full_self else _values(dt, columns)
    return dict(self=self, mat1=_values(dt, rows, inner), mat2=_values(dt, inner, columns))


OVERLOAD_SAMPLES = [
    # A row of biases (the epilogue's strided pass) in the sample, a full
    # self (its dense pass) in the large call.
    Sample("_addmm_activation", lambda dt: dict(_operands(dt), beta=0.5, alpha=2), dtypes=_DTYPES,
           large=lambda dt: dict(_operands(dt, 40, 8, 300, full_self=True), use_gelu=dt.is_floating_point)),
    Sample("_addmm_activation.out",
           lambda dt: dict(_operands(dt), use_gelu=dt.is_floating_point, out=empty(dt)), dtypes=_DTYPES),
]
