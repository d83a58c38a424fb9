"""native_layer_norm_backward (an override op) against the CPU: rows short
and long (one or several row threads, several rows per group), with and
without weight and bias, every output mask, float32, half and bfloat16 (a
float weight beside a half input too), non-contiguous inputs and
gradients, many rows (several chunks of the weight gradient's first pass),
empty batches, and the CPU's errors. Its OpInfo gradients (layer_norm):
test_overrides.py."""

from __future__ import annotations

import pytest
import torch

from helpers import assert_at_least_as_accurate, assert_matches, in_layout, run_on_kernels

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"native_layer_norm_backward"}

backward = torch.ops.aten.native_layer_norm_backward


def _args(shape, normalized, dtype=torch.float32, affine=True, param_dtype=None, seed=0):
    torch.manual_seed(seed)
    x = (torch.randn(shape) * 3 + 1).to(dtype)
    param_dtype = param_dtype or dtype
    weight = torch.randn(normalized).to(param_dtype) if affine else None
    bias = torch.randn(normalized).to(param_dtype) if affine else None
    _, mean, rstd = torch.native_layer_norm(x, list(normalized), weight, bias, 1e-5)
    grad = torch.randn(shape).to(dtype)
    return [grad, x, list(normalized), mean, rstd, weight, bias]


def _check(args, mask=None, where=""):
    mask = mask or (True, args[5] is not None, args[6] is not None)
    call = lambda *a: backward(*a, list(mask))  # noqa: E731
    expected = call(*args)
    actual, dispatches = run_on_kernels(call, *args)
    for a, e, name in zip(actual, expected, ("grad_input", "grad_weight", "grad_bias")):
        if e is None:
            assert a is None, f"{where} {name}"
            continue
        try:
            assert_matches(a, e, f"{where} {name}")
        except AssertionError:
            wide = [t.double() if isinstance(t, torch.Tensor) else t for t in args]
            truth = call(*wide)[("grad_input", "grad_weight", "grad_bias").index(name)]
            if name == "grad_input":
                # (float32 too: a row of one element, whose exact gradient
                # is 0, the CPU's formula leaves rounding in.)
                assert_at_least_as_accurate(a, e, truth, f"{where} {name}")
            else:
                _assert_sum_accurate(a, e, truth, args, name, f"{where} {name}")
    assert dispatches or args[1].numel() == 0, where
    assert all(d.op.startswith("layer_norm_backward") for d in dispatches), [d.kernel for d in dispatches]


def _assert_sum_accurate(actual, cpu, truth, args, name, where):
    """The weight and bias gradients are sums over the rows, each summed in
    its own order (the CPU's, ours by chunks of rows): ours within the sum's
    rounding bound of the float64 answer (a few ulps of the sum of the
    terms' magnitudes, which cancellation leaves far above the result), or
    no further from it than the CPU's."""
    grad, x, normalized, mean, rstd = args[:5]
    columns = 1
    for size in normalized:
        columns *= size
    dy = grad.double().reshape(-1, columns)
    terms = dy * (x.double().reshape(-1, columns) - mean.double().reshape(-1, 1)) * rstd.double().reshape(-1, 1) \
        if name == "grad_weight" else dy
    eps = torch.finfo(actual.dtype).eps
    bound = eps * (8 * terms.abs().sum(0) + truth.abs().reshape(-1))
    ours = (actual.double().reshape(-1) - truth.reshape(-1)).abs()
    cpu = (cpu.double().reshape(-1) - truth.reshape(-1)).abs()
    assert bool((ours <= torch.maximum(bound, cpu)).all()), f"{where}: {ours.max():.3g} from the float64 answer"


@pytest.mark.parametrize("shape, normalized", [((3, 4, 5), (4, 5)), ((7, 16), (16,)), ((2, 3, 1024), (1024,)),
                                               ((5, 3000), (3000,)), ((300, 8), (8,)), ((1,), (1,))], ids=str)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("affine", [True, False])
def test_shapes_dtypes(shape, normalized, dtype, affine):
    _check(_args(shape, normalized, dtype, affine), where=f"{shape} {dtype} affine={affine}")


def test_long_chunks_and_a_merge_tail():
    """Past 2**24 elements the weight gradient's first pass takes chunks of
    more than 64 rows (6090 rows of 3000: 87 chunks of 70), and the merge's
    last run of chunks is partial."""
    _check(_args((6090, 3000), (3000,)), where="6090 x 3000")


def _at_storage_offset(t, offset):
    """t's values in contiguous memory that starts `offset` elements into its storage."""
    return torch.empty(t.numel() + offset, dtype=t.dtype)[offset:].view(t.shape).copy_(t)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("columns, offset, paired", [(20, 0, True), (21, 0, False), (20, 1, False), (2, 0, True)],
                         ids=["even", "odd", "offset", "two"])
