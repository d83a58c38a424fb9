"""Samples of the ops whose stub is csrc/operations/weight_norm.mm."""

from __future__ import annotations

import torch

from . import STATISTICS, Sample


def _g_shape(shape, dim):
    g = [1] * len(shape)
    g[dim] = shape[dim]
    return g


def _forward(dt, shape=(4, 3, 5), dim=0):
    return dict(v=torch.randn(shape).to(dt), g=torch.randn(_g_shape(shape, dim)).to(dt), dim=dim)


def _backward(dt, shape=(4, 3, 5), dim=0):
    f = _forward(dt, shape, dim)
    _, norms = torch.ops.aten._weight_norm_interface(f["v"], f["g"], dim)
    return dict(grad_w=torch.randn(shape).to(dt), saved_v=f["v"], saved_g=f["g"], saved_norms=norms, dim=dim)


def _large(build):
    """A linear layer's weight (dim 0: 2048 rows of 512, rows of several
    threads) and a convolution's by its last dim (columns: 4096 of 64), rows
    longer than a register row (8 of 2**17), and channels of the last dim
    long enough to split their reduction (8 of 2**17)."""
    return lambda dt: [build(dt, (2048, 512), 0), build(dt, (64, 16, 4096), 2), build(dt, (8, 1 << 17), 0),
                       build(dt, (1 << 17, 8), 1)]


OVERLOAD_SAMPLES = [
    Sample("_weight_norm_interface", _forward, large=_large(_forward)),
    Sample("_weight_norm_interface_backward", _backward, {"saved_norms": STATISTICS}, large=_large(_backward)),
]
