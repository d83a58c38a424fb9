"""index_reduce_, index_reduce and index_reduce.out (fills: torch 2.9 to
2.11 lack them on MPS). Each target's values are combined in index order,
float32 and integers step for step as the CPU's serial loop (its bits),
half and bfloat16 in float (the float64 result rounded): every reduction,
with and without self, every dtype, dim and layout; long runs (integers
wrapping and floor-divided); NaN and signed zeros; gradients through it;
the out= and in-place forms; the CPU's errors; more than 2**31 elements (a
GPU's memory)."""

from __future__ import annotations

import pytest
import torch

import mps_ops
from helpers import (
    assert_at_least_as_accurate, assert_errors_match, assert_near_truth, errors_of_cpu_and_ours, in_layout,
    run_on_kernels,
)
from mps_ops.testing import device, emulate

LAYOUTS_TESTED_HERE = {"index_reduce"}

REDUCTIONS = ["prod", "mean", "amax", "amin"]
DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16, torch.int8,
          torch.uint8]


def values(shape, dtype, seed):
    """Values a dtype holds, small enough that products of a few stay finite
    (integers: -4 to 4; uint8: 0 to 8)."""
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=g) * 2).to(dtype)
    low = 0 if dtype == torch.uint8 else -4
    return torch.randint(low, low + 9, shape, generator=g).to(dtype)


def assert_same(ours, cpu):
    """Equal values, NaN where the CPU's is, zeros of the CPU's sign; the
    CPU's layout."""
    assert ours.dtype == cpu.dtype and ours.shape == cpu.shape and ours.stride() == cpu.stride()
    torch.testing.assert_close(ours, cpu, rtol=0, atol=0, equal_nan=True)
    if cpu.is_floating_point():
        numbers = ~cpu.isnan()
        assert torch.equal(ours.signbit()[numbers], cpu.signbit()[numbers]), "a zero of the other sign"


def assert_like_the_cpu(ours, cpu, truth):
    """The CPU's bits, or for half and bfloat16 (which the CPU rounds at every
    step, ours once) the float64 result `truth` rounded, no further from it
    than the CPU's."""
    if cpu.dtype not in (torch.float16, torch.bfloat16):
        assert_same(ours, cpu)
        return
    assert_near_truth(ours, truth, cpu.dtype)
    assert_at_least_as_accurate(ours, cpu, truth)


def run_both(fn, *args):
    cpu = fn(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
    ours, dispatches = run_on_kernels(fn, *args)
    return ours, cpu, dispatches


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("include_self", [True, False], ids=["self", "no self"])
@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_matches_the_cpu(dtype, reduce, include_self, dim):
    """A 3-D self; 9 indices onto 4 targets along dim (one never indexed,
    one four times). float32 and integers: the CPU's bits; half and
    bfloat16: the float64 result rounded, as near as the CPU's (which
    rounds every step)."""
    self = values((4, 5, 4) if dim != 1 else (3, 4, 5), dtype, 1)
    index = torch.tensor([3, 0, 3, 1, 3, 0, 1, 3, 0])
    shape = list(self.shape)
    shape[dim] = 9
    source = values(shape, dtype, 2)
    def call(s, i, x):
        return s.index_reduce_(dim, i, x, reduce, include_self=include_self)

    truth = call(self.double(), index, source.double())  # before our in-place call (the emulator's self is this one)
    ours, cpu, dispatches = run_both(call, self, index, source)
    assert [d.op for d in dispatches] == ["index_reduce"]
    assert_like_the_cpu(ours, cpu, truth)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.uint8, torch.int8], ids=str)
