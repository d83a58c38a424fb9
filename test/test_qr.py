"""geqrf and linalg_qr (+ out=; fills for torch 2.9 to 2.13 and 2.9 to 2.11)
against the CPU's LAPACK, whose layout and signs ours reproduce: tall, wide
and square matrices in every mode, rank-deficient and zero columns, values
near float32's limits, layouts, out= (kept, column-major where resized),
empty shapes, NaN, gradients, nn.init.orthogonal_ and the CPU's errors."""

from __future__ import annotations

import pytest
import torch

from helpers import (MATRIX_LAYOUTS, assert_errors_match, assert_float64_and_complex_refused, assert_gradients_match,
                     run_on_kernels, seeded_randn)
from mps_ops.testing import device, emulate

LAYOUTS_TESTED_HERE = {"geqrf", "linalg_qr"}
SHAPES = [(1, 1), (3, 3), (6, 1), (1, 6), (5, 3), (3, 5), (2, 8, 8), (2, 2, 40, 17), (17, 40), (100, 100)]


def _close(ours, cpu, a, where, scale=None):
    """Within rounding of the CPU's: a few ulps of |A| (or `scale`) per row."""
    assert ours.shape == cpu.shape and ours.stride() == cpu.stride(), where
    if cpu.numel():
        scale = scale if scale is not None else max(float(a.abs().max()) if a.numel() else 1.0, 1.0)
        bound = 16 * max(a.shape[-2:]) * 1.2e-7 * scale
        torch.testing.assert_close(ours, cpu, rtol=0, atol=bound, msg=lambda m: f"{where}: {m}")


def _check_factors(a, factored, tau, where):
    """For matrices whose trailing reflectors are rounding noise (rank
    deficient: they differ between any two implementations): Q (the CPU's
    householder_product of ours) times R rebuilds A, as the CPU's factors do."""
    assert factored.shape == a.shape and factored.stride() == torch.geqrf(a)[0].stride(), where
    q = torch.linalg.householder_product(factored, tau)
    rebuilt = q @ factored.triu()[..., : q.shape[-1], :]
    bound = 16 * max(a.shape[-2:]) * 1.2e-7 * max(float(a.abs().max()), 1.0)
    torch.testing.assert_close(rebuilt, a, rtol=0, atol=bound, msg=lambda m: f"{where}: {m}")


def _check_qr(a, q, r, where):
    k = q.shape[-1]
    torch.testing.assert_close(q.mT @ q, torch.eye(k).expand(q.mT.shape[:-1] + (k,)), rtol=0, atol=2e-6 * k)
    assert torch.equal(r, r.triu()), where
    bound = 16 * max(a.shape[-2:]) * 1.2e-7 * max(float(a.abs().max()), 1.0)
    torch.testing.assert_close(q @ r, a, rtol=0, atol=bound, msg=lambda m: f"{where}: {m}")


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_geqrf_matches_the_cpu(shape):
    a = seeded_randn(*shape, seed=sum(shape))
    (factored, tau), dispatches = run_on_kernels(torch.geqrf, a)
    assert [d.kernel for d in dispatches] == ["geqrf_dense_float_float"]
    cpu_factored, cpu_tau = torch.geqrf(a)
    _close(factored, cpu_factored, a, "a")
    _close(tau, cpu_tau, a, "tau", scale=1.0)


@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_qr_matches_the_cpu(shape, mode):
    a = seeded_randn(*shape, seed=sum(shape))
    (q, r), dispatches = run_on_kernels(torch.linalg.qr, a, mode=mode)
    assert [d.kernel for d in dispatches] == ["geqrf_dense_float_float"] + ([] if mode == "r" else [
        "ormqr_dense_float_float"])
    cpu_q, cpu_r = torch.linalg.qr(a, mode=mode)
    _close(q, cpu_q, a, f"{mode} Q", scale=1.0)
    _close(r, cpu_r, a, f"{mode} R")
    if mode != "r":
        _check_qr(a, q, r, mode)


def test_rank_deficient_and_zero_columns():
    """A zero column below the diagonal gives tau 0 (the identity), as
    LAPACK's larfg; a repeated column leaves a trailing reflector of
    rounding noise, so the factors are checked by what they rebuild."""
    a = seeded_randn(6, 4, seed=1)
    a[:, 1] = 0
    a[:, 3] = a[:, 0]
    (factored, tau), _ = run_on_kernels(torch.geqrf, a)
    _check_factors(a, factored, tau, "geqrf")
    (q, r), _ = run_on_kernels(torch.linalg.qr, a, mode="complete")
    _check_qr(a, q, r, "qr")
    (_, tau), _ = run_on_kernels(torch.geqrf, torch.zeros(3, 3))
    assert torch.equal(tau, torch.zeros(3))


@pytest.mark.parametrize("scale", [1e-30, 1e30], ids=str)
def test_near_the_limits_of_float32(scale):
    a = seeded_randn(6, 4, seed=2) * scale
    (q, r), _ = run_on_kernels(torch.linalg.qr, a)
    cpu_q, cpu_r = torch.linalg.qr(a)
    _close(q, cpu_q, a, "Q", scale=1.0)
    torch.testing.assert_close(r / scale, cpu_r / scale, rtol=0, atol=1e-5)


