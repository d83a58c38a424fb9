"""Samples of the ops whose stub is csrc/operations/logical.mm."""

from __future__ import annotations

import torch

from . import Elementwise, empty, Sample

_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.uint8, torch.bool)


def _some_zeros(shape):
    """Values with zeros among them: both truth values on either side."""
    return torch.randint(-1, 2, shape).float() * torch.rand(shape).add(0.5)


def _logical(dt):
    return dict(self=_some_zeros((3, 4)).to(dt), other=_some_zeros((3, 4)).to(dt))


def _both_outs(dt):
    """A bool out, and one of the operands' dtype (the kernels that write 0
    and 1 in it): every kernel the launcher (tools/gpu_launch_all.py) must
    reach."""
    big = dict(self=_some_zeros((40, 300)).to(dt), other=_some_zeros((40, 300)).to(dt))
    return [dict(big, out=empty(torch.bool)), dict(big, out=empty(dt))]


OVERLOAD_SAMPLES = [Sample(f"{name}.out", lambda dt: dict(_logical(dt), out=empty(torch.bool)), dtypes=_DTYPES,
                           large=_both_outs)
                    for name in ("logical_and", "logical_or", "logical_xor")]

ELEMENTWISE = {
    name: Elementwise(fn, (_some_zeros, _some_zeros), inplace=inplace)
    for name, fn, inplace in [("logical_and", torch.logical_and, torch.Tensor.logical_and_),
                              ("logical_or", torch.logical_or, torch.Tensor.logical_or_),
                              ("logical_xor", torch.logical_xor, torch.Tensor.logical_xor_)]
}
