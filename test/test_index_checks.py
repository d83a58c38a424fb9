"""Indices, offsets, lengths, targets and random samples against what the CPU
validates: every registry overload with such an argument, its values pushed
out of range (past the end, before the start, int64's limits, -1, reversed).
Where the CPU checks them, ours raises the same exception type (or gives the
same result where they are valid); where the CPU reads or writes out of
bounds instead (no answer to compare with), ours raises RuntimeError. Also
the dims and sizes passed as integers."""

from __future__ import annotations

import re

import pytest
import torch

import mps_ops
from helpers import assert_matches, ctc_arguments_valid, ldl_pivots_unchecked_by_cpu, run_on_kernels
from mps_ops.samples import INDEX, SAMPLES, cpu_dtype, samples
from sweep import assert_same_outcome, run
from mps_ops.testing import emulate

BIG = torch.iinfo(torch.int64).max


def _index_mutations(t):
    # The dtype's limits (int64's, or int32's for int32 indices such as the
    # CTC loss's targets).
    big = torch.iinfo(t.dtype).max if t.dtype in (torch.int32, torch.int64) else BIG
    yield "past the end", t + 1000
    yield "before the start", t - 1000
    yield "int64 max", t.reshape(-1).clone().index_fill_(0, torch.tensor([0]), big).reshape(t.shape)
    yield "int64 min", t.reshape(-1).clone().index_fill_(0, torch.tensor([0]), -big - 1).reshape(t.shape)
    yield "-1 first", t.reshape(-1).clone().index_fill_(0, torch.tensor([0]), -1).reshape(t.shape)
    if t.dim() > 0:
        yield "reversed", t.flip(-1)


def _sample_mutations(t):
    for label, value in (("zero", 0.0), ("just below one", 0.9999), ("one", 1.0), ("2.5", 2.5), ("-0.5", -0.5),
                         ("nan", float("nan")), ("inf", float("inf"))):
        yield label, torch.full_like(t, value)


# Index arguments the CPU reads without checking (it reads or writes out of
# bounds): ours must raise for every invalid mutation, RuntimeError
# unless the op's checked paths raise another type. (overload pattern,
# argument, exception type, whether the call's other arguments take the
# unchecked path.)
CPU_UNCHECKED = [
    (r"adaptive_max_pool3d_backward.*", "indices", RuntimeError, lambda args: True),
    (r"max_pool2d_with_indices_backward.*", "indices", RuntimeError, lambda args: _outside_windows(args)),
    (r"_segment_reduce_backward", "offsets", RuntimeError, lambda args: True),
    # The CPU's backward checks targets for mean and sum, not for none.
    (r"nll_loss2?d?_backward.*", "target", IndexError,
     lambda args: args["reduction"] == 0 and _targets_out_of_range(args)),
    # The CPU checks the pivots' magnitudes, not that each 2x2 block's pair
    # matches (MKL's sytrs then writes outside the right-hand side).
    (r"linalg_ldl_solve.*", "pivots", RuntimeError, lambda args: ldl_pivots_unchecked_by_cpu(args["pivots"])),
    # The CPU reads a CTC target outside the classes past log_probs (its
    # backward writes past the gradient).
    (r"_ctc_loss.*", "targets", RuntimeError, lambda args: _ctc_targets_out_of_range(args)),
    # Its backward reads the lengths unchecked too ("assume that the
    # forward did").
    (r"_ctc_loss_backward.*", "input_lengths", RuntimeError, lambda args: not ctc_arguments_valid(args)),
    (r"_ctc_loss_backward.*", "target_lengths", RuntimeError, lambda args: not ctc_arguments_valid(args)),
]


def _ctc_targets_out_of_range(args) -> bool:
    targets, classes = args["targets"], args["log_probs"].size(2)
    return bool(((targets < 0) | (targets >= classes)).any())


def _targets_out_of_range(args) -> bool:
    """Whether some nll_loss target is neither a class nor ignore_index."""
    t, classes = args["target"], args["self"].shape[1]
    return bool(((t != args["ignore_index"]) & ((t < 0) | (t >= classes))).any())


