"""max_pool2d_with_indices_backward and avg_pool2d_backward (override ops)
against the CPU: windows that overlap, skip by stride, start in the padding,
dilate and end past the input (ceil_mode); the divisors of average pooling
(padding counted or not, divisor_override); contiguous, channels-last,
transposed and strided operands, 3-D inputs, empty batches; the grad_input=
forms; half, bfloat16 and (average pooling) int64; NaN and infinities;
indices -1 (skipped, as the CPU) and indices outside their windows (refused);
gradients through nn.functional.max_pool2d and avg_pool2d; the CPU's errors.
The OpInfo samples: test_opinfo.py and test_overrides.py."""

from __future__ import annotations

import pytest
import torch

from helpers import assert_at_least_as_accurate, assert_matches, in_layout, run_on_kernels

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"max_pool2d_with_indices_backward", "avg_pool2d_backward"}

max_backward = torch.ops.aten.max_pool2d_with_indices_backward
avg_backward = torch.ops.aten.avg_pool2d_backward

# (kernel_size, stride, padding, dilation, ceil_mode)
WINDOWS = {
    "2x2 stride 2": ([2, 2], [2, 2], [0, 0], [1, 1], False),
    "3x3 stride 2 padded": ([3, 3], [2, 2], [1, 1], [1, 1], False),
    "overlapping stride 1": ([3, 2], [1, 1], [1, 1], [1, 1], False),
    "uneven, ceil_mode": ([3, 2], [2, 3], [1, 0], [1, 1], True),
    "stride past kernel": ([2, 1], [3, 2], [1, 0], [1, 1], True),
    "dilated": ([3, 2], [1, 2], [1, 1], [2, 3], False),
    "whole plane": ([7, 6], [1, 1], [0, 0], [1, 1], False),
}
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
LAYOUTS = ["contiguous", "channels_last", "transposed", "strided"]


def _laid_out(t, layout):
    if layout == "channels_last":
        return t.contiguous(memory_format=torch.channels_last) if t.dim() == 4 else t
    return in_layout(t, layout)


def _max_args(x, window, layout="contiguous"):
    kernel_size, stride, padding, dilation, ceil_mode = window
    out, indices = torch.ops.aten.max_pool2d_with_indices(x.float(), kernel_size, stride, padding, dilation, ceil_mode)
    grad = torch.randn(out.shape).to(x.dtype)
    return (_laid_out(grad, layout), _laid_out(x, layout), kernel_size, stride, padding, dilation, ceil_mode,
            _laid_out(indices, layout))


def _avg_args(x, window, count_include_pad, divisor_override, layout="contiguous"):
    kernel_size, stride, padding, _, ceil_mode = window
    out = torch.ops.aten.avg_pool2d(x.float(), kernel_size, stride, padding, ceil_mode)
    scale = 1 if x.dtype.is_floating_point else 16
    grad = (torch.randn(out.shape) * scale).to(x.dtype)
    return (_laid_out(grad, layout), _laid_out(x, layout), kernel_size, stride, padding, ceil_mode,
            count_include_pad, divisor_override)


def _check(op, args, where, kernel):
    expected = op(*args)
    actual, dispatches = run_on_kernels(op, *args)
    assert actual.stride() == expected.stride() or actual.numel() <= 1, where
    if expected.dtype in (torch.float16, torch.bfloat16):
        # The CPU adds an element's gradients in the reduced type; ours in float.
        truth = op(*[a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args])
        assert_at_least_as_accurate(actual, expected, truth, where)
    else:
        assert_matches(actual, expected, where)
    assert dispatches or expected.numel() == 0, where
    assert all(d.op == kernel for d in dispatches), [d.kernel for d in dispatches]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("window", WINDOWS.values(), ids=WINDOWS.keys())
def test_max_pool_backward(window, layout, dtype):
    torch.manual_seed(0)
    x = torch.randn(2, 5, 7, 6).to(dtype)
    _check(max_backward, _max_args(x, window, layout), f"{window} {layout} {dtype}", "max_pool2d_backward")


@pytest.mark.parametrize("dtype", DTYPES + [torch.int64], ids=str)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("window", [w for w in WINDOWS.values() if w[3] == [1, 1]],
                         ids=[k for k, w in WINDOWS.items() if w[3] == [1, 1]])
@pytest.mark.parametrize("count_include_pad, divisor_override",
                         [(True, None), (False, None), (True, 5), (False, -3)])
