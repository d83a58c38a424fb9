"""_linalg_svd (torch.linalg.svd, svdvals, torch.svd and the composites over
them; a fill for torch 2.9 to 2.13) against the float64 truth and the CPU:
tall, wide and square matrices, full_matrices, singular values only,
rank-deficient and graded matrices, values near float32's limits, layouts,
out= (kept, column-major where resized), empty shapes, non-finite inputs and
the sweep limit (the CPU's LinAlgError), the size limit, gradients,
composites (pinv, matrix_rank, the matrix norms) and the CPU's errors.
Singular vector signs are LAPACK's choice: test/eig_checks.py compares by
orthonormality and reconstruction."""

from __future__ import annotations

import pytest
import torch

from eig_checks import assert_svd_valid
from helpers import (MATRIX_LAYOUTS, assert_errors_match, assert_float64_and_complex_refused, assert_gradients_match,
                     errors_of_cpu_and_ours, run_on_kernels, seeded_randn)
from mps_ops.testing import device, emulate

LAYOUTS_TESTED_HERE = {"_linalg_svd"}
KERNEL = "svd_dense_float_float"


def _check(a, full_matrices=False, where=""):
    (u, s, vh), dispatches = run_on_kernels(torch.linalg.svd, a, full_matrices=full_matrices)
    cpu_u, _, cpu_vh = torch.linalg.svd(a, full_matrices=full_matrices)
    assert [d.kernel for d in dispatches] == ([KERNEL] if min(a.shape[-2:]) and a.numel() else []), where
    assert u.stride() == cpu_u.stride() and vh.stride() == cpu_vh.stride(), where
    assert_svd_valid(a, u, s, vh, where, full_matrices)
    return u, s, vh


@pytest.mark.parametrize("full_matrices", [False, True], ids=["reduced", "full"])
@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (6, 1), (1, 6), (5, 3), (3, 5), (2, 8, 8), (2, 2, 40, 17),
                                   (17, 40), (100, 100)], ids=str)
def test_matches_the_truth(shape, full_matrices):
    _check(seeded_randn(*shape, seed=sum(shape)), full_matrices, f"{shape}")


def test_singular_values_only():
    a = seeded_randn(3, 9, 6, seed=1)
    s, dispatches = run_on_kernels(torch.linalg.svdvals, a)
    assert [d.kernel for d in dispatches] == [KERNEL]
    assert_svd_valid(a, None, s, None)


@pytest.mark.parametrize("full_matrices", [False, True], ids=["reduced", "full"])
def test_rank_deficient_matrices_get_complete_bases(full_matrices):
    """Zero singular values leave vectors the kernel completes: the zero
    matrix, a rank-one matrix, a zero column, in tall and wide shapes."""
    _check(torch.zeros(2, 5, 3), full_matrices, "zero")
    _check(torch.zeros(3, 6), full_matrices, "zero, wide")
    u = seeded_randn(7, 1, seed=2)
    _check(u @ seeded_randn(1, 4, seed=3), full_matrices, "rank one")
    a = seeded_randn(6, 4, seed=4)
    a[:, 2] = 0
    _check(a, full_matrices, "a zero column")


def test_a_graded_diagonal_keeps_its_small_values():
    a = torch.diag(torch.logspace(-6, 6, 7)).flip(0)
    _, s, _ = _check(a)
    torch.testing.assert_close(s, torch.logspace(6, -6, 7), rtol=2e-6, atol=0)


@pytest.mark.parametrize("scale", [1e-30, 1e30], ids=str)
def test_near_the_limits_of_float32(scale):
    a = seeded_randn(6, 4, seed=5)
    _, s, _ = _check(a * scale)
    torch.testing.assert_close(s / scale, torch.linalg.svdvals(a), rtol=1e-5, atol=0)


@pytest.mark.parametrize("layout", MATRIX_LAYOUTS)
def test_layouts(layout):
    _check(MATRIX_LAYOUTS[layout](seeded_randn(2, 6, 4, seed=6)), True, layout)


@pytest.mark.parametrize("full_matrices", [False, True], ids=["reduced", "full"])
@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (2, 0, 0), (0, 3, 2)], ids=str)
def test_empty_shapes(shape, full_matrices):
    """Full matrices of an empty A are identities, as the CPU's."""
    a = torch.randn(shape)
    (u, s, vh), dispatches = run_on_kernels(torch.linalg.svd, a, full_matrices=full_matrices)
    expected = torch.linalg.svd(a, full_matrices=full_matrices)
    assert dispatches == []
    for ours, cpu in zip((u, s, vh), expected):
        assert ours.shape == cpu.shape and ours.stride() == cpu.stride()
        assert torch.equal(ours, cpu)


