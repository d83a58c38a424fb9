"""linalg_ldl_factor_ex and linalg_ldl_solve against the CPU: the CPU's
pivots (LAPACK's Bunch-Kaufman rule) on random, indefinite, structured and
singular symmetric matrices from 1x1 to 300x300, LD to float32 rounding, batches and broadcasting, strided operands,
pivots of any integer dtype, out= of any layout, empty inputs, the CPU's
errors, and the pivot structure the CPU does not check. OpInfo's samples run
in test_opinfo.py."""

from __future__ import annotations

import pytest
import torch

from helpers import CPU_CHECKS_LDL_PIVOTS, MATRIX_LAYOUTS, assert_matches, errors_of_cpu_and_ours, run_on_kernels

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"linalg_ldl_factor_ex", "linalg_ldl_solve"}

FACTOR = torch.linalg.ldl_factor_ex
SOLVE = torch.linalg.ldl_solve


def _symmetric(*shape, seed=0, diagonal_scale=1.0):
    torch.manual_seed(seed)
    a = torch.randn(*shape)
    a = a + a.mT
    a.diagonal(dim1=-2, dim2=-1).mul_(diagonal_scale)
    return a


def _factor(a, **kwargs):
    expected = FACTOR(a, **kwargs)
    actual, dispatches = run_on_kernels(lambda t: FACTOR(t, **kwargs), a)
    return actual, expected, dispatches


def _check_factor(a):
    """The CPU's pivots, info and zero upper triangle; LD within float32
    rounding grown over n elimination steps (the CPU's LAPACK may fuse
    multiply-adds or update in blocks: another rounding order. With this
    machine's MKL and n <= 64 the bits were the same, elsewhere not)."""
    (ld, pivots, info), (cpu_ld, cpu_pivots, cpu_info), dispatches = _factor(a)
    assert torch.equal(pivots, cpu_pivots), (pivots, cpu_pivots)
    assert torch.equal(info, cpu_info)
    n = a.shape[-1]
    scale = float(cpu_ld.abs().max()) if cpu_ld.numel() else 0.0
    torch.testing.assert_close(ld, cpu_ld, rtol=0, atol=(n + 1) * 1e-6 * scale, equal_nan=True)
    assert torch.equal(ld.triu(1), torch.zeros_like(ld.triu(1)))
    # column-major, as LAPACK's (a dim of size 1 has no stride to speak of)
    assert [st for st, n in zip(ld.stride(), ld.shape) if n > 1] == [
        st for st, n in zip(cpu_ld.stride(), cpu_ld.shape) if n > 1]
    if a.numel():
        assert [d.kernel for d in dispatches] == ["ldl_factor_dense_float_float"]
    return ld, pivots


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 17, 33, 64])
@pytest.mark.parametrize("diagonal_scale", [1.0, 0.01, 0.0])
def test_factor_matches_the_cpu(n, diagonal_scale):
    """A small diagonal forces 2x2 pivots and interchanges; a zero one, 2x2
    pivots throughout."""
    for seed in range(4):
        _check_factor(_symmetric(2, n, n, seed=seed, diagonal_scale=diagonal_scale))


@pytest.mark.parametrize("n", [65, 130, 300])
def test_large_matrices(n):
    """Past MKL's block size the CPU updates in blocks (another rounding
    order): the same pivots, LD within tolerance, and a small residual."""
    a = _symmetric(n, n, seed=n, diagonal_scale=0.1)
    ld, pivots = _check_factor(a)
    b = torch.randn(n, 4)
    x, _ = run_on_kernels(SOLVE, ld, pivots, b)
    residual = (a.double() @ x.double() - b.double()).abs().max() / (a.abs().max() * x.abs().max())
    assert residual < 1e-5 * n


STRUCTURED = {
    "identity": lambda: torch.eye(6),
    "diagonal": lambda: torch.diag(torch.tensor([3.0, -1.0, 0.5, -7.0, 2.0])),
    "antidiagonal": lambda: torch.eye(4).flip(0),
    "zero": lambda: torch.zeros(4, 4),
    "zero_column_in_the_middle": lambda: _with_zero_row_and_column(_symmetric(5, 5, seed=3), 2),
    "rank_one": lambda: torch.outer(torch.arange(1.0, 6.0), torch.arange(1.0, 6.0)),
    "tiny": lambda: _symmetric(6, 6, seed=4) * 1e-30,
    "huge": lambda: _symmetric(6, 6, seed=5) * 1e30,
    "tridiagonal": lambda: torch.diag(torch.full((6,), 1e-3)) + torch.diag(torch.ones(5), 1) + torch.diag(torch.ones(5), -1),
}


