"""Samples of the ops whose stub is csrc/operations/min_max.mm."""

from __future__ import annotations

import torch

from . import empty, Sample


OVERLOAD_SAMPLES = [
    # A whole-tensor reduction of 64 x 300 values is split over 3 threadgroups
    # (3 chunks, reduction.cpp's choose_split) and merged by a second kernel:
    # the large calls (Sample.large) reach both.
    Sample("max.unary_out", lambda dt: dict(self=torch.randn(3, 4).to(dt), out=empty(dt)),
           large=lambda dt: dict(self=torch.randn(64, 300).to(dt), out=empty(dt))),
    Sample("min.unary_out", lambda dt: dict(self=torch.randn(3, 4).to(dt), out=empty(dt)),
           large=lambda dt: dict(self=torch.randn(64, 300).to(dt), out=empty(dt))),
    Sample("_aminmax", lambda dt: dict(self=torch.randn(3, 4).to(dt)),
           large=lambda dt: dict(self=torch.randn(64, 300).to(dt))),
    # Over the last dim (half/bfloat16 slices as words), and over the first
    # dim of long columns: split, and for half/bfloat16 two columns per word
    # (min_max.mm's column pairs), reduce and merge kernels both.
    Sample("_aminmax.dim", lambda dt: dict(self=torch.randn(3, 4).to(dt), dim=1, keepdim=False),
           large=lambda dt: [dict(self=torch.randn(64, 300).to(dt), dim=1, keepdim=False),
                             dict(self=torch.randn(20000, 40).to(dt), dim=0, keepdim=True)]),
]
