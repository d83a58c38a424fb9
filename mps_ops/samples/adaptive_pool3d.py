"""Samples of the ops whose stub is csrc/operations/adaptive_pool3d.mm."""

from __future__ import annotations

import torch

from . import empty, INDEX, Sample


def _pool3d(dt):
    return torch.randn(2, 3, 5, 4, 6).to(dt)


def _adaptive_max_indices():
    # adaptive_max_pool3d's indices of a (2, 3, 5, 4, 6) input pooled to (2, 2, 3).
    _, indices = torch.ops.aten.adaptive_max_pool3d(torch.randn(2, 3, 5, 4, 6), [2, 2, 3])
    return indices


OVERLOAD_SAMPLES = [
    Sample("_adaptive_avg_pool3d", lambda dt: dict(self=_pool3d(dt), output_size=[2, 2, 3])),
    Sample("adaptive_avg_pool3d.out", lambda dt: dict(self=_pool3d(dt), output_size=[2, 2, 3], out=empty(dt))),
    Sample("_adaptive_avg_pool3d_backward",
           lambda dt: dict(grad_output=torch.randn(2, 3, 2, 2, 3).to(dt), self=_pool3d(dt))),
    Sample("adaptive_avg_pool3d_backward.grad_input",
           lambda dt: dict(grad_output=torch.randn(2, 3, 2, 2, 3).to(dt), self=_pool3d(dt),
                           grad_input=empty(dt))),
    Sample("adaptive_max_pool3d", lambda dt: dict(self=_pool3d(dt), output_size=[2, 2, 3])),
    Sample("adaptive_max_pool3d.out", lambda dt: dict(self=_pool3d(dt), output_size=[2, 2, 3], out=empty(dt),
                                                      indices=empty(torch.long))),
    Sample("adaptive_max_pool3d_backward",
           lambda dt: dict(grad_output=torch.randn(2, 3, 2, 2, 3).to(dt), self=_pool3d(dt),
                           indices=_adaptive_max_indices()), {"indices": INDEX}),
    Sample("adaptive_max_pool3d_backward.grad_input",
           lambda dt: dict(grad_output=torch.randn(2, 3, 2, 2, 3).to(dt), self=_pool3d(dt),
                           indices=_adaptive_max_indices(), grad_input=empty(dt)), {"indices": INDEX}),
]
