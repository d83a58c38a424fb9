"""Tensor.put_ (and take's errors) against the CPU where OpInfo's 3-element samples say little:
repeated targets, an index and its negative alias, strided and transposed
self, non-contiguous index and source, integer wrap-around, bool, and the
CPU's errors.

Repeated targets, in both of put_'s modes: under
torch.usedeterministic_algorithms(True), as the CPU's serial loop resolves
them (the last write wins; accumulation adds in index order, rounding in
self's dtype at each step; both in index's logical order); otherwise, as
torch's CUDA put_, in the GPU's order (one of the writes wins; float32 adds
in any order, int32 adds exactly in any order)."""

from __future__ import annotations

import contextlib
import os

import pytest
import torch
from hypothesis import given, settings, strategies as st

import mps_ops
from helpers import assert_matches, run_on_kernels, to_device
from mps_ops.testing import deterministic_algorithms, device, emulate, put_bins

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"put_"}

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
          torch.int8, torch.uint8, torch.bool]


def _put(self, index, source, accumulate):
    returned = self.put_(index, source, accumulate=accumulate)
    assert returned is self
    return self


def _values(shape, dtype):
    if dtype == torch.bool:
        return torch.rand(shape) > 0.5
    if dtype.is_floating_point:
        return (torch.randn(shape) * 3).to(dtype)
    return torch.randint(0, 100, shape).to(dtype)


def _in_words(self):
    """Whether put_ may add to self's elements through the 32-bit words holding
    them (take.mm's words_of): self starts on a word, and its last word lies
    in its storage."""
    start = self.storage_offset() * self.element_size()
    span = (sum((n - 1) * st for n, st in zip(self.shape, self.stride())) + 1) * self.element_size()
    return start % 4 == 0 and (span + 3) // 4 * 4 <= self.untyped_storage().nbytes() - start


def _one_pass_kernel(self, accumulate, deterministic):
    """The kernel put_ runs without a sort (take.mm's one_pass_put), or None."""
    if not accumulate:
        return None if deterministic else "put_store"
    narrow = (torch.float16, torch.bfloat16, torch.int16, torch.int8, torch.uint8, torch.bool)
    addable = self.dtype in (torch.int32, torch.float32) or (self.dtype in narrow and _in_words(self))
    exact_in_any_order = not self.dtype.is_floating_point
    return "put_add" if addable and (exact_in_any_order or not deterministic) else None


def _assert_one_of_the_writes_won(actual, self, index, source):
    """Each target holds one of the values written to it; the rest is self."""
    flat, values = index.reshape(-1) % max(self.numel(), 1), source.reshape(-1)
    actual, expected = actual.reshape(-1), self.reshape(-1).clone()
    written = flat.unique()
    expected[written] = actual[written]
    assert torch.equal(actual, expected), "an element no index names changed"
    for target in written.tolist():
        assert (values[flat == target] == actual[target]).any(), (target, actual[target])


PUT_KERNELS = {"put", "put_store", "put_add", "put_bin_count", "put_bin_scatter", "put_bin_store", "put_bin_add"}


def _expected_kernels(self, accumulate, deterministic):
    """The kernels put_ runs on self: the sort's, the one pass's, or the one
    pass's through bins, where MPS_OPS_PUT_BIN_BYTES asks for them and self
    is contiguous with more than one element (a layout of one dim)."""
    one_pass = _one_pass_kernel(self, accumulate, deterministic)
    if one_pass is None:
        return {"put"}
    if os.environ.get("MPS_OPS_PUT_BIN_BYTES", "0") != "0" and self.is_contiguous() and self.numel() > 1:
        return {"put_bin_count", "put_bin_scatter", one_pass.replace("put_", "put_bin_")}
    return {one_pass}