def test_half_rows_in_pairs_where_they_can(dtype, columns, offset, paired):
    """The input gradient and the weight and bias gradients' first pass read
    half and bfloat16 rows two elements per 32-bit word where the rows have
    an even length and the operands start on a word; both ways match the
    CPU."""
    args = _args((70, columns), (columns,), dtype)
    args[0], args[1] = _at_storage_offset(args[0], offset), _at_storage_offset(args[1], offset)
    _check(args, where=f"{columns} columns at offset {offset} {dtype}")
    _, dispatches = run_on_kernels(lambda *a: backward(*a, [True, True, True]), *args)
    ops = {d.op for d in dispatches}
    assert ("layer_norm_backward_param_pairs_partials" in ops) == paired, ops
    assert ("layer_norm_backward_params_partials" in ops) == (not paired), ops
    assert ("layer_norm_backward_pairs" in ops) == paired, ops
    assert ("layer_norm_backward" in ops) == (not paired), ops


@pytest.mark.parametrize("mask", [(True, False, False), (False, True, False), (False, False, True),
                                  (False, True, True), (True, True, False)], ids=str)
def test_output_masks(mask):
    _check(_args((6, 10), (10,)), mask, where=f"mask {mask}")


def test_float_weight_beside_half_input():
    """The CPU's mixed forward keeps mean and rstd in float; the weight's
    gradient takes the weight's dtype."""
    _check(_args((6, 10), (10,), torch.float16, param_dtype=torch.float32), where="half input, float weight")


@pytest.mark.parametrize("value", [float("inf"), float("nan"), 3e38])
def test_rows_with_special_values(value):
    """A row holding inf, NaN or a huge value, its statistics from the forward
    (edge values reach mean and rstd this way only: the samples mark them
    statistics)."""
    args = _args((5, 12), (12,))
    x = args[1].clone()
    x[2, 3] = value
    weight, bias = args[5], args[6]
    _, mean, rstd = torch.native_layer_norm(x, [12], weight, bias, 1e-5)
    _check([args[0], x, [12], mean, rstd, weight, bias], where=f"row with {value}")


def test_float_statistics_beside_half_input():
    """CUDA's forward keeps a half input's mean and rstd in float (the CPU's
    refuses them, its own forward giving half): taken, against the float32
    computation rounded to half."""
    g, x, _, _, _, w, b = _args((6, 10), (10,), torch.float16)
    _, mean, rstd = torch.native_layer_norm(x.float(), [10], w.float(), b.float(), 1e-5)
    call = lambda *a: backward(*a, [True, True, True])  # noqa: E731
    expected = call(g.float(), x.float(), [10], mean, rstd, w.float(), b.float())
    actual, dispatches = run_on_kernels(call, g, x, [10], mean, rstd, w, b)
    assert dispatches
    for a, e in zip(actual, expected):
        assert a.dtype == torch.float16
        torch.testing.assert_close(a.float(), e.half().float(), atol=2e-3, rtol=2e-3)


@pytest.mark.parametrize("layout", ["transposed", "strided"])
def test_non_contiguous_input_and_gradient(layout):
    args = _args((12, 9), (9,))
    args[0], args[1] = in_layout(args[0], layout), in_layout(args[1], layout)
    _check(args, where=layout)


@pytest.mark.parametrize("shape, normalized", [((0, 8), (8,)), ((4, 0), (0,))], ids=str)
def test_empty(shape, normalized):
    _check(_args(shape, normalized), where=f"empty {shape}")


ERRORS = {
    "normalized shape": lambda g, x, m, r, w, b: backward(g, x, [7], m, r, None, None, [True, True, True]),
    "weight shape": lambda g, x, m, r, w, b: backward(g, x, [8], m, r, w[:4], b, [True, True, True]),
    "integers": lambda g, x, m, r, w, b: backward(g.long(), x.long(), [8], m, r, None, None, [True, False, False]),
    # A gradient asked for a parameter that is not there (autograd never asks).
    "weight's gradient without a weight": lambda g, x, m, r, w, b: backward(g, x, [8], m, r, None, b, [True, True, True]),
    "bias's gradient without a bias": lambda g, x, m, r, w, b: backward(g, x, [8], m, r, w, None, [True, False, True]),
}


@pytest.mark.parametrize("call", ERRORS.values(), ids=ERRORS.keys())
def test_errors_are_the_cpus(call):
    g, x, _, m, r, w, b = _args((4, 8), (8,))
    with pytest.raises(Exception) as cpu_error:
        call(g, x, m, r, w, b)
    with pytest.raises(Exception) as our_error:
        run_on_kernels(call, g, x, m, r, w, b)
    assert type(our_error.value) is type(cpu_error.value), (our_error.value, cpu_error.value)
