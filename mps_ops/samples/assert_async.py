"""Samples of the ops whose stub is csrc/operations/assert_async.mm."""

from __future__ import annotations

import torch

from . import Sample


def _value(dt):
    """One nonzero value (the call returns nothing; a zero raises)."""
    return torch.tensor(3, dtype=dt) if dt == torch.bool or not dt.is_floating_point else torch.tensor(0.5, dtype=dt)


DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.uint8, torch.bool)

OVERLOAD_SAMPLES = [
    Sample("_assert_async", lambda dt: dict(self=_value(dt)), dtypes=DTYPES),
    Sample("_assert_async.msg", lambda dt: dict(self=_value(dt), assert_msg="the value must be nonzero"),
           dtypes=DTYPES),
]
