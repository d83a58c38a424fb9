"""ormqr against the CPU: Q and its transpose from either side, tall and
wide reflector storage, batches, strided operands, out= of any layout,
empty matrices, gradients, and the CPU's errors. OpInfo's samples run in
test_opinfo.py."""

from __future__ import annotations

import pytest
import torch

from helpers import assert_matches, errors_of_cpu_and_ours, run_on_kernels

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"ormqr"}

SIDES = [(True, False), (True, True), (False, False), (False, True)]  # (left, transpose)


def _operands(batch, rows, columns, vectors, left, seed=0):
    torch.manual_seed(seed)
    a, tau = torch.geqrf(torch.randn(*batch, rows, columns))
    other = torch.randn(*batch, rows, vectors) if left else torch.randn(*batch, vectors, rows)
    return a, tau, other


def _check(a, tau, other, left, transpose):
    expected = torch.ormqr(a, tau, other, left, transpose)
    actual, dispatches = run_on_kernels(lambda *t: torch.ormqr(*t, left, transpose), a, tau, other)
    assert_matches(actual, expected)
    # column-major, as LAPACK's (a dim of size 1 has no stride to speak of)
    assert [st for st, n in zip(actual.stride(), actual.shape) if n > 1] == [
        st for st, n in zip(expected.stride(), expected.shape) if n > 1]
    assert [d.kernel for d in dispatches] == ["ormqr_dense_float_float"]


@pytest.mark.parametrize("left, transpose", SIDES)
@pytest.mark.parametrize("batch, rows, columns, vectors", [
    ((), 5, 5, 4), ((), 7, 3, 2), ((), 3, 6, 5), ((2,), 6, 4, 3), ((2, 3), 4, 4, 1), ((), 1, 1, 3), ((), 33, 17, 40),
])
def test_sides_and_shapes(batch, rows, columns, vectors, left, transpose):
    _check(*_operands(batch, rows, columns, vectors, left), left, transpose)


def test_q_from_the_reflectors_is_orthogonal():
    """Q I is householder_product's Q; Q^T Q is the identity."""
    a, tau, _ = _operands((), 6, 4, 1, True)
    q, _ = run_on_kernels(lambda x, t, i: torch.ormqr(x, t, i), a, tau, torch.eye(6))
    torch.testing.assert_close(q[:, :4], torch.linalg.householder_product(a, tau), atol=1e-5, rtol=1e-5)
    qtq, _ = run_on_kernels(lambda x, t, m: torch.ormqr(x, t, m, transpose=True), a, tau, q)
    torch.testing.assert_close(qtq, torch.eye(6), atol=1e-5, rtol=1e-5)