def _outside_windows(args) -> bool:
    """Whether some max-pool index is neither the forward's nor -1 (which
    the CPU skips): the mutations put such indices outside their windows."""
    keys = ("kernel_size", "stride", "padding", "dilation", "ceil_mode")
    _, recorded = torch.ops.aten.max_pool2d_with_indices(args["self"].float(), *(args[k] for k in keys))
    indices = args["indices"]
    return bool(((indices != recorded) & (indices != -1)).any())


def _cpu_unchecked(overload, name, args):
    """The exception type ours must raise where the CPU goes out of bounds, or None."""
    for pattern, argument, error, when in CPU_UNCHECKED:
        if re.fullmatch(pattern, overload) and argument == name and when(args):
            return error
    return None


def _cases(sample, dtype):
    base = sample.call(dtype)
    for name, value in base.items():
        role = sample.role(name)
        if role not in (INDEX, SAMPLES) or not isinstance(value, torch.Tensor):
            continue
        mutations = _index_mutations if role == INDEX else _sample_mutations
        for i, (label, _) in enumerate(mutations(value)):
            args = sample.call(dtype)
            args[name] = list(mutations(args[name]))[i][1]
            yield name, f"{name}: {label}", args


CASES = [pytest.param(sample, record, id=sample.overload) for sample, record in samples()
         if any(r in (INDEX, SAMPLES) for r in sample.roles.values())]


@pytest.mark.parametrize("sample, record", CASES)
def test_index_values_are_checked_like_the_cpu(sample, record):
    dtype = cpu_dtype(sample, record)
    failures = []
    for (name, label, cpu_args), (_, _, our_args) in zip(_cases(sample, dtype), _cases(sample, dtype)):
        where = f"{sample.overload} {label}"
        ours = run(sample.op, our_args, ours=True)
        unchecked_error = _cpu_unchecked(sample.overload, name, our_args)
        if unchecked_error is not None:
            if not isinstance(ours.error, unchecked_error):
                failures.append(f"{where}: the CPU goes out of bounds; ours must raise "
                                f"{unchecked_error.__name__}, got {ours.error!r}")
            continue
        try:
            assert_same_outcome(run(sample.op, cpu_args, ours=False), ours, where, shapes_only=sample.unpinned)
        except AssertionError as failure:
            failures.append(str(failure))
    assert not failures, "\n".join(failures)


def test_every_index_argument_is_swept():
    """Each registry overload taking indices, offsets, lengths, targets or
    random samples has a sample that marks them."""
    names = {s.overload for s, _ in samples() if any(r in (INDEX, SAMPLES) for r in s.roles.values())}
    expected = {o for r in mps_ops.ops() for o in r.overloads
                if re.match(r"(take|put_|segment_reduce|_segment_reduce_backward|multi_margin_loss|multilabel"
                            r"|embedding_renorm_|fractional_max_pool|adaptive_max_pool3d_backward|nll_loss)", o)}
    assert expected <= names, expected - names


# --- the dims and sizes passed as integers ------------------------------------

DIM_CALLS = {
    "mode": lambda x, d: torch.mode(x, d),
    "_aminmax.dim": lambda x, d: torch._aminmax(x, d),
    "var.correction_out": lambda x, d: torch.var(x, d, out=torch.empty(0, dtype=x.dtype)),
    "std.correction_out": lambda x, d: torch.std(x, d, out=torch.empty(0, dtype=x.dtype)),
    "_masked_softmax": lambda x, d: torch.ops.aten._masked_softmax(x, x > 0, d),
    "glu_jvp": lambda x, d: torch.ops.aten.glu_jvp(x.narrow(d % x.dim(), 0, 1) if -x.dim() <= d < x.dim() else x,
                                                   x, x, d),
    "narrow_copy.out": lambda x, d: torch.narrow_copy(x, d, 0, 1, out=torch.empty(0, dtype=x.dtype)),
}


@pytest.mark.parametrize("dim", [2, -3, 5, 2**40, -(2**40)])
@pytest.mark.parametrize("name", list(DIM_CALLS))
def test_dims_out_of_range_raise_what_the_cpu_raises(name, dim):
    x = torch.randn(3, 4)
    fn = DIM_CALLS[name]
    with pytest.raises(Exception) as cpu_error:
        fn(x, dim)
    with pytest.raises(Exception) as ours:
        run_on_kernels(fn, x, dim)
    assert type(ours.value) is type(cpu_error.value), (ours.value, cpu_error.value)


