"""Samples of the ops whose stub is csrc/operations/embedding_renorm.mm."""

from __future__ import annotations

import torch

from . import INDEX, Sample


OVERLOAD_SAMPLES = [
    Sample("embedding_renorm_", lambda dt: dict(self=torch.randn(5, 3).to(dt) * 2,
                                                indices=torch.tensor([0, 3, 3, -1]), max_norm=1.0,
                                                norm_type=2.0), {"indices": INDEX}),
]
