"""Adaptive 3-D pooling, forward and backward, against the CPU on what the
OpInfo samples leave out: cells that overlap (output larger than half the
input), 4-D and channels-last inputs, strided inputs, ties and NaN in max
cells, out= forms into non-contiguous outs, a non-contiguous grad_output
beside contiguous indices, autograd through our backward kernels, empty
batches, and the CPU's errors."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import mps_ops
from helpers import assert_matches, run_on_kernels, to_cpu, to_device
from mps_ops.testing import device, emulate

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {
    "_adaptive_avg_pool3d", "adaptive_max_pool3d", "fractional_max_pool2d", "fractional_max_pool3d",
}

INPUTS = {
    "5d": lambda: torch.randn(2, 3, 5, 7, 6),
    "4d": lambda: torch.randn(3, 5, 7, 6),
    "channels_last": lambda: torch.randn(2, 3, 5, 7, 6).to(memory_format=torch.channels_last_3d),
    "strided": lambda: torch.randn(2, 3, 10, 7, 12)[:, :, ::2, :, ::2],
}
OUTPUT_SIZES = [(1, 1, 1), (3, 4, 5), (5, 7, 6), (4, 6, 4), (7, 9, 8)]


@pytest.mark.parametrize("output_size", OUTPUT_SIZES, ids=str)
@pytest.mark.parametrize("layout", list(INPUTS))
@pytest.mark.parametrize("pool", ["avg", "max"])
def test_forward_and_backward(pool, layout, output_size):
    torch.manual_seed(0)
    x = INPUTS[layout]()
    fn = F.adaptive_avg_pool3d if pool == "avg" else (
        lambda t, s: F.adaptive_max_pool3d(t, s, return_indices=True))
    expected = fn(x, output_size)
    actual, dispatches = run_on_kernels(fn, x, output_size)
    assert_matches(actual, expected)
    # adaptive_avg_pool3d to (1, 1, 1) is a mean (torch's composite): not ours.
    ours = not (pool == "avg" and output_size == (1, 1, 1))
    assert len(dispatches) == int(ours)

    grad = torch.randn((expected[0] if pool == "max" else expected).shape)
    x_ref = x.detach().clone().requires_grad_()
    out_ref = fn(x_ref, output_size)
    (out_ref[0] if pool == "max" else out_ref).backward(grad)

    x_dev, grad_dev = to_device((x.detach(), grad))
    x_dev.requires_grad_()
    with mps_ops.profile() as prof, emulate():
        out = fn(x_dev, output_size)
        (out[0] if pool == "max" else out).backward(grad_dev)
    assert_matches(to_cpu(x_dev.grad), x_ref.grad)
    assert any("backward" in d.kernel for d in prof.dispatches) == ours


@pytest.mark.parametrize("pool", ["avg", "max"])
def test_backward_of_a_non_contiguous_grad_output(pool):
    """A backward gets whatever grad the caller gave (a transposed one here)
    beside contiguous saved indices: each is read through its own strides."""
    torch.manual_seed(0)
    x = torch.randn(2, 3, 5, 7, 6)
    grad = torch.randn(2, 3, 3, 5, 4).transpose(-1, -2)
    if pool == "max":
        indices = F.adaptive_max_pool3d(x, (3, 4, 5), return_indices=True)[1]
        fn = lambda g, t, i: torch.ops.aten.adaptive_max_pool3d_backward(g, t, i)  # noqa: E731
        args = (grad, x, indices)
    else:
        fn = lambda g, t: torch.ops.aten._adaptive_avg_pool3d_backward(g, t)  # noqa: E731
        args = (grad, x)
    expected = fn(*args)
    actual, dispatches = run_on_kernels(fn, *args)
    assert_matches(actual, expected)
    assert dispatches


def test_max_ties_take_the_first_and_nan_wins():
    x = torch.zeros(1, 2, 4, 4, 4)
    x[0, 1, 1, 2, 3] = float("nan")
    x[0, 1, 3, 0, 0] = float("nan")
    fn = lambda t: F.adaptive_max_pool3d(t, (2, 2, 2), return_indices=True)  # noqa: E731
    expected = fn(x)
    actual, _ = run_on_kernels(fn, x)
    assert_matches(actual, expected)
    x = torch.full((1, 1, 3, 3, 3), -float("inf"))
    assert_matches(run_on_kernels(fn, x)[0], fn(x))


@pytest.mark.parametrize("width, out_width", [(70_000, 69_999), (70_000, 40_000), (40_000, 39_999)])
def test_max_backward_whose_cell_bounds_pass_32_bits(width, out_width):
    """adaptive_max_pool3d_backward divides cell bounds by the host's fast
    divisors only where every numerator, up to about in * out along an axis,
    fits 32 bits (the last case); past that its wide kernel divides them in
    64 bits. Both give the CPU's gradient, with the window checks."""
    torch.manual_seed(0)
    x = torch.randn(1, 2, 1, 2, width)
    fn = lambda t: F.adaptive_max_pool3d(t, (1, 1, out_width), return_indices=True)  # noqa: E731
    out, indices = fn(x)
    grad = torch.randn(out.shape)
    expected = torch.ops.aten.adaptive_max_pool3d_backward(grad, x, indices)
    with mps_ops.profile() as prof:
        actual, _ = run_on_kernels(torch.ops.aten.adaptive_max_pool3d_backward, grad, x, indices)
    assert_matches(actual, expected)
    wide = (width + 1) * (out_width + 1) > 2**32 - 1
    assert [d.kernel.startswith("adaptive_max_pool3d_backward_wide") for d in prof.dispatches] == [wide]
    moved = indices.clone()
    moved.view(-1)[-1] = 0  # the last cell's window starts far past 0
    with pytest.raises(RuntimeError, match="window"):
        run_on_kernels(torch.ops.aten.adaptive_max_pool3d_backward, grad, x, moved)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_reduced_precision(dtype):
    x = torch.randn(2, 3, 6, 5, 7).to(dtype)
    for fn in (lambda t: F.adaptive_avg_pool3d(t, (4, 3, 5)),
               lambda t: F.adaptive_max_pool3d(t, (4, 3, 5), return_indices=True)):
        expected = fn(x)
        actual, dispatches = run_on_kernels(fn, x)
        assert_matches(actual, expected)
        assert dispatches


