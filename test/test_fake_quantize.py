"""The fake-quantize ops with a gradient mask (no OpInfo covers them): values
and masks equal to the CPU's for every dtype, layout and qparams form; the
rounding rules (half to even, the zero point added after it for integer zero
points and before it for floating ones); the tensor-qparams form's switch
and its truncated zero point; gradients through the composites; the CPU's
errors; and torch.ao.quantization's FakeQuantize modules end to end."""

from __future__ import annotations

import pytest
import torch

from helpers import assert_errors_match, assert_float64_and_complex_refused, errors_of_cpu_and_ours, run_on_kernels

A = torch.ops.aten
FLOATING = [torch.float32, torch.float16, torch.bfloat16]

LAYOUTS_TESTED_HERE = {"fake_quantize_per_tensor_affine_cachemask",
                       "_fake_quantize_per_tensor_affine_cachemask_tensor_qparams",
                       "fake_quantize_per_channel_affine_cachemask", "_fused_moving_avg_obs_fq_helper",
                       "_fake_quantize_learnable_per_tensor_affine", "_fake_quantize_learnable_per_channel_affine",
                       "_fake_quantize_learnable_per_tensor_affine_backward",
                       "_fake_quantize_learnable_per_channel_affine_backward"}

# Every layout a user's tensor may come in (from a maker of values of a
# shape); per channel along dim 1.
LAYOUTS = {
    "contiguous": lambda v: v(4, 3, 5, 6),
    "channels_last": lambda v: v(4, 3, 5, 6).to(memory_format=torch.channels_last),
    "transposed": lambda v: v(6, 3, 5, 4).transpose(0, 3),
    "strided": lambda v: v(4, 3, 5, 12)[..., ::2],
    "expanded": lambda v: v(1, 3, 5, 1).expand(4, 3, 5, 6),
    "empty": lambda v: v(0, 3, 5, 6),
}


def _values(layout, dtype):
    """Values spread over more than an 8-bit grid of scale 0.25 (both mask
    values), on multiples of 1/8: half of them ties (x / 0.25 = k + 0.5),
    which round half to even."""
    return LAYOUTS[layout](lambda *shape: ((torch.randn(*shape) * 320).round() / 8).to(dtype))


def _same(ours, cpu):
    (out, mask), (cpu_out, cpu_mask) = ours, cpu
    assert out.dtype == cpu_out.dtype and out.stride() == cpu_out.stride()
    torch.testing.assert_close(out, cpu_out, rtol=0, atol=0, equal_nan=True)
    assert torch.equal(mask, cpu_mask) and mask.stride() == cpu_mask.stride()


def _compare(fn, *args):
    ours, dispatches = run_on_kernels(fn, *args)
    _same(ours, fn(*args))
    return dispatches


@pytest.mark.parametrize("dtype", FLOATING, ids=str)
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_per_tensor_matches_the_cpu(layout, dtype):
    x = _values(layout, dtype)
    dispatches = _compare(lambda t: A.fake_quantize_per_tensor_affine_cachemask(t, 0.25, 3, -128, 127), x)
    assert bool(dispatches) == (x.numel() > 0)


@pytest.mark.parametrize("dtype", FLOATING, ids=str)
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_per_channel_matches_the_cpu(layout, dtype):
    x = _values(layout, dtype)
    scale, zero_point = torch.tensor([0.25, 0.5, 0.1]), torch.tensor([3, -2, 0], dtype=torch.int32)
    dispatches = _compare(lambda t, s, z: A.fake_quantize_per_channel_affine_cachemask(t, s, z, 1, -128, 127),
                          x, scale, zero_point)
    assert bool(dispatches) == (x.numel() > 0)