LAYOUTS = {
    "transposed_input": lambda a, tau, o: (a.mT.contiguous().mT, tau, o),
    "row_major_input": lambda a, tau, o: (a.contiguous(), tau, o),
    "sliced_input": lambda a, tau, o: (torch.cat([a, a], -1)[..., ::2], tau, o),
    "strided_tau": lambda a, tau, o: (a, torch.stack([tau, tau], -1)[..., 0], o),
    "transposed_other": lambda a, tau, o: (a, tau, o.mT.contiguous().mT),
    "sliced_other": lambda a, tau, o: (a, tau, torch.cat([o, o], -2)[..., 1::2, :]),
    "expanded_other": lambda a, tau, o: (a, tau, o[..., :1].expand(o.shape)),
    "offset_other": lambda a, tau, o: (a, tau, torch.cat([o[:1], o])[1:]),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("left, transpose", SIDES)
def test_layouts(layout, left, transpose):
    _check(*LAYOUTS[layout](*_operands((2,), 5, 3, 4, left)), left, transpose)


@pytest.mark.parametrize("out_layout", ["empty", "right_size", "transposed", "sliced"])
def test_out_of_any_layout(out_layout):
    a, tau, other = _operands((), 5, 3, 4, True)
    expected = torch.ormqr(a, tau, other)
    out = {"empty": lambda: torch.empty(0), "right_size": lambda: torch.empty(5, 4),
           "transposed": lambda: torch.empty(4, 5).t(), "sliced": lambda: torch.empty(5, 8)[:, ::2]}[out_layout]()

    def call(x, t, o, result):
        assert torch.ormqr(x, t, o, out=result) is result
        return result

    actual, dispatches = run_on_kernels(call, a, tau, other, out)
    assert_matches(actual, expected)
    assert dispatches


@pytest.mark.parametrize("batch, rows, columns, vectors", [((0,), 4, 3, 2), ((), 4, 0, 2), ((), 4, 3, 0),
                                                            ((), 0, 0, 3)])
def test_empty(batch, rows, columns, vectors):
    a, tau, other = _operands(batch, rows, columns, vectors, True)
    expected = torch.ormqr(a, tau, other)
    actual, dispatches = run_on_kernels(torch.ormqr, a, tau, other)
    assert_matches(actual, expected)
    assert not dispatches


@pytest.mark.parametrize("left, transpose", SIDES)
def test_gradients(left, transpose):
    a, tau, other = _operands((2,), 5, 3, 4, left)

    def grads(x, t, o):
        x, t, o = (v.detach().requires_grad_() for v in (x, t, o))
        result = torch.ormqr(x, t, o, left, transpose)
        return torch.autograd.grad(result, (x, t, o), torch.ones_like(result) * 0.5 + result.detach())

    expected = grads(a, tau, other)
    actual, dispatches = run_on_kernels(grads, a, tau, other)
    for name, x, e in zip(("input", "tau", "other"), actual, expected):
        torch.testing.assert_close(x, e, atol=1e-4, rtol=1e-4, msg=lambda m: f"{name}: {m}")
    assert any(d.kernel == "ormqr_dense_float_float" for d in dispatches)


@pytest.mark.parametrize("operands, kwargs", [
    ((torch.randn(5), torch.randn(3), torch.randn(5, 4)), {}),                      # input not a matrix
    ((torch.randn(5, 3), torch.randn(3), torch.randn(5)), {}),                      # other not a matrix
    ((torch.randn(5, 3), torch.randn(3), torch.randn(4, 4)), {}),                   # other's rows
    ((torch.randn(5, 3), torch.randn(3), torch.randn(4, 6)), {"left": False}),      # other's columns
    ((torch.randn(5, 3), torch.randn(6), torch.randn(5, 4)), {}),                   # tau's length
    ((torch.randn(5, 3), torch.randn(2, 3), torch.randn(5, 4)), {}),                # tau's dims
    ((torch.randn(2, 5, 3), torch.randn(2, 3), torch.randn(5, 4)), {}),             # other's dims
    ((torch.randn(2, 5, 3), torch.randn(3, 3), torch.randn(2, 5, 4)), {}),          # tau's batch
    ((torch.randn(2, 5, 3), torch.randn(2, 3), torch.randn(3, 5, 4)), {}),          # other's batch
    ((torch.randn(5, 3), torch.randn(3).double(), torch.randn(5, 4)), {}),          # tau's dtype
    ((torch.randn(5, 3), torch.randn(3), torch.randn(5, 4).double()), {}),          # other's dtype
    ((torch.randn(5, 3), torch.randn(3), torch.randn(5, 4)), {"out": torch.empty(0, dtype=torch.float64)}),
    ((torch.randn(5, 3).half(), torch.randn(3).half(), torch.randn(5, 4).half()), {}),
])
def test_errors_are_the_cpus(operands, kwargs):
    cpu, ours = errors_of_cpu_and_ours(lambda *t: torch.ormqr(*t, **kwargs), *operands)
    if not isinstance(cpu, NotImplementedError):  # the CPU names its kernel, ours the op and device
        assert str(cpu).split(" but got")[0] in str(ours)


def test_float64_is_refused_clearly():
    a, tau, other = (t.double() for t in _operands((), 4, 3, 2, True))
    with pytest.raises(TypeError, match="float64"):
        run_on_kernels(torch.ormqr, a, tau, other)


def test_a_column_major_other_is_left_as_it_was():
    """The result is a copy even where other already has its layout."""
    a, tau, other = _operands((2,), 5, 3, 4, True)
    other = other.mT.contiguous().mT

    def call(x, t, o):
        before = o.clone()
        result = torch.ormqr(x, t, o)
        return result, torch.equal(o, before)

    (result, unchanged), _ = run_on_kernels(call, a, tau, other)
    assert unchanged
    assert_matches(result, torch.ormqr(a, tau, other))
