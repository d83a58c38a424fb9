"""Samples of the ops whose stub is csrc/operations/masked_softmax.mm."""

from __future__ import annotations

import torch

from . import MASK, Sample


def _masked_softmax(dt):
    return dict(self=torch.randn(2, 3, 4).to(dt), mask=torch.rand(2, 3, 4) > 0.6, dim=-1)


def _masked_softmax_backward(dt):
    mask = torch.rand(2, 3, 4) > 0.6
    output = torch.ops.aten._masked_softmax(torch.randn(2, 3, 4), mask, -1).to(dt)
    return dict(grad_output=torch.randn(2, 3, 4).to(dt), output=output, mask=mask, dim=-1)


OVERLOAD_SAMPLES = [
    Sample("_masked_softmax", _masked_softmax, {"mask": MASK}),
    Sample("_masked_softmax_backward", _masked_softmax_backward, {"mask": MASK}),
]