@pytest.mark.parametrize("axis", [0, 1, 2, 3])
@pytest.mark.parametrize("zero_point_dtype", [torch.int32, torch.float32, torch.float16], ids=str)
def test_per_channel_along_every_axis_and_zero_point_dtype(axis, zero_point_dtype):
    """Floating zero points join before the rounding (2.5 among them: grid
    points off the integers), integer ones after it."""
    x = _values("channels_last", torch.float32)
    n = x.size(axis)
    scale = torch.rand(n) + 0.05
    zero_point = (torch.arange(n) - n // 2).to(zero_point_dtype)
    if zero_point_dtype.is_floating_point:
        zero_point[0] = 2.5
    _compare(lambda t, s, z: A.fake_quantize_per_channel_affine_cachemask(t, s, z, axis, -128, 127),
             x, scale, zero_point)


def test_the_zero_point_joins_before_or_after_the_rounding_by_its_dtype():
    """x / scale = 2.5 with zero point 3: an integer one rounds 2.5 to 2 (to
    even) then adds 3 (out 2.0); a floating one rounds 5.5 to 6 (out 3.0)."""
    x = torch.tensor([[2.5]])
    for zero_point, expected in [(torch.tensor([3], dtype=torch.int32), 2.0), (torch.tensor([3.0]), 3.0)]:
        (out, _), _ = run_on_kernels(lambda t, s, z: A.fake_quantize_per_channel_affine_cachemask(t, s, z, 0, 0, 10),
                                     x, torch.tensor([1.0]), zero_point)
        assert out.item() == expected


def test_a_bfloat16_scale_computes_in_float():
    """The CPU takes a bfloat16 scale in its checks, then fails on it in its
    kernel; ours gives the CPU's answer for the scale in float."""
    x = _values("contiguous", torch.float32)
    scale, zero_point = torch.tensor([0.25, 0.5, 0.1]).bfloat16(), torch.tensor([3, -2, 0], dtype=torch.int32)
    fn = lambda t, s, z: A.fake_quantize_per_channel_affine_cachemask(t, s, z, 1, -128, 127)  # noqa: E731
    ours, _ = run_on_kernels(fn, x, scale, zero_point)
    _same(ours, fn(x, scale.float(), zero_point))


@pytest.mark.parametrize("scale", [0.0, -0.5, float("nan"), float("inf"), 1e-30])
def test_degenerate_scales_give_the_cpus_values(scale):
    x = torch.tensor([0.0, 1.0, -1.0, 3.5, float("nan"), float("inf"), -float("inf")])
    _compare(lambda t: A.fake_quantize_per_tensor_affine_cachemask(t, scale, 0, 0, 255), x)
    # Per channel, finite inputs whose x / scale fits int64 (the CPU's int64
    # conversion decides the others there: the registry's `differs`).
    if abs(scale) < 1e-20:
        return
    _compare(lambda t, s: A.fake_quantize_per_channel_affine_cachemask(t, s, torch.zeros(1, dtype=torch.int32), 0,
                                                                         0, 255), x[None, :4], torch.tensor([scale]))


def test_non_finite_inputs_per_tensor_match_the_cpu():
    """NaN and -inf clamp to quant_min, inf to quant_max, all masked out."""
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), 3e38, -3e38, 2.5])
    _compare(lambda t: A.fake_quantize_per_tensor_affine_cachemask(t, 0.5, 3, 0, 10), x)


def test_a_wide_integer_range_keeps_large_values():
    x = torch.tensor([1e10, -1e10, 3e9, 7.0])
    _compare(lambda t: A.fake_quantize_per_tensor_affine_cachemask(t, 1.0, 0, -2**40, 2**40), x)


def test_zero_dim_inputs():
    _compare(lambda t: A.fake_quantize_per_tensor_affine_cachemask(t, 0.1, 1, 0, 255), torch.tensor(1.234))
    _compare(lambda t, s, z, e: A._fake_quantize_per_tensor_affine_cachemask_tensor_qparams(t, s, z, e, 0, 255),
             torch.tensor(1.234), torch.tensor(0.1), torch.tensor(1), torch.tensor(1))


# --- the tensor-qparams form ---------------------------------------------------


def _tensor_qparams(t, s, z, e):
    return A._fake_quantize_per_tensor_affine_cachemask_tensor_qparams(t, s, z, e, 0, 255)


@pytest.mark.parametrize("enabled", [torch.tensor([1]), torch.tensor([2]), torch.tensor([0]),
                                     torch.tensor([0], dtype=torch.uint8), torch.tensor([0.5]), torch.tensor(True)],
                         ids=["1", "2", "0", "uint8 0", "0.5 truncates to 0", "bool"])
def test_the_switch_is_read_as_the_cpu_reads_it(enabled):
    """Off (0 after truncation toward zero), x passes through with every
    gradient flowing: mask all true, NaN and infinities unchanged."""
    x = torch.cat([torch.randn(40) * 50, torch.tensor([float("nan"), float("inf")])])
    _compare(_tensor_qparams, x, torch.tensor([0.3]), torch.tensor([2], dtype=torch.int32), enabled)


@pytest.mark.parametrize("zero_point", [torch.tensor([2.7]), torch.tensor([-2.7]), torch.tensor([300]),
                                        torch.tensor([7], dtype=torch.int64), torch.tensor(4.0)],
                         ids=["2.7", "-2.7", "outside the range", "int64", "0-dim"])
@pytest.mark.parametrize("scale_dtype", [torch.float32, torch.float16], ids=str)
def test_the_zero_point_truncates_and_any_qparams_dtype_works(zero_point, scale_dtype):
    x = torch.randn(5, 7) * 50
    _compare(_tensor_qparams, x, torch.tensor([0.3]).to(scale_dtype), zero_point, torch.tensor([1]))


def test_qparams_on_the_cpu_serve_a_device_input():
    """The CPU reads them with item() wherever they are; ours moves them."""
    x = torch.randn(5, 7) * 50
    cpu = _tensor_qparams(x, torch.tensor([0.3]), torch.tensor([2]), torch.tensor([1]))
    ours, _ = run_on_kernels(lambda t: _tensor_qparams(t, torch.tensor([0.3], device="cpu"),
                                                       torch.tensor([2], device="cpu"), torch.tensor([1], device="cpu")),
                             x)
    _same(ours, cpu)


# --- errors ------------------------------------------------------------------