def _check(self, index, source, accumulate, deterministic=True):
    # Repeated targets are resolved in index's logical order. The CPU walks
    # index and source in TensorIterator's order, their memory order, which
    # differs from the logical one when they are transposed: the reference
    # gets contiguous copies.
    expected = _put(self.clone(), index.contiguous(), source.contiguous(), accumulate)
    target = self.clone()
    with deterministic_algorithms(deterministic):
        actual, dispatches = run_on_kernels(_put, target, index, source, accumulate)
    kernels = _expected_kernels(target, accumulate, deterministic)
    assert {d.kernel.split("_dense_")[0] for d in dispatches} & PUT_KERNELS == kernels
    kernel = "put_store" if "put_store" in kernels or "put_bin_store" in kernels else \
        "put_add" if "put_add" in kernels or "put_bin_add" in kernels else "put"
    flat = index.reshape(-1).remainder(max(self.numel(), 1))
    repeats = flat.bincount().max().item()
    if kernel == "put_store" and repeats > 1:
        _assert_one_of_the_writes_won(actual, self, index.contiguous(), source.contiguous())
    elif kernel == "put_add" and self.dtype.is_floating_point and repeats > 1:
        # The same sums in another order, rounding in self's dtype at each
        # step: a few roundings per repeat of the largest partial sum apart.
        scale = torch.zeros(self.numel()).index_add_(0, flat, source.contiguous().reshape(-1).float().abs())
        bound = torch.finfo(self.dtype).eps * (repeats + 1) * (scale + self.float().abs().reshape(-1))
        assert ((actual.float() - expected.float()).abs().reshape(-1) <= bound).all()
    elif expected.dtype.is_floating_point:
        assert torch.equal(actual, expected), (actual - expected).abs().max()
    else:
        assert_matches(actual, expected)


# Bins of 4 bytes: one to four elements each (the most bins); of 64: a few.
BIN_SIZES = pytest.mark.parametrize("bin_bytes", [None, 4, 64], ids=["sizes_decide", "bins_4", "bins_64"])


@pytest.mark.parametrize("deterministic", [True, False], ids=["index_order", "any_order"])
@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(7, 9), (8, 9)], ids=["odd_bytes", "whole_words"])
@BIN_SIZES
def test_repeated_targets(bin_bytes, shape, dtype, accumulate, deterministic):
    torch.manual_seed(0)
    self = _values(shape, dtype)
    # Many repeats of few targets, with -1 and numel - 1 naming one element.
    index = torch.randint(-63, 63, (500,))
    index[::50] = -1
    index[1::50] = 62
    with put_bins(bin_bytes):
        _check(self, index, _values((500,), dtype), accumulate, deterministic)


@pytest.mark.parametrize("deterministic", [True, False], ids=["index_order", "any_order"])
@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("layout", ["transposed", "strided", "zero_dim"])
@pytest.mark.parametrize("binned", [False, True], ids=["sizes_decide", "bins_asked"])
def test_self_layouts(layout, accumulate, deterministic, binned):
    """(Bins asked for: only a contiguous self takes them, so these go straight
    to their targets still.)"""
    torch.manual_seed(1)
    self = {"transposed": torch.randn(9, 7).t(), "strided": torch.randn(6, 20)[:, ::3],
            "zero_dim": torch.tensor(2.5)}[layout]
    n = self.numel()
    index = torch.randint(-n, n, (4, 10))
    with put_bins(16 if binned else None):
        _check(self, index, torch.randn(40), accumulate, deterministic)
        # Non-contiguous index and source, read in their logical order.
        _check(self, index.t(), torch.randn(20, 4)[::2].t(), accumulate, deterministic)


def _thread_limit(limit):
    if limit is None:
        return contextlib.nullcontext()
    if mps_ops.backend != "emulator":
        pytest.skip("a pipeline's thread limit is set on the emulator only")
    return mps_ops.emulator.pipeline_thread_limit(limit)


@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32, torch.uint8, torch.int64])
@pytest.mark.parametrize("bin_bytes", [4, 256], ids=["most_bins", "bins_256"])
@pytest.mark.parametrize("thread_limit, numel", [(None, 3001), (None, 4096), (96, 3001), (96, 3072)],
                         ids=["256_threads", "256_threads_every_bin", "pipeline_of_96", "pipeline_of_96_every_bin"])
