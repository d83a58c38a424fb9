"""Runs one aten call on the CPU and on our kernels and compares what came
of each: the exception type where the CPU raises, else the results and every
tensor argument afterwards (in-place and out= arguments included)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch

from helpers import assert_at_least_as_accurate, assert_matches, assert_near_truth, to_cpu, to_device
from mps_ops.testing import emulate


@dataclass
class Outcome:
    error: BaseException | None
    result: object = None
    args: dict | None = None


def run(op, args: dict, ours: bool) -> Outcome:
    if ours:
        args = to_device(args)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if ours:
                with emulate():
                    result = op(**args)
            else:
                result = op(**args)
    except Exception as error:  # noqa: BLE001 - the type is what is compared
        return Outcome(error)
    return Outcome(None, to_cpu(result), to_cpu(args))


def tensors_of(value) -> list:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in tensors_of(v)]
    return []


def to_float64(args: dict) -> dict:
    """The arguments with every floating-point tensor in float64 (the truth
    half and bfloat16 results are measured against)."""
    def widen(v):
        if isinstance(v, torch.Tensor) and v.is_floating_point():
            return v.double()
        if isinstance(v, list):
            return [widen(t) for t in v]
        return v
    return {k: widen(v) for k, v in args.items()}


def assert_same_outcome(cpu: Outcome, ours: Outcome, where: str, shapes_only: bool = False,
                        compare=None, truth=None, cpu_inexact: bool = False) -> None:
    """Ours raised what the CPU raised, or both succeeded with equal results
    (NaN equal to NaN). `compare(actual, expected, where)` replaces the
    element-wise comparison of results and arguments. Where a half or
    bfloat16 tensor differs (any, with cpu_inexact: the sample's
    cpu_float32_inexact), `truth()` (the call in float64) decides: ours
    must be at least as close to it as the CPU's (which rounds each step in
    the reduced type where ours computes in float)."""
    if cpu.error is not None:
        assert ours.error is not None, f"{where}: the CPU raised {type(cpu.error).__name__}: {cpu.error}; ours did not"
        assert type(ours.error) is type(cpu.error), (
            f"{where}: ours raised {type(ours.error).__name__}: {ours.error}\n"
            f"the CPU raised {type(cpu.error).__name__}: {cpu.error}")
        return
    assert ours.error is None, f"{where}: ours raised {type(ours.error).__name__}: {ours.error}; the CPU did not"
    if not tensors_of(cpu.result) and not isinstance(cpu.result, torch.Tensor):
        # A plain value (_nested_tensor_from_mask_left_aligned's bool).
        assert ours.result == cpu.result, f"{where}: ours returned {ours.result!r}, the CPU {cpu.result!r}"
    expected = tensors_of(cpu.result) + [t for v in cpu.args.values() for t in tensors_of(v)]
    actual = tensors_of(ours.result) + [t for v in ours.args.values() for t in tensors_of(v)]
    assert len(actual) == len(expected), where
    for a, e in zip(actual, expected):
        assert a.shape == e.shape and a.dtype == e.dtype, f"{where}: {a.dtype}{list(a.shape)} != {e.dtype}{list(e.shape)}"
        if shapes_only:
            continue
        if compare is not None:
            compare(a, e, where)
            continue
        try:
            assert_matches(a, e, where)
        except AssertionError:
            if truth is None or not (cpu_inexact or _reduced_precision_involved(cpu)):
                raise
            _assert_as_accurate(actual, expected, truth(), where, cpu_inexact)
            return


def _reduced_precision_involved(outcome: Outcome) -> bool:
    return any(t.dtype in (torch.float16, torch.bfloat16) for v in outcome.args.values() for t in tensors_of(v))


def _assert_as_accurate(actual, expected, truth: Outcome, where, cpu_inexact: bool = False) -> None:
    """Ours no further from the float64 call than the CPU's; where the CPU's
    float32 result is inexact (cpu_inexact), ours may instead be within the
    dtype's tolerance of the float64 result rounded (what the CPU's result
    is held to elsewhere), both being float computations."""
    assert truth.error is None, f"{where}: the float64 call raised {truth.error!r}"
    exact = tensors_of(truth.result) + [t for v in truth.args.values() for t in tensors_of(v)]
    for a, e, t in zip(actual, expected, exact):
        if not a.is_floating_point():
            assert_matches(a, e, where)
            continue
        if cpu_inexact:
            try:
                assert_near_truth(a, t, a.dtype, where)
                continue
            except AssertionError:
                pass
        assert_at_least_as_accurate(a, e, t.double(), where)
