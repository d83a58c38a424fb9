"""rrelu_with_noise beyond OpInfo's samples. Training draws slopes from the
generator, and ours come from another stream than the CPU's, so training is
checked by its properties (noise 1 where x > 0, in [lower, upper] elsewhere,
out = x * noise, a fixed seed reproduces, the generator advances, the slopes
uniform and uncorrelated between neighbours); evaluation
is compared with the CPU. Layouts, out= and in-place forms, autograd, and the
CPU's errors."""

from __future__ import annotations

import pytest
import torch

from helpers import assert_matches, run_on_kernels, to_device
from mps_ops.testing import device, emulate

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"rrelu_with_noise"}

LOWER, UPPER = 0.1, 0.4
LAYOUTS = {
    "contiguous": lambda: torch.randn(30, 17),
    "transposed": lambda: torch.randn(17, 30).t(),
    "strided": lambda: torch.randn(30, 34)[:, ::2],
    "zero_dim": lambda: torch.tensor(-1.5),
    # x == 0 is not positive: it takes a drawn slope, not noise 1.
    "with_zeros": lambda: torch.tensor([[0.0, -0.0, 1.5], [-2.0, 0.0, 3.0]]),
}


def _train(x, noise):
    return torch.ops.aten.rrelu_with_noise(x, noise, LOWER, UPPER, True), noise


def _check_training(x, out, noise):
    rtol = 1e-6 if out.dtype == torch.float32 else 1e-2
    x, out, noise = x.float(), out.float(), noise.float()
    positive = x > 0
    assert torch.equal(noise[positive], torch.ones_like(noise[positive]))
    assert torch.equal(out[positive], x[positive])
    slopes = noise[~positive]
    assert ((slopes >= LOWER - 1e-3) & (slopes <= UPPER + 1e-3)).all()
    assert torch.allclose(out[~positive], x[~positive] * slopes, rtol=rtol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_training_properties(layout, dtype):
    torch.manual_seed(0)
    x = LAYOUTS[layout]().to(dtype)
    (out, noise), dispatches = run_on_kernels(_train, x, torch.empty(x.shape, dtype=dtype))
    assert dispatches
    _check_training(x, out, noise)
    assert out.is_contiguous() or x.dim() == 0


def test_non_contiguous_noise_is_written_in_place():
    x = torch.randn(8, 6)
    noise_base = torch.zeros(6, 8)
    (out, noise), _ = run_on_kernels(_train, x, noise_base.t())
    assert noise.stride() == (1, 8)
    _check_training(x, out, noise)


def test_a_fixed_seed_reproduces_and_the_generator_advances():
    x = torch.randn(200)

    def draw(seed):
        torch.manual_seed(seed)
        first, _ = run_on_kernels(_train, x, torch.empty(200))
        second, _ = run_on_kernels(_train, x, torch.empty(200))
        return first[0], second[0]

    a1, a2 = draw(3)
    b1, b2 = draw(3)
    assert torch.equal(a1, b1) and torch.equal(a2, b2)
    assert not torch.equal(a1, a2)
    generator = torch.Generator(device=device()).manual_seed(5)
    (c, _), _ = run_on_kernels(lambda t, n: (torch.ops.aten.rrelu_with_noise(t, n, LOWER, UPPER, True, generator), n),
                               x, torch.empty(200))
    generator.manual_seed(5)
    (d, _), _ = run_on_kernels(lambda t, n: (torch.ops.aten.rrelu_with_noise(t, n, LOWER, UPPER, True, generator), n),
                               x, torch.empty(200))
    assert torch.equal(c, d)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_slopes_are_uniform_and_uncorrelated(dtype):
    """Every element negative, so every one draws: the slopes fill [lower,
    upper) evenly (16 bins within 5% of their share, 4.5 standard
    deviations), and neighbours are uncorrelated whether they share a thread
    (32 apart in a tile), a Philox block (4 x 32 apart) or neither (1, 256)."""
    torch.manual_seed(7)
    n = 1 << 17
    (out, noise), _ = run_on_kernels(_train, -torch.rand(n).to(dtype) - 0.5, torch.empty(n, dtype=dtype))
    low, high = (torch.tensor(v, dtype=dtype).double() for v in (LOWER, UPPER))  # the bounds in the dtype
    u = (noise.double() - low) / (high - low)
    assert ((u >= 0) & (u <= 1)).all()
    counts = torch.histc(u, bins=16, min=0, max=1)
    assert ((counts - n / 16).abs() < 0.05 * n / 16).all(), counts
    for lag in (1, 32, 128, 256):
        correlation = torch.corrcoef(torch.stack([u[:-lag], u[lag:]]))[0, 1].item()
        assert abs(correlation) < 0.02, (lag, correlation)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_evaluation_matches_the_cpu(layout, dtype):
    torch.manual_seed(1)
    x = LAYOUTS[layout]().to(dtype)
    x[(0,) * x.dim()] = float("nan")

    def evaluate(t, n):
        return torch.ops.aten.rrelu_with_noise(t, n, LOWER, UPPER, False)

    expected = evaluate(x, torch.zeros(x.shape, dtype=dtype))
    actual, dispatches = run_on_kernels(evaluate, x, torch.zeros(x.shape, dtype=dtype))
    assert dispatches
    assert_matches(actual, expected)


def test_evaluation_into_an_empty_out_keeps_the_inputs_layout():
    """The CPU's evaluation is leaky_relu's iterator, which resizes out= in
    the input's layout. (Training into an out= it must resize: the CPU
    writes past it.)"""
    x = torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last)

    def evaluate(t, n):
        return torch.ops.aten.rrelu_with_noise.out(t, n, LOWER, UPPER, False, out=torch.empty(0))

    expected = evaluate(x, torch.zeros(x.shape))
    actual, dispatches = run_on_kernels(evaluate, x, torch.zeros(x.shape))
    assert_matches(actual, expected)
    assert dispatches and actual.stride() == expected.stride(), (actual.stride(), expected.stride())


