"""Samples of the ops whose stub is csrc/operations/pointwise_losses.mm."""

from __future__ import annotations

import torch

from . import empty, Sample

SHAPE = (3, 5)
# Sample.large: 64 * 320 elements, five groups of the reduced forward's first
# pass (4096 elements each) and twenty of the one-pass kernels' (1024).
LARGE = (64, 320)
# The backward's large calls add an odd count (no pairs: the single-element
# kernels of half and bfloat16), several full groups.
LARGE_ODD = (63, 321)


def _pair(dt, shape=SHAPE, reduction=1):
    """Inputs whose differences fall on both sides of the thresholds below."""
    return dict(self=torch.randn(shape).to(dt), target=torch.randn(shape).to(dt), reduction=reduction)


def _bce(dt, shape=SHAPE, reduction=1):
    """Probabilities in (0, 1), targets in [0, 1], a weight per column."""
    return dict(self=torch.rand(shape).clamp(0.01, 0.99).to(dt), target=torch.rand(shape).to(dt),
                weight=torch.rand(shape[-1]).to(dt), reduction=reduction)


def _backward(forward_args, reduction=0):
    """The incoming gradient: one per element without reduction (the
    samples': the layout sweeps change it), else one (Sample.large's)."""
    x = forward_args["self"]
    grad_shape = x.shape if reduction == 0 else ()
    return dict(forward_args, reduction=reduction, grad_output=torch.randn(grad_shape).to(x.dtype))


def _large(make, extra=None, backward=False):
    """Every kernel the overload reaches: mean, sum and none (and the
    backward's odd count)."""
    def calls(dt):
        out = []
        for reduction in (1, 2, 0):
            args = dict(make(dt, LARGE, reduction), **(extra or {}))
            out.append(_backward(args, reduction) if backward else args)
        if backward:
            out.append(_backward(dict(make(dt, LARGE_ODD, 0), **(extra or {})), 0))
        return out
    return calls


def _samples(name, make, threshold=None, backward_overloads=()):
    extra = {threshold[0]: threshold[1]} if threshold else {}
    forward = lambda dt: dict(make(dt), **extra)  # noqa: E731
    # The CPU's binary_cross_entropy writes its out= and grad_input= through
    # views of their own shape (a 0-element one raises; a reduced loss is
    # summed over the out's old shape: test_pointwise_losses.py checks ours):
    # its samples pass outs of the input's shape, the forward's unreduced.
    bce = name == "binary_cross_entropy"
    out_of = (lambda args: torch.empty_like(args["self"])) if bce else (lambda args: empty(args["self"].dtype))
    samples = [Sample(name, forward, large=_large(make, extra)),
               Sample(f"{name}.out", lambda dt: dict(forward(dt), reduction=0 if bce else 1,
                                                      out=out_of(forward(dt))))]
    large_backward = _large(make, extra, backward=True)
    for overload in backward_overloads:
        if overload.partition(".")[2] in ("grad_input", "out"):  # grad_input= (the only form of two of them)
            build = lambda dt: (lambda args: dict(args, grad_input=out_of(args)))(_backward(forward(dt)))  # noqa: E731
            large = lambda dt: [dict(args, grad_input=out_of(args)) for args in large_backward(dt)]  # noqa: E731
        else:
            build, large = (lambda dt: _backward(forward(dt))), large_backward
        samples.append(Sample(overload, build, large=large))
    return samples


OVERLOAD_SAMPLES = (
    _samples("mse_loss", _pair, None, ["mse_loss_backward", "mse_loss_backward.grad_input"])
    + _samples("smooth_l1_loss", _pair, ("beta", 0.5), ["smooth_l1_loss_backward.grad_input"])
    + _samples("huber_loss", _pair, ("delta", 0.7), ["huber_loss_backward.out"])
    + _samples("binary_cross_entropy", _bce, None,
               ["binary_cross_entropy_backward", "binary_cross_entropy_backward.grad_input"])
)
