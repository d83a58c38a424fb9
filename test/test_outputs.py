"""Every tensor an op writes, checked as the CPU checks it: every out=,
grad_input= and indices= argument and every input written in place, of every
active registry overload, from the op schemas and mps_ops.samples (so ops
added later are swept too).

Each case changes one written argument (device, dtype, size, layout,
internal overlap, overlap with an input) and runs the call on the CPU and on
our kernels: where the CPU raises we must raise the same exception type;
where it succeeds we must succeed with the same values, written into the
same tensor with the same sizes and strides.
"""

from __future__ import annotations

import warnings

import pytest
import torch

import mps_ops
from mps_ops import samples
from mps_ops.testing import emulate

from helpers import assert_at_least_as_accurate, assert_matches, to_device

OTHER_DTYPES = (torch.int64, torch.float16, torch.bool)


def _call(overload: str):
    """The sample call in float32 where the op takes it (the dtype cases try
    the others), so that reduced-precision results can be held to it."""
    sample = samples.SAMPLES_BY_OVERLOAD[overload]
    record = samples.records_by_overload()[overload]
    dtypes = samples.sample_dtypes(sample, record)
    return samples.call_for(overload, torch.float32 if torch.float32 in dtypes else None)


def _written_overloads() -> list:
    found = []
    for record in mps_ops.ops():
        for overload in record.overloads:
            if overload not in mps_ops._registry.active_overloads():
                continue
            call = _call(overload)
            for name in call.outputs + call.inplace:
                found.append((overload, name))
    return found


def _first(value):
    """The tensor a case changes: a list argument's first element."""
    return value[0] if isinstance(value, list) else value


def _replace(kwargs: dict, name: str, tensor) -> None:
    if isinstance(kwargs[name], list):
        kwargs[name] = [tensor, *kwargs[name][1:]]
    else:
        kwargs[name] = tensor


def _reference_result(overload: str, name: str):
    """The written argument as the CPU leaves it after a plain call."""
    call = _call(overload)
    call.run()
    return _first(call.kwargs[name])


def _strided_like(t):
    wide = torch.empty(*t.shape[:-1], 2 * t.shape[-1], dtype=t.dtype, device=t.device)
    view = wide[..., ::2]
    view.copy_(t)
    return view


def _transposed_like(t):
    view = torch.empty(t.shape[::-1], dtype=t.dtype, device=t.device).permute(*range(t.dim() - 1, -1, -1))
    view.copy_(t)
    return view


def _cases(overload: str, name: str) -> dict:
    """case name -> kwargs transform, for the cases that apply to this argument."""
    call = _call(overload)
    is_output = name in call.outputs
    ref = _reference_result(overload, name)
    shape, dtype = tuple(ref.shape), ref.dtype

    def current(kw):
        t = _first(kw[name])
        return torch.empty(shape, dtype=dtype, device=t.device) if is_output else t

    cases = {}

    def case(label):
        def register(change):
            cases[label] = change
            return change
        return register

    if is_output:
        @case("right_size")
        def _(kw):
            _replace(kw, name, current(kw))

        @case("wrong_size")
        def _(kw):
            _replace(kw, name, torch.zeros(ref.numel() + 3, dtype=dtype, device=_first(kw[name]).device))

    if ref.dim() >= 1 and ref.numel() >= 2:
        @case("strided")
        def _(kw):
            _replace(kw, name, _strided_like(current(kw)))

        @case("internal_overlap")
        def _(kw):
            t = current(kw)
            _replace(kw, name, t.reshape(-1)[:1].expand(t.shape))

    if ref.dim() >= 2:
        @case("transposed")
        def _(kw):
            _replace(kw, name, _transposed_like(current(kw)))

    @case("meta")
    def _(kw):
        _replace(kw, name, current(kw).to("meta"))

    for other in OTHER_DTYPES:
        if other != dtype:
            @case(f"dtype_{str(other).split('.')[1]}")
            def _(kw, other=other):
                _replace(kw, name, current(kw).to(other))

    if is_output:
        for input_name, value in call.kwargs.items():
            t = _first(value)
            if input_name in call.outputs or not isinstance(t, torch.Tensor):
                continue
            if t.dtype == dtype and tuple(t.shape) == shape:
                @case(f"is_{input_name}")
                def _(kw, input_name=input_name):
                    _replace(kw, name, _first(kw[input_name]))
            if t.dtype == dtype and t.numel() > ref.numel() >= 2:
                @case(f"overlaps_{input_name}")
                def _(kw, input_name=input_name):
                    _replace(kw, name, _first(kw[input_name]).reshape(-1)[1:ref.numel() + 1].view(shape))
    return cases


CASES = [(o, n, c) for o, n in _written_overloads() for c in _cases(o, n)]