def test_an_ill_conditioned_matrix():
    """Hilbert's (condition number 1.5e7 at 6 x 6): LD's rounding differences
    are amplified by its conditioning, so the factorization is held to the
    CPU's pivots and to a small backward error of the solve with it."""
    a = 1.0 / (torch.arange(6.0)[:, None] + torch.arange(6.0)[None, :] + 1)
    (ld, pivots, _), (_, cpu_pivots, _), _ = _factor(a)
    assert torch.equal(pivots, cpu_pivots)
    b = torch.randn(6, 2)
    x, _ = run_on_kernels(SOLVE, ld, pivots, b)
    residual = (a.double() @ x.double() - b.double()).abs().max() / (a.abs().max() * x.abs().max())
    assert residual < 1e-5


def _with_zero_row_and_column(a, k):
    a[k, :] = 0
    a[:, k] = 0
    return a


@pytest.mark.parametrize("name", list(STRUCTURED))
def test_structured_matrices(name):
    _check_factor(STRUCTURED[name]())


def test_only_the_lower_triangle_is_read():
    a = _symmetric(5, 5, seed=6)
    garbage = a.tril() + torch.randn(5, 5).triu(1) * 100
    _check_factor(garbage)


@pytest.mark.parametrize("layout", list(MATRIX_LAYOUTS))
def test_factor_layouts(layout):
    _check_factor(MATRIX_LAYOUTS[layout](_symmetric(2, 7, 7, seed=7, diagonal_scale=0.1)))


@pytest.mark.parametrize("shape", [(0, 0), (3, 0, 0), (0, 4, 4), (2, 0, 3, 3)])
def test_factor_empty(shape):
    a = torch.empty(shape)
    (ld, pivots, info), (cpu_ld, cpu_pivots, cpu_info), _ = _factor(a)
    assert ld.shape == cpu_ld.shape and pivots.shape == cpu_pivots.shape
    assert torch.equal(info, cpu_info)


def test_singular_matrices_report_info_and_raise_when_asked():
    a = torch.stack([_symmetric(4, 4, seed=8), torch.zeros(4, 4)])
    (_, _, info), (_, _, cpu_info), _ = _factor(a)
    assert info.tolist() == cpu_info.tolist() == [0, 1]
    with pytest.raises(RuntimeError):
        FACTOR(a, check_errors=True)
    with pytest.raises(RuntimeError, match=r"Batch element 1.*singular"):
        run_on_kernels(lambda t: FACTOR(t, check_errors=True), a)
    # linalg.ldl_factor is torch's composite over ours: its own check of
    # info raises (torch's "Unknown error code" assertion, as on the CPU).
    with pytest.raises(RuntimeError):
        torch.linalg.ldl_factor(torch.zeros(3, 3))
    with pytest.raises(RuntimeError):
        run_on_kernels(torch.linalg.ldl_factor, torch.zeros(3, 3))


def test_factor_outs_of_any_layout():
    a = _symmetric(5, 5, seed=9, diagonal_scale=0.1)
    cpu = FACTOR(a)

    def call(t, ld, pivots, info):
        result = FACTOR(t, out=(ld, pivots, info))
        assert result[0] is ld and result[1] is pivots and result[2] is info
        return ld, pivots, info

    for ld_out in (torch.empty(0), torch.empty(5, 5), torch.empty(5, 10)[:, ::2], torch.empty(3)):
        actual, _ = run_on_kernels(call, a, ld_out, torch.empty(0, dtype=torch.int32),
                                   torch.empty(0, dtype=torch.int32))
        assert_matches(actual[0], cpu[0])
        assert torch.equal(actual[1], cpu[1]) and torch.equal(actual[2], cpu[2])


def _solve_case(batch_ld, batch_b, n, columns, seed=10):
    a = _symmetric(*batch_ld, n, n, seed=seed, diagonal_scale=0.1)
    ld, pivots, _ = FACTOR(a)
    torch.manual_seed(seed)
    return ld, pivots, torch.randn(*batch_b, n, columns)


def _cpu_solve(ld, pivots, b):
    """The CPU's solve with LD, pivots and B expanded to the result's batch
    first: the CPU's own broadcasting of LD against B crashes (a segfault,
    torch 2.13: LD (2, 1, n, n) with B (1, 3, n, k))."""
    batch = torch.broadcast_shapes(ld.shape[:-2], b.shape[:-2])
    n = ld.shape[-1]
    return SOLVE(ld.expand(*batch, n, n), pivots.expand(*batch, n), b.expand(*batch, *b.shape[-2:]))


