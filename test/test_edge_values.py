"""Every registry overload on inputs holding NaN, +-inf, -0, subnormals and
values near the dtype's limits, for each floating dtype the op supports,
against the CPU (NaN equal to NaN). Where our half or bfloat16 result
differs because the CPU rounds each step in the reduced type, ours must be
at least as close to the float64 result; where the CPU lacks the dtype (the
registry's `differs`), the reference is the CPU in float32, rounded."""

from __future__ import annotations

import pytest
import torch

from helpers import assert_matches
from op_samples import DATA, float_dtypes, samples, sample_dtypes
from sweep import assert_same_outcome, run, tensors_of, to_float64


def edge_values(dtype) -> dict:
    """Groups of edge values, each injected together."""
    info = torch.finfo(dtype)
    return {
        "nan": [float("nan")],
        "infinities": [float("inf"), float("-inf")],
        "zeros and subnormals": [-0.0, info.tiny / 8, info.tiny, -info.tiny / 8],
        "extremes": [info.max, -info.max, info.max / 4],  # sums of these overflow
    }


def _inject(t, values):
    """t with every third element (from the first) replaced, in turn, by values."""
    flat = t.detach().clone().reshape(-1)
    for i, position in enumerate(range(0, flat.numel(), 3)):
        flat[position] = values[i % len(values)]
    return flat.reshape(t.shape)


def _data_names(sample, args):
    outs = sample.out_names()
    return [n for n, v in args.items()
            if n not in outs and sample.role(n) == DATA
            and isinstance(v, (torch.Tensor, list)) and tensors_of(v) and tensors_of(v)[0].is_floating_point()]


def _cases(sample, dtype):
    """(label, args) for each data argument and each group of edge values,
    and one with all values cycled through every data argument."""
    values = edge_values(dtype)
    names = _data_names(sample, sample.call(dtype))
    for name in names:
        for label, group in values.items():
            args = sample.call(dtype)
            args[name] = _replace(args[name], group)
            yield f"{name}: {label}", args
    args = sample.call(dtype)
    for name in names:
        args[name] = _replace(args[name], [v for group in values.values() for v in group])
    yield "all: every edge value", args


def _replace(value, values):
    if isinstance(value, list):
        return [_inject(value[0], values), *value[1:]]
    return _inject(value, values)


def _mode_reference(x, dim, keepdim):
    """torch.mode's documented rule, NaN included: the most frequent value,
    the smallest among ties, each NaN counted once and ranked after every
    number; the index of its last occurrence (of the first NaN for NaN). The
    CPU's answer with NaN present depends on where its sort leaves NaN."""
    moved = x.double().movedim(dim, -1)
    flat = moved.reshape(-1, moved.shape[-1]) if moved.dim() else moved.reshape(1, 1)
    values, indices = [], []
    for row in flat.tolist():
        best = None
        for i, v in enumerate(row):
            count = 1 if v != v else sum(1 for w in row if w == v)
            key = (-count, v != v, v if v == v else 0.0, -i if v == v else i)
            if best is None or key < best[0]:
                best = (key, v, i)
        values.append(best[1])
        indices.append(best[2])
    shape = list(moved.shape[:-1])
    v = torch.tensor(values, dtype=x.dtype).reshape(shape)
    i = torch.tensor(indices, dtype=torch.long).reshape(shape)
    if keepdim and x.dim():
        v, i = v.unsqueeze(dim), i.unsqueeze(dim)
    return v, i


def _polynomial_answer(cpu, args):
    """The CPU's Laguerre and Legendre kernels return the previous element's
    value for a NaN x of degree >= 2 (in float32 and float64 alike): there
    the answer is NaN."""
    x, n = args["x"], args["n"]
    wrong = torch.isnan(x) & (n >= 2)
    return cpu.result.masked_fill(wrong, float("nan")) if cpu.error is None else cpu.result


# Where the CPU's result is wrong for some edge values: the right answer.
CPU_WRONG = {
    "special_laguerre_polynomial_l": _polynomial_answer, "special_laguerre_polynomial_l.out": _polynomial_answer,
    "special_legendre_polynomial_p": _polynomial_answer, "special_legendre_polynomial_p.out": _polynomial_answer,
}


CASES = [pytest.param(sample, record, dtype, id=f"{sample.overload}-{str(dtype)[6:]}")
         for sample, record in samples() for dtype in float_dtypes(record)
         if dtype in sample_dtypes(sample, record) or not sample.dtypes]


@pytest.mark.parametrize("sample, record, dtype", CASES)
def test_edge_values_match_the_cpu(sample, record, dtype):
    failures = []
    n = 0
    for (label, cpu_args), (_, our_args) in zip(_cases(sample, dtype), _cases(sample, dtype)):
        n += 1
        where = f"{sample.overload} {dtype} {label}"
        ours = run(sample.op, our_args, ours=True)
        try:
            if sample.overload == "mode":
                assert ours.error is None, f"{where}: {ours.error!r}"
                expected = _mode_reference(cpu_args["self"], cpu_args["dim"], cpu_args["keepdim"])
                assert_matches(ours.result[0], expected[0], where)
                assert torch.equal(ours.result[1], expected[1]), f"{where}: indices {ours.result[1]} != {expected[1]}"
                continue
            cpu = run(sample.op, cpu_args, ours=False)
            if isinstance(cpu.error, NotImplementedError) and dtype in record.dtypes:
                # The CPU lacks the dtype: compare with it in float32, rounded.
                wide = run(sample.op, _in_float32(dict(_cases(sample, dtype))[label], dtype), ours=False)
                assert wide.error is None, f"{where}: the float32 call raised {wide.error!r}"
                cpu = type(wide)(None, _narrowed(wide.result, dtype), {k: _narrowed(v, dtype) for k, v in wide.args.items()})
            # The truth from fresh arguments: the CPU's call wrote into its own.
            truth_args = dict(_cases(sample, dtype))[label]
            if sample.overload in CPU_WRONG and cpu.error is None:
                fixed = CPU_WRONG[sample.overload](cpu, dict(_cases(sample, dtype))[label])
                cpu = type(cpu)(None, fixed, {k: fixed if k == "out" else v for k, v in cpu.args.items()})
            assert_same_outcome(cpu, ours, where, shapes_only=sample.random,
                                truth=lambda: run(sample.op, to_float64(truth_args), ours=False))
        except AssertionError as failure:
            failures.append(str(failure))
    assert n > 0
    assert not failures, f"{len(failures)} of {n} cases:\n" + "\n".join(failures)


def _in_float32(args, dtype):
    def widen(v):
        if isinstance(v, torch.Tensor) and v.dtype == dtype:
            return v.float()
        if isinstance(v, list):
            return [widen(t) for t in v]
        return v
    return {k: widen(v) for k, v in args.items()}


def _narrowed(value, dtype):
    if isinstance(value, torch.Tensor) and value.dtype == torch.float32:
        return value.to(dtype)
    if isinstance(value, (list, tuple)):
        return type(value)(_narrowed(v, dtype) for v in value)
    return value