@pytest.mark.parametrize("start, length", [(4, 2), (-7, 1), (0, -1), (2, 9), (2**40, 1)])
def test_narrow_copy_bounds_raise_what_the_cpu_raises(start, length):
    x = torch.randn(3, 5)
    fn = lambda t: torch.narrow_copy(t, 1, start, length, out=torch.empty(0))  # noqa: E731
    with pytest.raises(Exception) as cpu_error:
        fn(x)
    with pytest.raises(Exception) as ours:
        run_on_kernels(fn, x)
    assert type(ours.value) is type(cpu_error.value), (ours.value, cpu_error.value)


@pytest.mark.parametrize("groups", [0, -2, 3, 2**40])
def test_channel_shuffle_groups_raise_what_the_cpu_raises(groups):
    x = torch.randn(2, 4, 3)
    with pytest.raises(Exception) as cpu_error:
        torch.nn.functional.channel_shuffle(x, groups)
    with pytest.raises(Exception) as ours:
        run_on_kernels(torch.nn.functional.channel_shuffle, x, groups)
    assert type(ours.value) is type(cpu_error.value), (ours.value, cpu_error.value)


# --- the brief's cases, one by one ---------------------------------------------

def test_segment_reduce_decreasing_offsets_raise_like_the_cpu():
    data, offsets = torch.randn(6, 2), torch.tensor([0, 4, 2, 6])
    for unsafe in (False, True):
        with pytest.raises(RuntimeError):
            torch.segment_reduce(data, "sum", offsets=offsets, unsafe=unsafe)
        with pytest.raises(RuntimeError, match="segment_length >= 0"):
            run_on_kernels(lambda d, o: torch.segment_reduce(d, "sum", offsets=o, unsafe=unsafe), data, offsets)


@pytest.mark.parametrize("offsets", [[0, 2, 7], [-1, 2, 6], [1, 2, 9]], ids=str)
def test_segment_reduce_offsets_outside_the_data_raise(offsets):
    # The CPU reads outside the data here; ours refuses, also when unsafe.
    data = torch.randn(6, 2)
    for unsafe in (False, True):
        with pytest.raises(RuntimeError, match="segments must lie within"):
            run_on_kernels(lambda d: torch.segment_reduce(d, "max", offsets=torch.tensor(offsets), unsafe=unsafe),
                           data)


def test_segment_reduce_lengths_past_the_end_raise_even_when_unsafe():
    with pytest.raises(RuntimeError, match="segments must lie within"):
        run_on_kernels(lambda d: torch.segment_reduce(d, "sum", lengths=torch.tensor([4, 3]), unsafe=True),
                       torch.randn(6))


def test_segment_reduce_lengths_that_wrap_their_sum_raise():
    """Lengths that pass the CPU's safe-mode checks (each >= 0, the row's
    sum equal to the data's length) but whose int64 running sum wraps: their
    offsets fall outside the data, though every step between them, wrapped
    too, is positive. Ours refuses; the CPU's own call is not run (it reads
    there). The same offsets given as offsets likewise."""
    big = 2**62
    with pytest.raises(RuntimeError, match="segments must lie within"):
        run_on_kernels(lambda d: torch.segment_reduce(d, "sum", lengths=torch.tensor([big, big, big, big + 6])),
                       torch.randn(6))
    offsets = torch.tensor([0, big, -2 * big, -big, 6])
    for unsafe in (False, True):
        with pytest.raises(RuntimeError, match="segments must lie within"):
            run_on_kernels(lambda d, o: torch.segment_reduce(d, "sum", offsets=o, unsafe=unsafe), torch.randn(6),
                           offsets)


def test_fractional_max_pool_backward_indices_out_of_range_raise_like_the_cpu():
    x = torch.randn(1, 2, 6, 6)
    out, indices = torch.ops.aten.fractional_max_pool2d(x, [2, 2], [3, 3], torch.rand(1, 2, 2))
    for bad in (indices + 36, indices - 40):
        with pytest.raises(RuntimeError):
            torch.ops.aten.fractional_max_pool2d_backward(torch.ones_like(out), x, [2, 2], [3, 3], bad)
        with pytest.raises(RuntimeError):
            run_on_kernels(torch.ops.aten.fractional_max_pool2d_backward, torch.ones_like(out), x, [2, 2], [3, 3],
                           bad)