def test_per_tensor_errors_are_the_cpus():
    x = torch.randn(3, 4)
    per_tensor = A.fake_quantize_per_tensor_affine_cachemask
    assert_errors_match(lambda t: per_tensor(t, 1.0, 3, 5, 2), x)
    assert_errors_match(lambda t: per_tensor(t, 1.0, -1, 0, 255), x)
    assert_errors_match(lambda t: per_tensor(t, 1.0, 256, 0, 255), x)
    assert_errors_match(lambda t, s, z, e: A._fake_quantize_per_tensor_affine_cachemask_tensor_qparams(t, s, z, e, 5, 2),
                        x, torch.tensor([1.0]), torch.tensor([0]), torch.tensor([1]))
    for name in ["scale", "zero_point", "enabled"]:
        qparams = {"scale": torch.tensor([1.0]), "zero_point": torch.tensor([0]), "enabled": torch.tensor([1])}
        qparams[name] = qparams[name].repeat(2)
        assert_errors_match(_tensor_qparams, x, *qparams.values())


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8, torch.bool], ids=str)
def test_integer_inputs_raise_the_cpus_not_implemented_error(dtype):
    x = torch.ones(3, 4, dtype=dtype)
    for fn, args in [(lambda t: A.fake_quantize_per_tensor_affine_cachemask(t, 1.0, 0, 0, 255), ()),
                     (lambda t, s, z: A.fake_quantize_per_channel_affine_cachemask(t, s, z, 1, 0, 255),
                      (torch.ones(4), torch.zeros(4, dtype=torch.int32)))]:
        cpu, ours = errors_of_cpu_and_ours(fn, x, *args)
        assert isinstance(ours, NotImplementedError)
        # The CPU's words, then the device and the op.
        assert str(ours).startswith(str(cpu)) and "fake_quantize_per_" in str(ours)


def test_float64_and_complex_are_refused():
    assert_float64_and_complex_refused(lambda t: A.fake_quantize_per_tensor_affine_cachemask(t, 1.0, 0, 0, 255),
                                       "fake_quantize_per_tensor_affine_cachemask", torch.randn(3, 4))


PER_CHANNEL_ERRORS = {
    "double scale": (torch.ones(3, dtype=torch.float64), torch.zeros(3, dtype=torch.int32), 1, 0, 255),
    "int64 zero point": (torch.ones(3), torch.zeros(3, dtype=torch.int64), 1, 0, 255),
    "2-D scale": (torch.ones(1, 3), torch.zeros(3, dtype=torch.int32), 1, 0, 255),
    "2-D zero point": (torch.ones(3), torch.zeros(1, 3, dtype=torch.int32), 1, 0, 255),
    "lengths differ": (torch.ones(3), torch.zeros(2, dtype=torch.int32), 1, 0, 255),
    "not the axis's size": (torch.ones(4), torch.zeros(4, dtype=torch.int32), 1, 0, 255),
    "axis out of range": (torch.ones(3), torch.zeros(3, dtype=torch.int32), 4, 0, 255),
    "negative axis": (torch.ones(3), torch.zeros(3, dtype=torch.int32), -3, 0, 255),
    "quant_min above quant_max": (torch.ones(3), torch.zeros(3, dtype=torch.int32), 1, 5, 2),
    "zero point outside the range": (torch.ones(3), torch.tensor([0, 300, 0], dtype=torch.int32), 1, 0, 255),
}


@pytest.mark.parametrize("case", list(PER_CHANNEL_ERRORS))
def test_per_channel_errors_are_the_cpus(case):
    scale, zero_point, axis, quant_min, quant_max = PER_CHANNEL_ERRORS[case]
    assert_errors_match(lambda t, s, z: A.fake_quantize_per_channel_affine_cachemask(t, s, z, axis, quant_min, quant_max),
                        torch.randn(2, 3, 4), scale, zero_point)


def test_a_floating_zero_point_is_not_range_checked():
    """As on the CPU: only integer zero points are."""
    _compare(lambda t, s, z: A.fake_quantize_per_channel_affine_cachemask(t, s, z, 1, 0, 10),
             torch.randn(2, 3, 4) * 5, torch.ones(3), torch.tensor([0.0, 300.0, -4.0]))


# --- gradients and torch.ao.quantization's modules ---------------------------------


def _grad(fn, x, *args):
    x = x.detach().clone().requires_grad_()
    out = fn(x, *args)
    out.backward(torch.arange(out.numel(), dtype=out.dtype).reshape(out.shape))
    return out.detach(), x.grad


@pytest.mark.parametrize("form", ["per tensor", "tensor qparams", "per channel"])
def test_gradients_flow_where_the_mask_is_true(form):
    """The composites' backward is grad * mask (fake_quantize_*_cachemask_backward)."""
    x = torch.randn(4, 3, 5) * 40
    calls = {
        "per tensor": (lambda t: torch.fake_quantize_per_tensor_affine(t, 0.25, 3, -128, 127), ()),
        "tensor qparams": (lambda t, s, z: torch.fake_quantize_per_tensor_affine(t, s, z, -128, 127),
                           (torch.tensor([0.25]), torch.tensor([3], dtype=torch.int32))),
        "per channel": (lambda t, s, z: torch.fake_quantize_per_channel_affine(t, s, z, 1, -128, 127),
                        (torch.tensor([0.25, 0.5, 0.1]), torch.tensor([3, -2, 0], dtype=torch.int32))),
    }
    fn, args = calls[form]
    (out, grad), dispatches = run_on_kernels(lambda t, *a: _grad(fn, t, *a), x, *args)
    cpu_out, cpu_grad = _grad(fn, x, *args)
    assert dispatches
    assert torch.equal(out, cpu_out) and torch.equal(grad, cpu_grad)
    assert 0 < int((grad == 0).sum()) < grad.numel()


