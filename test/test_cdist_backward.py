"""_cdist_backward (a fill op: torch 2.9 to 2.12 lack it on MPS, so training
through torch.cdist raised) against the CPU: every norm the CPU special-cases
(p = 0, 1, 2, inf, below 1, between 1 and 2, above 2), batch dims broadcast
between x1 and x2, non-contiguous operands, coincident rows (distance 0),
empty inputs, the CPU's errors and the sizes it leaves unchecked, and
cdist's gradients through autograd (its OpInfo)."""

from __future__ import annotations

import pytest
import torch
from torch.testing._internal.common_methods_invocations import op_db

from helpers import assert_matches, errors_of_cpu_and_ours, in_layout, opinfo_gradients, run_on_kernels

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"_cdist_backward"}

backward = torch.ops.aten._cdist_backward
NORMS = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, float("inf")]


def _args(shape1, shape2, p, seed=0):
    torch.manual_seed(seed)
    x1, x2 = torch.randn(shape1), torch.randn(shape2)
    dist = torch.cdist(x1, x2, p=p, compute_mode="donot_use_mm_for_euclid_dist")
    return [torch.randn(dist.shape), x1, x2, p, dist]


def _check(args, where=""):
    expected = backward(*args)
    actual, dispatches = run_on_kernels(backward, *args)
    assert_matches(actual, expected, where)
    assert actual.stride() == expected.stride(), f"{where}: strides {actual.stride()}, the CPU's {expected.stride()}"
    return dispatches


@pytest.mark.parametrize("p", NORMS, ids=str)
@pytest.mark.parametrize("shape1, shape2", [((5, 3), (4, 3)), ((2, 7, 16), (2, 9, 16)), ((3, 1, 40), (3, 33, 40)),
                                            ((2, 3, 4, 5), (2, 3, 6, 5))], ids=str)
def test_norms_and_shapes(p, shape1, shape2):
    dispatches = _check(_args(shape1, shape2, p), f"{shape1} {shape2} p={p}")
    assert [d.op for d in dispatches] == ["cdist_backward"]


@pytest.mark.parametrize("shape1, shape2", [((6, 3), (2, 4, 3)), ((2, 1, 5, 3), (3, 4, 3)), ((1, 5, 3), (3, 4, 3))],
                         ids=str)
def test_broadcast_batch_dims(shape1, shape2):
    """x1's gradient over the broadcast batch (autograd sums it back)."""
    _check(_args(shape1, shape2, 1.5), f"{shape1} {shape2}")


@pytest.mark.parametrize("layout", ["transposed", "strided", "expanded"])
@pytest.mark.parametrize("which", [0, 1, 2, 4])
def test_non_contiguous_operands(layout, which):
    """grad, x1, x2 or cdist in another layout, read through its strides."""
    args = _args((3, 6, 5), (3, 7, 5), 2.0)
    args[which] = in_layout(args[which], layout)
    _check(args, f"operand {which} {layout}")


@pytest.mark.parametrize("p", NORMS, ids=str)
def test_coincident_rows(p):
    """Rows of x2 equal to rows of x1 (distance 0, differences 0): the
    CPU's special cases (a zero gradient where it divides by the distance,
    or raises 0 to a negative power)."""
    args = _args((2, 5, 4), (2, 6, 4), p)
    args[2][:, :3] = args[1][:, :3]
    args[2][:, 4, 1] = args[1][:, 0, 1]  # one coordinate equal, the rest not
    args[4] = torch.cdist(args[1], args[2], p=p, compute_mode="donot_use_mm_for_euclid_dist")
    _check(args, f"coincident rows p={p}")


@pytest.mark.parametrize("p", [1.0, 2.0, float("inf")], ids=str)
def test_special_values(p):
    args = _args((2, 5, 4), (2, 6, 4), p)
    args[1][0, 1, 2] = float("nan")
    args[2][1, 3, 0] = float("inf")
    args[4] = torch.cdist(args[1], args[2], p=p, compute_mode="donot_use_mm_for_euclid_dist")
    _check(args, f"special values p={p}")


@pytest.mark.parametrize("shape1, shape2", [((0, 3), (4, 3)), ((5, 3), (0, 3)), ((5, 0), (4, 0)),
                                            ((0, 5, 3), (0, 4, 3))], ids=str)
def test_empty(shape1, shape2):
    """Zeros of x1's own shape, no kernel."""
    args = _args(shape1, shape2, 2.0)
    actual, dispatches = run_on_kernels(backward, *args)
    assert_matches(actual, backward(*args), f"{shape1} {shape2}")
    assert not dispatches


def test_many_rows_over_several_threadgroups():
    _check(_args((2, 300, 70), (2, 50, 70), 1.5), "2 x 300 x 70")


ERRORS = {
    "integers": lambda g, a, b, d: backward(g.int(), a.int(), b.int(), 2.0, d.int()),
    "half": lambda g, a, b, d: backward(g.half(), a.half(), b.half(), 2.0, d.half()),
    "one dim": lambda g, a, b, d: backward(g, a[0, 0], b[0, 0], 2.0, d),
    "batch dims that do not broadcast": lambda g, a, b, d: backward(g, a, b[:2], 2.0, d),
}


@pytest.mark.parametrize("name", ERRORS.keys())
def test_errors_are_the_cpus(name):
    args = _args((3, 5, 4), (3, 6, 4), 2.0)
    del args[3]
    errors_of_cpu_and_ours(ERRORS[name], *args)


# The CPU reads past these (its result depends on the heap): ours raise.
UNCHECKED = {
    "x2 rows of another length": lambda g, a, b, d: backward(g, a, b[..., :3], 2.0, d),
    "short cdist": lambda g, a, b, d: backward(g, a, b, 2.0, d[:, :, :4]),
    "short grad": lambda g, a, b, d: backward(g[:, :4], a, b, 2.0, d),
}


@pytest.mark.parametrize("name", UNCHECKED.keys())
def test_sizes_the_cpu_leaves_unchecked_raise(name):
    args = _args((3, 5, 4), (3, 6, 4), 2.0)
    del args[3]
    with pytest.raises(RuntimeError, match="_cdist_backward"):
        run_on_kernels(UNCHECKED[name], *args)


def test_float64_is_refused_clearly():
    args = [t.double() if isinstance(t, torch.Tensor) else t for t in _args((5, 3), (4, 3), 2.0)]
    with pytest.raises(TypeError, match="_cdist_backward"):
        run_on_kernels(backward, *args)


CDIST = next(op for op in op_db if op.name == "cdist")


def test_opinfo_gradients():
    """torch.cdist through autograd (the OpInfo's samples, float32): x1's
    and x2's gradients, whose backward reaches our kernel where cdist takes
    its own path (p != 2, or no matrix product), against the CPU's."""
    reached = 0
    for i, sample in enumerate(CDIST.sample_inputs("cpu", torch.float32, requires_grad=True)):
        inputs, gradients = opinfo_gradients(CDIST, sample, i, torch.float32)
        expected = gradients(*inputs)
        actual, dispatches = run_on_kernels(gradients, *inputs)
        reached += any(d.op == "cdist_backward" for d in dispatches)
        for a, e in zip(actual, expected):
            assert_matches(a, e, f"sample {i} {sample.kwargs}")
    assert reached, "no sample reached _cdist_backward"
