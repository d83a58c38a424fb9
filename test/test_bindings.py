"""Every host stub binds what its kernel declares, slot by slot.

Host stubs bind by position (KernelFunction::bind, csrc/runtime/
kernel_function.h), so nothing but this test ties a stub's argument list to the
kernel's parameter list. Each registry overload's sample call (mps_ops.samples)
runs in every dtype of its sample, with contiguous and with strided data
inputs, under mps_ops.profile(); each dispatch's bound slots are compared with
the [[buffer(N)]] parameters of the kernel it ran, as the emulator prepass read
them from the .metal source (_C.kernel_params):

- `constant T& x` (setBytes): bound inline with exactly sizeof(T) bytes;
- `device T* x`: bound as a buffer (a tensor);
- `constant T* x`: a buffer, or inline bytes (a sizes table) that are a whole
  number of T;
- a buffer's tensor has T's size per element, unless T is one byte (a kernel
  that reads raw bytes);
- nothing is bound in a slot the kernel does not declare.
"""

from __future__ import annotations

import pytest
import torch

import mps_ops
from mps_ops import _C, samples
from mps_ops.testing import emulate

pytestmark = pytest.mark.skipif(mps_ops.backend != "emulator",
                                reason="the declared parameters come from the emulator's kernel table")


def binding_problems(dispatch) -> list[str]:
    """How a dispatch's bound slots disagree with its kernel's declared parameters."""
    declared = {slot: (kind, size) for slot, kind, size in _C.kernel_params(dispatch.kernel)}
    problems = []
    for slot, bytes_bound in enumerate(dispatch.buffers):
        bound_inline = dispatch.inline[slot]
        itemsize = dispatch.itemsizes[slot]
        if slot not in declared:
            if bytes_bound or bound_inline or itemsize:
                problems.append(f"slot {slot} is bound but the kernel declares no buffer({slot})")
            continue
        kind, size = declared[slot]
        if kind == "v":
            if not bound_inline:
                problems.append(f"slot {slot} is `constant T&` ({size} bytes) but a buffer is bound")
            elif bytes_bound != size:
                problems.append(f"slot {slot} is `constant T&` of {size} bytes but {bytes_bound} are bound")
        elif bound_inline:
            if kind == "d":
                problems.append(f"slot {slot} is a `device` pointer but inline bytes are bound")
            elif bytes_bound % size:
                problems.append(f"slot {slot} is `constant T*` with sizeof(T) = {size}, but {bytes_bound} "
                                "inline bytes are bound")
        elif itemsize and size != 1 and itemsize != size:
            problems.append(f"slot {slot} points to {size}-byte elements but a tensor of {itemsize}-byte "
                            "elements is bound")
    return problems


def _strided(value):
    """A non-contiguous tensor with value's values (every other element of a
    wider one), or value itself where it has no dims or is not floating."""
    if not isinstance(value, torch.Tensor) or value.dim() == 0 or not value.is_floating_point():
        return value
    wide = torch.empty(*value.shape[:-1], value.shape[-1] * 2, dtype=value.dtype)
    strided = wide[..., ::2]
    strided.copy_(value)
    return strided


def _cases():
    for sample, record in samples.samples():
        for dtype in samples.sample_dtypes(sample, record):
            for layout in ("contiguous", "strided"):
                yield pytest.param(sample.overload, dtype, layout,
                                   id=f"{sample.overload}-{str(dtype).split('.')[-1]}-{layout}")


def _dispatches(overload, dtype, layout):
    sample = samples.SAMPLES_BY_OVERLOAD[overload]
    kwargs = sample.call(dtype)
    if layout == "strided":
        kwargs = {name: _strided(v) if sample.role(name) == samples.DATA else v for name, v in kwargs.items()}
    with mps_ops.profile() as prof, emulate():
        try:
            sample.op(**kwargs)
        except (RuntimeError, NotImplementedError, TypeError, ValueError, IndexError):
            pass  # a dtype or layout the op refuses: its checks ran, no kernel did
    return prof.dispatches


@pytest.mark.parametrize("overload, dtype, layout", list(_cases()))
def test_stub_binds_kernel_signature(overload, dtype, layout):
    for dispatch in _dispatches(overload, dtype, layout):
        problems = binding_problems(dispatch)
        assert not problems, f"{overload} ({dtype}, {layout}) -> {dispatch.kernel}:\n  " + "\n  ".join(problems)


def test_every_active_op_is_checked():
    """Every active registry op dispatches at least one kernel in its sample
    calls, so the test above sees each stub."""
    unchecked = []
    for sample, record in samples.samples():
        if not any(_dispatches(sample.overload, dtype, "contiguous")
                   for dtype in samples.sample_dtypes(sample, record)):
            unchecked.append(sample.overload)
    assert not unchecked, f"no dispatch to check for {unchecked}"


def test_declared_params_come_from_the_source():
    """pdist's kernels as pdist.metal declares them: a sanity check of the table itself."""
    assert _C.kernel_params("pdist_forward_reduce_float_float") == [(0, "d", 4), (1, "c", 4), (2, "v", 32)]


def test_a_wrong_binding_is_reported():
    """The check itself: a struct of the wrong size, a tensor where bytes are
    expected, an extra slot."""
    from mps_ops.profiling import Dispatch

    kernel = "pdist_forward_reduce_float_float"
    good = Dispatch(kernel, (32, 3, 1), (32, 1, 1), (12, 24, 32), 2, (False, False, True), (4, 4, 0))
    assert binding_problems(good) == []
    wrong_size = Dispatch(kernel, (32, 3, 1), (32, 1, 1), (12, 24, 16), 2, (False, False, True), (4, 4, 0))
    assert "32 bytes but 16 are bound" in binding_problems(wrong_size)[0]
    tensor_for_bytes = Dispatch(kernel, (32, 3, 1), (32, 1, 1), (12, 24, 32), 2, (False, False, False),
                                (4, 4, 4))
    assert "a buffer is bound" in binding_problems(tensor_for_bytes)[0]
    extra = Dispatch(kernel, (32, 3, 1), (32, 1, 1), (12, 24, 32, 4), 2, (False, False, True, True),
                     (4, 4, 0, 0))
    assert "declares no buffer(3)" in binding_problems(extra)[0]
    wrong_dtype = Dispatch(kernel, (32, 3, 1), (32, 1, 1), (24, 48, 32), 2, (False, False, True), (8, 8, 0))
    assert "8-byte elements" in binding_problems(wrong_dtype)[0]