@pytest.mark.parametrize("per_channel", [False, True], ids=["per tensor", "per channel"])
def test_a_fake_quantize_module_trains_as_on_the_cpu(per_channel):
    """torch.ao.quantization.FakeQuantize over a few steps: its observer
    (torch's own ops on the device) then fake quantization and its gradient
    (ours). Each step's output and gradient equal the CPU's for the qparams
    the module chose in that step; the qparams are the CPU's up to the
    rounding of the device's other ops (CUDA's add with alpha contracts)."""
    from torch.ao.quantization import FakeQuantize, MovingAverageMinMaxObserver, MovingAveragePerChannelMinMaxObserver

    def make():
        if per_channel:
            return FakeQuantize(observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127,
                                dtype=torch.qint8, qscheme=torch.per_channel_symmetric, ch_axis=0)
        return FakeQuantize(observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, dtype=torch.quint8)

    torch.manual_seed(0)
    inputs = [torch.randn(6, 10) * (i + 1) for i in range(3)]

    def train(*xs):
        module = make().to(xs[0].device)
        steps = []
        for x in xs:
            out, grad = _grad(module, x)
            steps.append((out, grad, module.scale.clone(), module.zero_point.clone()))
        return steps

    ours, dispatches = run_on_kernels(train, *inputs)
    assert any("fake_quantize_cachemask" in d.kernel for d in dispatches)
    for x, (out, grad, scale, zero_point), (_, _, cpu_scale, cpu_zero_point) in zip(inputs, ours, train(*inputs)):
        torch.testing.assert_close(scale, cpu_scale, rtol=1e-5, atol=0)
        assert torch.equal(zero_point, cpu_zero_point)
        if per_channel:
            fn = lambda t: torch.fake_quantize_per_channel_affine(t, scale, zero_point, 0, -128, 127)  # noqa: E731
        else:
            fn = lambda t: torch.fake_quantize_per_tensor_affine(t, scale, zero_point, 0, 255)  # noqa: E731
        expected_out, expected_grad = _grad(fn, x)
        assert torch.equal(out, expected_out) and torch.equal(grad, expected_grad)


# --- the fused observer and fake quantizer (_fused_moving_avg_obs_fq_helper) ---------


def _fused(x, observer_on, fake_quant_on, running_min, running_max, scale, zero_point, quant_min, quant_max,
           per_row=False, symmetric=False, averaging_const=0.01):
    out, mask = A._fused_moving_avg_obs_fq_helper(x, observer_on, fake_quant_on, running_min, running_max, scale,
                                                   zero_point, averaging_const, quant_min, quant_max, 0, per_row,
                                                   symmetric)
    return out, mask, running_min, running_max, scale, zero_point


def _fresh_state(per_row, channels=1):
    """A fresh FusedMovingAvgObsFakeQuantize's buffers (per row: empty, as the
    CPU sizes them on the first call)."""
    if per_row:
        return [torch.empty(0), torch.empty(0), torch.ones(channels), torch.zeros(channels, dtype=torch.int32)]
    return [torch.tensor([float("inf")]), torch.tensor([-float("inf")]), torch.tensor([1.0]),
            torch.tensor([0], dtype=torch.int32)]


def _assert_fused_equal(ours, cpu):
    for a, b, name in zip(ours, cpu, ["output", "mask", "running_min", "running_max", "scale", "zero_point"]):
        assert a.dtype == b.dtype and a.shape == b.shape, name
        torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True, msg=name)


def _compare_fused(make_args):
    """ours and the CPU's on their own arguments (the calls write into them;
    on the emulator ours takes the very tensors given)."""
    ours, dispatches = run_on_kernels(_fused, *make_args())
    _assert_fused_equal(ours, _fused(*make_args()))
    return ours, dispatches


SWITCHES = [(1, 1), (1, 0), (0, 1), (0, 0), (1, 1)]  # (observer_on, fake_quant_on) per step


@pytest.mark.parametrize("symmetric", [False, True], ids=["affine", "symmetric"])
@pytest.mark.parametrize("quant_range", [(0, 255), (-128, 127), (0, 15), (-8, 7)], ids=str)
@pytest.mark.parametrize("per_row", [False, True], ids=["per tensor", "per row"])
def test_fused_steps_match_the_cpu(per_row, quant_range, symmetric):
    """Training steps with the switches in every combination, inputs from
    1e-6 (the smallest scale, 6.1e-5, widening the range) to 30 in size, one
    side of zero or both: outputs, masks, running statistics and qparams all
    the CPU's, bit for bit."""
    quant_min, quant_max = quant_range
    cpu_state = _fresh_state(per_row)
    our_state = [t.clone() for t in cpu_state]
    for step, (size, offset) in enumerate([(1.0, -0.2), (1e-4, 0.3), (1e-6, 2.0), (30.0, -0.4), (0.5, 0.0)]):
        x = (torch.randn(6, 5, 4) + offset) * size
        observe, fake_quant = (torch.tensor([v]) for v in SWITCHES[step])
        cpu = _fused(x, observe, fake_quant, *cpu_state, quant_min, quant_max, per_row, symmetric)
        ours, dispatches = run_on_kernels(_fused, x, observe, fake_quant, *our_state, quant_min, quant_max,
                                          per_row, symmetric)
        assert any("fake_quantize_observe" in d.kernel for d in dispatches)
        _assert_fused_equal(ours, cpu)
        cpu_state, our_state = list(cpu[2:]), list(ours[2:])