def test_out_forms_into_non_contiguous_outs():
    x = torch.randn(2, 3, 5, 7, 6)
    out = torch.empty(2, 3, 3, 4, 10)[..., ::2]
    expected = torch._C._nn.adaptive_avg_pool3d(x, (3, 4, 5))
    actual, _ = run_on_kernels(lambda t, o: torch._C._nn.adaptive_avg_pool3d(t, (3, 4, 5), out=o), x, out)
    assert_matches(actual, expected)
    outs = (torch.empty(0), torch.empty(0, dtype=torch.long))
    expected = torch.ops.aten.adaptive_max_pool3d(x, (3, 4, 5))
    actual, _ = run_on_kernels(
        lambda t, o, i: torch.ops.aten.adaptive_max_pool3d.out(t, (3, 4, 5), out=o, indices=i), x, *outs)
    assert_matches(actual, expected)


def test_empty_batch_dispatches_nothing():
    x = torch.randn(0, 3, 5, 7, 6)
    for fn in (lambda t: F.adaptive_avg_pool3d(t, 2), lambda t: F.adaptive_max_pool3d(t, 2)):
        actual, dispatches = run_on_kernels(fn, x)
        assert actual.shape == (0, 3, 2, 2, 2) and not dispatches


@pytest.mark.parametrize("pool", [F.adaptive_avg_pool3d, F.adaptive_max_pool3d])
def test_errors_are_the_cpus(pool):
    for x, size, match in [
        (torch.randn(2, 3, 4), 2, "Expected 4D or 5D tensor"),
        (torch.randn(2, 0, 3, 4, 5), 2, "non-zero size for non-batch dimensions"),
        (torch.randn(2, 3, 4, 5).int(), 2, None),
    ]:
        with pytest.raises((RuntimeError, NotImplementedError)) as cpu:
            pool(x, size)
        with pytest.raises(type(cpu.value), match=match):
            run_on_kernels(pool, x, size)
    with pytest.raises(TypeError, match="float64"):
        run_on_kernels(pool, torch.randn(1, 2, 3, 4, 5).double(), 2)


