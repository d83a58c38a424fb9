"""Samples of the ops whose stub is csrc/operations/threshold.mm."""

from __future__ import annotations

import torch

from . import Elementwise, empty, Sample

aten = torch.ops.aten
BOUND, VALUE = 0.25, 3.0  # a bound inside the inputs' range, so both sides are taken; a value every dtype holds


def _threshold(dt):
    return dict(self=torch.randn(3, 4).to(dt), threshold=BOUND, value=VALUE)


def _backward(dt):
    return dict(grad_output=torch.randn(3, 4).to(dt), self=torch.randn(3, 4).to(dt))


def _threshold_backward(dt):
    return dict(_backward(dt), threshold=BOUND)


def _hardtanh_backward(dt):
    return dict(_backward(dt), min_val=-0.5, max_val=0.75)


OVERLOAD_SAMPLES = [
    Sample("threshold", _threshold),
    Sample("threshold.out", lambda dt: dict(_threshold(dt), out=empty(dt))),
    Sample("threshold_", _threshold),
    Sample("threshold_backward", _threshold_backward),
    Sample("threshold_backward.grad_input", lambda dt: dict(_threshold_backward(dt), grad_input=empty(dt))),
    Sample("hardtanh_backward", _hardtanh_backward),
    Sample("hardtanh_backward.grad_input", lambda dt: dict(_hardtanh_backward(dt), grad_input=empty(dt))),
]


def _threshold_call(x, out=None):
    return torch.threshold(x, BOUND, VALUE, out=out)


# Operands in the kernel's order, (self, grad_output), so that a layout of
# the first operand is the kernel's first input's.
def _threshold_backward_call(x, grad, out=None):
    if out is None:
        return aten.threshold_backward(grad, x, BOUND)
    return aten.threshold_backward.grad_input(grad, x, BOUND, grad_input=out)


def _hardtanh_backward_call(grad, x, out=None):
    if out is None:
        return aten.hardtanh_backward(grad, x, -0.5, 0.75)
    return aten.hardtanh_backward.grad_input(grad, x, -0.5, 0.75, grad_input=out)


ELEMENTWISE = {
    "threshold": Elementwise(_threshold_call, (torch.randn,),
                             inplace=lambda x: torch.threshold_(x, BOUND, VALUE)),
    "threshold_backward": Elementwise(_threshold_backward_call, (torch.randn, torch.randn)),
    "hardtanh_backward": Elementwise(_hardtanh_backward_call, (torch.randn, torch.randn)),
}
