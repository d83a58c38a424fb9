"""Samples of the ops whose stub is csrc/operations/min_max.mm."""

from __future__ import annotations

import torch

from . import empty, Sample


OVERLOAD_SAMPLES = [
    # A whole-tensor reduction is one threadgroup: the large calls (Sample.large)
    # fill it (256 threads over 64 x 300 values).
    Sample("max.unary_out", lambda dt: dict(self=torch.randn(3, 4).to(dt), out=empty(dt)),
           large=lambda dt: dict(self=torch.randn(64, 300).to(dt), out=empty(dt))),
    Sample("min.unary_out", lambda dt: dict(self=torch.randn(3, 4).to(dt), out=empty(dt)),
           large=lambda dt: dict(self=torch.randn(64, 300).to(dt), out=empty(dt))),
    Sample("_aminmax", lambda dt: dict(self=torch.randn(3, 4).to(dt))),
    Sample("_aminmax.dim", lambda dt: dict(self=torch.randn(3, 4).to(dt), dim=1, keepdim=False)),
]
