"""_softmax_backward_data and _log_softmax_backward_data (override ops)
against the CPU: every dim of a 3-D tensor, 1-D and 0-dim tensors, empty
ones, rows longer than a SIMD group's share and than a threadgroup,
transposed, strided and expanded operands, half and bfloat16 (at least as
close to float64 as the CPU), and the out= forms. OpInfo samples and the
gradients of softmax, log_softmax and cross_entropy: test_opinfo.py and
test_overrides.py."""

from __future__ import annotations

import math

import pytest
import torch

from helpers import assert_at_least_as_accurate, assert_matches, in_layout, run_on_kernels

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"_softmax_backward_data", "_log_softmax_backward_data"}

OPS = {
    "softmax": (torch.ops.aten._softmax_backward_data, torch.softmax),
    "log_softmax": (torch.ops.aten._log_softmax_backward_data, torch.log_softmax),
}


def _check(kind, shape, dim, dtype=torch.float32, layout="contiguous", expand_grad=False):
    backward, forward = OPS[kind]
    torch.manual_seed(0)
    x = torch.randn(shape) * 3
    out = forward(x, dim).to(dtype)
    grad = torch.randn(shape).to(dtype)
    if expand_grad and grad.dim() > 0:
        grad = grad.reshape(-1)[:1].reshape((1,) * grad.dim()).expand(shape)
    grad, out = in_layout(grad, layout) if not expand_grad else grad, in_layout(out, layout)
    fn = lambda g, o: backward(g, o, dim, dtype)  # noqa: E731
    expected = fn(grad, out)
    actual, dispatches = run_on_kernels(fn, grad, out)
    where = f"{kind} {tuple(shape)} dim {dim} {dtype} {layout}{' expanded grad' if expand_grad else ''}"
    try:
        assert_matches(actual, expected, where)
    except AssertionError:
        if dtype == torch.float32:
            raise
        truth = fn(grad.double(), out.double())
        assert_at_least_as_accurate(actual, expected, truth, where)
    assert dispatches or expected.numel() == 0, where
    assert all(d.op == f"{kind}_backward" for d in dispatches), [d.kernel for d in dispatches]


@pytest.mark.parametrize("kind", OPS)
@pytest.mark.parametrize("shape, dim", [((4, 5, 6), 0), ((4, 5, 6), 1), ((4, 5, 6), 2), ((4, 5, 6), -1),
                                        ((7,), 0), ((), 0), ((), -1), ((0, 5), 1), ((5, 0), 1), ((3, 0), 0)])
def test_every_dim_and_rank(kind, shape, dim):
    _check(kind, shape, dim)


@pytest.mark.parametrize("kind", OPS)
# Rows of 1000 and 1024: 32 threads per row, log_softmax's held rows.
@pytest.mark.parametrize("shape, dim", [((3, 40), 1), ((5, 1000), 1), ((3, 1024), 1), ((2, 5000), -1),
                                        ((3000, 4), 0)])
def test_long_and_short_rows(kind, shape, dim):
    _check(kind, shape, dim)


@pytest.mark.parametrize("kind", OPS)
@pytest.mark.parametrize("layout", ["transposed", "strided"])
@pytest.mark.parametrize("dim", [0, -1])
def test_non_contiguous_operands(kind, layout, dim):
    _check(kind, (6, 7, 9), dim, layout=layout)


@pytest.mark.parametrize("kind", OPS)
def test_expanded_grad(kind):
    _check(kind, (5, 8), 1, expand_grad=True)


