"""Samples of the ops whose stub is csrc/operations/add_relu.mm."""

from __future__ import annotations

import torch

from . import Elementwise, empty, Sample


# 16 elements: the CPU's vectorized loop covers them all (its scalar tail
# loop treats NaN and rounding differently; see test_add_relu.py).
def _add_relu(dt):
    return dict(self=torch.randn(2, 8).to(dt), other=torch.randn(2, 8).to(dt), alpha=1.5)


OVERLOAD_SAMPLES = [
    Sample("_add_relu.Tensor", _add_relu),
    Sample("_add_relu.out", lambda dt: dict(_add_relu(dt), out=empty(dt))),
    Sample("_add_relu_.Tensor", _add_relu),
    Sample("_add_relu.Scalar", lambda dt: dict(self=torch.randn(2, 8).to(dt), other=-0.5, alpha=2)),
    Sample("_add_relu_.Scalar", lambda dt: dict(self=torch.randn(2, 8).to(dt), other=0.25, alpha=1)),
]

ELEMENTWISE = {
    "_add_relu": Elementwise(lambda a, b, **kw: torch._add_relu(a, b, alpha=1.5, **kw),
                             (lambda shape: torch.randn(shape), lambda shape: torch.randn(shape)),
                             inplace=lambda a, b: torch.ops.aten._add_relu_.Tensor(a, b, alpha=1.5)),
}
