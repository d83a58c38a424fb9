"""Every registry backward overload with non-contiguous gradients and index
tensors: each grad-like and index argument in turn, and all at once,
transposed, strided or (gradients only) expanded, against the CPU on the
same values made contiguous (the CPU itself reads some index tensors in
memory order). A stub that reads an argument with another's strides fails
here."""

from __future__ import annotations

import pytest
import torch

from mps_ops.samples import INDEX, cpu_dtype, samples
from sweep import assert_same_outcome, run, to_float64


def _is_backward(overload: str) -> bool:
    return "backward" in overload


def _layout_targets(sample, args):
    """The arguments whose layout a backward must honour: gradients (by
    name; not the out= one) and index tensors."""
    outs = sample.out_names()
    return [n for n, v in args.items() if isinstance(v, torch.Tensor) and n not in outs and v.dim() > 0
            and ("grad" in n or n == "dgrad_glu" or sample.role(n) == INDEX)]


def _layouts(t, is_index):
    if t.dim() >= 2:
        yield "transposed", t.mT.contiguous().mT
        yield "permuted", t.movedim(0, -1).contiguous().movedim(-1, 0)
    wide = torch.zeros(tuple(t.shape[:-1]) + (3 * t.size(-1),), dtype=t.dtype)
    wide[..., 1::3] = t
    yield "strided", wide[..., 1::3]
    if not is_index and t.numel() > 0:
        yield "expanded", t.reshape(-1)[:1].reshape((1,) * t.dim()).expand(t.shape)


def _cases(sample, dtype):
    names = _layout_targets(sample, sample.call(dtype))
    for name in names:
        for i, (label, _) in enumerate(_layouts(sample.call(dtype)[name], sample.role(name) == INDEX)):
            args = sample.call(dtype)
            args[name] = list(_layouts(args[name], sample.role(name) == INDEX))[i][1]
            yield f"{name}: {label}", args
    for layout in ("transposed", "strided"):
        args = sample.call(dtype)
        for name in names:
            found = dict(_layouts(args[name], sample.role(name) == INDEX)).get(layout)
            if found is not None:
                args[name] = found
        yield f"all: {layout}", args


CASES = [pytest.param(sample, record, id=sample.overload) for sample, record in samples()
         if _is_backward(sample.overload)]


def test_every_backward_overload_is_covered():
    assert len(CASES) >= 15
    for case in CASES:
        sample, record = case.values
        assert _layout_targets(sample, sample.call(cpu_dtype(sample, record))), sample.overload


@pytest.mark.parametrize("sample, record", CASES)
def test_non_contiguous_gradients_and_indices(sample, record):
    dtype = cpu_dtype(sample, record)
    failures = []
    n = 0
    for (label, args), (_, our_args) in zip(_cases(sample, dtype), _cases(sample, dtype)):
        n += 1
        contiguous = {k: v.contiguous() if isinstance(v, torch.Tensor) else v for k, v in args.items()}
        expected = run(sample.op, contiguous, ours=False)
        ours = run(sample.op, our_args, ours=True)
        try:
            assert expected.error is None, f"{label}: the CPU raised {expected.error!r}"
            # A half or bfloat16 result the CPU rounds at other steps (grid
            # sampling's backward adds each share in half): ours at least as
            # near the float64 call's.
            assert_same_outcome(expected, ours, f"{sample.overload} {label}", shapes_only=sample.unpinned,
                                truth=lambda contiguous=contiguous: run(sample.op, to_float64(contiguous), ours=False), cpu_inexact=sample.cpu_float32_inexact)
        except AssertionError as failure:
            failures.append(str(failure))
    assert n > 0
    assert not failures, f"{len(failures)} of {n} cases:\n" + "\n".join(failures)
