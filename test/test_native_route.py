"""mps_ops.testing.native_route(): our stubs registered for the test
device's own dispatch key, reached by C++ dispatch alone, as a Mac reaches
them for MPS tensors (bench_gpu.py times ours through it). Every registry
sample reaches the kernels it reaches under emulate(), with the same
result: no stub calls back into an op of ours on its own device and takes
another path there, as one would on a Mac, where every op of ours on an MPS
tensor is ours (but for the overrides of INTERNAL_OVERRIDE_CALLS, below).
Errors read back after the kernels raise as under the mode, and closing the
route gives the device its own kernels back."""

from __future__ import annotations

import contextlib

import pytest
import torch
from torch.utils._pytree import tree_flatten

import mps_ops
from mps_ops import samples as sample_table
from mps_ops.testing import emulate, native_route

from helpers import assert_matches, run_routed

pytestmark = pytest.mark.skipif(mps_ops.backend == "metal", reason="a Mac dispatches natively already")

SAMPLES = sample_table.samples()


# Stubs that call an override op of ours on their own device: on the route
# (as on a Mac with that override enabled) the call reaches our kernel, under
# the mode torch's. Each is exact either way: the learnable per-tensor
# fake-quantize backward truncates its zero point (trunc, 1 element);
# lstsq.mm selects with where (its error codes, the reciprocals of the
# singular values it keeps); the per-channel fake-quantize checks its zero
# points' range with logical_or.
INTERNAL_OVERRIDE_CALLS = {"_fake_quantize_learnable_per_tensor_affine_backward": {"trunc"},
                           "linalg_lstsq.out": {"where"},
                           "fake_quantize_per_channel_affine_cachemask": {"logical_or"}}


def _kernels_and_result(route, sample, dtype):
    kwargs = sample.call(dtype)
    torch.manual_seed(0)  # random ops draw the same numbers either way
    result, dispatches = run_routed(route, sample.op, **kwargs)
    internal = INTERNAL_OVERRIDE_CALLS.get(sample.overload, set()) if route is native_route else set()
    return [d.kernel for d in dispatches if d.op not in internal], result


@pytest.mark.parametrize("sample,record", SAMPLES, ids=[s.overload for s, _ in SAMPLES])
def test_every_sample_reaches_the_modes_kernels(sample, record):
    dtype = sample_table.sample_dtypes(sample, record)[0]
    mode_kernels, mode_result = _kernels_and_result(emulate, sample, dtype)
    route_kernels, route_result = _kernels_and_result(native_route, sample, dtype)
    assert mode_kernels, "the sample reaches a kernel of ours"
    assert route_kernels == mode_kernels
    if sample.unpinned:
        return
    route_leaves, mode_leaves = tree_flatten(route_result)[0], tree_flatten(mode_result)[0]
    assert len(route_leaves) == len(mode_leaves)
    for ours, theirs in zip(route_leaves, mode_leaves):
        if isinstance(theirs, torch.Tensor):
            assert_matches(ours, theirs, sample.overload)
        else:
            assert ours == theirs, sample.overload


def test_a_flag_read_back_raises_and_the_route_closes():
    x = torch.randn(6, 5).log_softmax(1)
    bad = torch.tensor([0, 1, 7, 2, 3, 4])
    forward = lambda x, t: torch.ops.aten.nll_loss_forward(x, t, None, 1, -100)  # noqa: E731
    # The CPU raises IndexError too: our kernels must be the ones that ran.
    with mps_ops.profile() as prof, pytest.raises(IndexError):
        run_routed(native_route, forward, x, bad)
    assert any(d.op == "nll_loss_partials" for d in prof.dispatches)
    _, dispatches = run_routed(contextlib.nullcontext, forward, x, torch.tensor([0, 1, 4, 2, 3, 4]))
    assert dispatches == [], "torch's own kernel again after the route"


def test_a_refused_call_on_the_route_raises_without_recursion():
    """Our checks refuse isposinf of a complex input and ask the CPU's op on
    empty twins which error to raise; on the emulator's route the CPU's
    dispatch key serves our stub, which must not ask again."""
    x = torch.randn(3, dtype=torch.complex64)
    with pytest.raises((RuntimeError, NotImplementedError)):
        run_routed(native_route, torch.isposinf, x)