def test_fused_qparams_match_the_cpus_over_many_statistics():
    """FBGEMM's ChooseQuantizationParams on 2,000 channels of running
    statistics (observer off, fake quantization on): ranges from 1e-9 to
    1e6, on one side of zero or across it, min above max, a zero width;
    affine and symmetric, 8-bit and 4-bit grids."""
    torch.manual_seed(0)
    n = 2000
    low = -torch.rand(n) * 10.0 ** torch.randint(-9, 7, (n,))
    high = torch.rand(n) * 10.0 ** torch.randint(-9, 7, (n,))
    shift = torch.randint(-1, 2, (n,)) * (high - low)  # all negative, across zero, all positive
    low, high = low + shift, high + shift
    low[:50], high[:50] = high[:50], low[:50]  # min above max
    high[50:100] = low[50:100]  # zero width
    x = torch.randn(n, 3)
    for quant_min, quant_max in [(0, 255), (-128, 127), (0, 15)]:
        for symmetric in [False, True]:
            _compare_fused(lambda: (x, torch.tensor([0]), torch.tensor([1]), low.clone(), high.clone(), torch.ones(n),
                                    torch.zeros(n, dtype=torch.int32), quant_min, quant_max, True, symmetric))


def test_fused_never_observed_statistics_give_the_cpus_defaults():
    """Infinite running statistics (never observed) with fake quantization
    on: scale 0.1 and the zero point FBGEMM picks (127 for int8, 0 for uint8)."""
    for quant_min, quant_max in [(-128, 127), (0, 255)]:
        x = torch.randn(3, 4)
        ours, _ = _compare_fused(lambda: (x, torch.tensor([0]), torch.tensor([1]), *_fresh_state(False), quant_min,
                                          quant_max))
        assert ours[4].item() == pytest.approx(0.1)


@pytest.mark.parametrize("switches", [(torch.tensor([0.5]), torch.tensor([2])), (torch.tensor(True), torch.tensor(0)),
                                      (torch.tensor([1], dtype=torch.uint8), torch.tensor([0.9]))],
                         ids=["0.5 truncates to off", "bool and 0-dim", "uint8, 0.9 off"])
def test_fused_switches_are_read_as_the_cpu_reads_them(switches):
    observe, fake_quant = switches
    x = torch.randn(5, 6) * 3
    _compare_fused(lambda: (x, observe, fake_quant, torch.tensor([-1.0]), torch.tensor([2.0]), torch.tensor([0.3]),
                            torch.tensor([4], dtype=torch.int32), 0, 255))


@pytest.mark.parametrize("dtypes", [(torch.float16, torch.int64), (torch.float32, torch.float32)], ids=str)
@pytest.mark.parametrize("fake_quant", [0, 1])
def test_fused_qparams_of_other_dtypes(dtypes, fake_quant):
    """scale and zero_point of other dtypes than the module's float32 and
    int32: written as the CPU writes them (rounded to their dtype), and left
    alone where fake quantization is off."""
    scale_dtype, zero_point_dtype = dtypes
    x = torch.randn(5, 6) * 3
    _compare_fused(lambda: (x, torch.tensor([1]), torch.tensor([fake_quant]), torch.tensor([-1.0]),
                            torch.tensor([2.0]), torch.tensor([0.3]).to(scale_dtype),
                            torch.tensor([4.5]).to(zero_point_dtype), 0, 255))


def test_fused_strided_statistics_are_updated_in_place():
    """Running statistics as every other element of a buffer: the CPU reads
    and writes them as if contiguous (its raw float pointers), so the
    answer is its call on contiguous ones, written through the strides."""
    x = torch.randn(4, 6) * 2

    def make(step):
        return (x, torch.tensor([1]), torch.tensor([1]), torch.full((4 * step,), float("inf"))[::step],
                torch.full((4 * step,), -float("inf"))[::step], torch.ones(4), torch.zeros(4, dtype=torch.int32),
                -128, 127, True)
    ours, _ = run_on_kernels(_fused, *make(2))
    assert ours[2].stride() == (2,) and ours[3].stride() == (2,)
    _assert_fused_equal([t.contiguous() for t in ours], _fused(*make(1)))


def test_fused_nan_observations_give_nan_statistics_and_quant_min():
    """The CPU's zero point there is a float-to-int conversion of NaN (INT_MIN
    on x86, 0 on Arm); ours is quant_min. The statistics turn NaN as on the CPU."""
    x = torch.tensor([[1.0, float("nan")], [2.0, -1.0]])
    state = _fresh_state(False)
    ours, _ = run_on_kernels(_fused, x, torch.tensor([1]), torch.tensor([1]), *state, -128, 127)
    cpu = _fused(x, torch.tensor([1]), torch.tensor([1]), *_fresh_state(False), -128, 127)
    torch.testing.assert_close(ours[2], cpu[2], equal_nan=True)
    torch.testing.assert_close(ours[3], cpu[3], equal_nan=True)
    assert ours[5].item() == -128


