"""native_group_norm_backward (a fill op: torch 2.9 to 2.12 lack it on MPS)
against the CPU: groups of one channel to all of them, one-element groups,
2-D to 5-D inputs, float32, half and bfloat16 (float statistics and weight
beside a half input: the CPU's mixed path), with and without a weight, every
output mask, contiguous, channels-last and other strides, special values,
several pieces of the element pass (past 2**32 elements: on a GPU),
empty inputs, the CPU's errors, and
GroupNorm's gradients through autograd (its OpInfo, nn.functional.group_norm)."""

from __future__ import annotations

import pytest
import torch
from torch.testing._internal.common_methods_invocations import op_db

import mps_ops
from helpers import (assert_gradients_near, assert_matches, error_against, errors_of_cpu_and_ours, in_layout,
                     opinfo_gradients, run_on_kernels)
from mps_ops.testing import device, emulate

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"native_group_norm_backward"}

backward = torch.ops.aten.native_group_norm_backward
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
NAMES = ("grad_input", "grad_weight", "grad_bias")


def _args(shape, groups, dtype=torch.float32, affine=True, param_dtype=None, seed=0, offset=1.0):
    """grad_out, input, mean, rstd, weight and N, C, HxW, groups for an input
    of `shape` (statistics from the CPU's forward)."""
    torch.manual_seed(seed)
    x = (torch.randn(shape) * 3 + offset).to(dtype)
    n, c = shape[0], shape[1]
    hxw = x.numel() // max(1, n * c) if n * c else 1
    weight = torch.randn(c).to(param_dtype or dtype) if affine else None
    _, mean, rstd = torch.native_group_norm(x, weight, None, n, c, hxw, groups, 1e-5)
    grad = torch.randn(shape).to(dtype)
    return [grad, x, mean, rstd, weight, n, c, hxw, groups]


def _call(mask):
    return lambda g, x, m, r, w, *sizes: backward(g, x, m, r, w, *sizes, list(mask))


def _truth(args, mask):
    """The same call in float64 (contiguous operands)."""
    wide = [t.contiguous().double() if isinstance(t, torch.Tensor) else t for t in args]
    return _call(mask)(*wide)


def _assert_near(actual, cpu, truth, args, name, where):
    """Within the dtype's tolerance of the CPU's result, or no further from
    the float64 result than the CPU's (each sums in its own order, ours
    centred on the group's mean, the CPU's not), or within a few ulps of the
    sum of the terms' magnitudes (the sums' rounding bound)."""
    try:
        assert_matches(actual, cpu, f"{where} {name}")
        return
    except AssertionError:
        pass
    ours, reference = error_against(actual, truth), error_against(cpu, truth)
    grad, x, mean, rstd, _, n, c, hxw, groups = args
    dy = grad.double().reshape(n, groups, -1)
    centred = (x.double().reshape(n, groups, -1) - mean.double().reshape(n, groups, 1)) * \
        rstd.double().reshape(n, groups, 1)
    scale = (dy.abs() * (1 + centred.abs())).sum().item() / max(1, c)
    bound = 16 * torch.finfo(actual.dtype).eps * max(scale, truth.double().abs().max().item())
    assert ours <= max(reference, bound), f"{where} {name}: {ours:.3g} from float64, the CPU's {reference:.3g}"


def _check(args, mask=None, where="", reference=None):
    """Ours against the CPU's call on `reference` (the args by default;
    torch 2.13's CPU reads transposed operands in memory order, and its
    channels-last kernel misreads a contiguous grad_out, so those compare
    with the contiguous call)."""
    mask = mask or (True, args[4] is not None, args[4] is not None)
    expected = _call(mask)(*(reference or args))
    actual, dispatches = run_on_kernels(_call(mask), *args)
    truth = _truth(args, mask) if args[1].numel() else expected
    for a, e, t, name in zip(actual, expected, truth, NAMES):
        if e is None:
            assert a is None, f"{where} {name}"
            continue
        assert a.dtype == e.dtype and a.shape == e.shape, f"{where} {name}: {a.dtype} {a.shape}"
        if name == "grad_input" and reference is None:
            assert a.stride() == e.stride(), f"{where}: strides {a.stride()}, the CPU's {e.stride()}"
        _assert_near(a, e, t, args, name, where)
    assert dispatches or args[1].numel() == 0, where
    return dispatches


