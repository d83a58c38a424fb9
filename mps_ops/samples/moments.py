"""Samples of the ops whose stub is csrc/operations/moments.mm."""

from __future__ import annotations

import torch

from . import empty, Sample


OVERLOAD_SAMPLES = [
    Sample("var.correction_out", lambda dt: dict(self=torch.randn(3, 4).to(dt), dim=[1], correction=1,
                                                 keepdim=False, out=empty(dt))),
    Sample("std.correction_out", lambda dt: dict(self=torch.randn(3, 4).to(dt), dim=[0], correction=0,
                                                 keepdim=True, out=empty(dt))),
]