def test_adaptive_max_pool_backward_index_outside_its_window_raises():
    # The CPU writes to whatever index it is given (past the end too).
    x = torch.randn(1, 1, 4, 4, 4)
    out, indices = torch.ops.aten.adaptive_max_pool3d(x, [2, 2, 2])
    moved = indices.clone()
    moved.view(-1)[0] = 63  # in range, but in another cell's window
    with pytest.raises(RuntimeError, match="window"):
        run_on_kernels(torch.ops.aten.adaptive_max_pool3d_backward, torch.ones_like(out), x, moved)


def _window_positions(in_sizes, out_sizes):
    """Each cell's window as plane positions, cells in row-major order."""
    def bounds(o, i, n):
        return o * i // n, -(-(o + 1) * i // n)
    (D, H, W), (OD, OH, OW) = in_sizes, out_sizes
    windows = []
    for od in range(OD):
        for oh in range(OH):
            for ow in range(OW):
                (d0, d1), (h0, h1), (w0, w1) = bounds(od, D, OD), bounds(oh, H, OH), bounds(ow, W, OW)
                windows.append({(d * H + h) * W + w for d in range(d0, d1) for h in range(h0, h1)
                                for w in range(w0, w1)})
    return windows


@pytest.mark.parametrize("in_sizes, out_sizes", [((5, 7, 6), (7, 9, 8)), ((8, 8, 9), (3, 3, 4)),
                                                 ((4, 6, 17), (2, 3, 5))], ids=str)
def test_adaptive_max_pool_backward_checks_every_cells_window(in_sizes, out_sizes):
    """Each cell's index is checked against its own window wherever the cell
    falls among the ones a thread walks (cells overlapping, more of them
    than a thread loads at once where the output is larger): any index
    moved outside its window raises, and indices moved elsewhere inside
    their windows give the CPU's gradient."""
    torch.manual_seed(0)
    x = torch.randn(2, 1, *in_sizes)
    out, indices = torch.ops.aten.adaptive_max_pool3d(x, list(out_sizes))
    grad = torch.randn(out.shape)
    windows = _window_positions(in_sizes, out_sizes)
    plane = in_sizes[0] * in_sizes[1] * in_sizes[2]
    moved_inside = indices.clone()
    for batch in range(2):
        for cell, window in enumerate(windows):
            moved_inside.view(2, -1)[batch, cell] = max(window)
    expected = torch.ops.aten.adaptive_max_pool3d_backward(grad, x, moved_inside)
    actual, dispatches = run_on_kernels(torch.ops.aten.adaptive_max_pool3d_backward, grad, x, moved_inside)
    assert_matches(actual, expected)
    assert dispatches
    cells = sorted({0, len(windows) - 1, *torch.randint(len(windows), (6,)).tolist()})
    for cell in cells:
        outside = next(p for p in range(plane) if p not in windows[cell])
        moved = indices.clone()
        moved.view(2, -1)[1, cell] = outside
        with pytest.raises(RuntimeError, match="window"):
            run_on_kernels(torch.ops.aten.adaptive_max_pool3d_backward, grad, x, moved)


def test_random_samples_of_a_larger_batch_are_accepted_like_the_cpu():
    x = torch.randn(2, 3, 7, 6)
    samples_ = torch.rand(5, 3, 2)
    expected = torch.ops.aten.fractional_max_pool2d(x, [2, 2], [3, 3], samples_)
    actual, dispatches = run_on_kernels(torch.ops.aten.fractional_max_pool2d, x, [2, 2], [3, 3], samples_)
    assert_matches(actual, expected)
    assert dispatches


def test_take_with_an_int32_index_raises_runtime_error_like_the_cpu():
    x, index = torch.randn(4), torch.tensor([1], dtype=torch.int32)
    with pytest.raises(RuntimeError) as cpu_error:
        torch.take(x, index)
    with pytest.raises(RuntimeError) as ours, emulate():
        torch.take(x, index)
    assert type(ours.value) is type(cpu_error.value)
