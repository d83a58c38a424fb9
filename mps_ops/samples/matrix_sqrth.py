"""Samples of the ops whose stub is csrc/operations/matrix_sqrth.mm."""

from __future__ import annotations

import torch

from . import Sample


def _positive_definite(*shape):
    a = torch.randn(*shape)
    return a @ a.mT + shape[-1] * torch.eye(shape[-1])


OVERLOAD_SAMPLES = [
    Sample("linalg_matrix_sqrth", lambda dt: dict(self=_positive_definite(2, 4, 4).to(dt)), dtypes=(torch.float32,)),
]
