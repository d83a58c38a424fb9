"""Samples of the ops whose stub is csrc/operations/jagged.mm."""

from __future__ import annotations

import torch

from . import INDEX, Sample

# Three batch items of lengths 2, 0 and 4 over 6 jagged rows of 3 elements.
_OFFSETS = (0, 2, 2, 6)


def _offsets():
    return [torch.tensor(_OFFSETS)]


def _to_padded(dt):
    return dict(values=torch.randn(6, 3).to(dt), offsets=_offsets(), max_lengths=[5], padding_value=-1.0)


def _to_jagged(dt):
    return dict(dense=torch.randn(3, 5, 3).to(dt), offsets=_offsets(), total_L=6)


def _large_to_padded(dt):
    """512 items of 0 to 127 rows padded to 64 (some cut)."""
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), torch.randint(0, 128, (512,)).cumsum(0)])
    return dict(values=torch.randn(int(offsets[-1]), 3).to(dt), offsets=[offsets], max_lengths=[64],
                padding_value=0.5)


def _large_to_jagged(dt):
    """512 items of 0 to 64 of the 64 padded rows."""
    lengths = torch.randint(0, 65, (512,))
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)])
    return dict(dense=torch.randn(512, 64, 3).to(dt), offsets=[offsets], total_L=int(offsets[-1]))


DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.uint8, torch.bool)

OVERLOAD_SAMPLES = [
    Sample("_jagged_to_padded_dense_forward", _to_padded, {"offsets": INDEX}, dtypes=DTYPES, large=_large_to_padded),
    Sample("_padded_dense_to_jagged_forward", _to_jagged, {"offsets": INDEX}, dtypes=DTYPES, large=_large_to_jagged),
]
