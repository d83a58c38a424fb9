"""_weight_norm_interface and its backward (override ops) against the CPU:
dim 0 and the last dim, 1-D to 4-D, float32, half and bfloat16 (norms in
float), non-contiguous v, g and gradients, long rows, empty ones, torch's
own weight_norm with autograd through both, and the CPU's errors."""

from __future__ import annotations

import pytest
import torch

from helpers import assert_matches, in_layout, run_on_kernels

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"_weight_norm_interface", "_weight_norm_interface_backward"}

aten = torch.ops.aten
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
SHAPES = [((4, 3, 5), 0), ((4, 3, 5), 2), ((7,), 0), ((6, 9), 1), ((3, 2, 4, 5), 3), ((2, 5000), 0),
          ((300, 7), 1), ((64, 1000), 0), ((3, 33, 1), 0)]


def _args(shape, dim, dtype, seed=0):
    torch.manual_seed(seed)
    v = torch.randn(shape).to(dtype)
    g_shape = [1] * len(shape)
    g_shape[dim] = shape[dim]
    g = torch.randn(g_shape).to(dtype)
    return v, g


def _check(call, args, where, kernel_prefix="weight_norm"):
    # The CPU's kernels read v and grad_w in memory order, whatever their
    # strides (torch._weight_norm passes them contiguous): the reference
    # takes contiguous copies.
    expected = call(*[a.contiguous() for a in args])
    actual, dispatches = run_on_kernels(call, *args)
    for a, e in zip(actual, expected):
        assert a.stride() == e.stride(), where
    assert_matches(list(actual), list(expected), where)
    assert dispatches or args[0].numel() == 0, where
    assert any(d.op.startswith(kernel_prefix) for d in dispatches) or args[0].numel() == 0, where


@pytest.mark.parametrize("shape, dim", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_forward(shape, dim, dtype):
    _check(lambda v, g: aten._weight_norm_interface(v, g, dim), _args(shape, dim, dtype), f"{shape} {dim} {dtype}")


@pytest.mark.parametrize("shape, dim", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_backward(shape, dim, dtype):
    v, g = _args(shape, dim, dtype)
    _, norms = aten._weight_norm_interface(v, g, dim)
    grad = torch.randn(shape).to(dtype)
    _check(lambda gw, v, g, n: aten._weight_norm_interface_backward(gw, v, g, n, dim), (grad, v, g, norms),
           f"{shape} {dim} {dtype}")


@pytest.mark.parametrize("layout", ["transposed", "strided", "expanded"])
@pytest.mark.parametrize("dim", [0, 2])
def test_layouts(layout, dim):
    v, g = _args((4, 6, 5), dim, torch.float32)
    v = in_layout(v, layout)
    _check(lambda v, g: aten._weight_norm_interface(v, g, dim), (v, g), f"{layout} dim {dim}")
    # The backward refuses a non-contiguous saved_v, saved_g or saved_norms,
    # as the CPU's does; grad_w may be in any layout.
    v = v.contiguous()
    _, norms = aten._weight_norm_interface(v, g, dim)
    grad = in_layout(torch.randn(4, 6, 5), layout)
    _check(lambda gw, v, g, n: aten._weight_norm_interface_backward(gw, v, g, n, dim), (grad, v, g, norms),
           f"backward {layout} dim {dim}")


def test_zero_rows():
    """A zero row: its norm 0, its weights 0 * g / 0 = NaN, as on the CPU."""
    v, g = _args((3, 4), 0, torch.float32)
    v[1] = 0
    _check(lambda v, g: aten._weight_norm_interface(v, g, 0), (v, g), "zero row")


def test_signed_zeros():
    """v * (g / norm) keeps the sign of a zero product, as the CPU's does."""
    v = torch.tensor([[1.0, -0.0, 0.0], [1.0, -0.0, 2.0]])
    for g in (torch.ones(2, 1), -torch.ones(2, 1)):
        expected = aten._weight_norm_interface(v, g, 0)[0]
        (actual, _), _ = run_on_kernels(lambda v, g: aten._weight_norm_interface(v, g, 0), v, g)
        assert torch.equal(torch.signbit(actual), torch.signbit(expected)), (actual, expected)


def test_empty_rows():
    v, g = torch.randn(3, 0), torch.randn(3, 1)
    _check(lambda v, g: aten._weight_norm_interface(v, g, 0), (v, g), "rows of no element")


@pytest.mark.parametrize("dim", [0, -1])
def test_torch_weight_norm_with_autograd(dim):
    """torch._weight_norm (the parametrization's call) in training: its
    fused path reaches both overrides, gradients for v and g as the CPU's."""
    v, g = _args((5, 4, 3), dim % 3, torch.float32)
    v.requires_grad_()
    g.requires_grad_()
    grad = torch.randn(5, 4, 3)

    def step(v, g, grad):
        w = torch._weight_norm(v, g, dim % 3)
        return (w, *torch.autograd.grad(w, (v, g), grad))

    expected = step(v, g, grad)
    actual, dispatches = run_on_kernels(step, v, g, grad)
    assert_matches(list(actual), list(expected), "autograd")
    ops = {d.op for d in dispatches}
    forward = "weight_norm_rows" if dim == 0 else "weight_norm_norms"  # dim 0: one kernel
    backward = "weight_norm_backward_rows" if dim == 0 else "weight_norm_backward_sums"  # (float32 v)
    assert forward in ops and backward in ops, ops


ERRORS = {
    "integer v": lambda v, g: aten._weight_norm_interface(v.long(), g.long(), 0),
    "middle dim": lambda v, g: aten._weight_norm_interface(v, g.reshape(1, 4, 1).expand(1, 4, 1)[:, :3], 1),
    "half g": lambda v, g: aten._weight_norm_interface(v, g.half(), 0),
    "0-dim v": lambda v, g: aten._weight_norm_interface(v[0, 0, 0], g[0, 0, 0], 0),
    "half norms": lambda v, g: aten._weight_norm_interface_backward(v, v, g, g.half(), 0),
    "float grad_w beside half v": lambda v, g: aten._weight_norm_interface_backward(v, v.half(), g.half(), g, 0),
    "transposed saved_v": lambda v, g: aten._weight_norm_interface_backward(v, v.transpose(0, 2).contiguous()
                                                                            .transpose(0, 2), g, g, 0),
}


@pytest.mark.parametrize("call", ERRORS.values(), ids=ERRORS.keys())
def test_errors_are_the_cpus(call):
    v, g = _args((4, 3, 5), 0, torch.float32)
    with pytest.raises(Exception) as cpu_error:
        call(v, g)
    with pytest.raises(Exception) as our_error:
        run_on_kernels(call, v, g)
    assert type(our_error.value) is type(cpu_error.value), (our_error.value, cpu_error.value)


def test_short_g_is_refused():
    """The CPU writes the norms past a g shorter than v along dim."""
    v, g = _args((4, 3, 5), 0, torch.float32)
    with pytest.raises(RuntimeError, match="g has 2 elements"):
        run_on_kernels(lambda v, g: aten._weight_norm_interface(v, g, 0), v, g[:2])
