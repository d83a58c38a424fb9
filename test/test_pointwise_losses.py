"""mse_loss, smooth_l1_loss, huber_loss and binary_cross_entropy, forward
and backward (override ops), against the CPU: every reduction, float32,
half and bfloat16, inputs sharing a dense layout (transposed: read in place)
and not (strided, broadcast: copies), 0-dim and empty inputs, many elements
(several threadgroups of the mean's first pass), the thresholds' edges
(beta 0: the L1 loss; differences exactly at beta or delta), binary
cross-entropy's clamped logarithms and weights, out= forms, mixed dtypes
(each loss's own promotion rule) and the CPU's errors. OpInfo samples and
gradients: test_opinfo.py and test_overrides.py."""

from __future__ import annotations

import pytest
import torch

from helpers import assert_at_least_as_accurate, assert_matches, in_layout, run_on_kernels

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"mse_loss", "mse_loss_backward", "smooth_l1_loss", "smooth_l1_loss_backward", "huber_loss",
                       "huber_loss_backward", "binary_cross_entropy", "binary_cross_entropy_backward"}

aten = torch.ops.aten
REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}
DTYPES = [torch.float32, torch.float16, torch.bfloat16]

# name -> (forward, backward): aten calls with the threshold bound.
LOSSES = {
    "mse_loss": (lambda x, y, r: aten.mse_loss(x, y, r), lambda g, x, y, r: aten.mse_loss_backward(g, x, y, r)),
    "smooth_l1_loss": (lambda x, y, r: aten.smooth_l1_loss(x, y, r, 0.5),
                       lambda g, x, y, r: aten.smooth_l1_loss_backward(g, x, y, r, 0.5)),
    "huber_loss": (lambda x, y, r: aten.huber_loss(x, y, r, 0.7),
                   lambda g, x, y, r: aten.huber_loss_backward(g, x, y, r, 0.7)),
    "binary_cross_entropy": (lambda x, y, r: aten.binary_cross_entropy(x, y, None, r),
                             lambda g, x, y, r: aten.binary_cross_entropy_backward(g, x, y, None, r)),
}


def _inputs(name, shape, dtype, seed=0):
    torch.manual_seed(seed)
    if name == "binary_cross_entropy":
        return torch.rand(shape).clamp(0.01, 0.99).to(dtype), torch.rand(shape).to(dtype)
    return torch.randn(shape).to(dtype), torch.randn(shape).to(dtype)


def _compare(actual, expected, fn, args, where):
    """Equal within the dtype's tolerance, or (half, bfloat16: the CPU rounds
    after each step, we once) no further from the float64 answer."""
    try:
        assert_matches(actual, expected, where)
    except AssertionError:
        if expected.dtype == torch.float32:
            raise
        wide = [a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]
        assert_at_least_as_accurate(actual, expected, fn(*wide), where)


def _check(fn, args, where, kernel_prefix):
    """The CPU's result, and our kernels' dispatches."""
    expected = fn(*args)
    actual, dispatches = run_on_kernels(fn, *args)
    _compare(actual, expected, fn, args, where)
    assert dispatches or expected.numel() == 0, where
    assert all(d.op.startswith(kernel_prefix) or d.op == "pointwise_loss_merge" for d in dispatches), \
        [d.kernel for d in dispatches]
    return expected, dispatches


def _check_both(name, x, y, reduction, where):
    """Forward and backward; the forward's dispatches."""
    forward, backward = LOSSES[name]
    expected, dispatches = _check(forward, (x, y, REDUCTIONS[reduction]), f"{name} {where}", name)
    torch.manual_seed(1)
    grad = torch.randn(expected.shape).to(x.dtype)
    _check(backward, (grad, x, y, REDUCTIONS[reduction]), f"{name} backward {where}", f"{name}_backward")
    return dispatches


# Unreduced losses and gradients of operands in different layouts: the
# CPU's layout (its iterator's: the input's where layouts disagree; mse's
# functional backward contiguous), for the results and for an out= they
# resize. Channels-last came out contiguous.
# functional result allocated like the input (huber, binary_cross_entropy)
# or contiguous (mse's gradient) only where the input has the broadcast
# shape: a smaller input's is resized by the iterator, in its layout.
MIXED_LAYOUTS = {
    "channels_last_input": lambda x, y: (x.to(memory_format=torch.channels_last), y),
    "channels_last_target": lambda x, y: (x, y.to(memory_format=torch.channels_last)),
    "transposed_input": lambda x, y: (x.transpose(2, 3).contiguous().transpose(2, 3), y),
    "expanded_input": lambda x, y: (x[:, :1].expand(x.shape), y.to(memory_format=torch.channels_last)),
    "smaller_permuted_input": lambda x, y: (x[:1].permute(0, 3, 2, 1).contiguous().permute(0, 3, 2, 1), y),
}
# (binary_cross_entropy's loss takes the input's shape: no smaller input.)
MIXED_CASES = [(name, layout) for name in LOSSES for layout in MIXED_LAYOUTS
               if not (name == "binary_cross_entropy" and layout == "smaller_permuted_input")]


