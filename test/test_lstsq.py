"""linalg_lstsq.out (a fill for torch 2.9 to 2.13, under torch.linalg.lstsq)
against the CPU's LAPACK: every driver on tall, wide, square, batched and
broadcast problems and vector right-hand sides, solutions no further from
the float64 truth than the CPU's, its rank, singular values and residuals,
rank-deficient problems (gels's LinAlgError, the others' minimum-norm
solutions and rank at rcond), layouts, out=, empty shapes, gradients and the
CPU's errors in its order."""

from __future__ import annotations

import pytest
import torch

from helpers import (MATRIX_LAYOUTS, assert_errors_match, assert_float64_and_complex_refused, assert_gradients_match,
                     error_against, run_on_kernels, seeded_randn)
from mps_ops.testing import device, emulate

LAYOUTS_TESTED_HERE = {"linalg_lstsq"}
DRIVERS = [None, "gels", "gelsy", "gelsd", "gelss"]
# What each driver runs: gels our QR, the rank-revealing ones our SVD.
KERNELS = {"gels": ["geqrf_dense_float_float", "ormqr_dense_float_float"]}
SVD_KERNELS = ["svd_dense_float_float"]


def _driver_args(driver):
    return {} if driver is None else {"driver": driver}


def _check(a, b, driver=None, where="", rcond=None, roundings=None):
    """Ours against the CPU's: the same shapes and solution strides, the
    same rank, singular values and residuals to rounding, and a solution no
    further from the float64 truth than a few times the CPU's."""
    extra = dict(_driver_args(driver), rcond=rcond)
    ours, dispatches = run_on_kernels(torch.linalg.lstsq, a, b, **extra)
    cpu = torch.linalg.lstsq(a, b, **extra)
    truth = torch.linalg.lstsq(a.double(), b.double(), **extra).solution
    if cpu.solution.numel() and min(a.shape[-2:]) and b.numel():
        assert [d.kernel for d in dispatches] == KERNELS.get(driver, SVD_KERNELS), where
    for name in ("solution", "residuals", "rank", "singular_values"):
        mine, theirs = getattr(ours, name), getattr(cpu, name)
        assert mine.shape == theirs.shape and mine.dtype == theirs.dtype, f"{where}: {name}"
    assert ours.solution.stride() == cpu.solution.stride(), where
    assert torch.equal(ours.rank, cpu.rank), where
    scale = float(cpu.singular_values.abs().max()) if cpu.singular_values.numel() else 1.0
    torch.testing.assert_close(ours.singular_values, cpu.singular_values, rtol=0, atol=1e-5 * scale * max(a.shape[-2:]))
    torch.testing.assert_close(ours.residuals, cpu.residuals, rtol=1e-3, atol=1e-4)
    rounding_bound = (roundings or 64 * max(a.shape[-2:])) * 6e-8 * max(float(truth.abs().max()) if truth.numel() else 0, 1)
    bound = max(8 * error_against(cpu.solution, truth), rounding_bound)
    assert error_against(ours.solution, truth) <= bound, where
    return ours


PROBLEMS = [((5, 3), (5, 2)), ((3, 5), (3, 2)), ((4, 4), (4, 1)), ((1, 1), (1, 3)), ((2, 6, 4), (2, 6, 3)),
            ((2, 4, 6), (2, 4, 3)), ((2, 5, 3), (2, 5)), ((1, 5, 3), (4, 5, 2)), ((3, 5, 3), (1, 5, 2)),
            ((2, 1, 6, 3), (2, 3, 6, 2)), ((5, 5, 3), (5, 2)), ((40, 17), (40, 5)), ((17, 40), (17, 5))]


@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("a_shape,b_shape", PROBLEMS, ids=str)
def test_matches_the_cpu(a_shape, b_shape, driver):
    a = seeded_randn(*a_shape, seed=len(a_shape) + a_shape[-1])
    b = seeded_randn(*b_shape, seed=1)
    _check(a, b, driver, f"{a_shape} {b_shape} {driver}")


def test_a_vector_right_hand_side_without_a_batch():
    a, b = seeded_randn(6, 3, seed=2), seeded_randn(6, seed=3)
    for driver in DRIVERS:
        ours = _check(a, b, driver, f"vector {driver}")
        assert ours.solution.shape == (3,)


