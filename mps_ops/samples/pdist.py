"""Samples of the ops whose stub is csrc/operations/pdist.mm."""

from __future__ import annotations

import torch

from . import Sample


def _pdist_backward(dt, rows=4, cols=3):
    x = torch.randn(rows, cols).to(dt)
    return dict(grad=torch.randn(rows * (rows - 1) // 2).to(dt), self=x, p=2.0, pdist=torch.pdist(x.float()).to(dt))


OVERLOAD_SAMPLES = [
    Sample("_pdist_forward", lambda dt: dict(self=torch.randn(4, 3).to(dt), p=2.0),
           large=lambda dt: dict(self=torch.randn(64, 16).to(dt), p=2.0)),
    # large (Sample.large): 128 rows of 32 (a thread per value: 4 threadgroups).
    Sample("_pdist_backward", _pdist_backward, large=lambda dt: _pdist_backward(dt, 128, 32)),
]