@pytest.mark.parametrize("name, layout", MIXED_CASES)
def test_unreduced_results_take_the_cpus_layout(name, layout):
    forward, backward = LOSSES[name]
    x, y = MIXED_LAYOUTS[layout](*_inputs(name, (2, 3, 4, 5), torch.float32))
    grad = torch.randn(2, 3, 4, 5)
    # (grad an argument: run_on_kernels moves arguments to the test device.)
    calls = {"forward": (lambda x, y, g: forward(x, y, 0)), "backward": (lambda x, y, g: backward(g, x, y, 0))}
    if name != "binary_cross_entropy":  # whose out= the CPU never resizes (ours raises: design.md)
        threshold = {"smooth_l1_loss": (0.5,), "huber_loss": (0.7,)}.get(name, ())
        out_forward = getattr(aten, name).out
        calls["forward into an empty out"] = lambda x, y, g: out_forward(x, y, 0, *threshold, out=torch.empty(0))
        out_backward = getattr(aten, f"{name}_backward").grad_input if name != "huber_loss" else aten.huber_loss_backward.out
        calls["backward into an empty grad_input"] = lambda x, y, g: out_backward(
            g, x, y, 0, *threshold, grad_input=torch.empty(0))
    for what, fn in calls.items():
        expected = fn(x, y, grad)
        actual, dispatches = run_on_kernels(fn, x, y, grad)
        assert_matches(actual, expected, f"{name} {what}")
        assert dispatches and actual.stride() == expected.stride(), (what, actual.stride(), expected.stride())


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("shape", [(2049, 4100), (4100, 4100)], ids=str)
def test_most_groups(name, shape):
    """Past 1024 first-pass groups (2049 x 4100: 2052 groups, 4096
    elements each) and at the bound (4100 x 4100: 4096 groups, longer
    chunks): a merge group of 1024 threads, each over several partials."""
    x, y = _inputs(name, shape, torch.float32)
    first, merge = _check_both(name, x, y, "mean", f"mean {shape} most groups")
    assert first.thread_count // (first.group_size[0] * first.group_size[1] * first.group_size[2]) > 1024
    assert merge.group_size[0] == 1024


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
def test_reductions_dtypes_layouts(name, reduction, dtype, layout):
    x, y = _inputs(name, (6, 7), dtype)
    x, y = in_layout(x, layout), in_layout(y, layout)
    _check_both(name, x, y, reduction, f"{reduction} {dtype} {layout}")


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_layouts_that_differ(name, reduction):
    """One operand transposed, the other not: both read as contiguous copies."""
    x, y = _inputs(name, (6, 7), torch.float32)
    _check_both(name, in_layout(x, "transposed"), y, reduction, f"{reduction} mixed layouts")


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_broadcast_target(name, reduction):
    """A target broadcast to the input's shape, and (the CPU resizes its
    output) an input broadcast to the target's, except binary_cross_entropy's
    (the CPU's loss keeps the input's shape over another's values; F.binary_
    cross_entropy refuses such shapes) which takes a target of the input's
    squeezed shape instead."""
    x, y = _inputs(name, (4, 6), torch.float32)
    forward, backward = LOSSES[name]
    _check(forward, (x, y[0], REDUCTIONS[reduction]), f"{name} {reduction} broadcast", name)
    if name != "binary_cross_entropy":  # whose CPU kernel gives garbage there
        _check(forward, (x[:1], y, REDUCTIONS[reduction]), f"{name} {reduction} broadcast input", name)
    else:
        _check(forward, (x.unsqueeze(1), y, REDUCTIONS[reduction]), f"{reduction} squeezed", name)
    grad = torch.randn(4, 6) if reduction == "none" else torch.tensor(0.5)
    _check(backward, (grad, x, y[0], REDUCTIONS[reduction]), f"{name} backward {reduction} broadcast",
           f"{name}_backward")


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(), (0,), (0, 3), (1,)], ids=str)
def test_small_and_empty(name, reduction, shape):
    x, y = _inputs(name, shape, torch.float32)
    _check_both(name, x, y, reduction, f"{reduction} {shape}")


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
def test_many_groups(name, reduction, dtype):
    """300 * 257 elements: 19 groups of the first pass, the last one short."""
    x, y = _inputs(name, (300, 257), dtype)
    _check_both(name, x, y, reduction, f"{reduction} {dtype} many groups")


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_smooth_l1_beta_zero_is_l1(reduction):
    """beta 0: the L1 loss; its gradient is the formula's, -g where x == y
    (not the L1 loss's 0, as the CPU's since torch 2.9)."""
    x, y = _inputs("smooth_l1_loss", (5, 6), torch.float32)
    y[0] = x[0]  # differences of 0
    r = REDUCTIONS[reduction]
    forward, _ = _check(lambda x, y: aten.smooth_l1_loss(x, y, r, 0.0), (x, y), f"beta 0 {reduction}",
                        "smooth_l1_loss")
    grad = torch.randn(forward.shape)
    _check(lambda g, x, y: aten.smooth_l1_loss_backward(g, x, y, r, 0.0), (grad, x, y), f"beta 0 backward {reduction}",
           "smooth_l1_loss_backward")


