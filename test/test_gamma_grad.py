"""_standard_gamma_grad and _dirichlet_grad (fills: torch 2.9 to 2.11 lack
the first on MPS, 2.9 to 2.12 the second), the backward of Gamma's, Chi2's,
Beta's and Dirichlet's rsample. The CPU evaluates their approximations' hard
steps in double; ours are float, rewritten so as not to cancel (the kernel's
header says how). So the reference is the CPU's float64 op: ours within
float's reach of it on every branch (each branch's region sampled apart),
and no further than the CPU's own float32 op where that rounds in float
too; where the CPU's double steps underflow, the approximation's value
(against mpmath's). Also: half and bfloat16, layouts and broadcasting, the
CPU's errors, and the gradients through torch.distributions."""

from __future__ import annotations

import math

import pytest
import torch

import mps_ops
from gamma_checks import standard_gamma_grad_reference
from helpers import (
    OnCpu, assert_errors_match, assert_near_truth, errors_of_cpu_and_ours, in_layout, run_on_kernels,
)
from mps_ops.testing import device, emulate

LAYOUTS_TESTED_HERE = {"_standard_gamma_grad", "_dirichlet_grad"}

OPS = {"_standard_gamma_grad": torch._standard_gamma_grad, "_dirichlet_grad": torch._dirichlet_grad}
KERNELS = {"_standard_gamma_grad": "standard_gamma_grad", "_dirichlet_grad": "dirichlet_grad"}

# Relative distance from the CPU's float64 result that float reaches: the
# Gamma's steps lose at most a few ulps; the Beta's saddle point near the
# mean (0.1 to 0.3 standard deviations) cancels two orders of its terms.
REACH = {"_standard_gamma_grad": 1e-5, "_dirichlet_grad": 2e-4}


def log_uniform(n, low, high, generator):
    return torch.exp(torch.empty(n).uniform_(math.log(low), math.log(high), generator=generator))


def gamma_region(name, n=20_000):
    """(alpha, x) pairs of one branch of the Gamma's gradient."""
    g = torch.Generator().manual_seed(1)
    if name == "small draws":  # x < 0.8; x**alpha normal in double
        alpha = log_uniform(n, 1e-3, 50.0, g)
        return alpha, torch.rand(n, generator=g) * 0.8
    if name == "saddle point":  # alpha > 8, x within and past alpha's 10%
        alpha = log_uniform(n, 8.0, 1e6, g)
        return alpha, alpha * torch.empty(n).uniform_(0.5, 1.5, generator=g)
    if name == "fitted":  # alpha <= 8, x >= 0.8
        alpha = log_uniform(n, 1e-3, 8.0, g)
        return alpha, 0.8 + log_uniform(n, 1e-3, 50.0, g)
    alpha = log_uniform(n, 1e-2, 1e3, g)  # draws, as rsample's backward meets them
    return alpha, torch._standard_gamma(alpha.double(), generator=g).float().clamp_min(1e-30)


def beta_region(name, n=20_000):
    """(x, alpha, total) triples of one branch of the Beta's gradient."""
    g = torch.Generator().manual_seed(2)
    if name == "near the mean":  # alpha, beta > 6, x 0.1 to 0.3 standard deviations off
        alpha, beta = log_uniform(n, 6.5, 1e4, g), log_uniform(n, 6.5, 1e4, g)
        total = alpha + beta
        mean = alpha.double() / total
        spread = (alpha.double() * beta / (total + 1)).sqrt() / total
        side = torch.where(torch.rand(n, generator=g) < 0.5, -1.0, 1.0).double()
        x = mean + side * spread * torch.empty(n).uniform_(0.1001, 0.3, generator=g).double()
        return x.float(), alpha, total
    if name == "at the mean":  # its polynomial
        alpha, beta = log_uniform(n, 6.5, 1e4, g), log_uniform(n, 6.5, 1e4, g)
        total = alpha + beta
        spread = (alpha.double() * beta / (total + 1)).sqrt() / total
        x = alpha.double() / total + spread * torch.empty(n).uniform_(-0.09, 0.09, generator=g).double()
        return x.float(), alpha, total
    if name == "fitted":  # one concentration below 6, x where neither series holds
        alpha, beta = log_uniform(n, 1e-2, 6.0, g), log_uniform(n, 0.5, 1e3, g)
        swap = torch.rand(n, generator=g) < 0.5
        alpha, beta = torch.where(swap, beta, alpha), torch.where(swap, alpha, beta)
        return torch.rand(n, generator=g) * 0.98 + 0.01, alpha, alpha + beta
    concentration = log_uniform(4 * n, 1e-2, 1e3, g).reshape(n, 4)  # draws
    x = torch._sample_dirichlet(concentration.double(), generator=g).float()
    return x, concentration, concentration.sum(-1, keepdim=True).expand_as(concentration)


