"""softplus, softplus_backward, tanh_backward and logit_backward (overrides)
where the sweeps do not look: special values, the parameters' edges
(negative beta, thresholds either side of the inputs, eps of every kind),
operands of two dtypes, grad_input= of another dtype, and gradients through
the modules that reach them."""

from __future__ import annotations

import pytest
import torch

from helpers import assert_matches, errors_of_cpu_and_ours, run_on_kernels

aten = torch.ops.aten
F = torch.nn.functional
SPECIAL = torch.tensor([0.0, -0.0, 1.0, -1.0, 1e-6, -1e-6, 9.0, 10.5, -30.0, 80.0, -80.0, 200.0,
                        float("inf"), -float("inf"), float("nan")])
FLOATING = [torch.float32, torch.float16, torch.bfloat16]


def _check(fn, *args):
    expected = fn(*args)
    actual, dispatches = run_on_kernels(fn, *args)
    assert_matches(actual, expected)
    assert dispatches
    return actual


@pytest.mark.parametrize("dtype", FLOATING)
@pytest.mark.parametrize("beta, threshold", [(1.0, 20.0), (2.0, 3.0), (-1.0, 20.0), (0.5, -5.0), (1.0, 200.0)])
def test_softplus_and_its_backward_special_values(dtype, beta, threshold):
    x = SPECIAL.to(dtype)
    grad = torch.linspace(-2, 2, x.numel()).to(dtype)
    _check(lambda t: aten.softplus(t, beta, threshold), x)
    _check(lambda g, t: aten.softplus_backward(g, t, beta, threshold), grad, x)


@pytest.mark.parametrize("dtype", FLOATING)
def test_tanh_backward_special_values(dtype):
    y = torch.cat([torch.tanh(SPECIAL), torch.tensor([1.0, -1.0, 0.999, 2.0])]).to(dtype)
    grad = torch.linspace(-2, 2, y.numel()).to(dtype)
    grad[0] = float("inf")
    _check(aten.tanh_backward, grad, y)


@pytest.mark.parametrize("dtype", FLOATING)
@pytest.mark.parametrize("eps", [None, 0.0, 1e-3, 0.3, 0.6, -0.5])
def test_logit_backward_edges(dtype, eps):
    """Half and bfloat16 compare with eps and 1 - eps in float (the
    registry's `differs`): their reference is the CPU's float32 op on the
    same values, rounded once."""
    x = torch.tensor([0.0, 1.0, 0.5, 1e-4, 0.9999, -0.1, 1.1, 0.3, 0.7, float("nan")]).to(dtype)
    grad = torch.linspace(-1, 2, x.numel()).to(dtype)
    call = lambda g, t: aten.logit_backward(g, t, eps)  # noqa: E731
    expected = call(grad.float(), x.float()).to(dtype) if eps is not None else call(grad, x)
    actual, dispatches = run_on_kernels(call, grad, x)
    assert_matches(actual, expected)
    assert dispatches


@pytest.mark.parametrize("call", [
    lambda g, x, out=None: aten.softplus_backward(g, x, 1.0, 20.0) if out is None
    else aten.softplus_backward.grad_input(g, x, 1.0, 20.0, grad_input=out),
    lambda g, x, out=None: aten.tanh_backward(g, x) if out is None else aten.tanh_backward.grad_input(g, x, grad_input=out),
    lambda g, x, out=None: aten.logit_backward(g, x, 0.01) if out is None
    else aten.logit_backward.grad_input(g, x, 0.01, grad_input=out),
], ids=["softplus_backward", "tanh_backward", "logit_backward"])
def test_backwards_promote_and_cast_as_the_cpu(call):
    grad, x = torch.randn(4, 5), torch.rand(4, 5).half()
    actual = _check(call, grad, x)
    assert actual.dtype == torch.float32
    out = torch.empty(4, 5, dtype=torch.float16)
    _check(lambda g, t, o: call(g, t, o), grad, x.float(), out)
    errors_of_cpu_and_ours(lambda g, t, o: call(g, t, o), grad, x, torch.empty(4, 5, dtype=torch.int64))
    errors_of_cpu_and_ours(call, torch.arange(3), torch.arange(3))


def test_softplus_out_and_errors_are_the_cpus():
    x = torch.randn(4, 5)
    _check(lambda t, o: aten.softplus.out(t, 1.0, 20.0, out=o), x, torch.empty(2, 10).t())
    for args in [(x, torch.empty(3, dtype=torch.float16)), (torch.arange(3), torch.empty(3, dtype=torch.int64)),
                 (torch.randn(3, dtype=torch.complex64), torch.empty(3, dtype=torch.float16)),
                 (torch.randn(3, dtype=torch.complex64), torch.empty(3, dtype=torch.complex64))]:
        errors_of_cpu_and_ours(lambda t, o: aten.softplus.out(t, 1.0, 20.0, out=o), *args)


@pytest.mark.parametrize("module", [torch.nn.Softplus(beta=2.0, threshold=3.0), torch.nn.Tanh(),
                                    lambda t: torch.logit(t, 1e-3)], ids=["softplus", "tanh", "logit"])
def test_gradients_through_the_modules(module):
    x = torch.rand(6, 7) * 0.98 + 0.01

    def gradient(t):
        t = t.clone().requires_grad_()
        return torch.autograd.grad((module(t) * torch.arange(42.0).view(6, 7)).sum(), t)[0]

    expected = gradient(x)
    actual, dispatches = run_on_kernels(gradient, x)
    assert_matches(actual, expected)
    assert dispatches


@pytest.mark.parametrize("shape", [(), (0,), (3, 0)])
def test_0_dim_and_empty(shape):
    x = torch.rand(shape)
    for call in [lambda t: aten.softplus(t, 1.0, 20.0), lambda t: aten.tanh_backward(t, t),
                 lambda t: aten.softplus_backward(t, t, 1.0, 20.0), lambda t: aten.logit_backward(t, t)]:
        expected = call(x)
        actual, dispatches = run_on_kernels(call, x)
        assert_matches(actual, expected)
        assert bool(dispatches) == (x.numel() > 0)