def _check_solve(ld, pivots, b):
    """Within float32 rounding grown over the n steps of each substitution
    (the CPU's LAPACK may fuse multiply-adds: another rounding order)."""
    expected = _cpu_solve(ld, pivots, b)
    actual, dispatches = run_on_kernels(SOLVE, ld, pivots, b)
    scale = float(expected.abs().max()) if expected.numel() else 0.0
    torch.testing.assert_close(actual, expected, rtol=1e-5, atol=(ld.shape[-1] + 1) * 1e-6 * scale)
    assert [st for st, n in zip(actual.stride(), actual.shape) if n > 1] == [
        st for st, n in zip(expected.stride(), expected.shape) if n > 1]
    assert [d.kernel for d in dispatches] == ["ldl_solve_dense_float_float"]


@pytest.mark.parametrize("batch_ld, batch_b", [((), ()), ((2,), (2,)), ((), (3,)), ((2, 1), (1, 3)), ((3,), ())])
@pytest.mark.parametrize("n, columns", [(1, 1), (5, 3), (17, 2), (40, 1)])
def test_solve_broadcasts_batches(batch_ld, batch_b, n, columns):
    _check_solve(*_solve_case(batch_ld, batch_b, n, columns))


SOLVE_LAYOUTS = {
    "transposed_b": lambda ld, p, b: (ld, p, b.mT.contiguous().mT),
    "sliced_b": lambda ld, p, b: (ld, p, torch.cat([b, b], -1)[..., ::2]),
    "expanded_b": lambda ld, p, b: (ld, p, b[..., :1].expand(b.shape)),
    "row_major_ld": lambda ld, p, b: (ld.contiguous(), p, b),
    "sliced_ld": lambda ld, p, b: (torch.stack([ld, ld], -1)[..., 0], p, b),
    "strided_pivots": lambda ld, p, b: (ld, torch.stack([p, p], -1)[..., 0], b),
    "int64_pivots": lambda ld, p, b: (ld, p.long(), b),
    "int16_pivots": lambda ld, p, b: (ld, p.short(), b),
    "uint8_pivots_of_a_1x1_only_factorization": lambda ld, p, b: _one_by_one_only(b),
}


def _one_by_one_only(b):
    ld, pivots, _ = FACTOR(torch.diag(torch.arange(1.0, b.shape[-2] + 1)).expand(*b.shape[:-2], -1, -1))
    return ld, pivots.to(torch.uint8), b


@pytest.mark.parametrize("layout", list(SOLVE_LAYOUTS))
def test_solve_layouts(layout):
    _check_solve(*SOLVE_LAYOUTS[layout](*_solve_case((2,), (2,), 6, 3)))


@pytest.mark.parametrize("shape", [((0,), (0,), 4, 2), ((), (), 0, 3), ((), (), 4, 0), ((1,), (0,), 3, 2)])
def test_solve_empty(shape):
    ld, pivots, b = _solve_case(*shape)
    expected = _cpu_solve(ld, pivots, b)
    actual, dispatches = run_on_kernels(SOLVE, ld, pivots, b)
    assert actual.shape == expected.shape and not dispatches


def test_solve_outs_of_any_layout():
    ld, pivots, b = _solve_case((), (), 5, 3)
    expected = SOLVE(ld, pivots, b)
    for out in (torch.empty(0), torch.empty(5, 3), torch.empty(3, 5).t(), torch.empty(5, 6)[:, ::2]):
        actual, _ = run_on_kernels(lambda *t: SOLVE(*t[:3], out=t[3]), ld, pivots, b, out)
        assert_matches(actual, expected)


# The CPU's messages (torch 2.12 on; its abs wraps int64's minimum below
# 1). Before 2.12 the CPU does not check, and these would corrupt its heap.
@pytest.mark.parametrize("pivots_of, message", [
    (lambda p: p + 1000, r"\|pivot\| <= LD.size\(-2\)"),
    (lambda p: p.index_fill(-1, torch.tensor([0]), 0), r"\|pivot\| >= 1"),
    (lambda p: p.index_fill(-1, torch.tensor([0]), torch.iinfo(torch.int64).min), r"\|pivot\| >= 1"),
])
def test_pivots_out_of_range_raise_as_on_the_cpu(pivots_of, message):
    ld, pivots, b = _solve_case((), (), 5, 2)
    pivots = pivots_of(pivots.long())
    if CPU_CHECKS_LDL_PIVOTS:
        with pytest.raises(RuntimeError, match=message):
            SOLVE(ld, pivots, b)
    with pytest.raises(RuntimeError, match=message):
        run_on_kernels(SOLVE, ld, pivots, b)