def test_fused_empty_input_is_observed_only_when_the_observer_is_off():
    empty = torch.empty(0, 4)
    assert_errors_match(lambda x, o, f, *state: _fused(x, o, f, *state, 0, 255), empty, torch.tensor([1]),
                        torch.tensor([1]), *_fresh_state(False))
    _compare_fused(lambda: (empty, torch.tensor([0]), torch.tensor([1]), *_fresh_state(False), 0, 255))


FUSED_ERRORS = {
    "ch_axis beyond the input": (torch.randn(3, 4), dict(ch_axis=2)),
    "two observer switches": (torch.randn(3, 4), dict(observer_on=torch.tensor([1, 1]))),
    "two fake-quant switches": (torch.randn(3, 4), dict(fake_quant_on=torch.tensor([1, 1]))),
    "per row along axis 1": (torch.randn(3, 4), dict(per_row=True, ch_axis=1)),
    "per row of a 1-D input": (torch.randn(4), dict(per_row=True)),
    "half input": (torch.randn(3, 4).half(), {}),
    "float64 running_min": (torch.randn(3, 4), dict(running_min=torch.tensor([0.0], dtype=torch.float64))),
    "0-dim scale": (torch.randn(3, 4), dict(scale=torch.tensor(1.0))),
    "empty zero_point": (torch.randn(3, 4), dict(zero_point=torch.zeros(0, dtype=torch.int32))),
    "two-element scale": (torch.randn(3, 4), dict(scale=torch.ones(2))),
    "int64 zero points per row": (torch.randn(3, 4), dict(per_row=True, zero_point=torch.zeros(3, dtype=torch.int64),
                                                          scale=torch.ones(3), running_min=torch.zeros(3),
                                                          running_max=torch.ones(3))),
}


@pytest.mark.parametrize("case", list(FUSED_ERRORS))
def test_fused_errors_are_the_cpus(case):
    x, changes = FUSED_ERRORS[case]
    arguments = dict(observer_on=torch.tensor([1]), fake_quant_on=torch.tensor([1]), running_min=torch.tensor([-1.0]),
                     running_max=torch.tensor([1.0]), scale=torch.ones(1), zero_point=torch.zeros(1, dtype=torch.int32),
                     ch_axis=0, per_row=False)
    arguments.update(changes)
    ch_axis, per_row = arguments.pop("ch_axis"), arguments.pop("per_row")
    names = list(arguments)

    def call(x, *tensors):
        return A._fused_moving_avg_obs_fq_helper(x, *tensors, 0.01, 0, 255, ch_axis, per_row, False)
    assert_errors_match(call, x, *(arguments[n] for n in names))


@pytest.mark.parametrize("per_channel", [False, True], ids=["per tensor", "per channel"])
def test_the_default_qat_fake_quantizer_trains_as_on_the_cpu(per_channel):
    """torch.ao.quantization's FusedMovingAvgObsFakeQuantize (the default QAT
    qconfig's, activations per tensor and weights per channel) over a few
    steps, then disabled and frozen: outputs, gradients and every buffer
    equal the CPU's."""
    from torch.ao.quantization import default_fused_act_fake_quant, default_fused_per_channel_wt_fake_quant

    torch.manual_seed(0)
    inputs = [torch.randn(6, 10) * (i + 1) for i in range(3)]

    def train(*xs):
        module = (default_fused_per_channel_wt_fake_quant if per_channel else default_fused_act_fake_quant)()
        module = module.to(xs[0].device)
        steps = []
        for i, x in enumerate(xs):
            if i == len(xs) - 1:
                module.disable_observer()
            out, grad = _grad(module, x)
            steps.append([out, grad] + [b.clone() for b in module.buffers()])
        module.disable_fake_quant()
        steps.append(list(_grad(module, xs[0])))
        return steps

    ours, dispatches = run_on_kernels(train, *inputs)
    assert any("fake_quantize_observe" in d.kernel for d in dispatches)
    for step, (got, expected) in enumerate(zip(ours, train(*inputs))):
        for a, b in zip(got, expected):
            torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True, msg=f"step {step}")


# --- the learnable fake quantizers (LearnableFakeQuantize) ------------------------------


def _learnable(t, s, z):
    return A._fake_quantize_learnable_per_tensor_affine(t, s, z, -128, 127, 0.5)


def _learnable_per_channel(t, s, z):
    return A._fake_quantize_learnable_per_channel_affine(t, s, z, 1, -128, 127, 0.5)


@pytest.mark.parametrize("dtype", FLOATING, ids=str)
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_learnable_forwards_match_the_cpu(layout, dtype):
    x = _values(layout, dtype)
    for zero_point in [2.5, 3.5, -1.5, -1.7, 300.0]:  # half to even, and clamped into the range
        ours, _ = run_on_kernels(_learnable, x, torch.tensor([0.25]), torch.tensor([zero_point]))
        cpu = _learnable(x, torch.tensor([0.25]), torch.tensor([zero_point]))
        assert ours.stride() == cpu.stride()
        torch.testing.assert_close(ours, cpu, rtol=0, atol=0)
    scale, zero_point = torch.tensor([0.25, 0.5, 0.1]), torch.tensor([2.5, -1.5, 200.0])
    ours, _ = run_on_kernels(_learnable_per_channel, x, scale, zero_point)
    torch.testing.assert_close(ours, _learnable_per_channel(x, scale, zero_point), rtol=0, atol=0)


