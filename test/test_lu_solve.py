"""linalg_lu_solve (a fill for torch 2.9 to 2.13) against the CPU: A X = B,
A^H X = B, X A = B and X A^H = B, batches broadcast both ways, layouts of LU
and B, empty shapes, a singular factor, the pivots' range checks, gradients,
torch.lu_solve and the CPU's errors in its order."""

from __future__ import annotations

import pytest
import torch

from helpers import (MATRIX_LAYOUTS, assert_errors_match, assert_float64_and_complex_refused, assert_gradients_match,
                     errors_of_cpu_and_ours, run_on_kernels)

LAYOUTS_TESTED_HERE = {"linalg_lu_solve"}
KERNEL = "lu_solve_dense_float_float"


def _factors(*shape, seed=0):
    torch.manual_seed(seed)
    n = shape[-1]
    return torch.linalg.lu_factor(torch.randn(*shape) + 0.5 * n ** 0.5 * torch.eye(n))


def _check(lu, pivots, b, left=True, adjoint=False, where=""):
    ours, dispatches = run_on_kernels(torch.linalg.lu_solve, lu, pivots, b, left=left, adjoint=adjoint)
    expected = torch.linalg.lu_solve(lu, pivots, b, left=left, adjoint=adjoint)
    assert [d.kernel for d in dispatches] == ([KERNEL] if expected.numel() else []), where
    assert ours.shape == expected.shape and ours.stride() == expected.stride(), where
    scale = max(float(expected.abs().max()) if expected.numel() else 1.0, 1.0)
    torch.testing.assert_close(ours, expected, rtol=0, atol=2e-6 * lu.shape[-1] * scale, msg=lambda m: f"{where}: {m}")
    return ours


CASES = [((4, 4), (4, 2)), ((2, 5, 5), (2, 5, 3)), ((5, 5), (3, 2, 5, 1)), ((3, 1, 4, 4), (2, 4, 2)),
         ((1, 1), (1, 3)), ((40, 40), (40, 7))]


@pytest.mark.parametrize("adjoint", [False, True], ids=["plain", "adjoint"])
@pytest.mark.parametrize("left", [True, False], ids=["left", "right"])
@pytest.mark.parametrize("lu_shape,b_shape", CASES, ids=str)
def test_matches_the_cpu(lu_shape, b_shape, left, adjoint):
    lu, pivots = _factors(*lu_shape, seed=len(lu_shape) + lu_shape[-1])
    torch.manual_seed(1)
    b = torch.randn(*b_shape) if left else torch.randn(*b_shape).mT
    _check(lu, pivots, b, left, adjoint, f"{lu_shape} {b_shape}")


@pytest.mark.parametrize("layout", MATRIX_LAYOUTS)
@pytest.mark.parametrize("which", ["LU", "B"])
def test_layouts(which, layout):
    lu, pivots = _factors(2, 6, 6, seed=2)
    torch.manual_seed(3)
    b = torch.randn(2, 6, 3)
    if which == "LU":
        if layout == "expanded_batch":
            lu, pivots = lu[:1].expand(3, 6, 6), pivots[:1].expand(3, 6)
            b = torch.randn(3, 6, 3)
        elif layout == "sliced":
            lu = torch.cat([lu, lu], -1)[..., ::2]  # not a factor of anything, but a layout to read
        else:
            lu = MATRIX_LAYOUTS[layout](lu)
    else:
        b = b[:1].expand(2, 6, 3) if layout == "expanded_batch" else MATRIX_LAYOUTS[layout](b)
    _check(lu, pivots, b, True, False, f"{which} {layout}")


@pytest.mark.parametrize("lu_shape,b_shape", [((0, 0), (0, 3)), ((4, 4), (4, 0)), ((0, 3, 3), (0, 3, 2)),
                                              ((2, 3, 3), (0, 2, 3, 1))], ids=str)
def test_empty_shapes(lu_shape, b_shape):
    lu, pivots = _factors(*lu_shape) if 0 not in lu_shape[-1:] else (torch.empty(lu_shape),
                                                                     torch.empty(lu_shape[:-1], dtype=torch.int32))
    _check(lu, pivots, torch.randn(b_shape))


