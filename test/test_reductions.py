"""Threadgroup reductions (max/min out=, _aminmax, var/std out=) on layouts
OpInfo leaves out: transposed, strided, expanded, keepdim over several dims,
0-dim, empty slices, NaN, one slice of more than 2**31 elements, and the
CPU's errors. _aminmax has no OpInfo: this file is its test."""

from __future__ import annotations

import math

import pytest
import torch

from helpers import REDUCTION_LAYOUTS as LAYOUTS, assert_matches, run_on_kernels, values_with_limits

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"max", "min", "_aminmax", "var", "std", "var_mean", "std_mean", "batch_norm_update_stats",
                       "mode"}


def _out_call(fn, **kwargs):
    def call(x):
        out = torch.empty(0, dtype=x.dtype, device=x.device)
        returned = fn(x, out=out, **kwargs)
        assert returned is out
        return out
    return call


def _check(fn, x):
    expected = fn(x)
    actual, dispatches = run_on_kernels(fn, x)
    assert_matches(actual, expected)
    assert dispatches and all("_reduce_" in d.kernel or "_merge_" in d.kernel for d in dispatches), dispatches
    return dispatches


def _check_exact(fn, x):
    """_check, and bit for bit (NaN where the CPU has NaN): selections and
    integers stay exact whatever order the states merge in."""
    dispatches = _check(fn, x)
    expected, (actual, _) = fn(x), run_on_kernels(fn, x)
    for a, e in zip(actual if isinstance(actual, (tuple, list)) else [actual],
                    expected if isinstance(expected, (tuple, list)) else [expected]):
        assert torch.equal(a.isnan(), e.isnan()) if e.is_floating_point() else True
        assert torch.equal(a[a == a], e[e == e]), (a, e)
    return dispatches


REDUCTIONS = {
    "max": _out_call(torch.max),
    "min": _out_call(torch.min),
    "var_all": _out_call(torch.var),
    "var_last": _out_call(torch.var, dim=-1),
    "std_first_keepdim": _out_call(torch.std, dim=0, keepdim=True, correction=0),
    "var_two_dims": lambda x: torch.var(x, dim=(0, -1), out=torch.empty(0)) if x.dim() >= 2
    else torch.var(x, out=torch.empty(0)),
    "var_mean_last": lambda x: torch.var_mean(x, -1),
    "std_mean_all_keepdim": lambda x: torch.std_mean(x, None, correction=0, keepdim=True),
    "var_mean_two_dims_out": lambda x: torch.ops.aten.var_mean.correction_out(
        x, (0, -1) if x.dim() >= 2 else None, correction=1, keepdim=False, out0=torch.empty(0), out1=torch.empty(0)),
    "aminmax": torch._aminmax,
    "aminmax_dim": lambda x: torch._aminmax(x, -1),
    "aminmax_dim0_keepdim": lambda x: torch._aminmax(x, 0, keepdim=True),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reduction_layouts(name, layout):
    torch.manual_seed(0)
    _check(REDUCTIONS[name], LAYOUTS[layout]())


@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32,
                                   torch.int64, torch.float16, torch.bfloat16])
def test_min_max_dtypes_keep_their_extremes(dtype):
    x = values_with_limits(dtype, (5, 40))  # integers: the identities are real values too
    for name in ("max", "min", "aminmax", "aminmax_dim"):
        _check(REDUCTIONS[name], x)


def test_nan_wins_and_infinities_stay():
    x = torch.randn(4, 100)
    x[1, 50] = float("nan")
    x[2] = float("inf")
    x[3] = -float("inf")
    for name in ("aminmax_dim", "max", "min", "var_last"):
        _check(REDUCTIONS[name], x)