@pytest.mark.parametrize("name, threshold", [("smooth_l1_loss", 0.5), ("huber_loss", 0.5)])
def test_differences_at_the_threshold(name, threshold):
    """x - y exactly -t, 0 and t, and NaN: each branch's edge."""
    x = torch.tensor([0.5, 0.0, -0.5, 1.0, float("nan"), 0.25])
    y = torch.tensor([0.0, 0.5, -0.5, 0.5, 0.0, 0.0])
    fwd = {"smooth_l1_loss": lambda x, y: aten.smooth_l1_loss(x, y, 0, threshold),
           "huber_loss": lambda x, y: aten.huber_loss(x, y, 0, threshold)}[name]
    bwd = {"smooth_l1_loss": lambda g, x, y: aten.smooth_l1_loss_backward(g, x, y, 0, threshold),
           "huber_loss": lambda g, x, y: aten.huber_loss_backward(g, x, y, 0, threshold)}[name]
    _check(fwd, (x, y), f"{name} edges", name)
    _check(bwd, (torch.full((6,), 2.0), x, y), f"{name} backward edges", f"{name}_backward")


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_bce_clamped_logs_and_weights(reduction, dtype):
    """Inputs 0 and 1 (log clamped at -100; the backward's denominator at
    1e-12), 1e-7 with target 0 (the loss is log1p(-x): log(1 - x) would
    give 0), a weight per column and one of the input's shape."""
    x = torch.tensor([[0.0, 1.0, 0.5, 1e-30, 1e-7], [1.0, 0.0, 0.25, 0.999, 0.75]]).to(dtype)
    y = torch.tensor([[0.0, 1.0, 1.0, 0.5, 0.0], [0.0, 1.0, 0.0, 0.25, 0.0]]).to(dtype)
    r = REDUCTIONS[reduction]
    for weight in (None, torch.rand(5).to(dtype), torch.rand(2, 5).to(dtype)):
        where = f"{reduction} {dtype} weight {None if weight is None else tuple(weight.shape)}"
        out, _ = _check(lambda x, y, w: aten.binary_cross_entropy(x, y, w, r), (x, y, weight), where,
                        "binary_cross_entropy")
        grad = torch.randn(out.shape).to(dtype)
        _check(lambda g, x, y, w: aten.binary_cross_entropy_backward(g, x, y, w, r), (grad, x, y, weight),
               f"backward {where}", "binary_cross_entropy_backward")


def test_bce_log1p_is_within_an_ulp_or_two_of_float64():
    """With target 0 the loss is -log1p(-x): over x from 2**-30 to 1 (every
    binade, each side of 0.5 where 1 - x turns exact, and 10**5 random
    values) ours stays within 2.5 ulps of float64's answer. log(1 - x) alone
    is off by up to 100% near 0; an uncorrected rounding of 1 - x by far
    more than 2.5 ulps."""
    torch.manual_seed(0)
    x = torch.cat([2.0 ** -torch.arange(1, 31, dtype=torch.float64),
                   torch.tensor([0.5 - 2 ** -25, 0.5, 0.5 + 2 ** -24, 1 - 2 ** -24], dtype=torch.float64),
                   torch.rand(100_000, dtype=torch.float64)]).float()
    y = torch.zeros_like(x)
    actual, _ = run_on_kernels(lambda x, y: aten.binary_cross_entropy(x, y, None, 0), x, y)
    exact = -torch.log1p(-x.double())
    ulp = torch.finfo(torch.float32).eps * exact.abs()
    error = (actual.double() - exact).abs() / ulp
    assert error.max() <= 2.5, (error.max(), x[error.argmax()])