def test_avg_pool_backward(count_include_pad, divisor_override, window, layout, dtype):
    torch.manual_seed(0)
    x = torch.randn(2, 5, 7, 6).to(dtype)
    _check(avg_backward, _avg_args(x, window, count_include_pad, divisor_override, layout),
           f"{window} {layout} {dtype} {count_include_pad} {divisor_override}", "avg_pool2d_backward")


@pytest.mark.parametrize("shape", [(5, 7, 6), (0, 3, 4, 4), (1, 1, 1, 1), (3, 1, 9, 2)], ids=str)
def test_shapes(shape):
    """3-D inputs (one batch entry), an empty batch, single elements and
    single channels (channels-last and contiguous alike)."""
    torch.manual_seed(0)
    window = ([1, 1], [1, 1], [0, 0], [1, 1], False) if shape[-1] == 1 else WINDOWS["3x3 stride 2 padded"]
    x = torch.randn(shape)
    _check(max_backward, _max_args(x, window), f"{shape}", "max_pool2d_backward")
    _check(avg_backward, _avg_args(x, window, False, None), f"{shape}", "avg_pool2d_backward")


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_special_values(value):
    """NaN and infinities in the input (the forward's indices follow them)
    and in the gradient."""
    torch.manual_seed(0)
    x = torch.randn(2, 3, 6, 6)
    x[0, 0, 1, 1], x[1, 2, :, :] = value, value
    window = WINDOWS["overlapping stride 1"]
    args = list(_max_args(x, window))
    args[0][0, 1, 2, 2] = value
    _check(max_backward, tuple(args), f"{value}", "max_pool2d_backward")
    args = list(_avg_args(x, window, True, None))
    args[0][0, 1, 2, 2] = value
    _check(avg_backward, tuple(args), f"{value}", "avg_pool2d_backward")


def test_minus_one_indices_are_skipped():
    """The CPU skips an index of -1; so do we."""
    torch.manual_seed(0)
    args = list(_max_args(torch.randn(2, 3, 6, 6), WINDOWS["2x2 stride 2"]))
    args[-1] = args[-1].clone()
    args[-1][0, 1, 1, 2] = -1
    _check(max_backward, tuple(args), "-1", "max_pool2d_backward")


@pytest.mark.parametrize("bad", [-2, 0, 35, 36], ids=["negative", "outside window", "last of plane", "past plane"])
def test_indices_outside_their_window_are_refused(bad):
    """An index the forward never records (outside its cell's window): the
    CPU's scatter writes wherever it points (past the plane too); a gather
    cannot, so we raise."""
    torch.manual_seed(0)
    args = list(_max_args(torch.randn(2, 3, 6, 6), WINDOWS["2x2 stride 2"]))
    args[-1] = args[-1].clone()
    args[-1][1, 2, 2, 1] = bad
    with pytest.raises(RuntimeError, match="max_pool2d_with_indices_backward: every index"):
        run_on_kernels(max_backward, *args)


def test_index_between_dilated_elements_is_refused():
    """An index inside a dilated window's span but off its dilation grid:
    not one of the window's elements."""
    torch.manual_seed(0)
    args = list(_max_args(torch.randn(1, 2, 8, 8), ([2, 2], [1, 1], [0, 0], [2, 2], False)))
    args[-1] = args[-1].clone()
    args[-1][0, 1, 3, 3] = 3 * 8 + 4  # window (3, 3) holds rows and columns 3 and 5
    with pytest.raises(RuntimeError, match="every index"):
        run_on_kernels(max_backward, *args)