@pytest.mark.parametrize("shape, groups", [((2, 6, 12), 3), ((4, 32, 64), 8), ((3, 8, 1), 8), ((1, 4, 1000), 1),
                                           ((8, 64, 16, 16), 32), ((2, 6), 2), ((2, 4, 3, 5, 2), 2),
                                           ((5, 12, 7), 12)], ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("affine", [True, False])
def test_shapes_dtypes(shape, groups, dtype, affine):
    _check(_args(shape, groups, dtype, affine), where=f"{shape}/{groups} {dtype} affine={affine}")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_float_statistics_and_weight_beside_a_half_input(dtype):
    """The CPU's mixed path: a half or bfloat16 input with float mean, rstd
    and weight; the parameters' gradients in float."""
    args = _args((4, 8, 10), 4, dtype, param_dtype=torch.float32)
    assert args[2].dtype == torch.float32
    _check(args, where=f"{dtype} input, float parameters")


@pytest.mark.parametrize("mask", [(True, False, False), (False, True, False), (False, False, True),
                                  (False, True, True), (True, True, False), (False, False, False)], ids=str)
def test_output_masks(mask):
    dispatches = _check(_args((3, 6, 10), 3), mask, where=f"mask {mask}") if any(mask) else None
    if not any(mask):
        actual, _ = run_on_kernels(_call(mask), *_args((3, 6, 10), 3))
        assert actual == (None, None, None)
    else:
        # Only the passes a mask needs run.
        ops = {d.op for d in dispatches}
        assert ("group_norm_backward_groups" in ops) == mask[0], ops
        assert ("group_norm_backward_params" in ops) == (mask[1] or mask[2]), ops


def test_parameter_gradients_without_a_weight():
    """Asked for without a weight (autograd never asks; the CPU raises
    RuntimeError: "tensor does not have a device"), they are the weight's
    and bias's gradients at weight 1, in the input's dtype."""
    args = _args((3, 6, 10), 3, affine=False)
    with_ones = args[:4] + [torch.ones(6)] + args[5:]
    expected = _call((True, True, True))(*with_ones)
    actual, _ = run_on_kernels(_call((True, True, True)), *args)
    for a, e, name in zip(actual, expected, NAMES):
        assert_matches(a, e, name)


@pytest.mark.parametrize("layout", ["channels_last", "channels_last_offset", "input_channels_last",
                                    "grad_channels_last", "transposed", "strided"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_layouts(layout, dtype):
    """grad_input takes the input's suggested memory format, as the CPU's;
    every other layout is read through a copy."""
    shape = (3, 8, 5, 6)
    args = _args(shape, 4, dtype)
    contiguous = list(args)
    cl = torch.channels_last
    if layout == "channels_last":
        args[0], args[1] = args[0].to(memory_format=cl), args[1].to(memory_format=cl)
    elif layout == "channels_last_offset":
        for i in (0, 1):
            big = torch.zeros((shape[0] + 1, *shape[1:]), dtype=dtype).to(memory_format=cl)
            big[1:] = args[i]
            args[i] = big[1:]
    elif layout == "input_channels_last":
        args[1] = args[1].to(memory_format=cl)
    elif layout == "grad_channels_last":
        args[0] = args[0].to(memory_format=cl)
    else:
        args[0], args[1] = in_layout(args[0], layout), in_layout(args[1], layout)
    # The CPU's result for the strides; its values from contiguous operands.
    strides = _call((True, True, True))(*args)[0].stride()
    dispatches = _check(args, where=layout, reference=contiguous)
    actual, _ = run_on_kernels(_call((True, True, True)), *args)
    assert actual[0].stride() == strides, (layout, actual[0].stride(), strides)
    assert dispatches


def test_transposed_operands_are_read_through_their_strides():
    """torch 2.13's CPU reads a grad_out, input, mean or rstd whose last two
    dims are transposed in memory order (wrong values, float64 too); ours
    read them through their strides: the contiguous call's values."""
    args = _args((3, 6, 10), 3)
    contiguous = list(args)
    for i in range(4):
        changed = list(args)
        changed[i] = args[i].mT.contiguous().mT
        _check(changed, where=f"operand {i} transposed", reference=contiguous)


def test_parameter_gradients_take_the_weights_shape():
    """C elements in any dims: the CPU's gradients take the weight's shape."""
    args = _args((3, 6, 10), 3)
    for shape in [(1, 6), (3, 2), (6, 1, 1)]:
        changed = list(args)
        changed[4] = args[4].reshape(shape)
        _check(changed, where=f"weight of shape {shape}")


def test_channels_last_3d():
    args = _args((2, 8, 3, 4, 5), 2)
    contiguous = list(args)
    args[0] = args[0].to(memory_format=torch.channels_last_3d)
    args[1] = args[1].to(memory_format=torch.channels_last_3d)
    _check(args, where="channels_last_3d", reference=contiguous)
    actual, _ = run_on_kernels(_call((True, True, True)), *args)
    assert actual[0].is_contiguous(memory_format=torch.channels_last_3d)


def test_input_of_other_dims_than_n_c_hxw():
    """The CPU reads the input as N * C * HxW elements whatever its dims."""
    args = _args((4, 6, 10), 3)
    args[0], args[1] = args[0].reshape(24, 10), args[1].reshape(24, 10)
    _check(args, where="(24, 10) as N=4, C=6")


@pytest.mark.parametrize("value", [float("inf"), float("nan"), 1e12])
def test_special_values(value):
    """A group holding inf, NaN or a huge value, its statistics from the
    forward. (Sums past float's range overflow: the registry's `differs`.)"""
    args = _args((3, 6, 8), 3)
    args[1] = args[1].clone()
    args[1][1, 2, 3] = value
    _, args[2], args[3] = torch.native_group_norm(args[1], args[4], None, 3, 6, 8, 3, 1e-5)
    _check(args, where=f"group with {value}")


def test_offset_groups_are_centred():
    """Groups of spread 1 about 1e4: our sums are centred on the group's
    mean, the CPU's subtract mean * sum(dy) from sum(dy x); ours stay as
    near the float64 result as the CPU's (_check)."""
    _check(_args((4, 8, 256), 2, offset=1e4), where="offset 1e4")


def test_one_element_groups_have_zero_gradient():
    """A group of one element normalises to 0 whatever it holds: grad_input
    is exactly 0 (the CPU's formula leaves its rounding)."""
    args = _args((4, 8, 1), 8)
    actual, _ = run_on_kernels(_call((True, True, True)), *args)
    assert bool((actual[0] == 0).all()), actual[0]


def _device_has_its_own_kernel() -> bool:
    """Whether the device's op is not this fill: CUDA's, or a Mac's torch
    2.13 and later (on 2.9 to 2.12 the Mac's op is ours: no reference)."""
    record = next(r for r in mps_ops.ops() if r.name == "aten::native_group_norm_backward")
    return mps_ops.backend == "cuda" or (mps_ops.backend != "emulator" and not record.active)


@pytest.mark.skipif(not _device_has_its_own_kernel(),
                    reason="2**32 half elements (8 GiB per operand) against the device's own kernel: a GPU's memory, "
                           "not CI's, and a device whose op is not this fill")
def test_more_than_2_to_the_32_elements_take_several_pieces():
    """Two samples of 2**31 + 64 elements: the element pass takes one piece
    per sample (each at most 2**32 - 1 elements), the reduction 64-bit
    offsets. Against the device's own kernel (torch's) for the same call."""
    n, c, hxw, groups = 2, 4, 2**29 + 16, 2
    torch.manual_seed(0)
    x = torch.randn(n, c, hxw, dtype=torch.float16, device=device())
    grad = torch.randn(n, c, hxw, dtype=torch.float16, device=device())
    weight = torch.randn(c, dtype=torch.float16, device=device())
    _, mean, rstd = torch.native_group_norm(x, weight, None, n, c, hxw, groups, 1e-5)
    call = lambda: backward(grad, x, mean, rstd, weight, n, c, hxw, groups, [True, True, True])  # noqa: E731
    expected = call()
    with mps_ops.profile() as prof, emulate():
        actual = call()
    assert sum(d.op == "batch_norm_backward_apply" for d in prof.dispatches) == 2
    for a, e, name in zip(actual, expected, NAMES):
        torch.testing.assert_close(a, e, atol=2e-2, rtol=2e-2, msg=lambda m: f"{name}: {m}")


@pytest.mark.parametrize("shape", [(0, 6, 4), (3, 6, 0), (0, 6)], ids=str)
def test_empty(shape):
    """An empty input: zero gradients (the parameters' too), no kernel."""
    torch.manual_seed(0)
    x, grad = torch.randn(shape), torch.randn(shape)
    n, c = shape[0], shape[1]
    hxw = 0 if len(shape) > 2 and shape[2] == 0 else 1 if len(shape) == 2 else shape[2]
    mean, rstd = torch.zeros(n, 3), torch.ones(n, 3)
    args = [grad, x, mean, rstd, torch.randn(c), n, c, hxw, 3]
    expected = _call((True, True, True))(*args)
    actual, dispatches = run_on_kernels(_call((True, True, True)), *args)
    assert not dispatches
    for a, e, name in zip(actual, expected, NAMES):
        assert_matches(a, e, name)


MASK = [True, True, True]
# Each takes (g, x, m, r, w) of _args((4, 6, 10), 3), whose N, C, HxW and
# group are 4, 6, 10 and 3.
ERRORS = {
    "grad of another dtype": lambda g, x, m, r, w: backward(g.double(), x, m, r, w, 4, 6, 10, 3, MASK),
    "statistics of another dtype": lambda g, x, m, r, w: backward(g, x, m.double(), r.double(), w, 4, 6, 10, 3, MASK),
    "half statistics beside float ones": lambda g, x, m, r, w: backward(g.half(), x.half(), m, r.half(), w, 4, 6, 10,
                                                                        3, MASK),
    "half weight beside float statistics": lambda g, x, m, r, w: backward(g.half(), x.half(), m, r, w.half(), 4, 6,
                                                                          10, 3, MASK),
    "weight of another dtype": lambda g, x, m, r, w: backward(g, x, m, r, w.double(), 4, 6, 10, 3, MASK),
    "integers": lambda g, x, m, r, w: backward(g.int(), x.int(), m.int(), r.int(), None, 4, 6, 10, 3,
                                               [True, False, False]),
    "integers beside float statistics": lambda g, x, m, r, w: backward(g.int(), x.int(), m, r, None, 4, 6, 10, 3,
                                                                       [True, False, False]),
    # The CPU reads the weight's dtype inside its dtype dispatch.
    "integers beside a float weight": lambda g, x, m, r, w: backward(g.int(), x.int(), m.int(), r.int(), w, 4, 6, 10,
                                                                     3, [True, False, False]),
    "N": lambda g, x, m, r, w: backward(g, x, m, r, w, 5, 6, 10, 3, MASK),
    "HxW": lambda g, x, m, r, w: backward(g, x, m, r, w, 4, 6, 7, 3, MASK),
    "group": lambda g, x, m, r, w: backward(g, x, m, r, w, 4, 6, 10, 2, MASK),
    "short statistics": lambda g, x, m, r, w: backward(g, x, m[:2], r[:2], w, 4, 6, 10, 3, MASK),
    "weight length": lambda g, x, m, r, w: backward(g, x, m, r, w[:4], 4, 6, 10, 3, MASK),
    "grad size": lambda g, x, m, r, w: backward(g[:2], x, m, r, w, 4, 6, 10, 3, MASK),
    "empty input of a full N": lambda g, x, m, r, w: backward(g[:0], x[:0], m, r, w, 4, 6, 10, 3, MASK),
}


@pytest.mark.parametrize("name", ERRORS.keys())
def test_errors_are_the_cpus(name):
    _, ours = errors_of_cpu_and_ours(ERRORS[name], *_args((4, 6, 10), 3)[:5])
    if not isinstance(ours, NotImplementedError):
        assert "native_group_norm_backward" in str(ours), ours
        assert "expected all tensors on" not in str(ours), ours


@pytest.mark.parametrize("groups", [0, 4], ids=["no groups", "groups that do not divide"])
def test_groups_that_the_cpu_does_not_check(groups):
    """The CPU divides by zero or reads past the statistics here: ours raise
    RuntimeError, naming the op."""
    g, x, _, _, w = _args((4, 6, 10), 3)[:5]
    stats = torch.zeros(4, groups)
    with pytest.raises(RuntimeError, match="the groups must divide the channels"):
        run_on_kernels(lambda *t: backward(*t, 4, 6, 10, groups, MASK), g, x, stats, stats, w)


def test_float64_is_refused_clearly():
    args = _args((2, 4, 6), 2, torch.float64)
    with pytest.raises(TypeError, match="native_group_norm_backward"):
        run_on_kernels(_call((True, True, True)), *args)


GROUP_NORM = next(op for op in op_db if op.name == "nn.functional.group_norm")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_opinfo_gradients(dtype):
    """GroupNorm through autograd (the OpInfo's samples): the input's,
    weight's and bias's gradients, whose backward reaches our kernels, against
    the CPU's; half and bfloat16 within rounding of the float64 gradients
    where they differ (the CPU's backward rounds at other steps)."""
    reached = 0
    for i, sample in enumerate(GROUP_NORM.sample_inputs("cpu", dtype, requires_grad=True)):
        inputs, gradients = opinfo_gradients(GROUP_NORM, sample, i, dtype)
        expected = gradients(*inputs)
        actual, dispatches = run_on_kernels(gradients, *inputs)
        truth = gradients(*[t.detach().double() for t in inputs])
        if sample.input.numel():
            reached += any(d.op.startswith("group_norm_backward") for d in dispatches)
        assert_gradients_near(actual, expected, truth, dtype, f"sample {i}", ulps=4)
    assert reached, "no sample reached native_group_norm_backward"
