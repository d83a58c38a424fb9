"""Samples of the ops whose stub is csrc/operations/glu_jvp.mm."""

from __future__ import annotations

import torch

from . import Sample


def _glu_jvp(dt):
    x, dx = torch.randn(3, 4).to(dt), torch.randn(3, 4).to(dt)
    return dict(glu=torch.nn.functional.glu(x.float(), 1).to(dt), x=x, dx=dx, dim=1)


def _glu_backward_jvp(dt):
    x, dx = torch.randn(3, 4).to(dt), torch.randn(3, 4).to(dt)
    grad_glu, dgrad_glu = torch.randn(3, 2).to(dt), torch.randn(3, 2).to(dt)
    return dict(grad_x=torch.randn(3, 4).to(dt), grad_glu=grad_glu, x=x, dgrad_glu=dgrad_glu, dx=dx, dim=1)


OVERLOAD_SAMPLES = [
    Sample("glu_jvp", _glu_jvp),
    # The CPU's composite rounds each op in half: compare in float32.
    Sample("glu_backward_jvp", _glu_backward_jvp, dtypes=(torch.float32,)),
]
