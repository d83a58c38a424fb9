"""batch_norm's forward and backward overloads (override ops) against the
CPU: training and evaluation, 2-D to 5-D inputs, contiguous, channels-last
(with a storage offset, where MPSGraph goes wrong) and other strides, with
and without weight, bias and running statistics, float parameters beside a
half or bfloat16 input, the running statistics' update (in place, also
non-contiguous), every backward output mask, non-finite inputs, empty
batches, and the CPU's errors. Their OpInfo samples and gradients
(nn.functional.batch_norm): test_overrides.py and test_opinfo.py."""

from __future__ import annotations

import pytest
import torch

from helpers import assert_at_least_as_accurate, assert_matches, in_layout, run_on_kernels

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"native_batch_norm", "_native_batch_norm_legit", "_batch_norm_with_update",
                       "native_batch_norm_backward", "batch_norm_backward"}

aten = torch.ops.aten
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def _input(shape, dtype, layout="contiguous", seed=0):
    torch.manual_seed(seed)
    x = (torch.randn(shape) * 2 + 1).to(dtype)
    channels_last = torch.channels_last if x.dim() == 4 else torch.channels_last_3d
    if layout == "channels_last":
        return x.to(memory_format=channels_last)
    if layout == "channels_last_offset":
        # A channels-last view one batch entry into a larger tensor.
        big = torch.randn((shape[0] + 1, *shape[1:])).to(dtype).to(memory_format=channels_last)
        big[1:] = x
        return big[1:]
    return in_layout(x, layout)


def _params(channels, dtype, seed=1):
    torch.manual_seed(seed)
    return (torch.randn(channels).to(dtype), torch.randn(channels).to(dtype), torch.randn(channels).to(dtype),
            (torch.rand(channels) + 0.5).to(dtype))


def _wide(*tensors):
    """Fresh float64 copies (parameters too) of a call's tensors, for the truth."""
    flat = [t for group in tensors for t in (group if isinstance(group, (tuple, list)) else [group])]
    return [t.double() if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in flat]


def _assert_close_or_closer(actual, expected, truth, where):
    """Within the dtype's tolerance of the CPU's results, or no further from
    the float64 results than the CPU's: the CPU's contiguous kernels scale
    and shift (x * a + b, a cancellation where |mean| >> std), ours centre
    first."""
    exact = None
    for a, e, i in zip(actual, expected, range(len(expected))):
        if e is None:
            continue
        try:
            assert_matches(a, e, where)
        except AssertionError:
            exact = exact or truth()
            assert_at_least_as_accurate(a, e, exact[i], where)


def _forward_check(call, x, params, where, running_changes=True):
    """call(x, weight, bias, running_mean, running_var) on the CPU and on our
    kernels: results and the running statistics after."""
    cpu_params = [p.clone() if p is not None else None for p in params]
    expected = call(x, *cpu_params)
    ours_params = [p.clone() if p is not None else None for p in params]
    args = (x, *ours_params)
    actual, dispatches = run_on_kernels(lambda *a: (call(*a), a[3], a[4]), *args)
    results, running_mean, running_var = actual
    _assert_close_or_closer(results, expected, lambda: call(*_wide(x, params)), where)
    for a, e, name in zip(results, expected, ("out", "save_mean", "save_invstd", "reserve")):
        assert a.shape == e.shape, f"{where} {name}"
    if results[0].dim() == 4 and x.is_contiguous(memory_format=torch.channels_last):
        assert results[0].stride() == expected[0].stride(), where
    if running_changes and cpu_params[2] is not None:
        assert_matches(running_mean, cpu_params[2], f"{where} running_mean")
        assert_matches(running_var, cpu_params[3], f"{where} running_var")
    assert dispatches, where
    assert all(d.op.startswith("batch_norm") for d in dispatches), [d.kernel for d in dispatches]


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 7), (4, 3, 5, 6), (2, 4, 3, 5, 2), (2, 70, 33), (1, 2, 1)],
                         ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("training", [True, False])
def test_native_batch_norm(shape, dtype, training):
    call = lambda x, w, b, rm, rv: aten.native_batch_norm(x, w, b, rm, rv, training, 0.1, 1e-5)  # noqa: E731
    _forward_check(call, _input(shape, dtype), _params(shape[1], dtype), f"{shape} {dtype} training={training}")


@pytest.mark.parametrize("layout", ["channels_last", "channels_last_offset", "transposed", "strided"])
@pytest.mark.parametrize("shape", [(4, 6, 5, 3), (2, 3, 4, 5, 2)], ids=str)
@pytest.mark.parametrize("training", [True, False])
def test_layouts(layout, shape, training):
    call = lambda x, w, b, rm, rv: aten.native_batch_norm(x, w, b, rm, rv, training, 0.1, 1e-5)  # noqa: E731
    _forward_check(call, _input(shape, torch.float32, layout), _params(shape[1], torch.float32),
                   f"{layout} {shape} training={training}")


