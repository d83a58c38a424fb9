"""Samples of the ops whose stub is csrc/operations/smooth_activations.mm."""

from __future__ import annotations

import torch

from . import Elementwise, empty, Sample

aten = torch.ops.aten
BETA, THRESHOLD = 2.0, 3.0  # a threshold inside the inputs' range, so both sides are taken


def _softplus(dt):
    return dict(self=torch.randn(3, 4).to(dt), beta=BETA, threshold=THRESHOLD)


def _softplus_backward(dt):
    return dict(grad_output=torch.randn(3, 4).to(dt), self=torch.randn(3, 4).to(dt), beta=BETA,
                threshold=THRESHOLD)


def _tanh_backward(dt):
    return dict(grad_output=torch.randn(3, 4).to(dt), output=torch.rand(3, 4).mul(2).sub(1).to(dt))


OVERLOAD_SAMPLES = [
    Sample("softplus", _softplus),
    Sample("softplus.out", lambda dt: dict(_softplus(dt), out=empty(dt))),
    Sample("softplus_backward", _softplus_backward),
    Sample("softplus_backward.grad_input", lambda dt: dict(_softplus_backward(dt), grad_input=empty(dt))),
    Sample("tanh_backward", _tanh_backward),
    Sample("tanh_backward.grad_input", lambda dt: dict(_tanh_backward(dt), grad_input=empty(dt))),
]


def _softplus_call(x, out=None):
    if out is None:
        return aten.softplus(x, BETA, THRESHOLD)
    return aten.softplus.out(x, BETA, THRESHOLD, out=out)


def _softplus_backward_call(grad, x, out=None):
    if out is None:
        return aten.softplus_backward(grad, x, BETA, THRESHOLD)
    return aten.softplus_backward.grad_input(grad, x, BETA, THRESHOLD, grad_input=out)


def _tanh_backward_call(grad, y, out=None):
    if out is None:
        return aten.tanh_backward(grad, y)
    return aten.tanh_backward.grad_input(grad, y, grad_input=out)


ELEMENTWISE = {
    "softplus": Elementwise(_softplus_call, (torch.randn,)),
    "softplus_backward": Elementwise(_softplus_backward_call, (torch.randn, torch.randn)),
    # tanh's outputs lie in (-1, 1).
    "tanh_backward": Elementwise(_tanh_backward_call, (torch.randn, lambda shape: torch.rand(shape) * 2 - 1)),
}