def assert_within_reach(op, ours, inputs):
    """Relatively within REACH[op] of the CPU's float64 result, or no
    further than the CPU's float32 op gets among the same inputs (where its
    steps are float, their cancellation is as much the CPU's)."""
    if ours.numel() == 0:
        return
    truth = (standard_gamma_grad_reference(*inputs) if op == "_standard_gamma_grad"
             else OPS[op](*[t.double() for t in inputs]))
    cpu, ours = OPS[op](*inputs).double(), ours.double()
    assert torch.equal(ours.isnan(), truth.isnan()), "NaN where the CPU has none, or none where it has"
    finite = truth.isfinite()
    assert torch.equal(ours[~finite], truth[~finite])
    scale = truth.abs().clamp_min(torch.finfo(torch.float32).tiny)
    ours_distance = ((ours - truth).abs() / scale)[finite].max().item()
    cpu_distance = ((cpu - truth).abs() / scale)[finite].max().item()
    assert ours_distance <= max(REACH[op], cpu_distance), f"{op}: {ours_distance:.3g} (the CPU's float32: {cpu_distance:.3g})"


@pytest.mark.parametrize("region", ["small draws", "saddle point", "fitted", "draws"])
def test_standard_gamma_grad_matches_the_cpus_float64(region):
    alpha, x = gamma_region(region)
    ours, dispatches = run_on_kernels(torch._standard_gamma_grad, alpha, x)
    assert [d.op for d in dispatches] == ["standard_gamma_grad"]
    assert_within_reach("_standard_gamma_grad", ours, (alpha, x))


@pytest.mark.parametrize("region", ["near the mean", "at the mean", "fitted", "draws"])
def test_dirichlet_grad_matches_the_cpus_float64(region):
    x, alpha, total = beta_region(region)
    ours, dispatches = run_on_kernels(torch._dirichlet_grad, x, alpha, total)
    assert [d.op for d in dispatches] == ["dirichlet_grad"]
    assert_within_reach("_dirichlet_grad", ours, (x, alpha, total))


def test_where_the_cpus_double_underflows():
    """x**alpha below double's normal numbers (alpha 825.5, x 0.409): the
    CPU's quotient of two underflowed powers is off by 2x; ours divides the
    powers out. mpmath's -(d/dalpha P(alpha, x)) / pdf is 0.0037727755."""
    alpha, x = torch.tensor([825.5093383789062]), torch.tensor([0.40902504324913025])
    ours, _ = run_on_kernels(torch._standard_gamma_grad, alpha, x)
    assert abs(ours.item() / 0.0037727755 - 1) < 2e-5  # the six-term series' own error: 9e-6
    assert abs(torch._standard_gamma_grad(alpha.double(), x.double()).item() / 0.0037727755 - 1) > 0.5


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("op", OPS.keys())
def test_narrow_dtypes(op, dtype):
    """Computed in float, rounded once (the CPU raises NotImplementedError
    for these): within the dtype's tolerance of the float64 result of the
    same (rounded) inputs."""
    inputs = [t.to(dtype) for t in (gamma_region("draws", 2000) if op == "_standard_gamma_grad"
                                    else beta_region("draws", 500))]
    ours, _ = run_on_kernels(OPS[op], *inputs)
    assert ours.dtype == dtype
    assert_near_truth(ours, OPS[op](*[t.double() for t in inputs]), dtype, op)