@pytest.mark.parametrize("affine", ["none", "weight", "bias", "both"])
@pytest.mark.parametrize("running", [True, False])
def test_optional_arguments(affine, running):
    w, b, rm, rv = _params(5, torch.float32)
    params = (w if affine in ("weight", "both") else None, b if affine in ("bias", "both") else None,
              rm if running else None, rv if running else None)
    call = lambda x, w, b, rm, rv: aten.native_batch_norm(x, w, b, rm, rv, True, 0.3, 1e-3)  # noqa: E731
    _forward_check(call, _input((3, 5, 8), torch.float32), params, f"affine={affine} running={running}")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("training", [True, False])
def test_float_parameters_beside_half_input(dtype, training):
    """The CPU's mixed rule: float statistics and parameters."""
    call = lambda x, w, b, rm, rv: aten.native_batch_norm(x, w, b, rm, rv, training, 0.1, 1e-5)  # noqa: E731
    _forward_check(call, _input((4, 3, 6, 5), dtype, "channels_last"), _params(3, torch.float32),
                   f"{dtype} input, float parameters")


def test_other_forward_overloads():
    x = _input((4, 3, 5, 6), torch.float32, "channels_last")
    params = _params(3, torch.float32)
    overloads = {
        "_native_batch_norm_legit": lambda x, w, b, rm, rv: aten._native_batch_norm_legit(x, w, b, rm, rv, True,
                                                                                           0.1, 1e-5),
        "_native_batch_norm_legit eval": lambda x, w, b, rm, rv: aten._native_batch_norm_legit(
            x, w, b, rm, rv, False, 0.1, 1e-5),
        "no_stats": lambda x, w, b, rm, rv: aten._native_batch_norm_legit.no_stats(x, w, b, True, 0.1, 1e-5),
        "_batch_norm_with_update": lambda x, w, b, rm, rv: aten._batch_norm_with_update(x, w, b, rm, rv, 0.1,
                                                                                         1e-5),
    }
    for name, call in overloads.items():
        _forward_check(call, x, params, name)


def test_non_contiguous_running_statistics():
    """Updated in place through a copy: the caller's strided tensors change."""
    w, b, rm, rv = _params(4, torch.float32)
    rm = torch.stack([rm, rm], 1)[:, 0]
    rv = torch.stack([rv, rv], 1)[:, 1]
    call = lambda x, w, b, rm, rv: aten.native_batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5)  # noqa: E731
    _forward_check(call, _input((5, 4, 3), torch.float32), (w, b, rm, rv), "strided running statistics")


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan"), 3e38])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("length", [5, 500])
def test_non_finite_values(value, training, length):
    """Channels of 20 elements (a few per thread) and of 2000 (runs of 8 per
    thread, whose all-finite arithmetic must not take the odd one)."""
    x = _input((4, 3, length), torch.float32)
    x[1, 2, 3 * length // 5] = value
    call = lambda x, w, b, rm, rv: aten.native_batch_norm(x, w, b, rm, rv, training, 0.1, 1e-5)  # noqa: E731
    _forward_check(call, x, _params(3, torch.float32), f"{value} training={training}")


def test_one_value_per_channel():
    """n = 1: a zero variance, the unbiased one 0/0 (NaN) in the running
    variance, as on the CPU."""
    call = lambda x, w, b, rm, rv: aten.native_batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5)  # noqa: E731
    _forward_check(call, _input((1, 3), torch.float32), _params(3, torch.float32), "one value per channel")


@pytest.mark.parametrize("training", [True, False])
def test_zero_variance_without_eps(training):
    """var + eps = 0: training's InvStd gives 0 (the output the bias), the
    evaluation's 1 / sqrt(running_var + eps) an infinity, as on the CPU."""
    x = torch.ones(4, 3, 5)
    w, b, rm, _ = _params(3, torch.float32)
    rv = torch.zeros(3)
    call = lambda x, w, b, rm, rv: aten.native_batch_norm(x, w, b, rm, rv, training, 0.1, 0.0)  # noqa: E731
    _forward_check(call, x, (w, b, rm, rv), f"zero variance training={training}")
    if not training:
        g = torch.randn(4, 3, 5)
        _backward_check([g, x, w, rm, rv, None, None], False, where="zero running variance", eps=0.0)


def test_empty_batch_in_evaluation():
    call = lambda x, w, b, rm, rv: aten.native_batch_norm(x, w, b, rm, rv, False, 0.1, 1e-5)  # noqa: E731
    x = torch.randn(0, 3, 4)
    expected = call(x, *_params(3, torch.float32))
    actual, _ = run_on_kernels(call, x, *_params(3, torch.float32))
    assert [a.shape for a in actual] == [e.shape for e in expected]