@pytest.mark.parametrize("training", [False, True])
def test_out_and_inplace_forms(training):
    torch.manual_seed(2)
    x = torch.randn(12, 5)
    x[0, 0] = float("nan")

    def into_out(t, n, out):
        returned = torch.ops.aten.rrelu_with_noise.out(t, n, LOWER, UPPER, training, out=out)
        assert returned is out
        return out, n

    def in_place(t, n):
        returned = torch.ops.aten.rrelu_with_noise_(t, n, LOWER, UPPER, training)
        assert returned is t
        return t, n

    out_base = torch.zeros(5, 12)
    (out, noise), _ = run_on_kernels(into_out, x, torch.zeros(12, 5), out_base.t())
    assert out.stride() == (1, 12)
    (inplace, inplace_noise), _ = run_on_kernels(in_place, x.t().clone().t(), torch.zeros(12, 5))
    for result, n in ((out, noise), (inplace, inplace_noise)):
        if training:
            assert torch.isnan(result[0, 0]) and n[0, 0] == 1
            _check_training(x[1:], result[1:], n[1:])
        else:
            assert_matches(result, torch.nn.functional.rrelu(x, LOWER, UPPER, training=False))


def test_functional_rrelu_and_its_gradient():
    torch.manual_seed(4)
    x = to_device(torch.randn(40)).requires_grad_()
    with emulate():
        out = torch.nn.functional.rrelu(x, LOWER, UPPER, training=True)
        out.sum().backward()
    slopes = (out / x).detach()
    assert torch.allclose(x.grad, slopes, rtol=1e-6)
    assert ((slopes >= LOWER) & (slopes <= UPPER) | (slopes == 1)).all()


@pytest.mark.parametrize("case", ["shape", "noise_dtype", "integer", "bounds"])
def test_errors_are_the_cpus(case):
    x, noise, lower, upper = torch.randn(6), torch.empty(6), LOWER, UPPER
    if case == "shape":
        noise = torch.empty(5)
    elif case == "noise_dtype":
        noise = noise.half()
    elif case == "integer":
        x, noise = x.int(), noise.int()
    elif case == "bounds":
        lower, upper = 0.5, 0.1
    x[0] = -1.0 if x.is_floating_point() else -1
    with pytest.raises(Exception) as cpu_error:
        torch.ops.aten.rrelu_with_noise(x, noise, lower, upper, True)
    x, noise = to_device((x, noise))
    with pytest.raises(Exception) as our_error, emulate():
        torch.ops.aten.rrelu_with_noise(x, noise, lower, upper, True)
    assert type(our_error.value) is type(cpu_error.value), (our_error.value, cpu_error.value)


def test_float64_is_refused():
    x, noise = to_device((torch.randn(3, dtype=torch.float64), torch.empty(3, dtype=torch.float64)))
    with pytest.raises(TypeError, match="rrelu_with_noise.*float64"), emulate():
        torch.ops.aten.rrelu_with_noise(x, noise, LOWER, UPPER, True)