@pytest.mark.parametrize("kind", OPS)
@pytest.mark.parametrize("length", [96, 768, 1536, 12288])
def test_row_sum_keeps_terms_between_cancelling_ones(kind, length):
    """Terms B, 1, -B repeating (B = 1e38): each thread's elements (a power
    of two apart, so residues mod 3 cycle) meet B + 1 before -B, where a
    float sum drops the 1 (a double one too). The row's sum must keep them
    all: it is length / 3."""
    backward, _ = OPS[kind]
    grad = torch.tensor([1e38, 1.0, -1e38]).repeat(length // 3).reshape(1, length)
    out = torch.full((1, length), -math.log(length) if kind == "log_softmax" else 1.0)
    actual, dispatches = run_on_kernels(lambda g, o: backward(g, o, 1, torch.float32), grad, out)
    assert dispatches
    row_sum = length // 3  # of grad (log_softmax), of grad * out = grad (softmax)
    g, o = grad.double(), out.double()
    exact = g - o.exp() * row_sum if kind == "log_softmax" else o * (g - row_sum)
    assert_matches(actual, exact.float(), f"{kind} cancelling terms, {length}")


@pytest.mark.parametrize("kind", OPS)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_reduced_precision(kind, dtype):
    _check(kind, (8, 300), 1, dtype=dtype)
    _check(kind, (4, 1000), 1, dtype=dtype)
    _check(kind, (8, 30, 5), 1, dtype=dtype)


@pytest.mark.parametrize("kind", OPS)
def test_out_form_writes_into_a_non_contiguous_out(kind):
    backward, forward = OPS[kind]
    torch.manual_seed(0)
    out = forward(torch.randn(4, 6), 1)
    grad = torch.randn(4, 6)
    expected = backward(grad, out, 1, torch.float32)
    target = torch.zeros(6, 4).t()
    name = "grad_input" if kind == "softmax" else "out"
    fn = lambda g, o, t: backward.out(g, o, 1, torch.float32, **{name: t})  # noqa: E731
    (returned, written), dispatches = run_on_kernels(lambda g, o, t: (fn(g, o, t), t), grad, out, target)
    assert_matches(written, expected, f"{kind} out=")
    assert_matches(returned, expected, f"{kind} out= returned")
    assert dispatches


@pytest.mark.parametrize("kind", OPS)
def test_float_to_half_of_nothing_is_an_empty_half_gradient(kind):
    """input_dtype half with float operands: the CPU's grad_input is half,
    which its kernel refuses unless it is empty; an out= must be half."""
    backward, _ = OPS[kind]
    grad, out = torch.randn(5, 0, 4), torch.randn(5, 0, 4)
    name = "grad_input" if kind == "softmax" else "out"
    actual, _ = run_on_kernels(lambda g, o: backward(g, o, -1, torch.half), grad, out)
    expected = backward(grad, out, -1, torch.half)
    assert actual.dtype == expected.dtype == torch.half and actual.shape == expected.shape
    written, _ = run_on_kernels(lambda g, o: backward.out(g, o, -1, torch.half, **{name: torch.empty(0).half()}),
                                grad, out)
    assert written.dtype == torch.half and written.shape == (5, 0, 4)
    for dtype in (torch.float32, torch.bfloat16):
        cpu_and_ours = [pytest.raises(RuntimeError, match="Expected out tensor to have dtype (c10::)?Half")
                        for _ in range(2)]
        with cpu_and_ours[0]:
            backward.out(grad, out, -1, torch.half, **{name: torch.empty(0, dtype=dtype)})
        with cpu_and_ours[1]:
            run_on_kernels(lambda g, o: backward.out(g, o, -1, torch.half, **{name: torch.empty(0, dtype=dtype)}),
                           grad, out)


@pytest.mark.parametrize("kind", OPS)
@pytest.mark.parametrize("call", [
    lambda op, g, o: op(g, o, 2, torch.float32),  # dim out of range: IndexError
    lambda op, g, o: op(g.long(), o.long(), 1, torch.long),  # integers: NotImplementedError
    lambda op, g, o: op(g, o.half(), 1, torch.float32),  # output of another dtype
    lambda op, g, o: op(g, o, 1, torch.half),  # float to half: the CPU refuses it
    lambda op, g, o: op(g, o[:, :3], 1, torch.float32),  # shapes differ
], ids=["dim", "integers", "output_dtype", "half_to_float", "shapes"])
def test_errors_are_the_cpus(kind, call, request):
    backward, _ = OPS[kind]
    grad, out = torch.randn(3, 4), torch.randn(3, 4)
    cpu_error = None
    if kind == "log_softmax" and request.node.callspec.id.startswith("shapes"):
        pass  # the CPU's log_softmax backward reads past output there (not run): ours raises RuntimeError
    else:
        try:
            call(backward, grad, out)
        except Exception as e:  # noqa: BLE001 - the type is what is compared
            cpu_error = e
    with pytest.raises(Exception) as our_error:
        run_on_kernels(lambda g, o: call(backward, g, o), grad, out)
    expected = RuntimeError if cpu_error is None else type(cpu_error)
    assert type(our_error.value) is expected, (our_error.value, cpu_error)