def test_bins_across_threadgroups(thread_limit, numel, bin_bytes, dtype, accumulate):
    """More indices than one threadgroup takes (2048) and up to the most bins
    (two per thread; 4-byte bins need more, so they widen: 4096 float32
    elements to exactly 512 bins), also where the pipelines allow fewer
    threads (96: 192 bins at most, 3072 float32 elements exactly; 768 indices
    a group): every write reaches its target once. Small whole sources: every
    sum is exact in any order."""
    torch.manual_seed(2)
    self = torch.randint(0, 3, (numel,)).to(dtype)
    index = torch.randint(-numel, numel, (10000,))
    index[-7:] = numel - 1  # the last element, in the last group's tail
    source = torch.randint(1, 3, (10000,)).to(dtype)
    with put_bins(bin_bytes), _thread_limit(thread_limit):
        _check(self, index, source, accumulate, deterministic=False)


@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("thread_limit", [None, 96], ids=["256_threads", "pipeline_of_96"])
def test_bins_around_an_index_out_of_range(thread_limit, accumulate):
    """An index out of range in the first threadgroup: put_ raises the CPU's
    IndexError, and every other write, in every group, has landed (the
    groups after it take their slots from the counts that skipped it)."""
    torch.manual_seed(3)
    numel, n = 3001, 10000
    self = torch.randint(0, 3, (numel,)).float()
    index = torch.randint(-numel, numel, (n,))
    index[100] = numel
    source = torch.randint(1, 3, (n,)).float()
    keep = torch.arange(n) != 100
    expected = _put(self.clone(), index[keep], source[keep], accumulate)
    target, dev_index, dev_source = to_device((self.clone(), index, source))
    with pytest.raises(IndexError, match="out of range"), put_bins(64), _thread_limit(thread_limit), \
            mps_ops.profile() as prof, emulate(), deterministic_algorithms(False):
        _put(target, dev_index, dev_source, accumulate)
    assert {d.kernel.split("_dense_")[0] for d in prof.dispatches} & PUT_KERNELS == {
        "put_bin_count", "put_bin_scatter", "put_bin_add" if accumulate else "put_bin_store"}
    written = target.cpu()
    if accumulate:
        assert torch.equal(written, expected)
    else:
        _assert_one_of_the_writes_won(written, self, index[keep], source[keep])


@pytest.mark.parametrize("case", ["binned", "small_self", "few_indices"])
def test_sizes_decide_bins(case):
    """Without MPS_OPS_PUT_BIN_BYTES, put_ bins a self of 64 MiB or more that
    takes at least an eighth as many indices as it has elements (take.mm's
    put_bin_shift). On the emulator the kernels are bound, not run."""
    numel = (64 << 20) // 4 if case != "small_self" else (32 << 20) // 4
    n = numel // 8 - (case == "few_indices")
    self = torch.zeros(numel, device=device())
    index = torch.randint(0, numel, (n,), device=device())
    source = torch.ones(n, device=device())
    dry = mps_ops.emulator.dry_run() if mps_ops.backend == "emulator" else contextlib.nullcontext()
    with put_bins(None), mps_ops.profile() as prof, emulate(), dry:
        self.put_(index, source, accumulate=True)
    kernels = [d.kernel.split("_dense_")[0] for d in prof.dispatches if d.kernel.startswith("put")]
    assert kernels == (["put_bin_count", "put_bin_scatter", "put_bin_add"] if case == "binned" else ["put_add"])
    if mps_ops.backend != "emulator":  # there the kernels ran: each element got its indices' ones
        assert torch.equal(self.cpu(), torch.bincount(index.cpu(), minlength=numel).float())


def test_integer_accumulation_wraps_like_the_cpu():
    self = torch.tensor([120, -120, 0], dtype=torch.int8)
    index = torch.tensor([0, 0, 1, 1, 2])
    _check(self, index, torch.tensor([100, 100, -100, -100, 7], dtype=torch.int8), accumulate=True)


