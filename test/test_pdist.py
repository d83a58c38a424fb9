"""torch.pdist forward and backward (through autograd) against the CPU for
the norms with special cases (p = 0, 1, 2, inf) and general p, rows with
equal elements and identical rows (zero distances), many pairs, non-contiguous
grads (strided, or expanded from a sum), and the CPU's errors."""

from __future__ import annotations

import pytest
import torch

import mps_ops
from helpers import assert_matches, run_on_kernels, to_cpu, to_device
from mps_ops.testing import emulate

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"_pdist_forward", "_pdist_backward"}

P_VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, float("inf")]


def _rows(n, m):
    x = torch.randn(n, m)
    x[1] = x[0]  # a zero distance
    x[2, : m // 2] = x[3, : m // 2]  # equal elements in a pair
    return x


@pytest.mark.parametrize("p", P_VALUES)
# Rows of m columns take 8 to 256 threads a pair (the host's row_threads):
# m = 2500 spans several SIMD groups, its pairs merged through threadgroup memory.
@pytest.mark.parametrize("n, m", [(5, 7), (9, 300), (70, 3), (5, 2500)])
def test_pdist_forward_and_backward(p, n, m):
    torch.manual_seed(0)
    x = _rows(n, m)
    expected = torch.pdist(x, p)
    actual, dispatches = run_on_kernels(torch.pdist, x, p)
    assert_matches(actual, expected)
    assert len(dispatches) == 1

    grad = torch.randn(expected.shape)
    x_ref = x.clone().requires_grad_()
    torch.pdist(x_ref, p).backward(grad)
    x_dev, grad_dev = to_device((x.clone(), grad))
    x_dev.requires_grad_()
    with mps_ops.profile() as prof, emulate():
        torch.pdist(x_dev, p).backward(grad_dev)
    # A gradient element sums n - 1 terms that can cancel (p < 1 makes them
    # large): the float error scales with the largest gradient, on the CPU too.
    torch.testing.assert_close(to_cpu(x_dev.grad), x_ref.grad, rtol=2e-5,
                               atol=1e-5 * float(x_ref.grad.abs().max()))
    assert any(d.kernel.startswith("pdist_backward") for d in prof.dispatches)


def test_backward_of_non_contiguous_grads():
    """Autograd hands _pdist_backward the grad the caller gave: strided, or
    expanded from a sum's scalar (stride 0)."""
    x = _rows(6, 5)
    pairs = 15
    for make_loss in (lambda d: d.backward(torch.randn(2 * pairs)[::2].to(d.device)),
                      lambda d: d.sum().backward()):
        torch.manual_seed(0)
        x_ref = x.clone().requires_grad_()
        make_loss(torch.pdist(x_ref))
        torch.manual_seed(0)
        x_dev = to_device(x.clone()).requires_grad_()
        with mps_ops.profile() as prof, emulate():
            make_loss(torch.pdist(x_dev))
        assert_matches(to_cpu(x_dev.grad), x_ref.grad)
        assert any(d.kernel.startswith("pdist_backward") for d in prof.dispatches)


def test_pair_order_for_many_rows():
    x = torch.randn(300, 2)  # 44,850 pairs: the pair index estimate must be exact
    assert_matches(run_on_kernels(torch.pdist, x)[0], torch.pdist(x))


def test_degenerate_shapes():
    for x in (torch.randn(1, 3), torch.randn(0, 3)):
        actual, dispatches = run_on_kernels(torch.pdist, x)
        assert actual.shape == (0,) and not dispatches
    actual, _ = run_on_kernels(torch.pdist, torch.randn(4, 0))
    assert_matches(actual, torch.zeros(6))


def test_errors_are_the_cpus():
    for x, error in [(torch.randn(3, 4).int(), RuntimeError), (torch.randn(3, 4, 5), RuntimeError),
                     (torch.randn(3, 4).half(), RuntimeError)]:
        with pytest.raises(error) as cpu:
            torch.pdist(x)
        with pytest.raises(type(cpu.value)):
            run_on_kernels(torch.pdist, x)
    with pytest.raises(RuntimeError, match="contiguous"):
        run_on_kernels(lambda t: torch.ops.aten._pdist_forward(t, 2.0), torch.randn(4, 3).t())
    with pytest.raises(TypeError, match="float64"):
        run_on_kernels(torch.pdist, torch.randn(3, 4).double())


@pytest.mark.parametrize("p", P_VALUES)
def test_special_values_are_the_cpus(p):
    """NaN and infinite elements, and inf - inf differences (NaN): p = 0 keeps a
    NaN difference as NaN, as the CPU's min(ceil(|d|), 1) does, and counts an
    infinite one once."""
    inf, nan = float("inf"), float("nan")
    x = torch.tensor([[0.0, 1.0, 2.0], [nan, 1.0, 2.0], [inf, 1.0, 2.0], [inf, 1.0, 5.0],
                      [-inf, 0.0, 2.0], [0.0, 1.0, 2.0]])
    actual, dispatches = run_on_kernels(torch.pdist, x, p)
    assert dispatches
    torch.testing.assert_close(actual, torch.pdist(x, p), equal_nan=True)


@pytest.mark.parametrize("p", P_VALUES)
def test_backward_of_special_values_is_the_cpus(p):
    """The gradient of rows holding NaN and infinities: the CPU's sign of a
    NaN difference is NaN (p = 1 gave 0 here), and p = inf's test for the
    largest difference is NaN where |diff| - dist is (inf - inf; it gave 1)."""
    inf, nan = float("inf"), float("nan")
    x = torch.tensor([[0.0, 1.0, 2.0], [nan, 1.0, 2.0], [inf, 1.0, 2.0], [0.5, -1.0, 5.0], [1.0, 3.0, 2.0]])
    dist = torch.pdist(x, p)
    grad = torch.linspace(-1.0, 1.0, dist.numel())
    actual, dispatches = run_on_kernels(torch.ops.aten._pdist_backward, grad, x, p, dist)
    assert dispatches
    torch.testing.assert_close(actual, torch.ops.aten._pdist_backward(grad, x, p, dist), equal_nan=True)
