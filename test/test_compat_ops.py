"""Operators some supported releases lack (the registry's `schemas`) are also
defined as torch.ops.mps_ops_compat.<op>, so that their kernels run on any
release (the GPU launcher reaches them there on torch 2.11): the recorded
schemas must be torch's own, and the compat ops must compute what aten's do."""

from __future__ import annotations

import pytest
import torch

from helpers import assert_matches, run_on_kernels
from mps_ops import _registry
from mps_ops.samples import SAMPLES_BY_OVERLOAD

COMPAT = sorted(_registry.compat_overloads())


def _compat_op(overload):
    return _registry.op_overload(overload, "mps_ops_compat")


def _aten_op(overload):
    return _registry.op_overload(overload, "aten")


def test_the_registry_names_some():
    assert "_upsample_lanczos2d_aa" in COMPAT


@pytest.mark.parametrize("overload", COMPAT)
def test_schema_is_torchs_where_torch_defines_it(overload):
    if not _registry._exists(overload):
        pytest.skip(f"this torch lacks aten::{overload}: nothing to compare with")
    ours = str(_compat_op(overload)._schema).split("::", 1)[1]
    assert ours == str(_aten_op(overload)._schema).split("::", 1)[1]


@pytest.mark.parametrize("overload", COMPAT)
def test_compat_op_computes_what_aten_does(overload):
    if not _registry._exists(overload):
        pytest.skip(f"this torch lacks aten::{overload}: no CPU result to compare with")
    sample = SAMPLES_BY_OVERLOAD[overload]
    for dtype in (torch.float32, torch.uint8):
        try:
            expected = _aten_op(overload)(**sample.call(dtype))
        except RuntimeError:  # the CPU rejects the dtype (backward in uint8)
            continue
        actual, dispatches = run_on_kernels(_compat_op(overload), **sample.call(dtype))
        assert dispatches, overload
        assert_matches(actual, expected, f"{overload} {dtype}")


def test_lanczos_keeps_a_constant_image_on_any_release():
    # Runs where aten lacks the operator too: its weights sum to one, so a
    # constant image stays constant, up and down.
    x = torch.full((1, 2, 9, 14), 3.25)
    for size in ((4, 5), (20, 31)):
        actual, dispatches = run_on_kernels(_compat_op("_upsample_lanczos2d_aa"), x, list(size), False)
        assert dispatches
        assert actual.shape == (1, 2, *size)
        torch.testing.assert_close(actual, torch.full_like(actual, 3.25), rtol=1e-6, atol=1e-6)


def test_lanczos_backward_keeps_the_gradients_sum_on_any_release():
    # Each output's weights sum to one, so the backward spreads each
    # gradient over the input without changing its sum.
    torch.manual_seed(0)
    grad = torch.randn(2, 3, 7, 19)
    backward = _compat_op("_upsample_lanczos2d_aa_backward")
    for input_size in ((2, 3, 16, 8), (2, 3, 4, 40)):
        actual, dispatches = run_on_kernels(backward, grad, [7, 19], list(input_size), False)
        assert dispatches
        assert actual.shape == input_size
        torch.testing.assert_close(actual.sum((2, 3)), grad.sum((2, 3)), rtol=1e-5, atol=1e-5)