# MATRIX_LAYOUTS's "sliced" repeats columns (rank deficient, where gels's
# error hangs on rounding): here the same values, every other column read.
LAYOUTS = dict(MATRIX_LAYOUTS, sliced=lambda a: torch.stack([a, a], -1).flatten(-2)[..., ::2])


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("which", ["A", "B"])
@pytest.mark.parametrize("driver", ["gels", "gelsd"])
def test_layouts(driver, which, layout):
    a, b = seeded_randn(2, 7, 4, seed=4), seeded_randn(2, 7, 3, seed=5)
    if which == "A":
        a = LAYOUTS[layout](a)
        b = b[:1].expand(3, 7, 3) if layout == "expanded_batch" else b
    else:
        b = LAYOUTS[layout](b)
        a = a[:1].expand(3, 7, 4) if layout == "expanded_batch" else a
    _check(a, b, driver, f"{which} {layout}")


@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("a_shape,b_shape", [((0, 3), (0, 2)), ((4, 0), (4, 2)), ((4, 3), (4, 0)),
                                             ((0, 4, 3), (0, 4, 2)), ((2, 6, 0), (2, 6, 2)), ((3, 0), (3,))],
                         ids=str)
def test_empty_shapes(a_shape, b_shape, driver):
    if driver in ("gelsd", "gelss") and b_shape[-1] == 0:
        pytest.skip("the CPU fails on B without columns (gelsd: an internal assert of torch's after MKL's "
                    "'Parameter 4 was incorrect on entry to SLALSD'; gelss: a segmentation fault), so there is "
                    "nothing to compare with: test_rank_revealing_drivers_without_columns checks ours")
    _check(torch.randn(a_shape), torch.randn(b_shape), driver, f"{a_shape} {b_shape}")


@pytest.mark.parametrize("driver", ["gelsd", "gelss"])
def test_rank_revealing_drivers_without_columns(driver):
    """Where the CPU fails (above): an empty solution, A's rank and singular
    values, and residuals of no columns."""
    a = seeded_randn(4, 3, seed=6)
    ours, _ = run_on_kernels(torch.linalg.lstsq, a, torch.empty(4, 0), driver=driver)
    assert ours.solution.shape == (3, 0) and int(ours.rank) == 3 and ours.residuals.shape == (0,)
    torch.testing.assert_close(ours.singular_values, torch.linalg.svdvals(a), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (4, 4)], ids=str)
def test_gels_on_a_rank_deficient_matrix_raises_the_cpus_error(shape, batched):
    """An exact zero on R's diagonal (a zero column, or a zero row where A
    is wide): LAPACK's error code is its 1-based index."""
    a = seeded_randn(3, *shape, seed=7)
    if shape[0] >= shape[1]:
        a[1, :, 2] = 0
    else:
        a[1, 2, :] = 0
    b = seeded_randn(3, shape[0], 2, seed=8)
    if not batched:
        a, b = a[1], b[1]
    assert_errors_match(lambda x, y: torch.linalg.lstsq(x, y, driver="gels"), a, b)