@pytest.mark.parametrize("include_self", [True, False], ids=["self", "no self"])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_long_runs(dtype, include_self, rank):
    """3000 repeats of one target: float32 and integers as the CPU (uint8's
    and int8's counts wrap; uint8's to 0 at 256 counts 1, as the CPU's
    masked_fill makes it); half and bfloat16 summed in float, where the CPU
    rounds each step and, but for a 2-D self, stops counting at 2048 or
    256."""
    shape = {1: (2,), 2: (2, 6), 3: (2, 3, 2)}[rank]
    self = values(shape, dtype, 3)
    index = torch.zeros(3000, dtype=torch.long)
    index[::7] = 1
    source = values((3000, *shape[1:]), dtype, 4)
    # (Products of 2,500 floats near 1: a float64 truth that float holds.)
    near_one = torch.exp(values(source.shape, torch.float32, 5) / 64).to(dtype) if dtype.is_floating_point else source
    for reduce, source in (("mean", source), ("prod", near_one), ("amax", source)):
        def call(s, i, x):
            return torch.index_reduce(s, 0, i, x, reduce, include_self=include_self)

        ours, cpu, _ = run_both(call, self, index, source)
        assert_like_the_cpu(ours, cpu, call(self.double(), index, source.double()))


@pytest.mark.parametrize("reduce", ["amax", "amin", "prod", "mean"])
def test_nan_and_signed_zeros_are_the_cpus(reduce):
    self = torch.tensor([[0.0, -0.0, float("nan"), 1.0], [2.0, 3.0, 4.0, 5.0]])
    source = torch.tensor([[-0.0, 0.0, 1.0, float("nan")], [float("nan"), -0.0, 0.0, float("inf")],
                           [1.0, 2.0, -float("inf"), 0.0]])
    for include_self in (True, False):
        ours, cpu, _ = run_both(lambda s, x: s.index_reduce_(0, torch.tensor([0, 0, 1]), x, reduce,
                                                             include_self=include_self), self, source)
        assert_same(ours, cpu)


@pytest.mark.parametrize("include_self", [True, False], ids=["self", "no self"])
@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_gradients_are_the_cpus(reduce, include_self):
    """Autograd through index_reduce (torch's backward formula over our
    forward's result): the CPU's gradients for self and source."""
    self, source = values((5, 3), torch.float32, 14), values((6, 3), torch.float32, 15)
    index, weights = torch.tensor([0, 4, 0, 2, 4, 4]), values((5, 3), torch.float32, 16)

    def gradients(s, x, i, w):
        s, x = s.clone().requires_grad_(), x.clone().requires_grad_()
        loss = (torch.index_reduce(s, 0, i, x, reduce, include_self=include_self) * w).sum()
        return torch.autograd.grad(loss, (s, x))

    expected = gradients(self, source, index, weights)
    ours, dispatches = run_on_kernels(gradients, self, source, index, weights)
    assert "index_reduce" in [d.op for d in dispatches]
    for mine, theirs in zip(ours, expected):
        torch.testing.assert_close(mine, theirs, rtol=1e-5, atol=1e-6)


def _layouts():
    self = values((6, 5), torch.float32, 5)
    source = values((7, 5), torch.float32, 6)
    index = torch.tensor([5, 0, 5, 2, 2, 5, 1])
    return {
        "transposed self": (in_layout(self, "transposed"), 0, index, source),
        "strided source": (self, 0, index, in_layout(source, "strided")),
        "expanded source": (self, 0, index, in_layout(source, "expanded")),
        "transposed, dim 1": (in_layout(self, "transposed"), 1, index % 5,
                              in_layout(values((6, 7), torch.float32, 11), "transposed")),
        "int32 index": (self, 0, index.int(), source),
        "strided index": (self, 0, torch.stack([index, index], 1)[:, 0], source),
        "0-dim": (torch.tensor(3.0), 0, torch.tensor([0]), torch.tensor(2.0)),
        "0-dim index": (torch.tensor(3.0), 0, torch.tensor(0), torch.tensor(2.0)),
        "1-D": (torch.tensor([1.0, 2.0, 3.0]), 0, torch.tensor([2, 2, 0]), torch.tensor([4.0, 5.0, 6.0])),
        "empty index": (self, 0, torch.tensor([], dtype=torch.long), source[:0]),
        "empty self": (torch.ones(0, 4), 1, torch.tensor([0, 3]), torch.ones(0, 2)),
    }


