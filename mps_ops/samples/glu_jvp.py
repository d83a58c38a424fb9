"""Samples of the ops whose stub is csrc/operations/glu_jvp.mm."""

from __future__ import annotations

import torch

from . import Sample


# rows x 2 * half: the samples' (3, 4), the large calls' (96, 1024) (Sample.large: up to 8
# elements of a row per thread, still several full threadgroups).
def _glu_jvp(dt, rows=3, half=2):
    x, dx = torch.randn(rows, 2 * half).to(dt), torch.randn(rows, 2 * half).to(dt)
    return dict(glu=torch.nn.functional.glu(x.float(), 1).to(dt), x=x, dx=dx, dim=1)


def _glu_backward_jvp(dt, rows=3, half=2):
    x, dx = torch.randn(rows, 2 * half).to(dt), torch.randn(rows, 2 * half).to(dt)
    grad_glu, dgrad_glu = torch.randn(rows, half).to(dt), torch.randn(rows, half).to(dt)
    return dict(grad_x=torch.randn(rows, 2 * half).to(dt), grad_glu=grad_glu, x=x, dgrad_glu=dgrad_glu, dx=dx,
                dim=1)


OVERLOAD_SAMPLES = [
    Sample("glu_jvp", _glu_jvp, large=lambda dt: _glu_jvp(dt, 96, 512)),
    # The CPU's composite rounds each op in half: compare in float32.
    Sample("glu_backward_jvp", _glu_backward_jvp, dtypes=(torch.float32,),
           large=lambda dt: _glu_backward_jvp(dt, 96, 512)),
]