def _assert_learnable_grads(ours, cpu):
    """dX exactly; d(scale) and d(zero point) up to the order of their sums
    (relative to the sum of the terms' sizes, which bounds its error)."""
    assert [t.dtype for t in ours] == [t.dtype for t in cpu] and [t.shape for t in ours] == [t.shape for t in cpu]
    torch.testing.assert_close(ours[0], cpu[0], rtol=0, atol=0, equal_nan=True)
    for a, b in zip(ours[1:], cpu[1:]):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5 * (1 + float(b.abs().max())))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "transposed", "strided"])
def test_learnable_backwards_match_the_cpu(layout, dtype):
    """Per tensor and per channel; the backward's zero point is
    trunc(clamp(zero_point + 0.5)) per tensor (-1.7 gives -1, not the
    forward's -2), rounded half to even per channel."""
    x = _values(layout, dtype)
    grad = LAYOUTS[layout](lambda *shape: torch.randn(*shape).to(dtype))
    for zero_point in [2.5, -1.7, 300.0]:
        call = lambda g, t, s, z: A._fake_quantize_learnable_per_tensor_affine_backward(g, t, s, z, -128, 127, 0.5)  # noqa: E731
        args = (grad, x, torch.tensor([0.25]), torch.tensor([zero_point]))
        ours, _ = run_on_kernels(call, *args)
        _assert_learnable_grads(ours, call(*args))
    call = lambda g, t, s, z: A._fake_quantize_learnable_per_channel_affine_backward(g, t, s, z, 1, -128, 127, 0.5)  # noqa: E731
    args = (grad, x, torch.tensor([0.25, 0.5, 0.1]), torch.tensor([2.5, -1.7, 200.0]))
    ours, dispatches = run_on_kernels(call, *args)
    assert any("fake_quantize_learnable_grad" in d.kernel for d in dispatches)
    _assert_learnable_grads(ours, call(*args))


def test_learnable_backward_of_non_finite_inputs():
    """Each one beyond the bound on its sign's side (NaN below, as the
    forward clamps it): d(scale) = dY (bound - zero point) grad_factor,
    d(zero point) = -dY scale grad_factor, dX = 0. (The CPU's int64
    conversion puts all of them below, on x86.)"""
    call = lambda g, t: A._fake_quantize_learnable_per_tensor_affine_backward(  # noqa: E731
        g, t, torch.tensor([0.5]), torch.tensor([3.0]), -128, 127, 2.0)
    for value, bound in [(float("inf"), 127.0), (-float("inf"), -128.0), (float("nan"), -128.0), (1e30, 127.0)]:
        (dx, dscale, dzero_point), _ = run_on_kernels(call, torch.tensor([1.5]), torch.tensor([value]))
        assert dx.item() == 0.0
        assert dscale.item() == 1.5 * (bound - 3.0) * 2.0 and dzero_point.item() == -1.5 * 0.5 * 2.0


def test_learnable_backward_of_broadcastable_shapes_takes_the_broadcast_shape():
    x, grad = torch.randn(4, 6) * 20, torch.randn(1, 4, 6)
    call = lambda g, t: A._fake_quantize_learnable_per_tensor_affine_backward(  # noqa: E731
        g, t, torch.tensor([0.25]), torch.tensor([2.0]), -128, 127, 1.0)
    ours, _ = run_on_kernels(call, grad, x)
    _assert_learnable_grads(ours, call(grad, x))


def test_learnable_backward_of_an_empty_input_returns_its_arguments():
    call = lambda g, t, s, z: A._fake_quantize_learnable_per_tensor_affine_backward(g, t, s, z, -128, 127, 1.0)  # noqa: E731
    args = (torch.empty(0, 3), torch.empty(0, 3), torch.tensor([0.25]), torch.tensor([2.0]))
    ours, dispatches = run_on_kernels(call, *args)
    assert not dispatches
    for a, b in zip(ours, call(*args)):
        assert torch.equal(a, b)


LEARNABLE_ERRORS = {
    "half input": (torch.float16, torch.float32, 0, 255),
    "integer zero point": (torch.float32, torch.int32, 0, 255),
    "a range without 0": (torch.float32, torch.float32, 1, 255),
}


@pytest.mark.parametrize("case", list(LEARNABLE_ERRORS))
@pytest.mark.parametrize("per_channel", [False, True], ids=["per tensor", "per channel"])
def test_learnable_backward_errors_are_the_cpus(case, per_channel):
    x_dtype, zero_point_dtype, quant_min, quant_max = LEARNABLE_ERRORS[case]
    x = (torch.randn(4, 3) * 20).to(x_dtype)
    if per_channel:
        def call(g, t, s, z):
            return A._fake_quantize_learnable_per_channel_affine_backward(g, t, s, z, 1, quant_min, quant_max, 1.0)
        scale, zero_point = torch.ones(3), torch.zeros(3).to(zero_point_dtype)
    else:
        def call(g, t, s, z):
            return A._fake_quantize_learnable_per_tensor_affine_backward(g, t, s, z, quant_min, quant_max, 1.0)
        scale, zero_point = torch.ones(1), torch.zeros(1).to(zero_point_dtype)
    assert_errors_match(call, torch.randn(4, 3).to(x_dtype), x, scale, zero_point)


