"""Samples of the ops whose stub is csrc/operations/batch_norm_stats.mm."""

from __future__ import annotations

import torch

from . import Sample


def _batch_norm_stats(dt):
    return dict(input=torch.randn(4, 3, 5).to(dt), running_mean=torch.zeros(3).to(dt),
                running_var=torch.ones(3).to(dt), momentum=0.1)


OVERLOAD_SAMPLES = [
    Sample("batch_norm_update_stats", _batch_norm_stats),
]
