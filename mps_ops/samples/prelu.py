"""Samples of the ops whose stub is csrc/operations/prelu.mm."""

from __future__ import annotations

import torch

from . import Sample


def _prelu(dt):
    """A slope per element (the kernel broadcasts any weight; prelu's own
    per-channel one is test_prelu.py's and the OpInfo's): operands of one
    shape, which the sweeps and the GPU launcher tile, stride and turn into
    CPU scalars."""
    return dict(self=torch.randn(2, 3, 4).to(dt), weight=torch.rand(2, 3, 4).to(dt))


def _prelu_backward(dt):
    """The backward's operands, of one shape as the forward's sample."""
    return dict(grad_output=torch.randn(2, 3, 4).to(dt), self=torch.randn(2, 3, 4).to(dt),
                weight=torch.rand(2, 3, 4).to(dt))


def _prelu_backward_large(dt):
    """A CNN's activations, 32 x 64 x 32 x 32: a slope per element (the dense
    kernel) and one per channel, broadcast (the strided one)."""
    x = torch.randn(32, 64, 32, 32).to(dt)
    return [dict(grad_output=torch.randn(x.shape).to(dt), self=x, weight=torch.rand(x.shape).to(dt)),
            dict(grad_output=torch.randn(x.shape).to(dt), self=x, weight=torch.rand(64, 1, 1).to(dt))]


OVERLOAD_SAMPLES = [Sample("_prelu_kernel", _prelu),
                    Sample("_prelu_kernel_backward", _prelu_backward, large=_prelu_backward_large)]