@pytest.mark.parametrize("per_channel", [False, True], ids=["per tensor", "per channel"])
def test_a_learnable_fake_quantize_module_trains_as_on_the_cpu(per_channel):
    """torch.ao.quantization's _LearnableFakeQuantize (LSQ), one step: its
    observer (torch's ops on the device) sets scale and zero point, then
    ours fake-quantizes and differentiates. Output and dX equal, and the
    gradients of scale and zero point near, the CPU's op at the qparams the
    module chose (with the module's grad_factor, 1 / sqrt(numel * quant_max));
    the scale near the CPU module's (on CUDA the observer's ops round apart)."""
    from torch.ao.quantization import MovingAverageMinMaxObserver, MovingAveragePerChannelMinMaxObserver
    from torch.ao.quantization._learnable_fake_quantize import _LearnableFakeQuantize

    quant_min, quant_max = (-128, 127) if per_channel else (0, 255)

    def make():
        if per_channel:
            return _LearnableFakeQuantize(observer=MovingAveragePerChannelMinMaxObserver, quant_min=quant_min,
                                          quant_max=quant_max, dtype=torch.qint8, qscheme=torch.per_channel_symmetric,
                                          ch_axis=0, channel_len=6, use_grad_scaling=True)
        return _LearnableFakeQuantize(observer=MovingAverageMinMaxObserver, quant_min=quant_min, quant_max=quant_max,
                                      use_grad_scaling=True)

    torch.manual_seed(0)
    x = torch.randn(6, 10) * 2
    weights = torch.arange(60.0).reshape(6, 10)

    def step(x, weights):
        module = make().to(x.device)
        x = x.clone().requires_grad_()
        out = module(x)
        (out * weights).sum().backward()
        return [out.detach(), x.grad, module.scale.grad, module.zero_point.grad, module.scale.detach(),
                module.zero_point.detach()]

    ours, dispatches = run_on_kernels(step, x, weights)
    assert any("fake_quantize_learnable_grad" in d.kernel for d in dispatches)
    torch.testing.assert_close(ours[4], step(x, weights)[4], rtol=1e-5, atol=0)
    scale, zero_point = ours[4].clone().requires_grad_(), ours[5].clone().requires_grad_()
    x_cpu = x.clone().requires_grad_()
    grad_factor = 1.0 / (x.numel() * quant_max) ** 0.5
    if per_channel:
        out = torch._fake_quantize_learnable_per_channel_affine(x_cpu, scale, zero_point, 0, quant_min, quant_max,
                                                                grad_factor)
    else:
        out = torch._fake_quantize_learnable_per_tensor_affine(x_cpu, scale, zero_point, quant_min, quant_max,
                                                               grad_factor)
    (out * weights).sum().backward()
    torch.testing.assert_close(ours[0], out.detach(), rtol=0, atol=0)
    torch.testing.assert_close(ours[1], x_cpu.grad, rtol=0, atol=0)
    for a, b in [(ours[2], scale.grad), (ours[3], zero_point.grad)]:
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4 * (1 + float(b.abs().max())))


# --- torch's generated forms over ours (.out, _functional) -------------------------------


def test_the_out_forms_run_over_ours():
    """The .out overloads torch generates (CompositeExplicitAutograd: the
    functional op, then a copy into the outs) reach our kernels, outs of
    another layout kept."""
    x = torch.randn(4, 6) * 20

    def calls(t):
        out0, out1 = torch.empty(6, 4).t(), torch.empty(4, 6, dtype=torch.bool)
        A.fake_quantize_per_tensor_affine_cachemask.out(t, 0.25, 3, -128, 127, out0=out0, out1=out1)
        out = torch.empty(0)
        A._fake_quantize_learnable_per_tensor_affine.out(t, torch.tensor([0.25], device=t.device),
                                                         torch.tensor([2.5], device=t.device), -128, 127, 1.0,
                                                         out=out)
        return out0, out1, out

    ours, dispatches = run_on_kernels(calls, x)
    assert {"fake_quantize_cachemask", "fake_quantize_values"} <= {d.kernel.rsplit("_dense", 1)[0] for d in dispatches}
    for a, b in zip(ours, calls(x)):
        assert a.stride() == b.stride()
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_the_functional_fused_form_leaves_its_arguments_alone():
    """_fused_moving_avg_obs_fq_helper_functional (torch.compile's form) runs
    ours on copies: the statistics come back as results, the arguments unchanged."""
    x = torch.randn(4, 6) * 2

    def call(t, *state):
        return A._fused_moving_avg_obs_fq_helper_functional(t, torch.tensor([1]), torch.tensor([1]), *state, 0.01,
                                                            -128, 127, 0)

    state = _fresh_state(False)
    ours, dispatches = run_on_kernels(call, x, *state)
    assert any("fake_quantize_observe" in d.kernel for d in dispatches)
    for a, b in zip(ours, call(x, *_fresh_state(False))):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    for a, b in zip(state, _fresh_state(False)):
        assert torch.equal(a, b)
