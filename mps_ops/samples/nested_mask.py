"""Samples of the ops whose stub is csrc/operations/nested_mask.mm."""

from __future__ import annotations

import torch

from . import MASK, Sample


def _mask_left_aligned(dt, rows=3, columns=5, dim=4):
    """A padding mask's complement as nn.TransformerEncoder passes it (true:
    a token): left-aligned rows of random lengths, and the last row with a
    gap where a random draw puts one."""
    lengths = torch.randint(0, columns + 1, (rows,))
    mask = torch.arange(columns) < lengths[:, None]
    if torch.rand(()) < 0.5:
        mask[-1, torch.randint(0, columns, ())] = True
    return dict(t=torch.randn(rows, columns, dim).to(dt), mask=mask)


OVERLOAD_SAMPLES = [
    # large: 600 rows of 700 columns, every pair of neighbours one thread.
    Sample("_nested_tensor_from_mask_left_aligned", _mask_left_aligned, {"mask": MASK},
           dtypes=(torch.float32, torch.float16),
           large=lambda dt: _mask_left_aligned(dt, rows=600, columns=700, dim=1)),
]