# --- backward --------------------------------------------------------------

def _backward_args(shape, dtype, train, layout="contiguous", param_dtype=None, affine=True):
    x = _input(shape, dtype, layout)
    w, b, rm, rv = _params(shape[1], param_dtype or dtype)
    _, save_mean, save_invstd = aten.native_batch_norm(x, w, b, rm.clone(), rv.clone(), train, 0.1, 1e-5)
    torch.manual_seed(2)
    grad = in_layout(torch.randn(shape).to(dtype), "contiguous")
    if layout.startswith("channels_last"):
        grad = grad.to(memory_format=torch.channels_last if len(shape) == 4 else torch.channels_last_3d)
    return [grad, x, w if affine else None, rm, rv, save_mean, save_invstd]


def _backward_check(args, train, mask=(True, True, True), where="", new=False, eps=1e-5):
    if new:
        call = lambda g, x, w, rm, rv, sm, si: aten.batch_norm_backward(  # noqa: E731
            g, x, w, rm, rv, sm, si, train, eps, list(mask), torch.empty(0, dtype=torch.uint8, device=x.device))
    else:
        call = lambda g, x, w, rm, rv, sm, si: aten.native_batch_norm_backward(  # noqa: E731
            g, x, w, rm, rv, sm, si, train, eps, list(mask))
    expected = call(*args)
    actual, dispatches = run_on_kernels(call, *args)
    for a, e, name in zip(actual, expected, ("grad_input", "grad_weight", "grad_bias")):
        assert (a is None) == (e is None), f"{where} {name}"
        if e is not None:
            assert a.stride() == e.stride(), f"{where} {name}"
    _assert_close_or_closer(actual, expected, lambda: call(*_wide(args)), where)
    assert dispatches or args[1].numel() == 0, where
    assert all(d.op.startswith("batch_norm_backward") for d in dispatches), [d.kernel for d in dispatches]


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 7), (4, 3, 5, 6), (2, 4, 3, 5, 2), (2, 70, 33)], ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("train", [True, False])
def test_native_batch_norm_backward(shape, dtype, train):
    _backward_check(_backward_args(shape, dtype, train), train, where=f"{shape} {dtype} train={train}")


@pytest.mark.parametrize("layout", ["channels_last", "channels_last_offset", "transposed", "strided"])
@pytest.mark.parametrize("train", [True, False])
def test_backward_layouts(layout, train):
    _backward_check(_backward_args((4, 6, 5, 3), torch.float32, train, layout), train, where=layout)


def test_backward_gradient_in_another_layout():
    """A contiguous grad_out beside a channels-last input (the gradient
    follows the input's layout, as on the CPU)."""
    args = _backward_args((3, 4, 5, 6), torch.float32, True, "channels_last")
    args[0] = args[0].contiguous()
    _backward_check(args, True, where="contiguous grad, channels-last input")


@pytest.mark.parametrize("mask", [(True, False, False), (False, True, False), (False, False, True),
                                  (False, True, True), (True, True, False)], ids=str)
@pytest.mark.parametrize("train", [True, False])
def test_backward_output_masks(mask, train):
    _backward_check(_backward_args((5, 4, 6), torch.float32, train), train, mask, where=f"mask {mask}")