@pytest.mark.parametrize("out", ["right size", "transposed", "empty", "other size"])
def test_out(out):
    a = seeded_randn(5, 3, seed=7)
    make = {"right size": lambda: torch.empty(5, 3), "transposed": lambda: torch.empty(3, 5).mT,
            "empty": lambda: torch.empty(0), "other size": lambda: torch.empty(2, 2)}[out]
    expected_u = make()
    torch.linalg.svd(a, full_matrices=False, out=(expected_u, torch.empty(0), torch.empty(0)))
    with torch.device(device()), emulate():
        u, s, vh = make().to(device()), torch.empty(0).to(device()), torch.empty(0).to(device())
        returned = torch.linalg.svd(a.to(device()), full_matrices=False, out=(u, s, vh))
    assert all(r is o for r, o in zip(returned, (u, s, vh)))
    assert u.stride() == expected_u.stride()
    assert_svd_valid(a, u.cpu(), s.cpu(), vh.cpu())


@pytest.mark.parametrize("value", [float("nan"), float("inf")], ids=str)
def test_non_finite_entries_raise_the_cpus_linalg_error(value):
    """The CPU's words for a NaN; for some infinities the CPU returns NaNs
    instead (the registry's `differs`): ours raises for every one."""
    a = seeded_randn(3, 4, 3, seed=8)
    a[2, 1, 1] = value
    with pytest.raises(torch.linalg.LinAlgError) as ours:
        run_on_kernels(torch.linalg.svd, a)
    assert str(ours.value) == ("linalg.svd: (Batch element 2): The algorithm failed to converge because the input "
                               "matrix contained non-finite values.")
    if value != value:
        cpu, _ = errors_of_cpu_and_ours(torch.linalg.svd, a)
        assert str(cpu) == str(ours.value)


def test_a_sweep_limit_reached_raises_the_cpus_linalg_error(monkeypatch):
    monkeypatch.setenv("MPS_OPS_SVD_SWEEPS", "1")
    with pytest.raises(torch.linalg.LinAlgError, match=r"^linalg.svd: The algorithm failed to converge .*code: \d+\)"):
        run_on_kernels(torch.linalg.svd, seeded_randn(8, 6, seed=9))


def test_matrices_above_the_size_limits_are_refused_clearly():
    with pytest.raises(NotImplementedError, match="min\\(m, n\\) up to 1024"):
        run_on_kernels(torch.linalg.svdvals, torch.zeros(1025, 1025))
    with pytest.raises(NotImplementedError, match="full_matrices"):
        run_on_kernels(lambda a: torch.linalg.svd(a, full_matrices=True), torch.zeros(4097, 2))


def test_gradients_through_our_kernel():
    """svd's backward uses U, S and Vh (sign independent through S and
    U Vh)."""
    a = seeded_randn(5, 4, seed=10)

    def loss(x):
        u, s, vh = torch.linalg.svd(x, full_matrices=False)
        return (s * torch.arange(1.0, 5.0, device=x.device)).sum() + (u @ vh).pow(2).mul(torch.arange(
            20.0, device=x.device).view(5, 4)).sum()

    assert_gradients_match(loss, a)


@pytest.mark.parametrize("name", ["matrix_rank", "nuclear norm", "spectral norm", "torch.svd"])
def test_composites_run_on_our_kernel(name):
    """(pinv is an explicit composite the emulator's routing runs on the
    CPU's kernels: not seen here.)"""
    a = seeded_randn(6, 4, seed=11)
    fn = {"matrix_rank": torch.linalg.matrix_rank,
          "nuclear norm": lambda x: torch.linalg.matrix_norm(x, "nuc"),
          "spectral norm": lambda x: torch.linalg.matrix_norm(x, 2),
          "torch.svd": lambda x: torch.svd(x)[1]}[name]
    ours, dispatches = run_on_kernels(fn, a)
    assert KERNEL in [d.kernel for d in dispatches]
    torch.testing.assert_close(ours, fn(a), rtol=1e-5, atol=1e-5)


ERRORS = {
    "1-D": lambda: torch.linalg.svd(torch.randn(4)),
    "int": lambda: torch.linalg.svd(torch.eye(3).long()),
    "half": lambda: torch.linalg.svd(torch.eye(3).half()),
    "driver": lambda: torch.linalg.svd(torch.eye(3), driver="gesvd"),
}


@pytest.mark.parametrize("name", ERRORS.keys())
def test_errors_are_the_cpus(name):
    assert_errors_match(ERRORS[name], same_words=name != "half")


def test_float64_and_complex_are_refused_clearly():
    assert_float64_and_complex_refused(torch.linalg.svd, "_linalg_svd", torch.eye(3))