@pytest.mark.parametrize("length", [4, 100, 5000])
def test_var_mean_over_infinities_is_torch_mean(length):
    """var_mean's mean where a slice holds infinities or NaN: torch.mean's
    (inf, -inf, or NaN where both signs or a NaN meet), wherever they fall;
    the CPU's sequential Welford mean is NaN unless the infinity comes last.
    The variance is NaN, as on the CPU."""
    x = torch.randn(6, length)
    x[0, 1] = float("inf")
    x[1, -1] = -float("inf")
    x[2, 0], x[2, -1] = float("inf"), -float("inf")
    x[3, length // 2] = float("nan")
    x[4, :] = float("inf")
    (var, mean), dispatches = run_on_kernels(lambda t: torch.var_mean(t, 1), x)
    torch.testing.assert_close(mean, x.double().mean(1).float(), equal_nan=True)
    torch.testing.assert_close(var, torch.var(x, 1), equal_nan=True)
    assert dispatches


@pytest.mark.parametrize("length", [3, 9, 17, 40, 257, 3000, 400_000])
def test_var_mean_non_finite_values_anywhere_in_a_slice(length):
    """Infinities and NaN at random places, one to three a slice: met in a
    thread's run of 8, in its last elements past its runs, or in another
    thread's share, each followed by finite values, the mean is always
    torch.mean's (no inf turned NaN by a later finite value or infinity of
    the same sign), the variance NaN. The longest slices split over several
    groups, whose states the merge pass joins."""
    torch.manual_seed(length)
    rows = 48 if length < 10_000 else 6
    x = torch.randn(rows, length)
    specials = torch.tensor([float("inf"), -float("inf"), float("nan")])
    for row in range(rows):
        count = 1 + row % 3
        places = torch.randint(length, (count,))
        x[row, places] = specials[torch.randint(3 if row % 4 == 0 else 2, (count,))] if row % 2 else float("inf")
    (var, mean), dispatches = run_on_kernels(lambda t: torch.var_mean(t, 1), x)
    torch.testing.assert_close(mean, x.double().mean(1).float(), equal_nan=True)
    assert torch.isnan(var).all()
    assert dispatches


@pytest.mark.parametrize("position", [0, 7, 5000, 99_999])
def test_nan_wins_wherever_a_thread_meets_it(position):
    """Long slices: each thread folds many elements, so a NaN that is not a
    thread's last element must survive the fold, not only the merge."""
    x = torch.randn(100_000)
    x[position] = float("nan")
    for name in ("max", "min", "aminmax_dim"):
        _check(REDUCTIONS[name], x if name != "aminmax_dim" else x.reshape(4, -1))


def test_half_var_of_large_values_accumulates_in_float():
    x = (torch.randn(3, 2000) * 30 + 1000).half()
    _check(REDUCTIONS["var_last"], x)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_empty_two_byte_inputs_of_any_strides_or_offset(dtype):
    """Empty half and bfloat16 inputs whose strides or storage offset are odd:
    nothing to read as word pairs (an empty tensor's null data pointer looked
    aligned, and the view as words raised an internal assert or refused the
    offset)."""
    odd_strides = torch.empty(2, 0, dtype=dtype)  # strides (1, 1)
    odd_offset = torch.zeros(3, dtype=dtype)[3:]
    cases = [
        (lambda t: torch._aminmax(t, 0), odd_strides),
        (lambda t: torch._aminmax(t, 0), odd_offset.view(2, 0)),
        (lambda t: torch.hash_tensor(t, [0]), odd_strides),
        (lambda t: torch.hash_tensor(t, [0]), odd_offset.view(2, 0)),
        (lambda t: torch.max(t, out=torch.empty(0, dtype=t.dtype)), odd_offset.view(0, 4)),
        (lambda t: torch.min(t, out=torch.empty(0, dtype=t.dtype)), odd_offset.view(0, 4)),
    ]
    for fn, x in cases:
        expected = fn(x)
        actual, _ = run_on_kernels(fn, x)
        assert_matches(actual, expected)


def test_empty_inputs():
    # An empty whole-tensor max/min is the identity on the CPU (amax of nothing).
    for dtype in (torch.float32, torch.int32, torch.bool):
        x = torch.empty(0, dtype=dtype)
        for name in ("max", "min"):
            _check(REDUCTIONS[name], x)
    # var over an empty dim: NaN per slice, with the CPU's warning.
    with pytest.warns(UserWarning, match="degrees of freedom"):
        _check(REDUCTIONS["var_last"], torch.empty(3, 0))
    # var_mean over an empty dim: NaN for both (Welford's identity has mean 0).
    with pytest.warns(UserWarning, match="degrees of freedom"):
        _check(REDUCTIONS["var_mean_last"], torch.empty(3, 0))
    # A negative correction over nothing: NaN still, not 0 / -correction.
    for fn in (lambda x: torch.var(x, 1, correction=-1, out=torch.empty(0)),
               lambda x: torch.std(x, 1, correction=-2, out=torch.empty(0)),
               lambda x: torch.var_mean(x, 1, correction=-1), lambda x: torch.std_mean(x, correction=-1)):
        _check(fn, torch.empty(3, 0))
        actual, _ = run_on_kernels(fn, torch.empty(3, 0))
        assert (actual[0] if isinstance(actual, tuple) else actual).isnan().all()
    # No slices at all: nothing to dispatch.
    actual, dispatches = run_on_kernels(lambda x: torch._aminmax(x, 1), torch.empty(0, 4))
    assert actual[0].shape == (0,) and not dispatches


def test_aminmax_errors_are_the_cpus():
    for fn, x, error in [
        (torch._aminmax, torch.empty(0), RuntimeError),
        (lambda x: torch._aminmax(x, 0), torch.empty(0, 3), IndexError),
        (lambda x: torch._aminmax(x, 2), torch.randn(2, 3), IndexError),
    ]:
        with pytest.raises(error) as cpu:
            fn(x)
        with pytest.raises(error) as ours:
            run_on_kernels(fn, x)
        assert str(cpu.value).split(":")[0] in str(ours.value)


def test_var_errors_are_the_cpus():
    with pytest.raises(RuntimeError, match="floating point"):
        run_on_kernels(_out_call(torch.var), torch.arange(4))
    with pytest.raises(RuntimeError, match="appears multiple times"):
        run_on_kernels(lambda x: torch.var(x, (0, 0), out=torch.empty(0)), torch.randn(3, 4))
    with pytest.raises(RuntimeError, match="can't be cast"):
        run_on_kernels(lambda x: torch.var(x, out=torch.empty(0, dtype=torch.int32)), torch.randn(3))
    with pytest.raises(TypeError, match="float64"):
        run_on_kernels(_out_call(torch.var), torch.randn(3).double())


def test_out_of_other_dtype_or_layout_receives_the_result():
    x = torch.randn(6, 33)
    expected = torch.var(x, 1).half()
    out = torch.empty(12, dtype=torch.half)[::2]
    actual, dispatches = run_on_kernels(lambda x_, o: torch.var(x_, 1, out=o), x, out)
    assert_matches(actual, expected)
    assert dispatches


def test_one_slice_of_more_than_2_31_elements():
    n = 2**30 + 4
    x = torch.tensor([[1.0], [-3.0]]).expand(2, n)  # 2**31 + 8 elements, stride 0
    (lo, hi), dispatches = run_on_kernels(torch._aminmax, x)
    assert (lo.item(), hi.item()) == (-3.0, 1.0)
    # One slice: split into chunks of 2**22 (2**21 would make more than 1024),
    # then merged by one group of 256 threads, up to 4 chunk states each.
    assert [(d.kernel, d.threads) for d in dispatches] == [
        ("aminmax_reduce_float_float", (256, 1, 513)), ("aminmax_merge_float_float", (256, 1, 1))]
    var, _ = run_on_kernels(lambda t: torch.var(t, 1, out=torch.empty(0)), x)
    assert var.tolist() == [0.0, 0.0]


# --- how threads meet slices (csrc/runtime/reduction.cpp's choose_mapping) ---------

# (input, dim, threads (x = group size, y = groups)): rows of 8 threads per
# short slice (about 32 elements each), several slices per group and a
# last group partly past the last slice; wider rows for longer slices;
# columns (neighbouring threads on neighbouring outputs) for middle and
# outer dims.
MAPPINGS = {
    "short_rows_32_per_group": (lambda: torch.randn(37, 45), -1, (256, 2, 1)),
    "rows_of_16_threads": (lambda: torch.randn(20, 400), -1, (256, 2, 1)),
    "rows_of_64_threads": (lambda: torch.randn(13, 1500), -1, (256, 4, 1)),
    "rows_of_128_threads": (lambda: torch.randn(3, 3000), -1, (256, 2, 1)),
    "slice_longer_than_a_group": (lambda: torch.randn(3, 5000), -1, (256, 3, 1)),
    "few_outputs_stay_rows": (lambda: torch.randn(100, 10), 0, (96, 1, 1)),
    "middle_dim_columns": (lambda: torch.randn(5, 40, 33), 1, (256, 6, 1)),
    "outer_dim_columns": (lambda: torch.randn(300, 70), 0, (256, 3, 1)),
    "short_columns_one_row": (lambda: torch.randn(3, 50), 0, (64, 1, 1)),
    "transposed_columns": (lambda: torch.randn(70, 300).t(), 1, (256, 10, 1)),
    "strided_columns": (lambda: torch.randn(90, 2, 40)[::3, 1], 0, (256, 1, 1)),
    "transposed_rows": (lambda: torch.randn(45, 37).t(), 0, (256, 2, 1)),
}

MAPPED_REDUCTIONS = {
    "var": lambda dim: lambda x: torch.var(x, dim, out=torch.empty(0, dtype=x.dtype)),
    "std_keepdim": lambda dim: lambda x: torch.std(x, dim, keepdim=True, out=torch.empty(0, dtype=x.dtype)),
    "aminmax": lambda dim: lambda x: torch._aminmax(x, dim),
}


@pytest.mark.parametrize("name", list(MAPPED_REDUCTIONS))
@pytest.mark.parametrize("mapping", list(MAPPINGS))
def test_thread_mappings(mapping, name):
    torch.manual_seed(0)
    make, dim, threads = MAPPINGS[mapping]
    dispatches = _check(MAPPED_REDUCTIONS[name](dim), make())
    assert [d.threads for d in dispatches] == [threads]


@pytest.mark.parametrize("mapping", ["short_rows_32_per_group", "middle_dim_columns", "outer_dim_columns"])
def test_thread_mappings_keep_integers_and_nan_exact(mapping):
    torch.manual_seed(1)
    make, dim, _ = MAPPINGS[mapping]
    x = make()
    _check(MAPPED_REDUCTIONS["aminmax"](dim), (x * 1000).int())
    x.view(-1)[[0, 7, x.numel() - 1]] = float("nan")
    x.view(-1)[[3, 40]] = float("inf")
    for name in MAPPED_REDUCTIONS:
        _check(MAPPED_REDUCTIONS[name](dim), x)


@pytest.mark.parametrize("mapping", ["short_rows_32_per_group", "outer_dim_columns", "short_columns_one_row"])
def test_mode_thread_mappings(mapping):
    make, dim, threads = MAPPINGS[mapping]
    x = (make() * 2).round()
    _check_mode(x, dim)
    _, dispatches = run_on_kernels(lambda t: torch.mode(t, dim), x)
    assert [d.threads for d in dispatches] == [threads]


# Two reduced dims that do not merge (reduction.h's plane_walk): a thread's
# step through the slice shorter than the inner reduced dim (the walk carries
# into the outer one now and then), longer than it (every step moves the
# outer one too), and batch norm's batch and spatial dims.
@pytest.mark.parametrize("shape", [(7, 3, 37), (50, 3, 5), (33, 2, 300)])
def test_rows_over_two_reduced_dims(shape):
    torch.manual_seed(4)
    x = torch.randn(shape) * 3 + 1
    _check(lambda t: torch.var(t, (0, 2), out=torch.empty(0)), x)
    _check(lambda t: torch.std(t, (0, 2), correction=0, out=torch.empty(0)), x.half())
    fn = _batch_norm_stats(0.2)
    expected = fn(x, torch.zeros(shape[1]), torch.ones(shape[1]))
    actual, _ = run_on_kernels(fn, x, torch.zeros(shape[1]), torch.ones(shape[1]))
    assert_matches(actual, expected)


def test_columns_over_several_reduced_dims():
    """Columns whose reduced dims do not merge (the divided index path), and
    batch norm's channels_last input with enough channels for columns."""
    x = torch.randn(7, 6, 40).transpose(0, 1)
    _check(lambda t: torch.var(t, (0, 1), out=torch.empty(0)), x)
    _check(lambda t: torch._aminmax(t.sum(1, keepdim=True).expand(6, 5, 40), 1), x)
    y = torch.randn(3, 48, 5, 7).to(memory_format=torch.channels_last)
    rm, rv = torch.zeros(48), torch.ones(48)
    fn = _batch_norm_stats(0.3)
    expected = fn(y, rm.clone(), rv.clone())
    actual, dispatches = run_on_kernels(fn, y, rm.clone(), rv.clone())
    assert_matches(actual, expected)
    assert [d.threads for d in dispatches] == [(256, 2, 1)]


@pytest.mark.parametrize("mapping", ["short_rows_32_per_group", "slice_longer_than_a_group",
                                     "outer_dim_columns", "middle_dim_columns"])
def test_var_std_where_the_sum_of_squares_overflows(mapping):
    """Values whose centred sum of squares overflows float although var (or
    std) does not: the state switches to scaled values part way through a
    thread's share or at a merge (moments.metal); slices of ordinary and of
    tiny values beside them stay unscaled."""
    torch.manual_seed(2)
    make, dim, _ = MAPPINGS[mapping]
    x = make()
    scale = torch.tensor([1.0, 1e-30, 1.2e19, 1e30])[torch.randint(0, 4, x.shape)]
    big = x * scale
    _check(lambda t: torch.std(t, dim, out=torch.empty(0)), big)
    _check(lambda t: torch.var(t, dim, out=torch.empty(0)), torch.where(scale > 1e20, x * 1.2e19, big))
    # The mean of scaled values, scaled back.
    _check(lambda t: torch.std_mean(t, dim), big)


@pytest.mark.parametrize("mapping", ["short_rows_32_per_group", "slice_longer_than_a_group",
                                     "outer_dim_columns", "middle_dim_columns"])
def test_constant_slices_have_no_variance(mapping):
    """Slices of one value: the variance is exactly 0 and the mean that value.
    A run's mean summed in a row as values / 8 came out an ulp off for some
    four in ten values: an ordinary constant slice had a variance of an
    ulp's square, and one of 1e26-3e38 squared deviations that overflowed
    float (var inf)."""
    make, dim, _ = MAPPINGS[mapping]
    shape = make().shape
    slice_values = torch.tensor([1e26, -1e30, 3e38, -7.5e33, 2.0**100, 1.1, -0.3, 7.7, 1e-3])
    # Each slice one value, picked by its position along the other dims.
    position = torch.arange(torch.Size(shape).numel()).reshape(shape).select(dim, 0)
    x = slice_values[position.remainder(len(slice_values))].unsqueeze(dim).expand(shape).contiguous()
    for fn in (lambda t: torch.var(t, dim, out=torch.empty(0)), lambda t: torch.std(t, dim, out=torch.empty(0)),
               lambda t: torch.var_mean(t, dim)):
        _check(fn, x)
        actual, _ = run_on_kernels(fn, x)
        assert (actual[0] if isinstance(actual, tuple) else actual).eq(0).all()


@pytest.mark.parametrize("mapping", ["short_rows_32_per_group", "slice_longer_than_a_group",
                                     "outer_dim_columns", "middle_dim_columns"])
def test_var_mean_of_huge_values_beside_an_infinity(mapping):
    """Slices of 3e38 with one -inf: the mean is -inf, the class of the sum
    of the non-finite values (float64's mean), where a run's sum of 3e38s
    overflows to inf and meets the -inf as NaN; the variance NaN."""
    make, dim, _ = MAPPINGS[mapping]
    x = torch.full(make().shape, 3e38)
    x.select(dim, 1).fill_(-math.inf)
    assert x.double().mean(dim).eq(-math.inf).all()
    (var, mean), dispatches = run_on_kernels(lambda t: torch.var_mean(t, dim), x)
    assert dispatches and mean.eq(-math.inf).all() and var.isnan().all(), (mean, var)


@pytest.mark.parametrize("shape", [(8, 16, 4096), (64, 16, 16), (16, 16, 1)], ids=["split", "4d_like", "one_per_row"])
def test_batch_norm_statistics_about_a_large_offset(shape):
    """Channels of spread 1 about 1e4: read about each channel's first
    element (reduction.h's origins), the variance is as exact as the CPU's
    double makes it, where a float Welford mean rounds at the offset's scale
    (var 1e-3 off; 1e-4-1e-3 for var/std, which stay unshifted)."""
    torch.manual_seed(6)
    x = 1e4 + torch.randn(shape)
    expected_var, expected_mean = torch.var_mean(x.double(), (0, 2), correction=0)
    (mean, var, _, _), dispatches = run_on_kernels(_batch_norm_stats(0.1, running=()), x, None, None)
    assert dispatches
    torch.testing.assert_close(var.double(), expected_var, rtol=1e-6, atol=0)
    torch.testing.assert_close(mean.double(), expected_mean, rtol=1e-7, atol=0)
    # Training's forward takes its statistics from the two-output reduction.
    (_, save_mean, save_invstd), dispatches = run_on_kernels(
        lambda t: torch.native_batch_norm(t, None, None, None, None, True, 0.1, 0.0), x)
    assert any(d.kernel.startswith("batch_norm_stats") for d in dispatches)
    torch.testing.assert_close(save_invstd.double(), expected_var.rsqrt(), rtol=1e-6, atol=0)
    torch.testing.assert_close(save_mean.double(), expected_mean, rtol=1e-7, atol=0)


def test_batch_norm_statistics_of_constant_channels():
    x = torch.tensor([1e30, -3e38, 1e26, 1.1, -0.3])[None, :, None].expand(8, 5, 300).contiguous()
    fn = _batch_norm_stats(0.1, running=())
    (mean, var, _, _), dispatches = run_on_kernels(fn, x, None, None)
    assert dispatches and var.eq(0).all() and mean.equal(x[0, :, 0]), (mean, var)


def test_empty_reduced_dim_in_columns():
    with pytest.warns(UserWarning, match="degrees of freedom"):
        _check(lambda t: torch.var(t, 0, out=torch.empty(0)), torch.empty(0, 40))


# --- long slices split over several groups (reduction.cpp's choose_split) ----------

# (input, dims, first pass's threads (x = group size, y = groups, z = chunks),
# merge pass's threads): dispatches of fewer than 1024 groups cut their
# slices into chunks of 2**k >= 4096 elements, the last one shorter where
# the length is no multiple of it. Small enough for the emulator: the rule
# depends on the group count, never on a GPU.
SPLITS = {
    # One slice, 4 chunks of 4096 (8 merging threads, 4 with one state each).
    "all_dims": (lambda: torch.randn(64, 256), None, (256, 1, 4), (32, 1, 1)),
    # 34 chunks: the merge pass's 16 threads take 2 or 3 states each.
    "all_dims_34_chunks": (lambda: torch.randn(34, 4096), None, (256, 1, 34), (32, 1, 1)),
    # Columns (first dim): 2 groups of 32 outputs, 3 chunks of 8192, the
    # last 3616 long.
    "first_dim_long": (lambda: torch.randn(20000, 40), 0, (256, 2, 3), (256, 2, 1)),
    # Columns, 33 chunks of 4096: the merge pass's rows of 16 threads per
    # output are no longer the first pass's 8 rows of 32 columns.
    "first_dim_33_chunks": (lambda: torch.randn(33 * 4096, 16), 0, (256, 1, 33), (256, 1, 1)),
    # Rows: 3 groups, 2 chunks (8192 and 1808); the merge pass's 3 slices
    # of 8 threads in one SIMD group.
    "last_dim_long": (lambda: torch.randn(3, 10000), -1, (256, 3, 2), (32, 1, 1)),
    # Rows of stride 3 (few outputs stay rows), a strided view.
    "transposed_long": (lambda: torch.randn(10000, 6)[:, ::2].t(), 1, (256, 3, 2), (32, 1, 1)),
    # Two reduced dims that do not merge (the divided index path).
    "two_reduced_dims": (lambda: torch.randn(40, 3, 300), (0, 2), (256, 3, 2), (32, 1, 1)),
}


def _split_call(name, dims):
    def out(fn, **kwargs):
        return lambda x: fn(x, **({} if dims is None else {"dim": dims}), **kwargs,
                            out=torch.empty(0, dtype=x.dtype))
    if name == "aminmax":
        if dims is None:
            return torch._aminmax
        return (lambda x: torch._aminmax(x, dims)) if isinstance(dims, int) else None
    return {
        "var": out(torch.var),
        "var_unbiased_keepdim": out(torch.var, correction=1, keepdim=True),
        "std_correction_0": out(torch.std, correction=0),
        "std_correction_2": out(torch.std, correction=2),
        "max": (lambda x: torch.max(x, out=torch.empty(0, dtype=x.dtype))) if dims is None else None,
        "min": (lambda x: torch.min(x, out=torch.empty(0, dtype=x.dtype))) if dims is None else None,
    }[name]


SPLIT_REDUCTIONS = ["var", "var_unbiased_keepdim", "std_correction_0", "std_correction_2", "aminmax",
                    "max", "min"]


def _split_geometry(dispatches, first, merge):
    assert [d.variant for d in dispatches] == ["reduce", "merge"], dispatches
    assert [d.threads for d in dispatches] == [first, merge]


# max and min reduce all dims or one, so only the splits they have.
@pytest.mark.parametrize("split,name", [(split, name) for split in SPLITS for name in SPLIT_REDUCTIONS
                                        if _split_call(name, SPLITS[split][1]) is not None])
def test_split_slices(split, name):
    torch.manual_seed(3)
    make, dims, first, merge = SPLITS[split]
    fn = _split_call(name, dims)
    x = make() * 3 + 1
    dispatches = (_check if name.startswith(("var", "std")) else _check_exact)(fn, x)
    _split_geometry(dispatches, first, merge)


@pytest.mark.parametrize("split", ["all_dims", "first_dim_long", "last_dim_long"])
def test_split_slices_keep_nan_infinities_and_integers_exact(split):
    torch.manual_seed(4)
    make, dims, first, merge = SPLITS[split]
    x = make()
    calls = [_split_call(name, dims) for name in ("aminmax", "max", "min")]
    calls = [fn for fn in calls if fn is not None]
    for dtype in (torch.int32, torch.int64, torch.uint8, torch.int8, torch.bool):
        y = (x * 1000).to(dtype) if dtype != torch.bool else x > 1.5
        for fn in calls:
            _split_geometry(_check_exact(fn, y), first, merge)
    # A NaN in one chunk only (the merge must keep it), infinities in others.
    flat = x.view(-1) if x.is_contiguous() else None
    x[(0,) * x.dim()] = float("inf")
    x[(-1,) * x.dim()] = float("-inf")
    for fn in calls:
        _check_exact(fn, x)
    if flat is not None:
        flat[flat.numel() // 2 + 5] = float("nan")
    else:
        x[(x.shape[0] // 2,) + (0,) * (x.dim() - 1)] = float("nan")
    for fn in calls:
        _check_exact(fn, x)
    for name in ("var", "std_correction_0"):
        _check(_split_call(name, dims), x)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("split", ["all_dims", "first_dim_long", "last_dim_long"])
def test_split_slices_reduced_precision(split, dtype):
    torch.manual_seed(5)
    make, dims, first, merge = SPLITS[split]
    x = (make() * 4 + 2).to(dtype)
    for name in SPLIT_REDUCTIONS:
        fn = _split_call(name, dims)
        if fn is not None:
            dispatches = _check(fn, x)
            # max, min and aminmax read a contiguous input in words of two elements:
            # half the slice's length, half its chunks (last_dim_long's rows of
            # 10000 elements, 5000 words, then fit one chunk each: no merge).
            paired = any("_pairs_" in d.kernel for d in dispatches)
            if any("_column_pairs_" in d.kernel for d in dispatches):
                # aminmax over the first dim reads words of two columns: 20 of
                # them, one group's worth, its 3 chunks merged by 160 threads.
                assert split == "first_dim_long"
                assert [d.threads for d in dispatches] == [(256, 1, 3), (160, 1, 1)], dispatches
            elif paired and split == "last_dim_long":
                assert [(d.variant, d.threads) for d in dispatches] == [("reduce", first[:2] + (1,))], dispatches
            else:
                _split_geometry(dispatches, first[:2] + (first[2] // 2,) if paired else first, merge)


@pytest.mark.parametrize("split", ["all_dims", "first_dim_long", "last_dim_long"])
def test_split_slices_where_the_sum_of_squares_overflows(split):
    """var's chunk states switch to scaled values in some chunks and not in
    others: the merge pass must merge scaled with unscaled states."""
    torch.manual_seed(6)
    make, dims, _, _ = SPLITS[split]
    x = make()
    x.view(-1)[: x.numel() // 3] *= 1e30  # the first chunks (or slices' first rows) only
    _check(_split_call("std_correction_0", dims), x)
    _check(_split_call("var", dims), x * 1e-12)


def test_split_sum_of_margin_losses():
    """sum's reducer (the margin losses' mean and sum over 9000 samples)."""
    torch.manual_seed(7)
    x, target = torch.randn(9000, 3), torch.randint(0, 3, (9000,))
    for reduction in ("mean", "sum"):
        fn = lambda x_, t_: torch.nn.functional.multi_margin_loss(x_, t_, reduction=reduction)  # noqa: E731
        expected = fn(x, target)
        actual, dispatches = run_on_kernels(fn, x, target)
        assert_matches(actual, expected)
        assert [d.kernel for d in dispatches][-2:] == ["sum_reduce_float_float", "sum_merge_float_float"]


def test_split_batch_norm_stats():
    """batch_norm_update_stats without running statistics (the stats
    reducer, split); with them its own kernel stays one pass."""
    torch.manual_seed(8)
    x = torch.randn(9000, 3) * 2 + 1
    x[5, 1] = float("inf")
    expected = torch.batch_norm_update_stats(x, None, None, 0.1)
    actual, dispatches = run_on_kernels(lambda t: torch.batch_norm_update_stats(t, None, None, 0.1), x)
    assert_matches(actual, expected)
    assert [d.variant for d in dispatches] == ["reduce", "merge"]
    fn = _batch_norm_stats(0.1)
    expected = fn(x, torch.zeros(3), torch.ones(3))
    actual, dispatches = run_on_kernels(fn, x, torch.zeros(3), torch.ones(3))
    assert_matches(actual, expected)
    assert len(dispatches) == 1


def test_split_only_where_groups_are_few_and_chunks_long():
    # 3 slices of 5000: chunks of at least 4096 leave one.
    dispatches = _check(_split_call("var", -1), torch.randn(3, 5000))
    assert [d.threads for d in dispatches] == [(256, 3, 1)]
    # 1024 groups already: no split.
    dispatches = _check_exact(_split_call("aminmax", -1), torch.randn(1024, 8192))
    assert [d.threads for d in dispatches] == [(256, 1024, 1)]
    # 64 column groups of slices of 8192: as many chunks as 4096 allows (2),
    # not the 16 that 1024 groups would take.
    dispatches = _check_exact(_split_call("aminmax", 0), torch.randn(8192, 2048))
    assert [d.threads for d in dispatches] == [(256, 64, 2), (256, 64, 1)]


# --- batch_norm_update_stats ---------------------------------------------------

def _batch_norm_stats(momentum=0.1, running=("mean", "var")):
    def call(x, rm, rv):
        mean, var = torch.batch_norm_update_stats(
            x, rm if "mean" in running else None, rv if "var" in running else None, momentum)
        return mean, var, rm, rv
    return call


@pytest.mark.parametrize("running", [("mean", "var"), (), ("mean",), ("var",)],
                         ids=["both", "none", "mean_only", "var_only"])
@pytest.mark.parametrize("layout", ["2d", "4d", "channels_last", "transposed_5d"])
def test_batch_norm_update_stats(layout, running):
    torch.manual_seed(0)
    x = {
        "2d": lambda: torch.randn(17, 6),
        "4d": lambda: torch.randn(3, 6, 5, 7),
        "channels_last": lambda: torch.randn(3, 6, 5, 7).to(memory_format=torch.channels_last),
        "transposed_5d": lambda: torch.randn(2, 4, 6, 3, 5).transpose(1, 2),
    }[layout]()
    rm, rv = torch.randn(6), torch.rand(6) + 0.5
    fn = _batch_norm_stats(0.3, running)
    expected = fn(x, rm.clone(), rv.clone())
    actual, dispatches = run_on_kernels(fn, x, rm.clone(), rv.clone())
    assert_matches(actual, expected)
    assert len(dispatches) == 1


@pytest.mark.parametrize("dtype, running_dtype", [
    (torch.float16, torch.float16), (torch.bfloat16, torch.bfloat16),
    (torch.float16, torch.float32), (torch.bfloat16, torch.float32)])
def test_batch_norm_update_stats_reduced_precision(dtype, running_dtype):
    x = (torch.randn(8, 3, 40) * 4 + 2).to(dtype)
    rm, rv = torch.zeros(3, dtype=running_dtype), torch.ones(3, dtype=running_dtype)
    fn = _batch_norm_stats()
    expected = fn(x, rm.clone(), rv.clone())
    actual, _ = run_on_kernels(fn, x, rm.clone(), rv.clone())
    assert_matches(actual, expected)


def test_batch_norm_update_stats_errors():
    fn = _batch_norm_stats()
    for x, rm, error in [
        (torch.randn(4), torch.zeros(1), IndexError),
        (torch.randn(0, 3), torch.zeros(3), RuntimeError),
        (torch.randn(2, 3).int(), torch.zeros(3), NotImplementedError),
        (torch.randn(2, 3), torch.zeros(3).half(), RuntimeError),
    ]:
        with pytest.raises(error):
            fn(x, rm, rm.clone())
        with pytest.raises(error):
            run_on_kernels(fn, x, rm, rm.clone())
    # The CPU reads past a short running_mean; we refuse it.
    with pytest.raises(RuntimeError, match="running_mean should contain 3 elements not 2"):
        run_on_kernels(fn, torch.randn(2, 3), torch.zeros(2), torch.ones(3))


# --- mode --------------------------------------------------------------------------

def _check_mode(x, dim=-1, keepdim=False):
    """Values as the CPU's; the index (unspecified among repeats: the CPU's
    comes from an unstable sort) must be the mode's last occurrence."""
    expected = torch.mode(x, dim, keepdim)
    (values, indices), dispatches = run_on_kernels(lambda t: torch.mode(t, dim, keepdim), x)
    assert_matches(values, expected.values)
    assert dispatches
    if x.dim() == 0:
        assert indices.item() == 0
        return
    d = dim % x.dim()
    idx = indices if keepdim else indices.unsqueeze(d)
    v = values if keepdim else values.unsqueeze(d)
    positions = torch.arange(x.size(d)).view([-1 if i == d else 1 for i in range(x.dim())])
    last = torch.where(x == v, positions, -1).amax(d, keepdim=True)
    assert torch.equal(idx, last)


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dim, keepdim", [(-1, False), (0, True)])
def test_mode_layouts(layout, dim, keepdim):
    x = (LAYOUTS[layout]() * 2).round()  # few distinct values: real ties
    _check_mode(x, dim, keepdim)


@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32,
                                   torch.int64, torch.float16, torch.bfloat16])
def test_mode_dtypes(dtype):
    x = torch.randint(0, 4, (6, 33)).to(dtype)
    _check_mode(x, 1)


def test_mode_ties_pick_the_smallest_value_at_its_last_index():
    x = torch.tensor([[3.0, 1.0, 3.0, 1.0, 2.0], [-0.0, 0.0, 5.0, 5.0, 0.0]])
    (values, indices), _ = run_on_kernels(lambda t: torch.mode(t, 1), x)
    assert values.tolist() == [1.0, 0.0] and indices.tolist() == [3, 4]
    # Slices of up to 16 elements: the CPU sorts them stably, so its index is
    # the last occurrence too and must match exactly.
    _check(lambda t: torch.mode(t, 1), x)


def test_mode_empty_and_errors():
    actual, dispatches = run_on_kernels(lambda t: torch.mode(t, 1), torch.empty(0, 3))
    assert actual[0].shape == (0,) and not dispatches
    _check_mode(torch.tensor(5.0))
    for x, dim in [(torch.empty(3, 0), 1), (torch.randn(2, 3), 2)]:
        with pytest.raises(IndexError):
            torch.mode(x, dim)
        with pytest.raises(IndexError):
            run_on_kernels(lambda t: torch.mode(t, dim), x)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", ["max", "min", "aminmax", "aminmax_dim"])
def test_max_min_read_contiguous_halves_in_pairs(name, dtype):
    """Contiguous half and bfloat16 inputs of an even length are read two
    elements per 32-bit word: the extreme, a NaN and an infinity each in the
    low and in the high half of a word, exactly as the CPU; an odd length, a
    start between words or a strided input take the one-element kernels."""
    fn = REDUCTIONS[name]
    torch.manual_seed(7)
    base = values_with_limits(dtype, (4097,), scale=100.0)
    for at in (10, 11):  # the low and the high half of a word
        for value in (float("nan"), float("inf"), -float("inf"), -1e4 if name == "min" else 1e4, -1e4):
            x = base[:4096].clone()
            x[at] = value
            dispatches = _check_exact(fn, x)
            assert all("_pairs_" in d.kernel for d in dispatches), dispatches
    for x in (base, base[1:4097], base[:4096:2], base[:4096].view(64, 64).t()):
        dispatches = _check_exact(fn, x)
        assert not any("_pairs_" in d.kernel for d in dispatches), dispatches
    # One slice of many groups' worth of words, split and merged.
    _check_exact(fn, values_with_limits(dtype, (1 << 20,), scale=100.0))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("dim, keepdim", [(0, False), (1, True), (-2, False)])
def test_aminmax_over_other_dims_reads_neighbouring_columns_in_pairs(dim, keepdim, dtype):
    """_aminmax over a dim other than a contiguous last one of an even length
    reads two neighbouring columns per 32-bit word and writes both outputs as
    such words: a NaN, an infinity and each column's extremes in the low and
    the high column of a word come out exactly as the CPU's; an odd last dim,
    a start between words or a strided input take the one-column kernels."""
    torch.manual_seed(8)
    fn = lambda t: torch._aminmax(t, dim, keepdim=keepdim)  # noqa: E731
    x = values_with_limits(dtype, (3, 300, 34), scale=100.0)
    x[0, 7, 10], x[1, 9, 11] = float("nan"), float("nan")  # the low and the high column of word 5
    x[2, 5, 12], x[2, 6, 13] = float("inf"), -float("inf")
    x[1, 200, 20], x[0, 3, 21] = 1e4, -1e4
    dispatches = _check_exact(fn, x)
    assert [d.kernel.split("_reduce_")[0].split("_merge_")[0] for d in dispatches] == \
        [f"aminmax_{'half' if dtype == torch.float16 else 'bfloat'}_column_pairs"] * len(dispatches), dispatches
    # Long columns: split into chunks, whose states the merge pass combines.
    long = values_with_limits(dtype, (20000, 40), scale=100.0)
    long[15000, 3] = float("nan")
    dispatches = _check_exact(lambda t: torch._aminmax(t, 0), long)
    assert [d.variant for d in dispatches] == ["reduce", "merge"] and "_column_pairs_" in dispatches[1].kernel
    flat = values_with_limits(dtype, (3 * 300 * 34 + 1,), scale=100.0)
    for y in (x[..., :33], flat[1:].view(3, 300, 34), x[:, :, ::2], x.transpose(0, 1)):
        dispatches = _check_exact(fn, y)
        assert not any("_column_pairs_" in d.kernel for d in dispatches), dispatches