def _layout_cases(op):
    """Inputs (alpha and x, or x, alpha and total) in one layout each, and
    broadcast: the totals as the rows' sums, one alpha per row."""
    alpha, x = gamma_region("draws", 60)
    if op == "_standard_gamma_grad":
        alpha, x = alpha.reshape(6, 10), x.reshape(6, 10)
        return {"transposed": [in_layout(alpha, "transposed"), in_layout(x, "transposed")],
                "strided": [in_layout(alpha, "strided"), x],
                "expanded": [in_layout(alpha, "expanded"), x],
                "broadcast": [alpha[:, :1], x],
                "broadcast self": [alpha[:1], x[:, :1]],
                "broadcast, transposed": [alpha[:, :1], in_layout(x, "transposed")],
                "CPU scalar": [alpha, torch.tensor(2.5)],
                "0-dim": [torch.tensor(3.0), torch.tensor(2.0)],
                "empty": [alpha[:0], x[:0]]}
    x, alpha, total = beta_region("draws", 40)
    x, alpha, total = x.reshape(10, 16), alpha.reshape(10, 16), total.reshape(10, 16)
    return {"transposed": [in_layout(x, "transposed"), alpha, in_layout(total, "transposed")],
            "strided": [in_layout(x, "strided"), in_layout(alpha, "strided"), total],
            "expanded": [x, alpha, in_layout(total, "expanded")],
            "broadcast": [x, alpha, total[:, :1]],
            "broadcast x": [x[:1], alpha, total],
            "broadcast x, transposed": [x[:1], in_layout(alpha, "transposed"), total],
            "CPU scalar": [x, alpha, torch.tensor(40.0)],
            "0-dim": [torch.tensor(0.3), torch.tensor(2.0), torch.tensor(5.0)],
            "empty": [x[:, :0], alpha[:, :0], total[:, :0]]}


@pytest.mark.filterwarnings("ignore:An output with one or more elements was resized")
@pytest.mark.parametrize("op, layout", [(op, layout) for op in OPS for layout in _layout_cases(op)])
def test_layouts(op, layout):
    """The CPU's shape and strides (the first operand's shape, contiguous,
    else the iterator's resize), and its values, on the dense and strided
    kernels."""
    inputs = _layout_cases(op)[layout]
    expected = OPS[op](*inputs)
    on_cpu = [OnCpu(t) if layout == "CPU scalar" and t.dim() == 0 else t for t in inputs]
    ours, dispatches = run_on_kernels(OPS[op], *on_cpu)
    assert ours.shape == expected.shape and ours.stride() == expected.stride()
    assert [d.op for d in dispatches] == ([] if expected.numel() == 0 else [KERNELS[op]])
    assert_within_reach(op, ours, inputs)


@pytest.mark.parametrize("op", OPS.keys())
def test_errors_are_the_cpus(op):
    arity = 2 if op == "_standard_gamma_grad" else 3
    ones = [torch.ones(2, 3)] * arity
    # one dtype for all (the iterator's words), then the floating dispatch
    assert_errors_match(OPS[op], *ones[:-1], ones[-1].half())
    assert_errors_match(OPS[op], ones[0].int(), *ones[1:])
    cpu, ours = errors_of_cpu_and_ours(OPS[op], *[t.long() for t in ones])
    assert str(cpu).split(" not implemented")[0] in str(ours) and "Long" in str(ours)
    assert_errors_match(OPS[op], *ones[:-1], torch.ones(4))


