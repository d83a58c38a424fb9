"""Samples of the ops whose stub is csrc/operations/hash_tensor.mm."""

from __future__ import annotations

import torch

from . import empty, Sample

# Floats widen to double bits, integers and bool to 64 bits with their sign:
# one dtype of each kind.
_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int8, torch.int64, torch.bool)


def _input(dt, *shape):
    return (torch.randn(*shape) * 50).to(dt)


OVERLOAD_SAMPLES = [
    # 64 x 300 over all dims splits into several groups merged by a second
    # kernel (reduction.cpp's choose_split): the large call reaches both.
    Sample("hash_tensor", lambda dt: dict(self=_input(dt, 3, 4), dim=[1]), dtypes=_DTYPES,
           large=lambda dt: dict(self=_input(dt, 64, 300))),
    Sample("hash_tensor.out", lambda dt: dict(self=_input(dt, 3, 4), keepdim=True, out=empty(torch.uint64)),
           dtypes=_DTYPES),
]