@pytest.mark.parametrize("deterministic", [True, False], ids=["index_order", "any_order"])
@pytest.mark.parametrize("size", [1, 2], ids=["sorted", "in_words"])
def test_half_accumulation_rounds_at_each_step(size, deterministic):
    # 1 + 2**-11 is not a half: eight such additions round away on the CPU,
    # in any order (the sources are equal), through the sort or through the
    # word's compare-and-swap.
    self = torch.ones(size, dtype=torch.float16)
    index = torch.zeros(8, dtype=torch.long)
    source = torch.full((8,), 2**-11, dtype=torch.float16)
    expected = _put(self.clone(), index, source, True)
    with deterministic_algorithms(deterministic):
        actual, dispatches = run_on_kernels(_put, self.clone(), index, source, True)
    assert torch.equal(actual, expected)
    kernel = _one_pass_kernel(self, True, deterministic) or "put"
    assert kernel == ("put_add" if size == 2 and not deterministic else "put")
    assert {d.kernel.split("_dense_")[0] for d in dispatches} == {kernel}


@pytest.mark.parametrize("deterministic, binned", [(True, False), (False, False), (False, True)],
                         ids=["index_order", "any_order", "any_order_bins_asked"])  # (bins: any order only)
@pytest.mark.parametrize("case", [
    "out_of_range", "negative_out_of_range", "int_index", "dtype_mismatch", "numel_mismatch",
    "empty_self", "expanded_self",
])
def test_errors_are_the_cpus(case, deterministic, binned):
    self, index, source = torch.zeros(3, 4), torch.tensor([0, 5]), torch.ones(2)
    if case == "out_of_range":
        index = torch.tensor([0, 12])
    elif case == "negative_out_of_range":
        index = torch.tensor([-13, 0])
    elif case == "int_index":
        index = index.int()
    elif case == "dtype_mismatch":
        source = source.half()
    elif case == "numel_mismatch":
        source = torch.ones(3)
    elif case == "empty_self":
        self = torch.zeros(0)
    elif case == "expanded_self":
        self = torch.zeros(1, 4).expand(3, 4)
    with pytest.raises(Exception) as cpu_error:
        _put(self.clone() if case != "expanded_self" else self, index, source, False)
    target, index, source = to_device((self.clone() if case != "expanded_self" else self, index, source))
    # (The one-pass kernel checks its indices as it reads them; the sort's
    # path, before it sorts.)
    with pytest.raises(Exception) as our_error, emulate(), deterministic_algorithms(deterministic), \
            put_bins(4 if binned else None):
        _put(target, index, source, False)
    assert type(our_error.value) is type(cpu_error.value), (our_error.value, cpu_error.value)
    assert str(our_error.value).split("\n")[0] == str(cpu_error.value).split("\n")[0]


def test_float64_is_refused():
    target, index, source = to_device((torch.zeros(3, dtype=torch.float64), torch.tensor([0]),
                                       torch.ones(1, dtype=torch.float64)))
    with pytest.raises(TypeError, match="put_.*float64"), emulate():
        target.put_(index, source)


# Property: any self shape and layout, any index (repeats and negative aliases
# included), either accumulation and either order, matches the CPU on
# contiguous index and source.
@settings(max_examples=60, deadline=None, derandomize=True)
@given(shape=st.lists(st.integers(1, 5), min_size=0, max_size=3),
       transposed=st.booleans(),
       picks=st.lists(st.integers(-10**6, 10**6), min_size=1, max_size=40),
       accumulate=st.booleans(),
       deterministic=st.booleans(),
       dtype=st.sampled_from([torch.float32, torch.float16, torch.int32, torch.int8, torch.bool]),
       bin_bytes=st.sampled_from([None, 2, 8]))
def test_put_property(shape, transposed, picks, accumulate, deterministic, dtype, bin_bytes):
    torch.manual_seed(len(picks))
    self = _values(shape, dtype)
    if transposed and self.dim() >= 2:
        self = self.transpose(0, -1)
    n = self.numel()
    index = torch.tensor([p % (2 * n) - n for p in picks])  # spans [-n, n)
    with put_bins(bin_bytes):
        _check(self, index, _values((len(picks),), dtype), accumulate, deterministic)