@pytest.mark.parametrize("driver", ["gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("shape", [(8, 5), (5, 8)], ids=str)
def test_rank_deficient_problems_get_the_minimum_norm_solution(shape, driver):
    """Rank 3 of 5 (a clear gap at rcond): the CPU's rank, residuals left out
    as the CPU leaves them, and the minimum-norm solution."""
    torch.manual_seed(9)
    a = torch.randn(2, shape[0], 3) @ torch.randn(2, 3, shape[1])
    ours = _check(a, torch.randn(2, shape[0], 2), driver, f"{shape} {driver}", rcond=1e-4)
    assert ours.rank.tolist() == [3, 3]


@pytest.mark.parametrize("rcond", [-1.0, 0.0, 0.05, 0.5, 2.0])
def test_rcond_sets_the_rank_as_the_cpus_gelsd(rcond):
    """Singular values 10, 1, 0.1, 0.01: each rcond cuts them where LAPACK
    does (a negative one means machine precision)."""
    torch.manual_seed(10)
    q1, _ = torch.linalg.qr(torch.randn(6, 4))
    q2, _ = torch.linalg.qr(torch.randn(4, 4))
    a = q1 @ torch.diag(torch.tensor([10.0, 1.0, 0.1, 0.01])) @ q2.T
    # gelsy's pivoted-QR estimate of the rank is not the SVD's (the
    # registry's `differs`): only where no singular value is cut.
    for driver in ("gelsd", "gelss") + (("gelsy",) if rcond <= 0 else ()):
        _check(a, torch.randn(6, 2), driver, f"rcond {rcond} {driver}", rcond=rcond, roundings=1e4)


def test_an_unbatched_out_shaped_as_lapacks_buffer_is_copied_into():
    """torch's test for writing directly never matches an unbatched B matrix
    (it leaves out B's columns), so such an out is computed apart and
    copied: contiguous, as the CPU's."""
    a, b = seeded_randn(5, 3, seed=23), seeded_randn(5, 2, seed=24)
    expected = torch.empty(2, 5).mT
    torch.linalg.lstsq(a, b, driver="gels", out=(expected, torch.empty(0), torch.empty(0, dtype=torch.long),
                                                  torch.empty(0)))
    with torch.device(device()), emulate():
        ours = torch.empty(2, 5).mT.to(device())
        torch.linalg.lstsq(a.to(device()), b.to(device()), driver="gels",
                           out=(ours, torch.empty(0), torch.empty(0, dtype=torch.long), torch.empty(0)))
    assert ours.shape == expected.shape and ours.stride() == expected.stride() == (2, 1)
    torch.testing.assert_close(ours.cpu(), expected, rtol=1e-4, atol=1e-4)


SOLUTION_OUTS = {"right size": lambda: torch.empty(2, 3, 2), "transposed": lambda: torch.empty(2, 2, 3).mT,
                 "empty": lambda: torch.empty(0), "other size": lambda: torch.empty(4),
                 "LAPACK's buffer": lambda: torch.empty(2, 2, 5).mT}


@pytest.mark.parametrize("driver", ["gels", "gelsd"])
@pytest.mark.parametrize("rank_out", ["empty", "other size"])
@pytest.mark.parametrize("out", SOLUTION_OUTS)
def test_out(out, rank_out, driver):
    """torch writes into the outs directly (an empty or buffer-shaped
    solution, rank and singular values empty or right) or computes apart
    and copies (any other): the same shapes, strides and values as the
    CPU's either way, and what the driver does not set left alone."""
    a, b = seeded_randn(2, 5, 3, seed=11), seeded_randn(2, 5, 2, seed=12)

    def make():
        rank = torch.empty(0, dtype=torch.long) if rank_out == "empty" else torch.full((3,), 7, dtype=torch.long)
        return SOLUTION_OUTS[out](), torch.full((1,), 5.0), rank, torch.full((1,), 6.0)

    expected = make()
    torch.linalg.lstsq(a, b, driver=driver, out=expected)
    with torch.device(device()), emulate():
        outs = tuple(t.to(device()) for t in make())
        returned = torch.linalg.lstsq(a.to(device()), b.to(device()), driver=driver, out=outs)
    assert all(r is o for r, o in zip(returned, outs))
    for ours, cpu in zip(outs, expected):
        assert ours.shape == cpu.shape and ours.stride() == cpu.stride() and ours.dtype == cpu.dtype
        torch.testing.assert_close(ours.cpu(), cpu, rtol=1e-4, atol=1e-4)


def test_an_out_of_a_castable_dtype():
    """An int64 rank into a float32 out, as the CPU's (computed apart and
    copied)."""
    a, b = seeded_randn(5, 3, seed=13), seeded_randn(5, 2, seed=14)
    make = lambda: (torch.empty(0), torch.empty(0), torch.empty(0), torch.empty(0))  # noqa: E731
    expected = make()
    torch.linalg.lstsq(a, b, out=expected)
    with torch.device(device()), emulate():
        outs = tuple(t.to(device()) for t in make())
        torch.linalg.lstsq(a.to(device()), b.to(device()), out=outs)
    for ours, cpu in zip(outs, expected):
        assert ours.dtype == cpu.dtype and ours.shape == cpu.shape and ours.stride() == cpu.stride()
        torch.testing.assert_close(ours.cpu(), cpu, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("driver", [None, "gels"])
def test_gradients_through_our_kernels(driver):
    a, b = seeded_randn(6, 3, seed=15), seeded_randn(6, 2, seed=16)

    def loss(x, y):
        return (torch.linalg.lstsq(x, y, **_driver_args(driver)).solution * torch.arange(6.0, device=x.device).view(3, 2)).sum()

    assert_gradients_match(loss, a, b)


def test_float64_and_complex_are_refused_clearly():
    assert_float64_and_complex_refused(torch.linalg.lstsq, "linalg_lstsq", seeded_randn(5, 3, seed=17),
                                       seeded_randn(5, 2, seed=18))


_A, _B = seeded_randn(2, 5, 3, seed=19), seeded_randn(2, 5, 2, seed=20)
# Each call takes (A, B) as arguments, so that they reach the test device.
ERRORS = {
    "A 1-D": lambda a, b: torch.linalg.lstsq(a[0, 0], b),
    "B 0-dim": lambda a, b: torch.linalg.lstsq(a, b[0, 0, 0]),
    "dtypes differ": lambda a, b: torch.linalg.lstsq(a, b.double()),
    "B two dims fewer": lambda a, b: torch.linalg.lstsq(a, b[0, :, 0]),
    "B more dims": lambda a, b: torch.linalg.lstsq(a, b[None]),
    "rows differ": lambda a, b: torch.linalg.lstsq(a, b[:, :4]),
    "vector rows differ": lambda a, b: torch.linalg.lstsq(a, b[:, :4, 0]),
    "vector of another batch": lambda a, b: torch.linalg.lstsq(a, b[:1, :, 0]),
    "B one dim fewer": lambda a, b: torch.linalg.lstsq(a, b[0]),
    "vector of a broadcast batch": lambda a, b: torch.linalg.lstsq(a[:1], b[:, :, 0]),
    "batches do not broadcast": lambda a, b: torch.linalg.lstsq(a, b.expand(3, 2, 5, 2)[:, 0]),
    "unknown driver": lambda a, b: torch.linalg.lstsq(a, b, driver="gelsx"),
    "int": lambda a, b: torch.linalg.lstsq(a.long(), b.long()),
    "half with rcond": lambda a, b: torch.linalg.lstsq(a.half(), b.half(), rcond=0.1),
    "solution out int": lambda a, b: torch.linalg.lstsq(a, b, out=(torch.empty(0, dtype=torch.int32, device=a.device),
                                                                   torch.empty(0, device=a.device),
                                                                   torch.empty(0, dtype=torch.long, device=a.device),
                                                                   torch.empty(0, device=a.device))),
    "residuals out int": lambda a, b: torch.linalg.lstsq(a, b, out=(torch.empty(0, device=a.device),
                                                                    torch.empty(0, dtype=torch.int32, device=a.device),
                                                                    torch.empty(0, dtype=torch.long, device=a.device),
                                                                    torch.empty(0, device=a.device))),
    "residuals out half, summed into": lambda a, b: torch.linalg.lstsq(
        a, b, driver="gelsd", out=(torch.empty(0, device=a.device), torch.empty(0, dtype=torch.half, device=a.device),
                                   torch.empty(0, dtype=torch.long, device=a.device), torch.empty(0, device=a.device))),
    "singular values out int": lambda a, b: torch.linalg.lstsq(
        a, b, out=(torch.empty(0, device=a.device), torch.empty(0, device=a.device),
                   torch.empty(0, dtype=torch.long, device=a.device), torch.empty(0, dtype=torch.int32, device=a.device))),
}
# Not the CPU's words: half's (the CPU names its LAPACK kernel, we name the
# op and device), and the residuals' (the CPU's message calls them
# "solution", a slip of torch's that ours does not copy).
OTHER_WORDS = {"half with rcond", "residuals out int"}


@pytest.mark.parametrize("name", ERRORS.keys())
def test_errors_are_the_cpus(name):
    assert_errors_match(ERRORS[name], _A, _B, same_words=name not in OTHER_WORDS)


@pytest.mark.parametrize("driver", DRIVERS)
def test_non_finite_values(driver):
    """The CPU's MKL refuses any NaN (an internal assert of torch's; see
    test_edge_values.CPU_REFUSES). Ours: a NaN in B gives NaN solutions;
    one in A, NaN solutions by gels, the CPU's LinAlgError by the SVD's
    drivers, in lstsq's name."""
    a, b = seeded_randn(2, 5, 3, seed=21), seeded_randn(2, 5, 2, seed=22)
    b_nan = b.clone()
    b_nan[1, 2, 0] = float("nan")
    ours, _ = run_on_kernels(torch.linalg.lstsq, a, b_nan, **_driver_args(driver))
    assert ours.solution[1, :, 0].isnan().all() and not ours.solution[0].isnan().any()
    a_nan = a.clone()
    a_nan[1, 1, 1] = float("nan")
    if driver == "gels":
        ours, _ = run_on_kernels(torch.linalg.lstsq, a_nan, b, driver=driver)
        assert ours.solution[1].isnan().all() and not ours.solution[0].isnan().any()
    else:
        with pytest.raises(torch.linalg.LinAlgError, match=r"^torch\.linalg\.lstsq: \(Batch element 1\): The "
                           "algorithm failed to converge because the input matrix contained non-finite values"):
            run_on_kernels(torch.linalg.lstsq, a_nan, b, **_driver_args(driver))


@pytest.mark.parametrize("driver", ["gelsy", "gelsd", "gelss"])
def test_the_svds_size_limit_names_lstsq(driver):
    """min(m, n) above the SVD's 1024 raises NotImplementedError in lstsq's
    name, advising lstsq's CPU call (not linalg.svd's)."""
    a, b = torch.randn(1030, 1025), torch.randn(1030, 1)
    with pytest.raises(NotImplementedError, match=r"torch\.linalg\.lstsq of 1030 x 1025 matrices.*"
                                                  r"torch\.linalg\.lstsq\(A\.cpu\(\), B\.cpu\(\)\)"):
        run_on_kernels(torch.linalg.lstsq, a, b, driver=driver)
