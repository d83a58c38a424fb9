"""Shared by the op tests: where tensors live, how results are compared, and
how a call is run on our kernels with proof that they ran."""

from __future__ import annotations

import torch
from torch.testing._internal.common_methods_invocations import op_db
from torch.utils._pytree import tree_map

import mps_ops
from mps_ops.testing import device, emulate

# Per-dtype tolerances against the CPU reference. float32 special functions
# are computed by different algorithms than the CPU's (no double on Metal), so
# a few float32 ulps apart; half and bfloat16 results are rounded once from
# float, as the CPU does.
TOLERANCES = {
    torch.float32: dict(rtol=2e-5, atol=2e-6),
    torch.float16: dict(rtol=1e-3, atol=1e-3),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2),
}


def tolerance(dtype):
    return TOLERANCES.get(dtype, dict(rtol=0, atol=0))


class OnCpu:
    """A 0-dim tensor that must stay on the CPU when the rest moves to the
    device: the CPU-scalar operand users get from Python numbers."""

    def __init__(self, tensor):
        assert tensor.dim() == 0
        self.tensor = tensor


def to_device(tree):
    target = device()

    def move(t):
        if isinstance(t, OnCpu):
            return t.tensor
        return t.to(target) if isinstance(t, torch.Tensor) else t

    return tree_map(move, tree, is_leaf=lambda t: isinstance(t, OnCpu))


def on_cpu(tree):
    """The reference's view of a tree: OnCpu unwrapped."""
    return tree_map(lambda t: t.tensor if isinstance(t, OnCpu) else t, tree,
                    is_leaf=lambda t: isinstance(t, OnCpu))


def to_cpu(tree):
    return tree_map(lambda t: t.cpu() if isinstance(t, torch.Tensor) else t, tree)


def run_on_kernels(fn, *args, **kwargs):
    """fn on our kernels; returns (result on the CPU, dispatches seen)."""
    args, kwargs = to_device((args, kwargs))
    with mps_ops.profile() as prof, emulate():
        result = fn(*args, **kwargs)
    return to_cpu(result), prof.dispatches


def assert_matches(actual, expected, msg=""):
    if isinstance(expected, (tuple, list)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_matches(a, e, msg)
        return
    assert actual.dtype == expected.dtype, f"{msg}: dtype {actual.dtype} != {expected.dtype}"
    torch.testing.assert_close(actual, expected, equal_nan=True, msg=lambda m: f"{msg}: {m}",
                               **tolerance(expected.dtype))


def assert_at_least_as_accurate(actual, cpu, truth, msg=""):
    """Where our half/bfloat16 result differs from the CPU's by more than the
    tolerance because the CPU rounds more (it accumulates in the reduced type;
    we accumulate in float), ours must be no further from the float64 truth
    than the CPU's is."""
    if isinstance(cpu, (tuple, list)):
        for a, c, t in zip(actual, cpu, truth):
            assert_at_least_as_accurate(a, c, t, msg)
        return
    if not cpu.is_floating_point():
        assert_matches(actual, cpu, msg)
        return
    ours_error = (actual.double() - truth).abs().nan_to_num().max()
    cpu_error = (cpu.double() - truth).abs().nan_to_num().max()
    assert ours_error <= cpu_error, f"{msg}: error {ours_error:.3g} > the CPU's {cpu_error:.3g}"


def assert_near_truth(actual, truth, dtype, msg=""):
    """Floating results of a half/bfloat16 call within the dtype's tolerance
    of the float64 call's results rounded to the dtype (integer results, such
    as indices, are the CPU comparison's business)."""
    if isinstance(truth, (tuple, list)):
        for a, t in zip(actual, truth):
            assert_near_truth(a, t, dtype, msg)
        return
    if not truth.is_floating_point():
        return
    torch.testing.assert_close(actual.double(), truth.to(dtype).double(), equal_nan=True,
                               msg=lambda m: f"{msg}: against the float64 result: {m}", **tolerance(dtype))


def to_float64(tree, dtype):
    return tree_map(lambda t: t.double() if isinstance(t, torch.Tensor) and t.dtype == dtype else t, tree)


def numel_of(result) -> int:
    if isinstance(result, (tuple, list)):
        return sum(numel_of(r) for r in result)
    return result.numel()


def opinfos_for(record):
    found = [op for op in op_db if opinfo_name(op) in record.opinfo]
    assert {opinfo_name(op) for op in found} == set(record.opinfo), f"{record.name}: unknown OpInfo names"
    return found


def opinfo_name(op) -> str:
    """OpInfo's full name: "max.reduction_no_dim" for a variant test."""
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name