@pytest.mark.parametrize("value", [1.5, -0.5, float("nan")])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("operand", ["input", "target"])
def test_bce_operand_outside_0_1_raises(value, reduction, operand):
    x, y = _inputs("binary_cross_entropy", (40, 50), torch.float32)
    (x if operand == "input" else y)[7, 9] = value
    call = lambda x, y: aten.binary_cross_entropy(x, y, None, REDUCTIONS[reduction])  # noqa: E731
    message = f"elements of {operand} should be between 0 and 1"
    with pytest.raises(RuntimeError, match=message):
        call(x, y)
    with pytest.raises(RuntimeError, match=message):
        run_on_kernels(call, x, y)


# Mixed dtypes: each loss's own rule (promote, cast to the input's dtype,
# or raise), as the CPU's TensorIterator configurations give them.
MIXED = {
    "mse float, half": lambda x, y, g: aten.mse_loss(x, y.half(), 1),
    "mse half, float": lambda x, y, g: aten.mse_loss(x.half(), y, 0),
    "mse float, long": lambda x, y, g: aten.mse_loss(x, y.long(), 1),
    "mse long, long": lambda x, y, g: aten.mse_loss(x.long(), y.long(), 1),
    "smooth_l1 bfloat16, float": lambda x, y, g: aten.smooth_l1_loss(x.bfloat16(), y, 0, 1.0),
    "huber half, float": lambda x, y, g: aten.huber_loss(x.half(), y, 0, 1.0),
    "huber long, float": lambda x, y, g: aten.huber_loss(x.long(), y, 0, 1.0),
    "bce float, half": lambda x, y, g: aten.binary_cross_entropy(x, y.half()),
    "bce half weight": lambda x, y, g: aten.binary_cross_entropy(x, y, torch.linspace(0.1, 0.9, 4).half()),
    "mse backward half input": lambda x, y, g: aten.mse_loss_backward(g, x.half(), y, 1),
    "mse backward long": lambda x, y, g: aten.mse_loss_backward(g, x.long(), y.long(), 1),
    "smooth_l1 backward half input": lambda x, y, g: aten.smooth_l1_loss_backward(g, x.half(), y, 1, 1.0),
    "huber backward half input": lambda x, y, g: aten.huber_loss_backward(g, x.half(), y, 1, 1.0),
    "bce backward half target": lambda x, y, g: aten.binary_cross_entropy_backward(g, x, y.half(), None, 1),
}


@pytest.mark.parametrize("call", MIXED.values(), ids=MIXED.keys())
def test_mixed_dtypes_as_the_cpu(call):
    x, y = _inputs("binary_cross_entropy", (3, 4), torch.float32)
    g = torch.tensor(0.5)
    try:
        expected = call(x, y, g)
    except Exception as cpu_error:  # noqa: BLE001: the CPU's exception type is the answer
        with pytest.raises(Exception) as our_error:
            run_on_kernels(call, x, y, g)
        assert type(our_error.value) is type(cpu_error), (our_error.value, cpu_error)
        return
    actual, dispatches = run_on_kernels(call, x, y, g)
    assert dispatches
    assert_matches(actual, expected, "mixed dtypes")


ERRORS = {
    "negative beta": lambda x, y: aten.smooth_l1_loss(x, y, 1, -1.0),
    "delta 0": lambda x, y: aten.huber_loss(x, y, 1, 0.0),
    "shapes": lambda x, y: aten.mse_loss(x, y[:, :2], 1),
    "bce weight too big": lambda x, y: aten.binary_cross_entropy(x, y, torch.rand(2, 3, 4)),
    "bce weight shape": lambda x, y: aten.binary_cross_entropy(x, y, torch.rand(3)),
    "mse reduction 3": lambda x, y: aten.mse_loss(x, y, 3),
    "smooth_l1 reduction -1": lambda x, y: aten.smooth_l1_loss(x, y, -1, 1.0),
}