@pytest.mark.parametrize("layout", _layouts().keys())
@pytest.mark.parametrize("form", ["inplace", "functional", "out"])
def test_layouts(form, layout):
    """In place into self's own layout; the functional result contiguous
    (the CPU's); out= resized from empty."""
    self, dim, index, source = _layouts()[layout]

    def call(s, i, x):
        if form == "inplace":
            return s.index_reduce_(dim, i, x, "mean", include_self=False)
        if form == "functional":
            return torch.index_reduce(s, dim, i, x, "amin")
        return torch.index_reduce(s, dim, i, x, "prod", out=torch.empty(0, dtype=s.dtype))

    ours, cpu, dispatches = run_both(call, self, index, source)
    assert_same(ours, cpu)
    assert len([d for d in dispatches if d.op == "index_reduce"]) == (index.numel() > 0 and self.numel() > 0)


def test_out_may_be_self_and_keeps_its_layout():
    self = values((4, 3), torch.float32, 7)
    source = values((2, 3), torch.float32, 8)
    ours, cpu, _ = run_both(lambda s, x: torch.index_reduce(s, 0, torch.tensor([1, 1]), x, "prod", out=s),
                            self, source)
    assert_same(ours, cpu)
    out = torch.empty(3, 4).t()
    ours, cpu, _ = run_both(lambda s, x, o: torch.index_reduce(s, 0, torch.tensor([1, 3]), x, "amax", out=o),
                            self, source, out)
    assert_same(ours, cpu)


@pytest.mark.parametrize("bad", [-1, 4, 2**40])
def test_an_index_out_of_range_raises_the_cpus_index_error(bad):
    self, source = values((4, 3), torch.float32, 9), values((3, 3), torch.float32, 10)
    index = torch.tensor([0, bad, 1])
    cpu, ours = errors_of_cpu_and_ours(lambda s, i, x: s.index_reduce_(0, i, x, "prod"), self, index, source)
    assert str(ours) == str(cpu)


def test_the_cpus_errors():
    self, source, index = torch.ones(3, 4), torch.ones(2, 4), torch.tensor([0, 2])
    call = torch.Tensor.index_reduce_
    assert_errors_match(lambda s, i, x: call(s, 0, i, x, "sum"), self, index, source)
    assert_errors_match(lambda s, i, x: call(s, 0, i, x, "prod"), self, index.reshape(1, 2), source)
    assert_errors_match(lambda s, i, x: call(s, 0, i, x, "prod"), self, index.float(), source)
    assert_errors_match(lambda s, i, x: call(s, 0, i, x, "prod"), self, index, source.half())
    assert_errors_match(lambda s, i, x: call(s, 0, i, x, "prod"), self, torch.tensor([0, 1, 2]), source)
    assert_errors_match(lambda s, i, x: call(s, 0, i, x, "prod"), self, index, torch.ones(2, 3))
    assert_errors_match(lambda s, i, x: call(s, 2, i, x, "prod"), self, index, source)
    assert_errors_match(lambda s, i, x: call(s, 0, i, x, "prod"), self, index, self[:2])  # shares self's memory
    assert_errors_match(lambda s, i, x: torch.index_reduce(s, 0, i, x, "prod", out=torch.empty(3, 4).double()),
                        self, index, source, same_words=False)  # ours names the op and device
    # bool: the CPU's 1-D path raises (its others take bool; ours never does)
    cpu, ours = errors_of_cpu_and_ours(lambda s, i, x: call(s, 0, i, x, "amax"), self[0].bool(), index,
                                       source[:, 0].bool())
    assert "Bool" in str(ours) and "index_func_" in str(ours)


def test_float64_is_refused_clearly():
    with pytest.raises(TypeError, match="index_reduce.*float64"):
        run_on_kernels(lambda s, i, x: s.index_reduce_(0, i, x, "prod"), torch.ones(3, dtype=torch.float64),
                       torch.tensor([0]), torch.ones(1, dtype=torch.float64))


@pytest.mark.skipif(mps_ops.backend == "emulator", reason="2**31 + 8 elements (8 GiB): a GPU's memory")
def test_past_2_to_the_31_elements():
    n = 2**31 + 8
    self = torch.ones(n, device=device())
    index = torch.tensor([0, n - 1, n - 1, 2**31], device=device())
    source = torch.tensor([2.0, 3.0, 4.0, 5.0], device=device())
    with emulate():
        self.index_reduce_(0, index, source, "prod")
    assert self[[0, n - 1, 2**31, 2**31 - 1]].tolist() == [2.0, 12.0, 5.0, 1.0]