@pytest.mark.parametrize("pivots", [[-1, 2, 3], [1, 2, -3], [-2, 1, 3], [1, -3, -2]])
def test_unpaired_2x2_pivots_raise(pivots):
    """The CPU does not check these and writes outside B (so it is not run
    here); ours refuses them."""
    ld, _, b = _solve_case((), (), 3, 2)
    with pytest.raises(RuntimeError, match="2x2 block"):
        run_on_kernels(SOLVE, ld, torch.tensor(pivots, dtype=torch.int32), b)


@pytest.mark.parametrize("call, operands", [
    (FACTOR, (torch.randn(3, 4),)),                                           # not square
    (FACTOR, (torch.randn(3),)),                                              # not a matrix
    (FACTOR, (torch.ones(3, 3, dtype=torch.int32),)),                          # not floating
    (FACTOR, (torch.ones(3, 3).half(),)),                                      # no LAPACK kernel
    (lambda a: FACTOR(a, out=(torch.empty(0), torch.empty(0, dtype=torch.int64), torch.empty(0, dtype=torch.int32))),
     (torch.eye(3),)),
    (lambda a: FACTOR(a, out=(torch.empty(0).double(), torch.empty(0, dtype=torch.int32),
                              torch.empty(0, dtype=torch.int32))), (torch.eye(3),)),
    (SOLVE, (torch.eye(4), torch.arange(1, 5, dtype=torch.int32), torch.randn(4))),            # B 1-D
    (SOLVE, (torch.eye(4), torch.arange(1, 4, dtype=torch.int32), torch.randn(4, 2))),         # pivots' shape
    (SOLVE, (torch.eye(4), torch.arange(1, 5, dtype=torch.int32), torch.randn(3, 2))),         # B's rows
    (SOLVE, (torch.eye(4), torch.arange(1, 5, dtype=torch.int32), torch.randn(4, 2).double())),
    (SOLVE, (torch.eye(4)[:, :3], torch.arange(1, 5, dtype=torch.int32), torch.randn(4, 2))),  # not square
    (SOLVE, (torch.eye(4), torch.arange(1.0, 5.0), torch.randn(4, 2))),                        # float pivots
    (SOLVE, (torch.eye(4).expand(2, 4, 4), torch.arange(1, 5, dtype=torch.int32), torch.randn(4, 2))),
    (SOLVE, (torch.eye(4).expand(2, 4, 4), torch.arange(1, 5, dtype=torch.int32).expand(2, 4),
             torch.randn(3, 4, 2))),                                                           # batches
    (lambda *t: SOLVE(*t, out=torch.empty(0).double()),
     (torch.eye(4), torch.arange(1, 5, dtype=torch.int32), torch.randn(4, 2))),
])
def test_errors_are_the_cpus(call, operands):
    cpu, ours = errors_of_cpu_and_ours(call, *operands)
    if not isinstance(cpu, NotImplementedError):  # the CPU names its kernel, ours the op and device
        assert str(cpu).split(" but ")[0].split(", got")[0].split(" Got")[0].lower() in str(ours).lower()


def test_wide_unsigned_pivots_as_the_running_torch_takes_them():
    """From 2.12 the CPU checks pivots with abs, which has no uint16 kernel:
    NotImplementedError; before, it takes them."""
    ld, pivots, _ = FACTOR(torch.diag(torch.arange(1.0, 5.0)))  # pivots 1, 2, 3, 4
    wide, b = pivots.to(torch.uint16), torch.randn(4, 2)
    if CPU_CHECKS_LDL_PIVOTS:
        with pytest.raises(NotImplementedError):
            SOLVE(ld, wide, b)
        with pytest.raises(NotImplementedError, match="linalg_ldl_solve"):
            run_on_kernels(SOLVE, ld, wide, b)
    else:
        _check_solve(ld, wide, b)


def test_float64_is_refused_clearly():
    with pytest.raises(TypeError, match="float64"):
        run_on_kernels(FACTOR, torch.eye(3).double())
    ld, pivots, _ = FACTOR(torch.eye(3).double())
    with pytest.raises(TypeError, match="float64"):
        run_on_kernels(SOLVE, ld, pivots, torch.randn(3, 1).double())