# --- fractional_max_pool2d -------------------------------------------------------------

FRACTIONAL_INPUTS = {
    "4d": lambda: torch.randn(2, 3, 9, 11),
    "3d": lambda: torch.randn(3, 9, 11),
    "channels_last": lambda: torch.randn(2, 3, 9, 11).to(memory_format=torch.channels_last),
    "strided": lambda: torch.randn(2, 3, 18, 11)[:, :, ::2],
}


def _check_fractional_forward_and_backward(fn, x, samples):
    """fn(x, samples) -> (output, indices) against the CPU: one dispatch
    forward, and the input's gradient through our backward kernel."""
    expected = fn(x, samples)
    actual, dispatches = run_on_kernels(fn, x, samples)
    assert_matches(actual, expected)
    assert len(dispatches) == 1
    grad = torch.randn(expected[0].shape)
    x_ref = x.clone().requires_grad_()
    fn(x_ref, samples)[0].backward(grad)
    x_dev, s_dev, g_dev = to_device((x.clone(), samples, grad))
    x_dev.requires_grad_()
    with mps_ops.profile() as prof, emulate():
        fn(x_dev, s_dev)[0].backward(g_dev)
    assert_matches(to_cpu(x_dev.grad), x_ref.grad)
    assert any(d.kernel.startswith("fractional_max_pool_backward") for d in prof.dispatches)


@pytest.mark.parametrize("kernel, output", [((2, 2), (4, 5)), ((3, 2), (7, 10)), ((1, 1), (9, 11)),
                                            ((2, 3), (1, 1))], ids=str)
@pytest.mark.parametrize("layout", list(FRACTIONAL_INPUTS))
def test_fractional_max_pool2d_forward_and_backward(layout, kernel, output):
    torch.manual_seed(0)
    x = FRACTIONAL_INPUTS[layout]()
    batch = x.size(0) if x.dim() == 4 else 1
    samples = torch.rand(batch, x.size(-3), 2)

    def fn(t, s):
        return F.fractional_max_pool2d(t, kernel, output_size=output, return_indices=True, _random_samples=s)

    _check_fractional_forward_and_backward(fn, x, samples)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_fractional_max_pool2d_reduced_precision_windows_round_as_on_the_cpu(dtype):
    x = torch.randn(2, 4, 17, 23).to(dtype)
    samples = torch.rand(2, 4, 2).to(dtype)
    fn = lambda t, s: torch.ops.aten.fractional_max_pool2d(t, [3, 2], [8, 13], s)  # noqa: E731
    assert_matches(run_on_kernels(fn, x, samples)[0], fn(x, samples))


def test_fractional_max_pool2d_ties_nan_and_errors():
    x = torch.zeros(1, 2, 6, 6)
    x[0, 1, 2, 3] = float("nan")
    samples = torch.rand(1, 2, 2)
    fn = lambda t, s: torch.ops.aten.fractional_max_pool2d(t, [2, 2], [3, 3], s)  # noqa: E731
    assert_matches(run_on_kernels(fn, x, samples)[0], fn(x, samples))
    for t, kernel, out in [(torch.randn(1, 2, 7, 7), [3, 3], [7, 7]), (torch.randn(7, 7), [2, 2], [3, 3]),
                           (torch.randn(1, 0, 7, 7), [2, 2], [3, 3])]:
        call = lambda a, s: torch.ops.aten.fractional_max_pool2d(a, kernel, out, s)  # noqa: E731
        with pytest.raises(RuntimeError):
            call(t, torch.rand(1, 2, 2))
        with pytest.raises(RuntimeError):
            run_on_kernels(call, t, torch.rand(1, 2, 2))


@pytest.mark.parametrize("kernel", [(3, 3), (2, 3), (3, 5), (1, 3), (4, 1)], ids=str)
def test_fractional_max_pool2d_many_ties_and_nans_keep_the_cpus_indices(kernel):
    """Values from {0, 1, 2} (a window's maximum mostly tied) and NaNs, two
    to a row in places: the first maximum's index, or the last NaN's, as the
    CPU scans each window."""
    torch.manual_seed(1)
    x = torch.randint(0, 3, (2, 3, 13, 14)).float()
    x[0, 0, 2, 3] = x[0, 0, 2, 4] = x[1, 2, 7, 7] = x[1, 2, 7, 9] = x[0, 1, 5, 0] = float("nan")
    samples = torch.rand(2, 3, 2)
    fn = lambda t, s: torch.ops.aten.fractional_max_pool2d(t, list(kernel), [5, 6], s)  # noqa: E731
    assert_matches(run_on_kernels(fn, x, samples)[0], fn(x, samples))


