"""linalg_matrix_sqrth (torch 2.14 and later; before, reached as
torch.ops.mps_ops_compat.linalg_matrix_sqrth) against the float64 result of
its definition, X = Q sqrt(max(L, 0)) Q^T from the eigendecomposition of A's
lower triangle, and, where the running torch defines it, against the CPU's
own op: positive-definite, semi-definite and indefinite matrices, batches,
strided operands, empty inputs, the CPU's errors, out= and gradients. The
errors' words were read from torch 2.14.1's CPU."""

from __future__ import annotations

import pytest
import torch

from helpers import MATRIX_LAYOUTS, run_on_kernels
from mps_ops._registry import _exists, op_overload

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"linalg_matrix_sqrth"}

SQRTH = op_overload("linalg_matrix_sqrth")  # aten's where torch defines it, else mps_ops_compat's
DEFINED = _exists("linalg_matrix_sqrth")
needs_the_aten_op = pytest.mark.skipif(not DEFINED, reason="torch.linalg.matrix_sqrth exists from torch 2.14")


def _positive_definite(*shape, seed=0):
    torch.manual_seed(seed)
    a = torch.randn(*shape)
    return a @ a.mT + 0.5 * torch.eye(shape[-1])


def _truth(a):
    values, vectors = torch.linalg.eigh(a.double(), UPLO="L")
    return (vectors * values.clamp_min(0).sqrt().unsqueeze(-2)) @ vectors.mH


def _float32_formula(a):
    values, vectors = torch.linalg.eigh(a, UPLO="L")
    return (vectors * values.clamp_min(0).sqrt().unsqueeze(-2)) @ vectors.mH


def _check(a, where=""):
    """Ours near the definition in float64: within float32 rounding
    (relative to the largest entry, grown with n), or twice the error the
    definition itself makes in float32 on the CPU (a square root of an
    eigenvalue near zero magnifies eigh's rounding); and as near the CPU's
    op where the running torch defines it."""
    ours, dispatches = run_on_kernels(SQRTH, a)
    assert ours.dtype == torch.float32 and ours.shape == a.shape, where
    if a.numel() == 0:
        return ours
    assert [d.kernel for d in dispatches] == ["sqrth_product_dense_float_float"], where
    n = a.shape[-1]
    truth = _truth(a)
    scale = float(truth.abs().max()) or 1.0
    float32_error = float((_float32_formula(a).double() - truth).abs().max())
    bound = max(16 * n * 1.2e-7 * scale, 2 * float32_error)
    torch.testing.assert_close(ours.double(), truth, rtol=0, atol=bound, msg=lambda m: f"{where}: {m}")
    if DEFINED:
        cpu = torch.linalg.matrix_sqrth(a)
        torch.testing.assert_close(ours, cpu, rtol=0, atol=bound + float((cpu.double() - truth).abs().max()))
    return ours


@pytest.mark.parametrize("n", [1, 2, 5, 16, 40])
def test_positive_definite_matrices(n):
    a = _positive_definite(3, n, n, seed=n)
    x = _check(a, f"n={n}")
    torch.testing.assert_close(x @ x, a, rtol=0, atol=1e-5 * n * float(a.abs().max()))
    torch.testing.assert_close(x, x.mT, rtol=0, atol=1e-6 * n * float(x.abs().max()))


def test_semi_definite_and_indefinite_matrices_take_zero_for_negative_eigenvalues():
    """Eigenvalues below zero (rounding of a semi-definite matrix, or an
    indefinite one) count as zero, as the CPU's clamp does."""
    torch.manual_seed(1)
    low_rank = torch.randn(6, 2)
    _check(low_rank @ low_rank.T, "rank 2")
    indefinite = torch.diag(torch.tensor([4.0, -1.0, 9.0]))
    x = _check(indefinite, "indefinite")
    assert torch.equal(x, torch.diag(torch.tensor([2.0, 0.0, 3.0])))


def test_only_the_lower_triangle_is_read():
    a = _positive_definite(5, 5, seed=2)
    garbage = a.tril() + torch.randn(5, 5).triu(1) * 100
    ours, _ = run_on_kernels(SQRTH, garbage)
    expected, _ = run_on_kernels(SQRTH, a)
    torch.testing.assert_close(ours, expected, rtol=0, atol=1e-5)


@pytest.mark.parametrize("layout", list(MATRIX_LAYOUTS))
def test_layouts(layout):
    _check(MATRIX_LAYOUTS[layout](_positive_definite(2, 6, 6, seed=3)), layout)


@pytest.mark.parametrize("shape", [(0, 0), (3, 0, 0), (0, 4, 4)])
def test_empty(shape):
    _check(torch.empty(shape), str(shape))


BAD_INPUTS = [
    (torch.randn(3), RuntimeError, "linalg.matrix_sqrth: The input tensor A must have at least 2 dimensions."),
    (torch.randn(3, 4), RuntimeError,
     "linalg.matrix_sqrth: A must be batches of square matrices, but they are 3 by 4 matrices"),
    (torch.ones(3, 3, dtype=torch.long), RuntimeError,
     "linalg.matrix_sqrth: Expected a floating point or complex tensor as input. Got Long"),
    (torch.eye(3).half(), RuntimeError, "linalg.matrix_sqrth: Low precision dtypes not supported. Got Half"),
    (torch.eye(3).bfloat16(), RuntimeError, "linalg.matrix_sqrth: Low precision dtypes not supported. Got BFloat16"),
]


@pytest.mark.parametrize("a, error, message", BAD_INPUTS, ids=lambda v: str(getattr(v, "dtype", "")))
def test_errors_are_the_cpus(a, error, message):
    with pytest.raises(error) as ours:
        run_on_kernels(SQRTH, a)
    assert str(ours.value).startswith(message)
    if DEFINED:
        with pytest.raises(error) as cpu:
            torch.linalg.matrix_sqrth(a)
        assert str(cpu.value).startswith(message)


def test_float64_is_refused_clearly():
    with pytest.raises(TypeError, match="float64"):
        run_on_kernels(SQRTH, torch.eye(3).double())


@needs_the_aten_op
def test_out_goes_through_torchs_wrapper():
    a = _positive_definite(2, 4, 4, seed=4)
    # The Python function takes no out=; the aten overload exists.
    ours, _ = run_on_kernels(lambda x, o: torch.ops.aten.linalg_matrix_sqrth.out(x, out=o), a, torch.empty(0))
    torch.testing.assert_close(ours, torch.linalg.matrix_sqrth(a), rtol=0, atol=1e-5)


@needs_the_aten_op
def test_gradients():
    """torch's backward formula on our result."""
    a = _positive_definite(4, 4, seed=5)

    def grad(x):
        x = x.detach().requires_grad_()
        return torch.autograd.grad((torch.linalg.matrix_sqrth(x) * torch.arange(16.0, device=x.device).view(4, 4)).sum(),
                                   x)[0]

    actual, _ = run_on_kernels(grad, a)
    torch.testing.assert_close(actual, grad(a), rtol=1e-4, atol=1e-5)


@needs_the_aten_op
def test_opinfo_samples():
    from torch.testing._internal.common_methods_invocations import op_db

    opinfo = next(o for o in op_db if o.name == "linalg.matrix_sqrth")
    n = 0
    for sample in opinfo.sample_inputs("cpu", torch.float32):
        for layout, s in (("contiguous", sample), ("noncontiguous", sample.noncontiguous())):
            _check(s.input, f"OpInfo {layout} {tuple(s.input.shape)}")
            n += 1
    assert n > 0
