"""_cholesky_solve_helper, the solve under torch.cholesky_solve (a fill for
torch 2.9 to 2.11), against the CPU: lower and upper factors, batches (one
factor for many right-hand sides too), layouts, empty shapes, a singular
factor, what ours refuses that the CPU's helper takes or corrupts memory
with, and the gradient's route (cholesky_solve's backward solves again).

The emulator's routing is a dispatch mode, which torch.cholesky_solve's
composite runs beneath: the tests call the helper as the composite does
(operands checked, batches broadcast)."""

from __future__ import annotations

import pytest
import torch

from helpers import cholesky_factor, run_on_kernels

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"_cholesky_solve_helper"}

HELPER = torch.ops.aten._cholesky_solve_helper


def _check(b, factor, upper):
    """Against the CPU's float32 result and float64's: ours is as close to
    float64 as the CPU's, within float32's rounding of the substitutions."""
    expected = HELPER(b, factor, upper)
    actual, dispatches = run_on_kernels(lambda x, f: HELPER(x, f, upper), b, factor)
    assert [d.op for d in dispatches] == ["cholesky_solve"]
    assert actual.shape == expected.shape and actual.stride() == expected.stride()
    exact = HELPER(b.double(), factor.double(), upper)
    scale = exact.abs().max().clamp_min(1)
    assert (actual.double() - exact).abs().max() <= 1e-5 * scale * max(1, b.size(-2))
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5 * float(scale))
    return actual


@pytest.mark.parametrize("upper", [False, True], ids=["lower", "upper"])
@pytest.mark.parametrize("shape", [(1, 1), (5, 3), (2, 7, 4), (3, 2, 16, 1), (33, 40)], ids=str)
def test_matches_the_cpu(shape, upper):
    torch.manual_seed(0)
    n = shape[-2]
    _check(torch.randn(*shape), cholesky_factor(*shape[:-1], n, upper=upper), upper)


def test_one_factor_for_many_batches():
    """B's batches against one factor (the composite broadcasts A by a
    stride-0 expand)."""
    torch.manual_seed(1)
    factor = cholesky_factor(6, 6)
    _check(torch.randn(4, 6, 2), factor.expand(4, 6, 6), False)


@pytest.mark.parametrize("layout", ["transposed", "strided"])
def test_layouts(layout):
    torch.manual_seed(2)
    b, factor = torch.randn(2, 6, 3), cholesky_factor(2, 6, 6)
    if layout == "transposed":
        b, factor = b.mT.contiguous().mT, factor.mT.contiguous().mT
    else:
        b, factor = torch.stack([b, b], -1)[..., 0], torch.stack([factor, -factor], -1)[..., 0]
    _check(b, factor, False)


@pytest.mark.parametrize("shapes", [((0, 4, 3), (0, 4, 4)), ((4, 0), (4, 4)), ((0, 0), (0, 0))], ids=str)
def test_empty_shapes(shapes):
    b, a = torch.randn(shapes[0]), torch.randn(shapes[1])
    expected = HELPER(b, a, False)
    actual, dispatches = run_on_kernels(lambda x, f: HELPER(x, f, False), b, a)
    assert dispatches == [] and actual.shape == expected.shape and actual.stride() == expected.stride()


def test_a_singular_factor_gives_non_finite_values():
    """A zero on the diagonal: the divisions' infinities and NaNs, as the
    CPU's potrs (which checks nothing) gives; never finite garbage."""
    factor = cholesky_factor(4, 4)
    factor[1, 1] = 0
    actual, _ = run_on_kernels(lambda x, f: HELPER(x, f, False), torch.randn(4, 3), factor)
    assert not actual.isfinite().any()
    assert not HELPER(torch.randn(4, 3), factor, False).isfinite().any()


def test_the_composite_and_its_gradient_through_the_helper():
    """cholesky_solve's checks and broadcast, then the helper; its backward
    solves with the helper again: the composite written out in the
    helper's calls gives the CPU's gradient."""
    torch.manual_seed(3)
    b = torch.randn(3, 5, 2, dtype=torch.float64)
    factor = cholesky_factor(5, 5).double()
    expected = torch.autograd.functional.vjp(lambda x: torch.cholesky_solve(x, factor), b, torch.ones(3, 5, 2))[1]
    # d/dB of (F F^T)^-1 B with grad G is (F F^T)^-1 G: the helper on G.
    actual, dispatches = run_on_kernels(lambda g, f: HELPER(g, f.expand(3, 5, 5), False),
                                        torch.ones(3, 5, 2), factor.float())
    assert [d.op for d in dispatches] == ["cholesky_solve"]
    torch.testing.assert_close(actual.double(), expected, rtol=1e-5, atol=1e-6)


REFUSED = {
    "half": (lambda: (torch.randn(4, 2).half(), cholesky_factor(4, 4).half()), NotImplementedError),
    "complex64 (the CPU's LAPACK takes it)": (lambda: (torch.randn(4, 2).to(torch.complex64),
                                                       cholesky_factor(4, 4).to(torch.complex64)), NotImplementedError),
    "float64": (lambda: (torch.randn(4, 2).double(), cholesky_factor(4, 4).double()), TypeError),
    "B and A of different dtypes": (lambda: (torch.randn(4, 2), cholesky_factor(4, 4).half()), RuntimeError),
    "A not square": (lambda: (torch.randn(4, 2), torch.randn(4, 3)), RuntimeError),
    "B of other rows": (lambda: (torch.randn(3, 2), cholesky_factor(4, 4)), RuntimeError),
    "B 1-D": (lambda: (torch.randn(4), cholesky_factor(4, 4)), RuntimeError),
    # The CPU's helper writes outside its operands here (heap corruption);
    # torch.cholesky_solve broadcasts them first.
    "batches that differ": (lambda: (torch.randn(2, 4, 2), cholesky_factor(3, 4, 4)), RuntimeError),
    "batches that broadcast": (lambda: (torch.randn(2, 4, 2), cholesky_factor(1, 4, 4)), RuntimeError),
}


@pytest.mark.parametrize("name", REFUSED.keys())
def test_bad_operands_raise(name):
    make, error = REFUSED[name]
    b, a = make()
    with pytest.raises(error, match="cholesky_solve|float64|Metal|size"):
        run_on_kernels(lambda x, f: HELPER(x, f, False), b, a)
