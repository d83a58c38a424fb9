"""linalg_matrix_exp (torch.linalg.matrix_exp, torch.matrix_exp; a fill for
torch 2.9 to 2.13) against the float64 truth and the CPU: norms that take no
squaring and many, batches whose matrices need different squarings,
matrices whose exponential is known exactly, layouts, empty shapes,
non-finite inputs, half and bfloat16 (computed in float32), the gradient
(matrix_exp of a block matrix), orthogonal parametrization (which calls it),
and the CPU's errors."""

from __future__ import annotations

import math
import pathlib
import re

import pytest
import torch

from helpers import (MATRIX_LAYOUTS, assert_at_least_as_accurate, assert_errors_match,
                     assert_float64_and_complex_refused, assert_gradients_match, assert_normwise_as_accurate,
                     run_on_kernels, seeded_randn)
from mps_ops.testing import device, emulate

LAYOUTS_TESTED_HERE = {"linalg_matrix_exp"}

FLOAT32_ROUNDOFF = 2.0**-24
STUB = pathlib.Path(__file__).parents[1] / "csrc" / "operations" / "matrix_exp.mm"


def _kernels(dispatches):
    return {d.kernel for d in dispatches}


def _check_float32(a, where=""):
    """Ours as near the float64 truth as the CPU's (another polynomial,
    rounded in another order): test/helpers.py's normwise bound, with 16
    roundings per row of the largest entry."""
    ours, dispatches = run_on_kernels(torch.linalg.matrix_exp, a)
    assert _kernels(dispatches) == {"taylor_block_dense_float_float"}, where
    assert ours.is_contiguous(), where
    truth = torch.linalg.matrix_exp(a.double())
    assert_normwise_as_accurate(ours, torch.linalg.matrix_exp(a), truth, 16 * a.size(-1), where)
    return ours


@pytest.mark.parametrize("scale", [1e-5, 0.05, 1.0, 4.0, 12.0], ids=str)
@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (3, 5, 5), (2, 2, 16, 16), (40, 40)], ids=str)
def test_float32_as_near_the_truth_as_the_cpu(shape, scale):
    """Scales from no squaring (the cheapest polynomial) to several."""
    _check_float32(seeded_randn(*shape) * (scale / math.sqrt(shape[-1])), f"{shape} x {scale}")


def test_a_batch_whose_matrices_need_different_squarings():
    scales = torch.tensor([0.0, 1e-3, 0.5, 6.0, 25.0]).view(5, 1, 1)
    _check_float32(seeded_randn(5, 6, 6, seed=1) * scales / math.sqrt(6))


@pytest.mark.parametrize("t", [0.0, 0.3, 2.0, 40.0], ids=str)
def test_known_exponentials(t):
    """A rotation generator's exponential is the rotation; a diagonal
    matrix's, the diagonal's exponentials; a nilpotent one's, its finite
    series."""
    rotation_generator = torch.tensor([[0.0, -t], [t, 0.0]])
    expected = torch.tensor([[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]])
    torch.testing.assert_close(_check_float32(rotation_generator), expected, rtol=0, atol=4e-6 * max(1.0, t))
    diagonal = torch.diag(torch.tensor([-t, 0.5 * t, t / 7]))
    expected = torch.diag(torch.exp(torch.diag(diagonal)))
    torch.testing.assert_close(_check_float32(diagonal), expected, rtol=2e-6, atol=2e-6 * float(expected.max()))
    nilpotent = torch.triu(torch.full((4, 4), t), diagonal=1)
    n2 = nilpotent @ nilpotent
    series = torch.eye(4) + nilpotent + n2 / 2 + n2 @ nilpotent / 6
    torch.testing.assert_close(_check_float32(nilpotent), series, rtol=2e-6, atol=1e-6)


def test_the_zero_matrix_gives_the_identity_exactly():
    assert torch.equal(_check_float32(torch.zeros(3, 4, 4)), torch.eye(4).expand(3, 4, 4))


@pytest.mark.parametrize("layout", MATRIX_LAYOUTS)
def test_layouts(layout):
    _check_float32(MATRIX_LAYOUTS[layout](seeded_randn(2, 6, 6, seed=3)), layout)


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0), (0, 3, 3)], ids=str)
def test_empty_shapes(shape):
    ours, dispatches = run_on_kernels(torch.linalg.matrix_exp, torch.randn(shape))
    assert dispatches == [] and ours.shape == shape


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), 1e30], ids=str)
def test_non_finite_and_overflowing_inputs_give_nan_as_the_cpus(value):
    """The CPU's matrix is all NaN for each (a NaN spreads through its
    products, an infinity or an overflowing squaring meets a zero in one);
    so is ours."""
    a = torch.tensor([[value, 0.0], [0.0, 1.0]])
    expected = torch.linalg.matrix_exp(a)
    ours, _ = run_on_kernels(torch.linalg.matrix_exp, a)
    torch.testing.assert_close(ours, expected, equal_nan=True)


