"""Samples of the ops whose stub is csrc/operations/segment_reduce.mm."""

from __future__ import annotations

import torch

from . import INDEX, Sample


# The samples: segments of 2, 0, 3 and 1 rows of 3 values; the large calls
# (Sample.large): 200 segments of 0 to 11 rows of 16.
def _sample_lengths():
    return torch.tensor([2, 0, 3, 1])


def _large_lengths():
    return torch.randint(0, 12, (200,))


def _segment_reduce(dt, lengths=None, width=3):
    lengths = _sample_lengths() if lengths is None else lengths
    return dict(data=torch.randn(int(lengths.sum()), width).to(dt), reduce="sum", lengths=lengths, axis=0,
                unsafe=False)


def _segment_reduce_backward(dt, lengths=None, width=3):
    lengths = _sample_lengths() if lengths is None else lengths
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)])
    data = torch.randn(int(lengths.sum()), width).to(dt)
    output = torch.segment_reduce(data.float(), "max", offsets=offsets).to(dt)
    return dict(grad=torch.randn(output.shape).to(dt), output=output, data=data, reduce="max", offsets=offsets,
                axis=0)


OVERLOAD_SAMPLES = [
    Sample("segment_reduce", _segment_reduce, {"lengths": INDEX},
           large=lambda dt: _segment_reduce(dt, _large_lengths(), 16)),
    Sample("_segment_reduce_backward", _segment_reduce_backward, {"offsets": INDEX},
           large=lambda dt: _segment_reduce_backward(dt, _large_lengths(), 16)),
]