@pytest.mark.parametrize("index", [[0, 12], [-13, 0], [3, 2**40], [-(2**40), 1]], ids=str)
def test_take_out_of_range_is_the_cpus_error(index):
    """take checks its indices in its kernel (a flag) and, only when one is
    out of range, finds it for the CPU's message."""
    self, index = torch.arange(12.0).reshape(3, 4), torch.tensor(index)
    with pytest.raises(IndexError) as cpu_error:
        torch.take(self, index)
    with pytest.raises(IndexError) as our_error:
        run_on_kernels(torch.take, self, index)
    assert str(our_error.value).split("\n")[0] == str(cpu_error.value).split("\n")[0]


@pytest.mark.skipif(mps_ops.backend == "emulator",
                    reason="2**31 + 8 indices with their sources (26 GiB): a GPU's memory, not CI's")
def test_more_than_2_31_indices_go_in_two_dispatches():
    """take's and put_'s one pass dispatch 2**31 - 1 positions at a time (32-bit
    thread indices): the second dispatch's positions must land too."""
    n = 2**31 + 8
    index = torch.arange(4, device=device()).repeat(n // 4)
    values = torch.arange(4, dtype=torch.int32, device=device()) + 1
    with mps_ops.profile() as prof, emulate():
        taken = torch.take(values, index)
        del index
        index = torch.arange(4, device=device()).repeat(n // 4)
        target = torch.zeros(4, dtype=torch.int32, device=device())
        target.put_(index, taken, accumulate=True)
    assert [d.kernel for d in prof.dispatches if d.kernel.startswith(("take_", "put_"))] == \
        ["take_dense_int_int"] * 2 + ["put_add_dense_int_int"] * 2
    # Each target adds its value n / 4 times, wrapping in int32 as the
    # product's int32 does.
    assert torch.equal(target.cpu(), (torch.arange(4, dtype=torch.int32) + 1) * (n // 4))


def test_positions_past_2_32_land_where_the_cpus_would():
    """Past 2**32 - 1 elements a position needs 64-bit arithmetic: take,
    put_store and put_add then decompose it in 64 bits (flat_offset's wide
    way; below that, 32-bit divisions). A uint8 self of
    2**32 + 8 elements (4 GiB in whole 32-bit words, so put_add may add
    through them; no copy made of it): the positions past 2**32 land where
    the CPU's would, and nothing else changes. The emulator's kernels run
    with checked mode off: its guard-page copies of the 4 GiB around each
    dispatch took 44 of the test's 55 s, and every access still goes through
    its bounds-checked pointers, which raise at any offset outside a buffer."""
    numel = 2**32 + 8
    self = torch.zeros(numel, dtype=torch.uint8, device=device())
    self[2**32:2**32 + 6] = torch.arange(1, 7, dtype=torch.uint8, device=device())
    index = torch.tensor([-3, 2**32 + 1, 7, 2**32, -3], device=device())  # -3: 2**32 + 5
    source = torch.tensor([10, 20, 30, 40, 50], dtype=torch.uint8, device=device())

    def nonzero_elements():
        """{position: value} of self's nonzero elements (no 4 GiB copy)."""
        positions = self.nonzero().flatten().cpu()
        return dict(zip(positions.tolist(), self.cpu()[positions].tolist()))

    unchecked = mps_ops.emulator.checked(False) if mps_ops.backend == "emulator" else contextlib.nullcontext()
    with mps_ops.profile() as prof, emulate(), unchecked:
        taken = torch.take(self, index)
        self.put_(index[1:4], source[1:4])
        stored = nonzero_elements()
        self.put_(index, source, accumulate=True)
    assert torch.equal(taken.cpu(), torch.tensor([6, 2, 0, 1, 6], dtype=torch.uint8))
    before = {2**32 + k: k + 1 for k in range(6)}
    assert stored == {**before, 2**32 + 1: 20, 7: 30, 2**32: 40}
    assert nonzero_elements() == {**before, 2**32: 80, 2**32 + 1: 40, 7: 60, 2**32 + 5: 6 + 10 + 50}
    kernels = [d.kernel.split("_dense_")[0] for d in prof.dispatches if d.kernel.startswith(("take", "put"))]
    assert kernels == ["take", "put_store", "put_add"]
