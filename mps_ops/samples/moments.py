"""Samples of the ops whose stub is csrc/operations/moments.mm."""

from __future__ import annotations

import torch

from . import empty, Sample


def _large(dt, dim, keepdim, correction, shapes, outs=("out",)):
    """Sample.large: many short slices (one pass), and few slices of 8192
    values (split over two chunks each, then the merge kernel)."""
    return [dict(self=torch.randn(shape).to(dt), dim=[dim], correction=correction, keepdim=keepdim,
                 **{name: empty(dt) for name in outs})
            for shape in shapes]


def _with_mean(dt, dim, correction, keepdim):
    return dict(self=torch.randn(3, 4).to(dt), dim=[dim], correction=correction, keepdim=keepdim)


OVERLOAD_SAMPLES = [
    Sample("var.correction_out", lambda dt: dict(self=torch.randn(3, 4).to(dt), dim=[1], correction=1,
                                                 keepdim=False, out=empty(dt)),
           large=lambda dt: _large(dt, 1, False, 1, [(2048, 4), (2, 8192)])),
    Sample("std.correction_out", lambda dt: dict(self=torch.randn(3, 4).to(dt), dim=[0], correction=0,
                                                 keepdim=True, out=empty(dt)),
           large=lambda dt: _large(dt, 0, True, 0, [(4, 2048), (8192, 2)])),
    Sample("var_mean.correction", lambda dt: _with_mean(dt, 1, 1, False),
           large=lambda dt: _large(dt, 1, False, 1, [(2048, 4), (2, 8192)], outs=())),
    Sample("var_mean.correction_out", lambda dt: dict(_with_mean(dt, 1, 1, False), out0=empty(dt), out1=empty(dt))),
    Sample("std_mean.correction", lambda dt: _with_mean(dt, 0, 0, True),
           large=lambda dt: _large(dt, 0, True, 0, [(4, 2048), (8192, 2)], outs=())),
    Sample("std_mean.correction_out", lambda dt: dict(_with_mean(dt, 0, 0, True), out0=empty(dt), out1=empty(dt))),
]