def test_a_nan_matrix_leaves_its_batch_neighbours_alone():
    a = seeded_randn(3, 4, 4, seed=4)
    a[1, 2, 3] = float("nan")
    ours, _ = run_on_kernels(torch.linalg.matrix_exp, a)
    assert ours[1].isnan().all()
    torch.testing.assert_close(ours[[0, 2]], torch.linalg.matrix_exp(a[[0, 2]]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape", [(1, 1), (5, 5), (3, 8, 8)], ids=str)
def test_half_and_bfloat16_round_once(shape, dtype):
    """Computed in float32 and rounded once: no further from the truth than
    the CPU's (whose half result is NaN for most matrices of norm above
    one, in torch 2.13)."""
    a = seeded_randn(*shape, seed=5).to(dtype)
    ours, dispatches = run_on_kernels(torch.linalg.matrix_exp, a)
    assert ours.dtype == dtype and _kernels(dispatches) == {"taylor_block_dense_float_float"}
    truth = torch.linalg.matrix_exp(a.double())
    assert_at_least_as_accurate(ours, torch.linalg.matrix_exp(a), truth, str(dtype))
    torch.testing.assert_close(ours, truth.to(dtype), rtol=0, atol=float(truth.abs().max()) * 8 * (
        2.0**-10 if dtype == torch.float16 else 2.0**-7))


def test_the_gradient_through_our_kernel():
    """matrix_exp's backward is matrix_exp of the 2n x 2n block matrix
    [[A^T, G], [0, A^T]]: ours again."""
    weights = seeded_randn(5, 5, seed=7)
    assert_gradients_match(lambda x: (torch.matrix_exp(x) * weights.to(x.device)).sum(), seeded_randn(5, 5, seed=6),
                           rtol=1e-5, atol=1e-5)


def test_orthogonal_parametrization_runs_on_our_kernel():
    """torch.nn.utils.parametrizations.orthogonal maps a square weight
    through matrix_exp: its weight is orthogonal, as on the CPU."""
    torch.manual_seed(8)
    layer = torch.nn.utils.parametrizations.orthogonal(torch.nn.Linear(6, 6))
    expected = layer.weight.detach().clone()
    with torch.device(device()), emulate():
        on_device = layer.to(device())
        import mps_ops

        with mps_ops.profile() as prof:
            weight = on_device.weight.detach().cpu()
    assert "taylor_block_dense_float_float" in _kernels(prof.dispatches)
    torch.testing.assert_close(weight @ weight.T, torch.eye(6), rtol=0, atol=2e-6)
    torch.testing.assert_close(weight, expected, rtol=1e-5, atol=2e-6)


ERRORS = {
    "1-D": lambda: torch.linalg.matrix_exp(torch.randn(4)),
    "not square": lambda: torch.linalg.matrix_exp(torch.randn(4, 3)),
    "not square, half": lambda: torch.linalg.matrix_exp(torch.randn(2, 4, 3).half()),
    "int": lambda: torch.linalg.matrix_exp(torch.eye(4).int()),
    "bool": lambda: torch.linalg.matrix_exp(torch.eye(4).bool()),
}


@pytest.mark.parametrize("name", ERRORS.keys())
def test_errors_are_the_cpus(name):
    assert_errors_match(ERRORS[name])


def test_float64_and_complex_are_refused_clearly():
    assert_float64_and_complex_refused(torch.linalg.matrix_exp, "linalg_matrix_exp", torch.eye(3))


def _tail(theta, degree):
    """sum_{k > degree} theta^k / k!, to well below float32's roundoff."""
    term = theta ** (degree + 1) / math.factorial(degree + 1)
    total, k = 0.0, degree + 1
    while term > 1e-30:
        total += term
        k += 1
        term *= theta / k
    return total


def test_each_thetas_tail_is_float32s_roundoff():
    """The stub's table: for each Taylor degree p * q, theta is where the
    series' tail reaches 2^-24 (the largest norm the polynomial serves)."""
    schedules = re.findall(r"\{(\d), (\d), ([0-9.e+-]+)\}", STUB.read_text())
    assert len(schedules) == 7
    degrees = [int(p) * int(q) for p, q, _ in schedules]
    assert degrees == sorted(degrees)
    for p, q, theta in schedules:
        degree, theta = int(p) * int(q), float(theta)
        assert _tail(theta, degree) == pytest.approx(FLOAT32_ROUNDOFF, rel=1e-9), degree
