"""Samples of the ops whose stub is csrc/operations/segment_reduce.mm."""

from __future__ import annotations

import torch

from . import INDEX, Sample


def _segment_reduce(dt):
    return dict(data=torch.randn(6, 3).to(dt), reduce="sum", lengths=torch.tensor([2, 0, 3, 1]), axis=0,
                unsafe=False)


def _segment_reduce_backward(dt):
    data = torch.randn(6, 3).to(dt)
    offsets = torch.tensor([0, 2, 2, 5, 6])
    output = torch.segment_reduce(data.float(), "max", offsets=offsets).to(dt)
    return dict(grad=torch.randn(4, 3).to(dt), output=output, data=data, reduce="max", offsets=offsets,
                axis=0)


def _large_lengths():
    """200 segments of 0 to 11 rows (Sample.large)."""
    return torch.randint(0, 12, (200,))


def _large_segment_reduce(dt):
    lengths = _large_lengths()
    return dict(data=torch.randn(int(lengths.sum()), 16).to(dt), reduce="sum", lengths=lengths, axis=0,
                unsafe=False)


def _large_segment_reduce_backward(dt):
    lengths = _large_lengths()
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)])
    data = torch.randn(int(lengths.sum()), 16).to(dt)
    output = torch.segment_reduce(data.float(), "max", offsets=offsets).to(dt)
    return dict(grad=torch.randn(output.shape).to(dt), output=output, data=data, reduce="max", offsets=offsets,
                axis=0)


OVERLOAD_SAMPLES = [
    Sample("segment_reduce", _segment_reduce, {"lengths": INDEX}, large=_large_segment_reduce),
    Sample("_segment_reduce_backward", _segment_reduce_backward, {"offsets": INDEX},
           large=_large_segment_reduce_backward),
]