def test_a_singular_factor_divides_by_zero_as_the_cpus():
    lu, pivots = _factors(4, 4, seed=4)
    lu[2, 2] = 0
    for adjoint in (False, True):
        ours, _ = run_on_kernels(torch.linalg.lu_solve, lu, pivots, torch.ones(4, 1), adjoint=adjoint)
        expected = torch.linalg.lu_solve(lu, pivots, torch.ones(4, 1), adjoint=adjoint)
        torch.testing.assert_close(ours, expected, equal_nan=True)


@pytest.mark.parametrize("value", [0, -3, 5])
def test_pivots_out_of_range_raise_the_cpus_error(value):
    lu, pivots = _factors(4, 4, seed=5)
    pivots[1] = value
    cpu, ours = errors_of_cpu_and_ours(torch.linalg.lu_solve, lu, pivots, torch.ones(4, 1))
    assert str(ours) == str(cpu)


def test_gradients_through_our_kernel():
    lu, pivots = _factors(5, 5, seed=6)
    torch.manual_seed(7)
    b = torch.randn(5, 2)
    weights = torch.randn(5, 2)

    def loss(lu, b):
        return (torch.linalg.lu_solve(lu, pivots.to(lu.device), b) * weights.to(lu.device)).sum()

    assert_gradients_match(loss, lu, b)


def test_torch_lu_solve_reaches_our_kernel():
    lu, pivots = _factors(2, 4, 4, seed=8)
    b = torch.randn(2, 4, 3)
    ours, dispatches = run_on_kernels(lambda *a: torch.lu_solve(*a), b, lu, pivots)
    assert [d.kernel for d in dispatches] == [KERNEL]
    torch.testing.assert_close(ours, torch.lu_solve(b, lu, pivots), rtol=1e-5, atol=1e-5)


_LU, _PIVOTS = _factors(2, 4, 4, seed=9)
_B = torch.randn(2, 4, 3)
# Each call takes (LU, pivots, B) as arguments, so that they reach the test
# device: a tensor the lambda captured would stay on the CPU and meet the
# CPU's kernel on a GPU backend.
ERRORS = {
    "LU int": lambda lu, p, b: torch.linalg.lu_solve(lu.long(), p, b.long()),
    "dtypes differ": lambda lu, p, b: torch.linalg.lu_solve(lu, p, b.double()),
    "pivots int64": lambda lu, p, b: torch.linalg.lu_solve(lu, p.long(), b),
    "LU not square": lambda lu, p, b: torch.linalg.lu_solve(lu[..., :3], p, b),
    "B 1-D": lambda lu, p, b: torch.linalg.lu_solve(lu, p, b[0, :, 0]),
    "shapes, left": lambda lu, p, b: torch.linalg.lu_solve(lu, p, b[:, :3, :3]),
    "shapes, right": lambda lu, p, b: torch.linalg.lu_solve(lu, p, b[:, :3, :3], left=False),
    "pivots per batch": lambda lu, p, b: torch.linalg.lu_solve(lu, p[..., :3], b),
    "pivots 0-dim": lambda lu, p, b: torch.linalg.lu_solve(lu, p[0, 0], b),
    "pivots batch": lambda lu, p, b: torch.linalg.lu_solve(lu, p[:1], b),
    "batches do not broadcast": lambda lu, p, b: torch.linalg.lu_solve(lu, p, b.expand(3, 2, 4, 3)[:, 0]),
    "half": lambda lu, p, b: torch.linalg.lu_solve(lu.half(), p, b.half()),
}


@pytest.mark.parametrize("name", ERRORS.keys())
def test_errors_are_the_cpus(name):
    assert_errors_match(ERRORS[name], _LU, _PIVOTS, _B, same_words=name != "half")


def test_float64_and_complex_are_refused_clearly():
    assert_float64_and_complex_refused(torch.linalg.lu_solve, "linalg_lu_solve", _LU, _PIVOTS, _B)
