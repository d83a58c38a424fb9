"""Samples of the ops whose stub is csrc/operations/masked_softmax.mm."""

from __future__ import annotations

import torch

from . import MASK, Sample


def _masked_softmax(dt, shape=(2, 3, 4)):
    return dict(self=torch.randn(shape).to(dt), mask=torch.rand(shape) > 0.6, dim=-1)


def _masked_softmax_backward(dt, shape=(2, 3, 4)):
    mask = torch.rand(shape) > 0.6
    output = torch.ops.aten._masked_softmax(torch.randn(shape), mask, -1).to(dt)
    return dict(grad_output=torch.randn(shape).to(dt), output=output, mask=mask, dim=-1)


# Many rows of a few SIMD groups' work each: the rows mapping fills several
# threadgroups (the small calls fit in one).
LARGE = (64, 8, 300)

OVERLOAD_SAMPLES = [
    Sample("_masked_softmax", _masked_softmax, {"mask": MASK}, large=lambda dt: _masked_softmax(dt, LARGE)),
    Sample("_masked_softmax_backward", _masked_softmax_backward, {"mask": MASK},
           large=lambda dt: _masked_softmax_backward(dt, LARGE)),
]
