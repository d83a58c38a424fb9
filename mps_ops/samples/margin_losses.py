"""Samples of the ops whose stub is csrc/operations/margin_losses.mm."""

from __future__ import annotations

import torch

from . import empty, INDEX, MASK, Sample


def _multi_margin(dt):
    return dict(self=torch.randn(4, 5).to(dt), target=torch.tensor([0, 4, 2, 1]), p=1, margin=1.0,
                weight=torch.rand(5).to(dt), reduction=1)


def _large_multi_margin(dt):
    """8192 rows of 10 classes (Sample.large): the mean over them is split
    over two threadgroups of the sum kernel, then its merge kernel."""
    return dict(self=torch.randn(8192, 10).to(dt), target=torch.randint(0, 10, (8192,)), p=1, margin=1.0,
                weight=torch.rand(10).to(dt), reduction=1)


def _multilabel(dt):
    return dict(self=torch.randn(3, 5).to(dt),
                target=torch.tensor([[3, 0, -1, 1, 2], [4, 4, 1, -1, 0], [-1, 0, 0, 0, 0]]), reduction=1)


def _large_multilabel(dt):
    """64 rows of 40 classes, each row's labels ended by -1 at a random place
    (Sample.large)."""
    target = torch.randint(0, 40, (64, 40))
    target[torch.arange(64), torch.randint(0, 40, (64,))] = -1
    return dict(self=torch.randn(64, 40).to(dt), target=target, reduction=1)


def _multilabel_backward(dt, inputs=_multilabel):
    args = dict(inputs(dt), reduction=0)
    _, is_target = torch.ops.aten.multilabel_margin_loss_forward(args["self"].float(), args["target"], 0)
    return dict(grad_output=torch.randn(args["self"].shape[0]).to(dt), is_target=is_target.to(dt), **args)


OVERLOAD_SAMPLES = [
    Sample("multi_margin_loss", _multi_margin, {"target": INDEX}, large=_large_multi_margin),
    Sample("multi_margin_loss.out", lambda dt: dict(_multi_margin(dt), out=empty(dt)), {"target": INDEX}),
    # Backward samples without reduction: one gradient per sample.
    # Large: 8192 samples, 8 threads each, 32 per threadgroup.
    Sample("multi_margin_loss_backward",
           lambda dt: dict(_multi_margin(dt), reduction=0, grad_output=torch.randn(4).to(dt)), {"target": INDEX},
           large=lambda dt: dict(_large_multi_margin(dt), reduction=0, grad_output=torch.randn(8192).to(dt))),
    Sample("multi_margin_loss_backward.grad_input",
           lambda dt: dict(_multi_margin(dt), reduction=0, grad_output=torch.randn(4).to(dt), grad_input=empty(dt)),
           {"target": INDEX}),
    Sample("multilabel_margin_loss_forward", _multilabel, {"target": INDEX}),
    Sample("multilabel_margin_loss_forward.output",
           lambda dt: dict(_multilabel(dt), output=empty(dt), is_target=empty(dt)), {"target": INDEX}),
    Sample("multilabel_margin_loss_backward", _multilabel_backward, {"target": INDEX, "is_target": MASK},
           large=lambda dt: _multilabel_backward(dt, _large_multilabel)),
    Sample("multilabel_margin_loss_backward.grad_input",
           lambda dt: dict(_multilabel_backward(dt), grad_input=empty(dt)), {"target": INDEX, "is_target": MASK}),
]