@pytest.mark.parametrize("out_layout", ["empty", "contiguous", "channels_last", "strided"])
@pytest.mark.parametrize("self_layout", ["contiguous", "channels_last"])
def test_grad_input_forms(self_layout, out_layout):
    """grad_input=: resized from empty it takes self's memory format (as the
    CPU's); given, it keeps its own strides."""
    torch.manual_seed(0)
    x = _laid_out(torch.randn(2, 3, 6, 5), self_layout)
    out = {"empty": torch.empty(0), "contiguous": torch.empty(2, 3, 6, 5),
           "channels_last": torch.empty(2, 3, 6, 5).contiguous(memory_format=torch.channels_last),
           "strided": torch.empty(2, 3, 6, 10)[..., ::2]}[out_layout]
    window = WINDOWS["3x3 stride 2 padded"]
    for op, args in [(torch.ops.aten.max_pool2d_with_indices_backward.grad_input, _max_args(x, window)),
                     (torch.ops.aten.avg_pool2d_backward.grad_input, _avg_args(x, window, True, None))]:
        expected_out, actual_out = out.clone(), out.clone()
        expected = op(*args, grad_input=expected_out)
        (actual, actual_out), _ = run_on_kernels(lambda *a, grad_input: (op(*a, grad_input=grad_input), grad_input),
                                                 *args, grad_input=actual_out)
        assert actual.stride() == expected.stride() == expected_out.stride(), (actual.stride(), expected.stride())
        assert_matches(actual, expected, f"{op} {self_layout} {out_layout}")


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_autograd_through_pooling(layout):
    """F.max_pool2d and F.avg_pool2d in a small network: the input
    gradients as the CPU's, our kernels dispatching."""
    torch.manual_seed(0)
    x = _laid_out(torch.randn(2, 4, 9, 8), layout).requires_grad_()

    def step(x):
        y = torch.nn.functional.max_pool2d(x, 3, 2, 1)
        z = torch.nn.functional.avg_pool2d(y, 2, 1, ceil_mode=True, count_include_pad=False)
        return torch.autograd.grad(z.square().sum(), x)[0]

    expected = step(x)
    actual, dispatches = run_on_kernels(step, x)
    assert_matches(actual, expected, layout)
    assert {"max_pool2d_backward", "avg_pool2d_backward"} <= {d.op for d in dispatches}


def _bad_inputs():
    g, x = torch.randn(2, 3, 3, 3), torch.randn(2, 3, 6, 6)
    _, indices = torch.ops.aten.max_pool2d_with_indices(x, [2, 2], [2, 2])
    return g, x, indices


# Calls of (grad_output, self, indices), each with one mistake.
W = ([2, 2], [2, 2], [0, 0])
BAD_CALLS = {
    "max: grad dtype": lambda g, x, i: max_backward(g.half(), x, *W, [1, 1], False, i),
    "max: integers": lambda g, x, i: max_backward(g.long(), x.long(), *W, [1, 1], False, i),
    "max: int32 indices": lambda g, x, i: max_backward(g, x, *W, [1, 1], False, i.int()),
    "max: grad shape": lambda g, x, i: max_backward(g[:, :, :2], x, *W, [1, 1], False, i),
    "max: indices shape": lambda g, x, i: max_backward(g, x, *W, [1, 1], False, i[:1]),
    "max: kernel_size of 3": lambda g, x, i: max_backward(g, x, [2, 2, 2], [2, 2], [0, 0], [1, 1], False, i),
    "max: zero stride": lambda g, x, i: max_backward(g, x, [2, 2], [0, 0], [0, 0], [1, 1], False, i),
    "max: pad past half kernel": lambda g, x, i: max_backward(g, x, [2, 2], [2, 2], [2, 2], [1, 1], False, i),
    "max: zero dilation": lambda g, x, i: max_backward(g, x, *W, [0, 0], False, i),
    "max: 2-D input": lambda g, x, i: max_backward(g[0, 0], x[0, 0], *W, [1, 1], False, i[0, 0]),
    "avg: grad dtype": lambda g, x, i: avg_backward(g.half(), x, *W, False, True, None),
    "avg: int32": lambda g, x, i: avg_backward(g.int(), x.int(), *W, False, True, None),
    "avg: zero divisor": lambda g, x, i: avg_backward(g, x, *W, False, True, 0),
    "avg: grad shape": lambda g, x, i: avg_backward(g[:, :2], x, *W, False, True, None),
    "avg: negative pad": lambda g, x, i: avg_backward(g, x, [2, 2], [2, 2], [-1, 0], False, True, None),
    "avg: empty channels": lambda g, x, i: avg_backward(g[:, :0], x[:, :0], *W, False, True, None),
    "avg: 5-D input": lambda g, x, i: avg_backward(g[None], x[None], *W, False, True, None),
    "avg: 2-D input, zero stride": lambda g, x, i: avg_backward(g[0, 0], x[0, 0], [2, 2], [0, 0], [0, 0], False,
                                                                True, None),
    "avg: zero stride along W only": lambda g, x, i: avg_backward(g, x, [2, 2], [2, 0], [0, 0], False, True, None),
    "max: zero stride along W only": lambda g, x, i: max_backward(g, x, [2, 2], [2, 0], [0, 0], [1, 1], False, i),
}


@pytest.mark.parametrize("name", BAD_CALLS.keys())
def test_errors_are_the_cpus(name):
    call = BAD_CALLS[name]
    with pytest.raises(Exception) as cpu_error:
        call(*_bad_inputs())
    with pytest.raises(Exception) as our_error:
        run_on_kernels(call, *_bad_inputs())
    assert type(our_error.value) is type(cpu_error.value), (our_error.value, cpu_error.value)