@pytest.mark.parametrize("layout", MATRIX_LAYOUTS)
def test_layouts(layout):
    """(The sliced layout repeats columns: checked by what it rebuilds.)"""
    a = MATRIX_LAYOUTS[layout](seeded_randn(2, 6, 4, seed=3))
    (factored, tau), _ = run_on_kernels(torch.geqrf, a)
    _check_factors(a, factored, tau, layout)
    (q, r), _ = run_on_kernels(torch.linalg.qr, a)
    _check_qr(a, q, r, layout)


@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (2, 0, 0), (0, 3, 2)], ids=str)
def test_empty_shapes(shape, mode):
    a = torch.randn(shape)
    ours, dispatches = run_on_kernels(torch.linalg.qr, a, mode=mode)
    assert [d.kernel for d in dispatches] == []
    for o, c in zip(ours, torch.linalg.qr(a, mode=mode)):
        assert o.shape == c.shape and o.stride() == c.stride() and torch.equal(o, c)
    (factored, tau), _ = run_on_kernels(torch.geqrf, a)
    assert factored.shape == a.shape and tau.shape == torch.geqrf(a)[1].shape


def test_nan_spreads_as_the_cpus():
    a = torch.full((3, 3), float("nan"))
    (factored, tau), _ = run_on_kernels(torch.geqrf, a)
    cpu_factored, cpu_tau = torch.geqrf(a)
    torch.testing.assert_close(factored, cpu_factored, equal_nan=True)
    torch.testing.assert_close(tau, cpu_tau, equal_nan=True)


@pytest.mark.parametrize("out", ["right size", "transposed", "empty", "other size"])
def test_qr_out(out):
    a = seeded_randn(5, 3, seed=4)
    make = {"right size": lambda: torch.empty(5, 3), "transposed": lambda: torch.empty(3, 5).mT,
            "empty": lambda: torch.empty(0), "other size": lambda: torch.empty(2, 2)}[out]
    expected_q, expected_r = make(), torch.empty(0)
    torch.linalg.qr(a, out=(expected_q, expected_r))
    with torch.device(device()), emulate():
        q, r = make().to(device()), torch.empty(0).to(device())
        returned = torch.linalg.qr(a.to(device()), out=(q, r))
    assert returned[0] is q and returned[1] is r
    for ours, cpu in ((q, expected_q), (r, expected_r)):
        assert ours.stride() == cpu.stride()
        _close(ours.cpu(), cpu, a, out)


def test_geqrf_out_of_the_right_size_keeps_its_strides():
    a = seeded_randn(4, 4, seed=5)
    expected = (torch.empty(4, 4), torch.empty(4))
    torch.geqrf(a, out=expected)
    with torch.device(device()), emulate():
        outs = (torch.empty(4, 4).to(device()), torch.empty(4).to(device()))
        torch.geqrf(a.to(device()), out=outs)
    for ours, cpu in zip(outs, expected):
        assert ours.stride() == cpu.stride()
        torch.testing.assert_close(ours.cpu(), cpu, rtol=0, atol=1e-5)


def test_gradients_through_our_kernels():
    a = seeded_randn(5, 3, seed=6)

    def loss(x):
        q, r = torch.linalg.qr(x)
        return (q * torch.arange(15.0, device=x.device).view(5, 3)).sum() + r.triu().pow(2).sum()

    assert_gradients_match(loss, a)


def test_orthogonal_init_runs_on_our_kernels():
    """nn.init.orthogonal_ takes the QR of a random matrix: orthonormal rows."""
    with torch.device(device()), emulate():
        import mps_ops

        weight = torch.empty(4, 7).to(device())
        with mps_ops.profile() as prof:
            torch.nn.init.orthogonal_(weight)
    assert "geqrf_dense_float_float" in prof.kernels()
    w = weight.cpu()
    torch.testing.assert_close(w @ w.T, torch.eye(4), rtol=0, atol=2e-6)


ERRORS = {
    "geqrf 1-D": lambda: torch.geqrf(torch.randn(3)),
    "geqrf int": lambda: torch.geqrf(torch.eye(3).long()),
    "geqrf half": lambda: torch.geqrf(torch.eye(3).half()),
    "qr 1-D": lambda: torch.linalg.qr(torch.randn(3)),
    "qr int": lambda: torch.linalg.qr(torch.eye(3).long()),
    "qr half": lambda: torch.linalg.qr(torch.eye(3).half()),
    "qr mode": lambda: torch.linalg.qr(torch.eye(3), mode="x"),
    "qr out dtype": lambda: torch.linalg.qr(torch.eye(3), out=(torch.empty(0, dtype=torch.float64), torch.empty(0))),
}


@pytest.mark.parametrize("name", ERRORS.keys())
def test_errors_are_the_cpus(name):
    # (The out dtype's message names dtypes in TypeMeta's words on the CPU.)
    assert_errors_match(ERRORS[name], same_words="half" not in name and name not in ("geqrf int", "qr out dtype"))


def test_float64_and_complex_are_refused_clearly():
    for fn, op in ((torch.geqrf, "geqrf"), (torch.linalg.qr, "linalg_qr")):
        assert_float64_and_complex_refused(fn, op, torch.eye(3))