@pytest.mark.parametrize("train", [True, False])
def test_backward_without_weight(train):
    _backward_check(_backward_args((5, 4, 6), torch.float32, train, affine=False), train, where="no weight")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_backward_float_parameters_beside_half_input(dtype):
    _backward_check(_backward_args((4, 3, 6, 5), dtype, True, "channels_last", torch.float32), True,
                    where=f"{dtype} input, float parameters")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_backward_float_statistics_beside_half_input(dtype):
    """CUDA's forward keeps a half input's save_mean and save_invstd in
    float (the CPU's backward refuses them beside half parameters): taken,
    against the CPU's answer for the statistics rounded to the input's dtype,
    within the rounding that costs."""
    args = _backward_args((4, 3, 6, 5), dtype, True)
    wide = _backward_args((4, 3, 6, 5), torch.float32, True)
    args[5], args[6] = wide[5], wide[6]
    call = lambda g, x, w, rm, rv, sm, si: aten.native_batch_norm_backward(  # noqa: E731
        g, x, w, rm, rv, sm, si, True, 1e-5, [True, True, True])
    expected = call(*[t.float() if isinstance(t, torch.Tensor) else t for t in args])
    actual, dispatches = run_on_kernels(call, *args)
    assert dispatches
    for a, e in zip(actual, expected):
        assert a.dtype == dtype
        torch.testing.assert_close(a.float(), e.to(dtype).float(), atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("train", [True, False])
def test_batch_norm_backward(train):
    _backward_check(_backward_args((4, 3, 5, 6), torch.float32, train, "channels_last"), train,
                    where="batch_norm_backward", new=True)


def test_backward_empty_batch():
    """The CPU divides by the zero count (its process dies): sums over no
    element, zero weight and bias gradients, an empty input gradient."""
    args = _backward_args((2, 3, 4), torch.float32, False)
    args[0], args[1] = args[0][:0], args[1][:0]
    call = lambda g, x, w, rm, rv, sm, si: aten.native_batch_norm_backward(  # noqa: E731
        g, x, w, rm, rv, sm, si, False, 1e-5, [True, True, True])
    (grad_input, grad_weight, grad_bias), _ = run_on_kernels(call, *args)
    assert grad_input.shape == (0, 3, 4)
    assert torch.equal(grad_weight, torch.zeros(3)) and torch.equal(grad_bias, torch.zeros(3))


def test_autograd_through_both_directions():
    """F.batch_norm in training with every override on: input, weight and
    bias gradients as the CPU's."""
    torch.manual_seed(3)
    x = _input((4, 3, 5, 6), torch.float32, "channels_last").requires_grad_()
    w, b, rm, rv = _params(3, torch.float32)
    w.requires_grad_()
    b.requires_grad_()
    grad = torch.randn(4, 3, 5, 6)

    def step(x, w, b, rm, rv, grad):
        # (cuDNN off: on the GPU backend's CUDA tensors F.batch_norm would
        # take cudnn_batch_norm, where a Mac takes _batch_norm_with_update.)
        with torch.backends.cudnn.flags(enabled=False):
            out = torch.nn.functional.batch_norm(x, rm, rv, w, b, training=True, momentum=0.1, eps=1e-5)
            return (out, *torch.autograd.grad(out, (x, w, b), grad))

    expected = step(x, w, b, rm.clone(), rv.clone(), grad)
    actual, dispatches = run_on_kernels(step, x, w, b, rm.clone(), rv.clone(), grad)
    assert_matches(list(actual), list(expected), "autograd")
    assert {d.op.split("_")[0] for d in dispatches} == {"batch"}
    assert any(d.op.startswith("batch_norm_backward") for d in dispatches)


# --- errors ----------------------------------------------------------------

def _forward_call(x, w=None, b=None, rm=None, rv=None, training=True):
    return aten.native_batch_norm(x, w, b, rm, rv, training, 0.1, 1e-5)


ERRORS = {
    "integer input": lambda x, p: _forward_call(x.long(), *p),
    "one dim": lambda x, p: _forward_call(x[0, 0]),
    "running_mean alone": lambda x, p: _forward_call(x, None, None, p[2], None),
    "half parameter beside float input": lambda x, p: _forward_call(x, p[0].half(), *p[1:]),
    "float bias after half weight": lambda x, p: _forward_call(x.half(), p[0].half(), p[1], p[2].half(),
                                                               p[3].half()),
    "half running_var in mixed": lambda x, p: _forward_call(x.half(), *p[:3], p[3].half()),
    "empty training batch": lambda x, p: _forward_call(x[:0], *p),
    "backward integer input": lambda x, p: aten.native_batch_norm_backward(
        x.long(), x.long(), None, p[2], p[3], None, None, False, 1e-5, [True, True, True]),
}


@pytest.mark.parametrize("call", ERRORS.values(), ids=ERRORS.keys())
def test_errors_are_the_cpus(call):
    x = _input((4, 3, 5), torch.float32)
    params = _params(3, torch.float32)
    with pytest.raises(Exception) as cpu_error:
        call(x, params)
    with pytest.raises(Exception) as our_error:
        run_on_kernels(call, x, params)
    assert type(our_error.value) is type(cpu_error.value), (our_error.value, cpu_error.value)


OUR_ERRORS = {
    # The CPU reads past a short parameter or a missing statistic.
    "short weight": lambda x, p: _forward_call(x, p[0][:2], *p[1:]),
    "short running_var": lambda x, p: _forward_call(x, *p[:3], p[3][:2]),
    "evaluation without running statistics": lambda x, p: _forward_call(x, *p[:2], training=False),
    "backward training without save_mean": lambda x, p: aten.native_batch_norm_backward(
        x, x, p[0], p[2], p[3], None, None, True, 1e-5, [True, True, True]),
    "backward grad_out of another size": lambda x, p: aten.native_batch_norm_backward(
        x[:2], x, p[0], p[2], p[3], None, None, False, 1e-5, [True, True, True]),
}


@pytest.mark.parametrize("call", OUR_ERRORS.values(), ids=OUR_ERRORS.keys())
def test_errors_the_cpu_lacks(call):
    x = _input((4, 3, 5), torch.float32)
    with pytest.raises(RuntimeError, match="batch_norm"):
        run_on_kernels(call, x, _params(3, torch.float32))
