"""Samples of the ops whose stub is csrc/operations/prelu.mm."""

from __future__ import annotations

import torch

from . import Sample


def _prelu(dt):
    """A slope per element (the kernel broadcasts any weight; prelu's own
    per-channel one is test_prelu.py's and the OpInfo's): operands of one
    shape, which the sweeps and the GPU launcher tile, stride and turn into
    CPU scalars."""
    return dict(self=torch.randn(2, 3, 4).to(dt), weight=torch.rand(2, 3, 4).to(dt))


OVERLOAD_SAMPLES = [Sample("_prelu_kernel", _prelu)]
