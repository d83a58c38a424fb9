"""_linalg_eigh (torch.linalg.eigh and eigvalsh; a fill for torch 2.9 to
2.13) against the CPU: sizes odd and even, both triangles (the other one
ignored, NaN included), eigenvalues only, graded and repeated spectra,
matrices near float32's limits, layouts, out= (kept, column-major where
resized), empty shapes, NaN and infinities (the CPU's LinAlgError), the
sweep limit's error, the size limit, gradients and the CPU's errors.
Eigenvector signs are LAPACK's choice: test/eig_checks.py compares by
residual and orthonormality."""

from __future__ import annotations

import pytest
import torch

from eig_checks import assert_eigh_valid, symmetric_from
from helpers import (MATRIX_LAYOUTS, assert_errors_match, assert_float64_and_complex_refused, assert_gradients_match,
                     errors_of_cpu_and_ours, run_on_kernels, seeded_randn)
from mps_ops.testing import device, emulate

LAYOUTS_TESTED_HERE = {"_linalg_eigh"}


def _check(a, uplo="L", where=""):
    (values, vectors), dispatches = run_on_kernels(torch.linalg.eigh, a, UPLO=uplo)
    cpu_values, cpu_vectors = torch.linalg.eigh(a, UPLO=uplo)
    assert [d.kernel for d in dispatches] == (["eigh_dense_float_float"] if a.numel() else []), where
    assert vectors.stride() == cpu_vectors.stride(), where
    assert_eigh_valid(a, uplo, values, vectors, cpu_values, where)
    return values, vectors


@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (3, 3), (5, 5), (3, 8, 8), (2, 2, 17, 17), (100, 100)], ids=str)
def test_matches_the_cpu(shape, uplo):
    _check(seeded_randn(*shape, seed=shape[-1]), uplo, f"{shape} {uplo}")


@pytest.mark.parametrize("uplo", ["L", "u"])
def test_the_other_triangle_is_never_read(uplo):
    a = seeded_randn(6, 6, seed=1)
    ignored = torch.ones(6, 6, dtype=torch.bool).triu(1) if uplo.upper() == "L" else torch.ones(6, 6).bool().tril(-1)
    poisoned = a.masked_fill(ignored, float("nan"))
    values, _ = _check(poisoned, uplo)
    torch.testing.assert_close(values, torch.linalg.eigvalsh(symmetric_from(a, uplo)), rtol=1e-5, atol=1e-5)


def test_eigenvalues_only():
    a = seeded_randn(3, 9, 9, seed=2)
    values, dispatches = run_on_kernels(torch.linalg.eigvalsh, a)
    assert [d.kernel for d in dispatches] == ["eigh_dense_float_float"]
    assert_eigh_valid(a, "L", values, None, torch.linalg.eigvalsh(a))


def test_graded_and_repeated_spectra():
    """Eigenvalues from 1e-6 to 1e6 (each to its relative accuracy, which
    Jacobi keeps), the identity, a cluster, and a rank-one matrix."""
    q, _ = torch.linalg.qr(seeded_randn(7, 7, seed=3))
    graded = torch.diag(torch.logspace(-6, 6, 7))
    values, _ = _check(graded, "L", "graded diagonal")
    torch.testing.assert_close(values, torch.logspace(-6, 6, 7), rtol=2e-6, atol=0)
    _check((q * torch.tensor([1.0, 1, 1, 2, 2, 2, 5])) @ q.T, "L", "clusters")
    _check(torch.eye(5), "U", "identity")
    u = seeded_randn(6, 1, seed=4)
    _check(u @ u.T, "L", "rank one")


@pytest.mark.parametrize("scale", [1e-30, 1e30], ids=str)
def test_near_the_limits_of_float32(scale):
    """A power-of-two scaling first, so nothing squares past float32's range."""
    a = seeded_randn(5, 5, seed=5)
    values, vectors = _check(a * scale, "L")
    torch.testing.assert_close(values / scale, torch.linalg.eigvalsh(a), rtol=1e-5, atol=1e-5)


def test_the_zero_matrix():
    values, vectors = _check(torch.zeros(2, 4, 4))
    assert torch.equal(values, torch.zeros(2, 4)) and torch.equal(vectors, torch.eye(4).expand(2, 4, 4))


@pytest.mark.parametrize("layout", MATRIX_LAYOUTS)
def test_layouts(layout):
    _check(MATRIX_LAYOUTS[layout](seeded_randn(2, 6, 6, seed=6)), "L", layout)


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0), (0, 3, 3)], ids=str)
def test_empty_shapes(shape):
    _check(torch.randn(shape))


