"""Samples of the ops whose stub is csrc/operations/matrix_exp.mm."""

from __future__ import annotations

import torch

from . import Sample

OVERLOAD_SAMPLES = [
    # Norms of about 3: one squaring after the widest polynomial. float32
    # first: the demo's call (the CPU's half result is NaN for most matrices).
    Sample("linalg_matrix_exp", lambda dt: dict(self=torch.randn(2, 4, 4).mul(0.8).to(dt)),
           dtypes=(torch.float32, torch.float16, torch.bfloat16),
           large=lambda dt: dict(self=torch.randn(3, 96, 96).mul(0.1).to(dt))),
]
