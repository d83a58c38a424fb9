"""Samples of the ops whose stub is csrc/operations/pdist.mm."""

from __future__ import annotations

import torch

from . import Sample


OVERLOAD_SAMPLES = [
    Sample("_pdist_forward", lambda dt: dict(self=torch.randn(4, 3).to(dt), p=2.0)),
    Sample("_pdist_backward", lambda dt: (lambda x: dict(grad=torch.randn(6).to(dt), self=x, p=2.0,
                                                         pdist=torch.pdist(x.float()).to(dt)))(
        torch.randn(4, 3).to(dt))),
]