@pytest.mark.parametrize("out", ["right size", "transposed", "empty", "other size"])
def test_out(out):
    """An out resized (empty or of another size) takes column-major
    strides, as the CPU's; one of the right size keeps its own."""
    a = seeded_randn(2, 5, 5, seed=7)
    make = {"right size": lambda: torch.empty(2, 5, 5), "transposed": lambda: torch.empty(2, 5, 5).mT,
            "empty": lambda: torch.empty(0), "other size": lambda: torch.empty(3, 3)}[out]
    expected_values, expected_vectors = torch.empty(0), make()
    torch.linalg.eigh(a, out=(expected_values, expected_vectors))
    with torch.device(device()), emulate():
        values, vectors = torch.empty(0).to(device()), make().to(device())
        returned = torch.linalg.eigh(a.to(device()), out=(values, vectors))
    assert returned[0] is values and returned[1] is vectors
    assert vectors.stride() == expected_vectors.stride()
    assert_eigh_valid(a, "L", values.cpu(), vectors.cpu(), expected_values)


def test_eigenvalues_only_out_empties_the_vectors():
    a = seeded_randn(4, 4, seed=8)
    with torch.device(device()), emulate():
        values, vectors = torch.empty(0).to(device()), torch.empty(0).to(device())
        torch.ops.aten._linalg_eigh.eigenvalues(a.to(device()), "L", False, eigenvalues=values, eigenvectors=vectors)
    assert vectors.shape == (0,)
    torch.testing.assert_close(values.cpu(), torch.linalg.eigvalsh(a), rtol=1e-5, atol=1e-5)


def test_a_nan_raises_the_cpus_linalg_error():
    a = seeded_randn(3, 4, 4, seed=9)
    a[1, 2, 1] = float("nan")
    cpu, ours = errors_of_cpu_and_ours(torch.linalg.eigh, a)
    assert isinstance(ours, torch.linalg.LinAlgError)
    assert str(ours).startswith("linalg.eigh: (Batch element 1): The algorithm failed to converge")


def test_an_infinity_raises_too():
    """The CPU's LAPACK returns NaNs for some infinities and fails on others
    (the registry's `differs`); ours fails on every one, as on a NaN."""
    a = seeded_randn(4, 4, seed=9)
    a[2, 1] = -float("inf")
    with pytest.raises(torch.linalg.LinAlgError, match=r"^linalg.eigh: The algorithm failed to converge .*code: 1\)"):
        run_on_kernels(torch.linalg.eigh, a)


def test_a_sweep_limit_reached_raises_the_cpus_linalg_error(monkeypatch):
    monkeypatch.setenv("MPS_OPS_EIGH_SWEEPS", "1")
    with pytest.raises(torch.linalg.LinAlgError, match=r"linalg.eigh: The algorithm failed to converge .*error code"):
        run_on_kernels(torch.linalg.eigh, seeded_randn(8, 8, seed=10))


def test_matrices_above_the_size_limit_are_refused_clearly():
    with pytest.raises(NotImplementedError, match="at most 1024 x 1024"):
        run_on_kernels(torch.linalg.eigh, torch.zeros(1025, 1025))


def test_gradients_through_our_kernel():
    """eigh's backward uses its eigenvalues and eigenvectors (sign
    independent through a loss of |V|)."""
    a = seeded_randn(5, 5, seed=11)
    a = a + a.T

    def loss(x):
        values, vectors = torch.linalg.eigh(x)
        return (values * torch.arange(5.0, device=x.device)).sum() + vectors.abs().sum()

    assert_gradients_match(loss, a)


ERRORS = {
    "1-D": lambda: torch.linalg.eigh(torch.randn(4)),
    "not square": lambda: torch.linalg.eigh(torch.randn(4, 3)),
    "bad UPLO": lambda: torch.linalg.eigh(torch.eye(3), UPLO="X"),
    "int": lambda: torch.linalg.eigh(torch.eye(3).int()),
    "half": lambda: torch.linalg.eigh(torch.eye(3).half()),
}


@pytest.mark.parametrize("name", ERRORS.keys())
def test_errors_are_the_cpus(name):
    assert_errors_match(ERRORS[name], same_words=False)


def test_float64_and_complex_are_refused_clearly():
    assert_float64_and_complex_refused(torch.linalg.eigh, "_linalg_eigh", torch.eye(3))
