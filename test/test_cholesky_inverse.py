"""cholesky_inverse (+ out=; a fill for torch 2.9 and 2.10) against the CPU:
lower and upper factors, batches, layouts, out= (kept strides or resized
contiguous, castable dtypes), empty shapes, a zero on the diagonal (the
CPU's LinAlgError, its batch named), the CPU's errors in its order, and its
gradient (the backward calls cholesky_inverse again)."""

from __future__ import annotations

import pytest
import torch

from helpers import cholesky_factor, errors_of_cpu_and_ours, run_on_kernels
from mps_ops.testing import device, emulate

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"cholesky_inverse"}


def _check(fn, factor, *args):
    expected = fn(factor, *args)
    actual, dispatches = run_on_kernels(fn, factor, *args)
    assert [d.op for d in dispatches] == ["cholesky_inverse"]
    assert actual.shape == expected.shape and actual.stride() == expected.stride()
    assert torch.equal(actual, actual.mT), "not exactly symmetric, as the CPU's"
    exact = fn(factor.double(), *[a.double() if isinstance(a, torch.Tensor) else a for a in args])
    scale = float(exact.abs().max().clamp_min(1))
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5 * scale)
    assert (actual.double() - exact).abs().max() <= 1e-5 * scale * max(1, factor.size(-1))
    return actual


@pytest.mark.parametrize("upper", [False, True], ids=["lower", "upper"])
@pytest.mark.parametrize("shape", [(1, 1), (5, 5), (3, 7, 7), (2, 2, 16, 16), (40, 40)], ids=str)
def test_matches_the_cpu(shape, upper):
    torch.manual_seed(0)
    _check(lambda f: torch.cholesky_inverse(f, upper), cholesky_factor(*shape, upper=upper))


@pytest.mark.parametrize("layout", ["transposed", "strided", "expanded"])
def test_layouts(layout):
    torch.manual_seed(1)
    factor = cholesky_factor(2, 6, 6)
    factor = {"transposed": lambda f: f.mT.contiguous().mT,
              "strided": lambda f: torch.stack([f, -f], -1)[..., 0],
              "expanded": lambda f: f[:1].expand(3, 6, 6)}[layout](factor)
    _check(torch.cholesky_inverse, factor)


@pytest.mark.parametrize("out", ["right size", "transposed", "empty", "other size", "batched empty"])
def test_out(out):
    """An empty out takes the result's column-major strides; any other of
    the result's size keeps its own; one resized (with the CPU's warning)
    is contiguous, as the CPU's."""
    factor = cholesky_factor(2, 5, 5) if out == "batched empty" else cholesky_factor(5, 5)
    make = {"right size": lambda: torch.empty(5, 5), "transposed": lambda: torch.empty(5, 5).t(),
            "empty": lambda: torch.empty(0), "other size": lambda: torch.empty(2, 2),
            "batched empty": lambda: torch.empty(0)}[out]
    expected = torch.cholesky_inverse(factor, out=make())
    with torch.device(device()), emulate():
        target = make().to(device())
        returned = torch.cholesky_inverse(factor.to(device()), out=target)
    assert returned is target
    assert target.stride() == expected.stride()
    torch.testing.assert_close(target.cpu(), expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0), (0, 3, 3)], ids=str)
def test_empty_shapes(shape):
    expected = torch.cholesky_inverse(torch.randn(shape))
    actual, dispatches = run_on_kernels(torch.cholesky_inverse, torch.randn(shape))
    assert dispatches == [] and actual.shape == expected.shape and actual.stride() == expected.stride()


@pytest.mark.parametrize("shape,zero", [((4, 4), (2, 2)), ((3, 4, 4), (1, 2, 2)), ((1, 3, 3), (0, 1, 1)),
                                        ((2, 2, 3, 3), (1, 0, 0, 0))], ids=str)
def test_a_zero_on_the_diagonal_raises_the_cpus_linalg_error(shape, zero):
    """The first zero's batch (where the input has batch dims) and its
    1-based element, in the CPU's words; a later batch's zero too."""
    factor = cholesky_factor(*shape)
    factor[zero] = 0
    if len(shape) > 2:
        factor.view(-1, shape[-1], shape[-1])[-1, -1, -1] = 0
    cpu, ours = errors_of_cpu_and_ours(torch.cholesky_inverse, factor)
    assert isinstance(ours, torch.linalg.LinAlgError) and str(ours) == str(cpu)


def test_the_gradient_through_our_kernel():
    """cholesky_inverse's backward calls it again (and matrix products):
    the gradient's value is the CPU's."""
    torch.manual_seed(2)
    factor = cholesky_factor(5, 5)
    expected = torch.autograd.functional.vjp(torch.cholesky_inverse, factor, torch.ones(5, 5))[1]
    with torch.device(device()), emulate():
        f = factor.to(device()).requires_grad_()
        torch.cholesky_inverse(f).sum().backward()
    torch.testing.assert_close(f.grad.cpu(), expected, rtol=1e-4, atol=1e-4)


ERRORS = {
    "1-D": lambda: torch.cholesky_inverse(torch.randn(4)),
    "not square": lambda: torch.cholesky_inverse(torch.randn(4, 3)),
    "not square, half": lambda: torch.cholesky_inverse(torch.randn(4, 3).half()),
    "half": lambda: torch.cholesky_inverse(torch.eye(4).half()),
    "int": lambda: torch.cholesky_inverse(torch.eye(4).int()),
    "out of a dtype the result cannot be cast to": lambda: torch.cholesky_inverse(torch.eye(4),
                                                                                  out=torch.empty(4, 4).long()),
    "half, out long": lambda: torch.cholesky_inverse(torch.eye(4).half(), out=torch.empty(4, 4).long()),
}


@pytest.mark.parametrize("name", ERRORS.keys())
def test_errors_are_the_cpus(name):
    errors_of_cpu_and_ours(lambda *_: ERRORS[name]())


def test_float64_and_complex_are_refused_clearly():
    with pytest.raises(TypeError, match="float64"):
        run_on_kernels(torch.cholesky_inverse, torch.eye(3, dtype=torch.float64))
    with pytest.raises(NotImplementedError, match="cholesky_inverse"):
        run_on_kernels(torch.cholesky_inverse, torch.eye(3, dtype=torch.complex64))
