"""Samples of the ops whose stub is csrc/operations/batch_norm_stats.mm."""

from __future__ import annotations

import torch

from . import Sample


def _batch_norm_stats(dt, shape=(4, 3, 5), stats_dtype=None):
    channels = shape[1]
    return dict(input=torch.randn(shape).to(dt), running_mean=torch.zeros(channels).to(stats_dtype or dt),
                running_var=torch.ones(channels).to(stats_dtype or dt), momentum=0.1)


def _large(dt):
    """Each kernel path over 8 channels of 8192 values: with running
    statistics in the input's dtype, in float (half and bfloat input), and
    without (Sample.large; the last one split over two chunks per channel,
    then the merge kernel)."""
    shape = (32, 8, 256)
    calls = [_batch_norm_stats(dt, shape), dict(_batch_norm_stats(dt, shape), running_mean=None, running_var=None)]
    if dt != torch.float32:
        calls.append(_batch_norm_stats(dt, shape, stats_dtype=torch.float32))
    return calls


OVERLOAD_SAMPLES = [
    Sample("batch_norm_update_stats", _batch_norm_stats, large=_large),
]
