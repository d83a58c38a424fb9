"""Samples of the ops whose stub is csrc/operations/pdist.mm."""

from __future__ import annotations

import torch

from . import Sample


def _pdist_backward(dt, rows=4, cols=3):
    x = torch.randn(rows, cols).to(dt)
    return dict(grad=torch.randn(rows * (rows - 1) // 2).to(dt), self=x, p=2.0, pdist=torch.pdist(x.float()).to(dt))


def _cdist_backward(dt, batch=(2,), r1=4, r2=5, cols=3, p=1.5):
    """cdist's backward for x1 of r1 rows and x2 of r2 rows (the forward's
    distances: p = 1.5 takes the general formula, cdist's own path)."""
    x1, x2 = torch.randn(*batch, r1, cols).to(dt), torch.randn(*batch, r2, cols).to(dt)
    dist = torch.cdist(x1.float(), x2.float(), p=p).to(dt)
    return dict(grad=torch.randn(dist.shape).to(dt), x1=x1, x2=x2, p=p, cdist=dist)


OVERLOAD_SAMPLES = [
    Sample("_pdist_forward", lambda dt: dict(self=torch.randn(4, 3).to(dt), p=2.0),
           large=lambda dt: dict(self=torch.randn(64, 16).to(dt), p=2.0)),
    # large (Sample.large): 128 rows of 32 (a thread per value: 4 threadgroups).
    Sample("_pdist_backward", _pdist_backward, large=lambda dt: _pdist_backward(dt, 128, 32)),
    # large: 2 x 128 rows of 64 (a thread per value: several threadgroups).
    Sample("_cdist_backward", _cdist_backward, large=lambda dt: _cdist_backward(dt, (2,), 128, 96, 64)),
]
