"""Samples of the ops whose stub is csrc/operations/softmax_backward.mm."""

from __future__ import annotations

import torch

from . import empty, Sample


def _softmax_backward(dt, log=False, dim=1):
    x = torch.randn(3, 5, 4)
    out = torch.log_softmax(x, dim) if log else torch.softmax(x, dim)
    return dict(grad_output=torch.randn(3, 5, 4).to(dt), output=out.to(dt), dim=dim, input_dtype=dt)


def _large(dt, log=False, rows=1024, length=300):
    """1024 rows of 300: several rows per threadgroup, rows longer than a
    SIMD group's share (Sample.large); log_softmax's 256 rows of 1000 are
    held in registers (32 threads per row, some with 31 elements)."""
    x = torch.randn(rows, length)
    out = torch.log_softmax(x, -1) if log else torch.softmax(x, -1)
    return dict(grad_output=torch.randn(rows, length).to(dt), output=out.to(dt), dim=-1, input_dtype=dt)


OVERLOAD_SAMPLES = [
    Sample("_softmax_backward_data", _softmax_backward, large=_large),
    Sample("_softmax_backward_data.out", lambda dt: dict(_softmax_backward(dt), grad_input=empty(dt))),
    Sample("_log_softmax_backward_data", lambda dt: _softmax_backward(dt, log=True),
           large=lambda dt: _large(dt, log=True, rows=256, length=1000)),
    Sample("_log_softmax_backward_data.out", lambda dt: dict(_softmax_backward(dt, log=True), out=empty(dt))),
]
