"""Samples of the ops whose stub is csrc/operations/rrelu.mm."""

from __future__ import annotations

import torch

from . import empty, Sample


def _rrelu(dt, training=False):
    return dict(self=torch.randn(3, 4).to(dt), noise=torch.zeros(3, 4).to(dt), lower=0.1, upper=0.3,
                training=training)


OVERLOAD_SAMPLES = [
    Sample("rrelu_with_noise", _rrelu),
    Sample("rrelu_with_noise.out", lambda dt: dict(_rrelu(dt), out=empty(dt))),
    # Training draws slopes; the CPU trains only in float32 and float64.
    Sample("rrelu_with_noise_", lambda dt: _rrelu(dt, training=True), dtypes=(torch.float32,), unpinned=True),
]
