"""Samples of the ops whose stub is csrc/operations/addmm_activation.mm."""

from __future__ import annotations

import torch

from . import empty, Sample

_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int64)


def _operands(dt, rows=3, inner=4, columns=5):
    def make(*shape):
        x = torch.randn(*shape) * 3
        return x.to(dt) if dt.is_floating_point else x.round().to(dt)
    return dict(self=make(columns), mat1=make(rows, inner), mat2=make(inner, columns))


OVERLOAD_SAMPLES = [
    Sample("_addmm_activation", lambda dt: dict(_operands(dt), beta=0.5, alpha=2), dtypes=_DTYPES,
           large=lambda dt: dict(_operands(dt, 40, 8, 300), use_gelu=dt.is_floating_point)),
    Sample("_addmm_activation.out",
           lambda dt: dict(_operands(dt), use_gelu=dt.is_floating_point, out=empty(dt)), dtypes=_DTYPES),
]
