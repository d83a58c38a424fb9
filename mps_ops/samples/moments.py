"""Samples of the ops whose stub is csrc/operations/moments.mm."""

from __future__ import annotations

import torch

from . import empty, Sample


def _large(dt, dim, keepdim, correction, shapes):
    """Sample.large: many short slices (one pass), and few slices of 8192
    values (split over two chunks each, then the merge kernel)."""
    return [dict(self=torch.randn(shape).to(dt), dim=[dim], correction=correction, keepdim=keepdim, out=empty(dt))
            for shape in shapes]


OVERLOAD_SAMPLES = [
    Sample("var.correction_out", lambda dt: dict(self=torch.randn(3, 4).to(dt), dim=[1], correction=1,
                                                 keepdim=False, out=empty(dt)),
           large=lambda dt: _large(dt, 1, False, 1, [(2048, 4), (2, 8192)])),
    Sample("std.correction_out", lambda dt: dict(self=torch.randn(3, 4).to(dt), dim=[0], correction=0,
                                                 keepdim=True, out=empty(dt)),
           large=lambda dt: _large(dt, 0, True, 0, [(4, 2048), (8192, 2)])),
]