def _outcome(overload: str, kwargs: dict, ours: bool):
    """(exception type or None, result, kwargs after the call, warnings)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if ours:
                with mps_ops.profile() as prof, emulate():
                    result = samples.SAMPLES_BY_OVERLOAD[overload].op(**kwargs)
                assert prof.dispatches or all(_first(v).numel() == 0 for v in kwargs.values()
                                              if isinstance(_first(v), torch.Tensor)), \
                    f"{overload}: no kernel dispatched"
            else:
                result = samples.SAMPLES_BY_OVERLOAD[overload].op(**kwargs)
        except AssertionError:
            raise
        except Exception as error:  # noqa: BLE001 - the type is what we compare
            return type(error), str(error), None, kwargs
    return None, None, result, kwargs


OVERLAP_CASES = ("internal_overlap", "is_", "overlaps_")
STEPS_MEMORY_FLAT = {"_fused_adagrad_", "_fused_adagrad_.tensor_lr"}
LAYOUT_CASES = ("right_size", "wrong_size", "strided", "transposed")


def _is_overlap(case: str) -> bool:
    return case.startswith(OVERLAP_CASES)


# Outputs the CPU checks but leaves as given (batch_norm's statistics in
# evaluation, _batch_norm_with_update's reserve): any size stays, so a
# wrong-size one is compared with what the CPU left, not with a fresh one.
LEFT_AS_GIVEN = {("_native_batch_norm_legit.out", "save_mean"), ("_native_batch_norm_legit.out", "save_invstd"),
                 ("_batch_norm_with_update.out", "reserve")}


@pytest.mark.parametrize("overload, name, case", CASES)
def test_written_argument(overload, name, case):
    change = _cases(overload, name)[case]
    our_call = _call(overload)
    our_kwargs = to_device(our_call.kwargs)
    change(our_kwargs)
    our_error, our_message, our_result, our_kwargs = _outcome(overload, our_kwargs, ours=True)
    where = f"{overload} {name} {case}"

    if case == "meta":
        # The CPU reference is no guide here: with a meta tensor the
        # dispatcher picks the Meta kernel, not the CPU's. A tensor on another
        # device is a RuntimeError naming the op and the device.
        assert our_error is RuntimeError and "meta" in our_message, f"{where}: {our_error} {our_message}"
        return

    cpu_call = _call(overload)
    change(cpu_call.kwargs)
    cpu_error, cpu_message, _, cpu_kwargs = _outcome(overload, cpu_call.kwargs, ours=False)
    if cpu_error is not None and our_error is RuntimeError and _we_support_more(overload, name, our_kwargs, cpu_message):
        return  # the CPU has no kernel for the dtype; ours refuses the call for another reason
    if cpu_error is not None and our_error is None and _we_support_more(overload, name, our_kwargs, cpu_message):
        # The registry lists a dtype the CPU kernel lacks (half add_relu):
        # ours must then be right, measured against the sample's float32 result.
        truth = _unchanged_results(overload)
        for n in our_call.outputs + our_call.inplace:
            assert_matches(_first(our_kwargs[n]).cpu().float(), _first(truth[n]).float(), f"{where}: {n}")
        return
    if cpu_error is not None:
        assert our_error is cpu_error, (
            f"{where}: the CPU raises {cpu_error.__name__} ({cpu_message[:200]}); "
            f"ours {'raised ' + our_error.__name__ + ' (' + our_message[:200] + ')' if our_error else 'did not'}")
        return
    if overload in STEPS_MEMORY_FLAT and case in ("strided", "internal_overlap"):
        # The CPU's fused optimizer steps each tensor's memory as a flat
        # array, so a non-dense one gets garbage there: ours refuses it.
        assert our_error is RuntimeError and "non-overlapping and dense" in our_message, f"{where}: {our_message}"
        return
    if _is_overlap(case) and our_error is not None:
        # The CPU writes an aliased output in its serial order; a GPU has
        # none to reproduce, so we refuse it, saying why.
        assert our_error is RuntimeError and "memory location" in our_message, f"{where}: {our_message}"
        return
    assert our_error is None, f"{where}: ours raised {our_error.__name__}: {our_message[:300]}"
    # Values: the CPU's results of the unchanged call where only the layout
    # changed (the CPU itself writes some strided outs as if contiguous), else
    # the CPU's results of the changed call.
    unpinned = our_call.sample.unpinned  # values not pinned down (rrelu training, eig): sizes and strides only
    # (The fused optimizer pairs elements in memory order, as the CPU does,
    # so the CPU's own result is the reference for its layouts too.)
    layout_only = (case in LAYOUT_CASES and overload not in STEPS_MEMORY_FLAT
                   and (overload, name) not in LEFT_AS_GIVEN)
    expected = _unchanged_results(overload) if layout_only else cpu_kwargs
    names = our_call.outputs + our_call.inplace
    for n in names:
        ours, cpu = _first(our_kwargs[n]), _first(cpu_kwargs[n])
        # Sizes everywhere; strides of the argument the case changed (other
        # fresh outputs may take either layout).
        assert ours.shape == cpu.shape and (n != name or ours.stride() == cpu.stride()), (
            f"{where}: {n} has sizes {tuple(ours.shape)} strides {ours.stride()}, "
            f"the CPU's {tuple(cpu.shape)} {cpu.stride()}")
        if _is_overlap(case) or unpinned:
            continue
        if ours.dtype in (torch.float16, torch.bfloat16):
            # The CPU may compute a reduced-precision result in its own type
            # (logit_'s clamp in half): ours must be at least as close to
            # the sample's float32 result.
            truth = _first(_unchanged_results(overload)[n]).double()
            assert_at_least_as_accurate(ours.cpu(), _first(expected[n]), truth, f"{where}: {n}")
        else:
            assert_matches(ours.cpu(), _first(expected[n]), f"{where}: {n}")


def _unchanged_results(overload: str) -> dict:
    """The sample call's arguments after the CPU ran it unchanged."""
    call = _call(overload)
    call.run()
    return call.kwargs


def _we_support_more(overload: str, name: str, kwargs: dict, cpu_message: str) -> bool:
    record = next(r for r in mps_ops.ops() if overload in r.overloads)
    dtype = _first(kwargs[name]).dtype
    return dtype in record.dtypes and ("Unsupported datatype" in cpu_message or "not implemented for" in cpu_message)
