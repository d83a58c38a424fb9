"""logit_ (a fill op) where it differs from the CPU by design (the
registry's `differs`): half and bfloat16 clamp to [eps, 1 - eps] in float.
Its OpInfo samples: test_opinfo.py."""

from __future__ import annotations

import math

import pytest
import torch

from helpers import run_on_kernels


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_an_eps_below_the_types_spacing_near_one_stays_finite(dtype):
    """eps = 1e-6 rounds away from 1 - eps in half and bfloat16: the CPU's
    clamp in the type gives logit(1) = inf; ours clamps in float, so it
    gives the CPU's float32 answer rounded to the type (13.80, of the exact
    log((1 - eps) / eps) = 13.8155: float's 1 - (1 - eps) is 1% off)."""
    x = torch.tensor([1.0, 0.0, 0.5], dtype=dtype)
    cpu = x.clone().logit_(1e-6)
    ours, dispatches = run_on_kernels(lambda t: t.logit_(1e-6), x.clone())
    assert dispatches
    assert math.isinf(cpu[0].item())
    expected = x.float().logit_(1e-6).to(dtype)
    assert bool(expected.isfinite().all())
    torch.testing.assert_close(ours, expected, rtol=0, atol=0)