@pytest.mark.parametrize("call", ERRORS.values(), ids=ERRORS.keys())
def test_errors_are_the_cpus(call):
    x, y = _inputs("binary_cross_entropy", (3, 4), torch.float32)
    with pytest.raises(Exception) as cpu_error:
        call(x, y)
    with pytest.raises(Exception) as our_error:
        run_on_kernels(call, x, y)
    assert type(our_error.value) is type(cpu_error.value), (our_error.value, cpu_error.value)


@pytest.mark.parametrize("reduction", [3, -1])
def test_huber_and_bce_leave_an_unknown_reduction_unreduced(reduction):
    """The CPU's apply_loss_reduction: neither mean nor sum is none (ours
    summed)."""
    x, y = _inputs("binary_cross_entropy", (3, 4), torch.float32)
    for call in (lambda a, b: aten.huber_loss(a, b, reduction, 1.0),
                 lambda a, b: aten.binary_cross_entropy(a, b, None, reduction)):
        expected = call(x, y)
        actual, dispatches = run_on_kernels(call, x, y)
        assert dispatches and actual.shape == expected.shape == (3, 4)
        assert_matches(actual, expected)


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_strided_out(name, reduction):
    """A strided out= gets a stand-in, copied in."""
    x, y = _inputs(name, (4, 5), torch.float32)
    r = REDUCTIONS[reduction]
    forward = {"mse_loss": lambda x, y, out: aten.mse_loss.out(x, y, r, out=out),
               "smooth_l1_loss": lambda x, y, out: aten.smooth_l1_loss.out(x, y, r, 0.5, out=out),
               "huber_loss": lambda x, y, out: aten.huber_loss.out(x, y, r, 0.7, out=out),
               "binary_cross_entropy": lambda x, y, out: aten.binary_cross_entropy.out(x, y, None, r, out=out)}[name]
    into_strided = lambda x, y: forward(x, y, torch.empty(4, 10)[:, ::2])  # noqa: E731
    if name == "binary_cross_entropy" and reduction != "none":
        # The CPU's binary_cross_entropy.out computes a reduced loss wrongly
        # (it iterates over the out's old shape: 0.70 for 0.87, NaN for an
        # empty out): the functional form is the answer.
        expected = LOSSES[name][0](x, y, r)
        actual, _ = run_on_kernels(into_strided, x, y)
        assert_matches(actual, expected, f"{name} {reduction} strided out")
        return
    _check(into_strided, (x, y), f"{name} {reduction} strided out", name)


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("reduction", ["none", "mean"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_backward_in_pairs_is_the_single_kernels_bit_for_bit(name, reduction, dtype):
    """Half and bfloat16 operands of an even count, 4-byte aligned, take the
    paired backward (two elements per 32-bit word); the same operands one
    element off a word take the single-element kernel: the same bits, and
    the CPU's gradient within _compare's rule. An odd count takes the
    single kernel too. bce with a weight per element as well."""
    backward = LOSSES[name][1]
    r = REDUCTIONS[reduction]
    weights = [None, torch.rand(3, 1031).to(dtype)] if name == "binary_cross_entropy" else [None]
    for weight in weights:
        for shape, paired in (((3, 1030), True), ((3, 1031), False)):
            x, y = _inputs(name, shape, dtype)
            w = None if weight is None else weight[:, :shape[1]]
            grad = torch.randn(shape if reduction == "none" else ()).to(dtype)
            call = (lambda g, a, b, c: aten.binary_cross_entropy_backward(g, a, b, c, r)) if weight is not None \
                else (lambda g, a, b, c: backward(g, a, b, r))
            args = (grad, x, y, w)
            where = f"{name} {reduction} {dtype} {shape} weight {weight is not None}"
            expected = call(*args)
            actual, dispatches = run_on_kernels(call, *args)
            _compare(actual, expected, call, args, where)
            assert [d.op.endswith("_pairs") for d in dispatches] == [paired], (where, [d.op for d in dispatches])
            if paired:
                # Each operand one element into a larger tensor: off a word.
                def off_a_word(t):
                    if t is None or t.dim() == 0:
                        return t
                    return torch.cat([t.new_zeros(1), t.reshape(-1)])[1:].view(t.shape)
                single, dispatches = run_on_kernels(call, *[off_a_word(a) for a in args])
                assert [d.op.endswith("_pairs") for d in dispatches] == [False], where
                assert torch.equal(single.view(torch.int16), actual.view(torch.int16)), where