@pytest.mark.parametrize("op", OPS.keys())
def test_float64_is_refused_clearly(op):
    arity = 2 if op == "_standard_gamma_grad" else 3
    with pytest.raises(TypeError, match=f"{op}.*float64"):
        run_on_kernels(OPS[op], *[torch.ones(3, dtype=torch.float64)] * arity)


def test_gamma_rsample_backward():
    """Gamma(concentration, rate).rsample() through autograd: our sampler's
    draws, and the CPU's gradient formula (d draw / d concentration over the
    rate, d draw / d rate = -draw / rate) at those draws."""
    torch.manual_seed(3)
    concentration, rate = log_uniform(400, 0.05, 40.0, None), log_uniform(400, 0.5, 4.0, None)
    weights = torch.randn(400)

    def draws_and_gradients(c, r, w):
        c, r = c.clone().requires_grad_(), r.clone().requires_grad_()
        draws = torch.distributions.Gamma(c, r).rsample()
        (draws * w).sum().backward()
        return draws.detach(), c.grad, r.grad

    (draws, d_concentration, d_rate), dispatches = run_on_kernels(draws_and_gradients, concentration, rate, weights)
    assert "standard_gamma_grad" in [d.op for d in dispatches]
    unit = draws * rate  # the standard Gamma draws
    expected = torch._standard_gamma_grad(concentration.double(), unit.double()) * weights / rate
    torch.testing.assert_close(d_concentration.double(), expected, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(d_rate, -draws * weights / rate, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("distribution", ["Dirichlet", "Beta"])
def test_dirichlet_and_beta_rsample_backward(distribution):
    """Dirichlet's and Beta's rsample through autograd: the gradients the
    CPU's formula (torch.distributions.dirichlet._Dirichlet_backward) gives
    at our draws."""
    torch.manual_seed(4)
    concentration = log_uniform(600, 0.05, 40.0, None).reshape(200, 3)
    if distribution == "Beta":
        concentration = concentration[:, :2]
    grad_output = torch.randn(concentration.shape)

    def draws_and_gradient(c, g):
        c = c.clone().requires_grad_()
        if distribution == "Dirichlet":
            draws = torch.distributions.Dirichlet(c).rsample()
            (draws * g).sum().backward()
            return draws.detach(), c.grad
        torch.manual_seed(5)
        (torch.distributions.Beta(c[:, 0], c[:, 1]).rsample() * (g[:, 0] - g[:, 1])).sum().backward()
        torch.manual_seed(5)  # the same draws, both shares (Beta keeps the first)
        return torch.distributions.Dirichlet(c.detach()).sample(), c.grad

    (draws, gradient), dispatches = run_on_kernels(draws_and_gradient, concentration, grad_output)
    assert "dirichlet_grad" in [d.op for d in dispatches]
    if distribution == "Beta":  # its loss, (g0 - g1) x0, reaches x1 only through the normalisation
        grad_output = torch.stack([grad_output[:, 0] - grad_output[:, 1], torch.zeros(200)], -1)
    expected = torch.distributions.dirichlet._Dirichlet_backward(
        draws.double(), concentration.double(), grad_output.double())
    torch.testing.assert_close(gradient.double(), expected, rtol=1e-3, atol=1e-5)


@pytest.mark.skipif(mps_ops.backend == "emulator", reason="2**31 + 8 elements (8 GiB a tensor): a GPU's memory")
def test_past_2_to_the_31_elements():
    alpha = torch.tensor([2.0], device=device()).expand(2**31 + 8)
    x = torch.tensor([1.5], device=device()).expand(2**31 + 8)
    with emulate():
        grad = torch._standard_gamma_grad(alpha, x)
    expected = torch._standard_gamma_grad(torch.tensor([2.0]), torch.tensor([1.5])).item()
    assert grad.shape == (2**31 + 8,)
    for index in (0, 2**31 - 1, 2**31, 2**31 + 7):
        assert grad[index].item() == pytest.approx(expected, rel=1e-5)