@pytest.mark.skipif(mps_ops.backend == "emulator",
                    reason="a plane spread over 2**31 half elements (4 GiB): a GPU's memory, not CI's")
def test_fractional_max_pool2d_plane_spread_past_32_bits():
    """A (3, 2) plane whose rows lie 2**30 + 1 elements apart: its last
    element 2**31 + 3 past its first, beyond the kernel's 32-bit offsets
    inside a plane, so the host reads it from a contiguous copy."""
    torch.manual_seed(0)
    storage = torch.empty(2**31 + 8, dtype=torch.float16, device=device())
    x = storage.as_strided((1, 1, 3, 2), (0, 0, 2**30 + 1, 1))
    x.copy_(torch.randn(1, 1, 3, 2, dtype=torch.float16))
    samples = torch.rand(1, 1, 2, dtype=torch.float16)
    fn = lambda t, s: torch.ops.aten.fractional_max_pool2d(t, [2, 1], [2, 2], s)  # noqa: E731
    expected = fn(x.cpu(), samples)
    with mps_ops.profile() as prof, emulate():
        actual = fn(x, samples.to(device()))
    assert any(d.op == "fractional_max_pool" for d in prof.dispatches)
    assert_matches(to_cpu(actual), expected, "fractional_max_pool2d over a plane spread past 2**31")


@pytest.mark.parametrize("kernel, output", [((2, 2, 2), (3, 4, 5)), ((1, 3, 2), (4, 2, 5)), ((2, 1, 1), (1, 1, 1))],
                         ids=str)
@pytest.mark.parametrize("layout", ["5d", "4d", "strided"])
def test_fractional_max_pool3d_forward_and_backward(layout, kernel, output):
    torch.manual_seed(0)
    x = {"5d": lambda: torch.randn(2, 3, 5, 6, 7), "4d": lambda: torch.randn(3, 5, 6, 7),
         "strided": lambda: torch.randn(2, 3, 5, 12, 7)[:, :, :, ::2]}[layout]()
    batch = x.size(0) if x.dim() == 5 else 1
    samples = torch.rand(batch, x.size(-4), 3)

    def fn(t, s):
        return F.fractional_max_pool3d(t, kernel, output_size=output, return_indices=True, _random_samples=s)

    _check_fractional_forward_and_backward(fn, x, samples)


def test_fractional_max_pool3d_errors():
    for t, kernel, out in [(torch.randn(1, 2, 4, 7, 7), [3, 3, 3], [3, 7, 7]),
                           (torch.randn(7, 7, 7), [2, 2, 2], [3, 3, 3])]:
        call = lambda a, s: torch.ops.aten.fractional_max_pool3d(a, kernel, out, s)  # noqa: E731
        with pytest.raises(RuntimeError):
            call(t, torch.rand(1, 2, 3))
        with pytest.raises(RuntimeError):
            run_on_kernels(call, t, torch.rand(1, 2, 3))


def test_max_backward_refuses_a_plane_of_2_31_cells():
    """A thread of adaptive_max_pool3d_backward counts the cells that cover its
    run (up to one output plane's) in 32 bits: a grad_output plane of 2**31
    cells or more (only a direct call can give one: the forward refuses that
    many outputs) is refused, where the count wrapped and dropped cells."""
    x = torch.randn(1, 1, 1, 1, 1)
    grad = torch.ones(1).expand(1, 1, 2**16, 2**15, 1)
    indices = torch.zeros(1, dtype=torch.long).expand(1, 1, 2**16, 2**15, 1)
    with pytest.raises(RuntimeError, match="2\\*\\*31 - 1 cells a plane"):
        run_on_kernels(torch.ops.aten.adaptive_max_pool3d_backward, grad, x, indices)
