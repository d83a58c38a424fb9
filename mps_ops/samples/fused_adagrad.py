"""Samples of the ops whose stub is csrc/operations/fused_adagrad.mm."""

from __future__ import annotations

import torch

from . import Sample, SCALAR


def _adagrad(dt, tensor_lr=False, shape=(3, 4)):
    args = dict(self=[torch.randn(shape).to(dt)], grads=[torch.randn(shape).to(dt)],
                state_sums=[torch.rand(shape).to(dt)], state_steps=[torch.tensor(2.0)], lr_decay=0.01,
                weight_decay=0.1, eps=1e-10, maximize=False)
    args["lr"] = torch.tensor(0.05) if tensor_lr else 0.05
    return args


OVERLOAD_SAMPLES = [
    Sample("_fused_adagrad_", _adagrad, {"state_steps": SCALAR},
           large=lambda dt: _adagrad(dt, shape=(64, 160))),
    Sample("_fused_adagrad_.tensor_lr", lambda dt: _adagrad(dt, tensor_lr=True),
           {"state_steps": SCALAR, "lr": SCALAR}),
]
