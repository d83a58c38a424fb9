"""_jagged_to_padded_dense_forward and _padded_dense_to_jagged_forward
(fills for every torch release: a nested jagged tensor's to_padded_tensor
and its construction from a padded tensor raised on a Mac), against the
CPU: every dtype each takes, values of 1 to 3 dims, batch items empty,
cut at the padded rows or filling them, the padding value as the CPU casts
it, layouts, empty shapes, the CPU's errors in its order, and more than
2**31 elements (a GPU's memory)."""

from __future__ import annotations

import pytest
import torch

import mps_ops
from helpers import errors_of_cpu_and_ours, in_layout, run_on_kernels
from mps_ops.testing import device, emulate

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"_jagged_to_padded_dense_forward", "_padded_dense_to_jagged_forward"}

aten = torch.ops.aten
TO_PADDED, TO_JAGGED = aten._jagged_to_padded_dense_forward, aten._padded_dense_to_jagged_forward

# Lengths 2, 0, 4, 1 and 0: 7 jagged rows.
OFFSETS = torch.tensor([0, 2, 2, 6, 7, 7])
PADDED_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
                 torch.int8, torch.uint8, torch.bool]
JAGGED_DTYPES = PADDED_DTYPES + [torch.complex64, torch.uint16, torch.uint32, torch.uint64]


def _values(rows, trailing, dtype):
    x = torch.randn(rows, *trailing) * 10
    if dtype.is_complex:
        return torch.complex(x, -x).to(dtype)
    return x.to(dtype) if dtype != torch.bool else x > 0


def _bits(t):
    """t's elements as integers of their size: equal bits, NaNs too."""
    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def _check(fn, *args):
    expected = fn(*args)
    actual, dispatches = run_on_kernels(fn, *args)
    assert dispatches, "no kernel ran"
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert torch.equal(_bits(actual), _bits(expected))
    return actual


@pytest.mark.parametrize("dtype", PADDED_DTYPES, ids=str)
@pytest.mark.parametrize("trailing", [(), (3,), (2, 5), (37, 29)], ids=str)
@pytest.mark.parametrize("max_length", [1, 3, 4, 9], ids=str)
def test_to_padded_matches_the_cpu(dtype, trailing, max_length):
    """Lengths cut at max_length (1 and 3 cut some) or padded up to it."""
    torch.manual_seed(0)
    _check(lambda v, o: TO_PADDED(v, [o], [max_length], -2.5), _values(7, trailing, dtype), OFFSETS)


@pytest.mark.parametrize("dtype", JAGGED_DTYPES, ids=str)
@pytest.mark.parametrize("trailing", [(), (3,), (2, 5), (37, 29)], ids=str)
@pytest.mark.parametrize("total", [7, None], ids=["total_L", "no total_L"])
def test_to_jagged_matches_the_cpu(dtype, trailing, total):
    torch.manual_seed(0)
    _check(lambda d, o: TO_JAGGED(d, [o], total), _values(5, (4, *trailing), dtype), OFFSETS)


def test_a_round_trip_gives_the_values_back():
    values = torch.randn(7, 3)
    padded, _ = run_on_kernels(lambda v, o: TO_PADDED(v, [o], [4], 0.0), values, OFFSETS)
    back, _ = run_on_kernels(lambda d, o: TO_JAGGED(d, [o], 7), padded, OFFSETS)
    assert torch.equal(back, values)


@pytest.mark.parametrize("dtype,padding", [(torch.uint8, -1.0), (torch.int8, 300.0), (torch.int32, float("nan")),
                                           (torch.int64, -7.9), (torch.bool, 0.5), (torch.bool, 0.0),
                                           (torch.float16, 1e6), (torch.bfloat16, float("-inf")),
                                           (torch.float32, float("nan")), (torch.int16, 1e9)], ids=str)
def test_the_padding_value_is_cast_as_the_cpus(dtype, padding):
    """No range check: -1 is uint8's 255, 300 int8's 44, as the CPU's cast."""
    _check(lambda v, o: TO_PADDED(v, [o], [4], padding), _values(7, (2,), dtype), OFFSETS)


LAYOUTS = {
    "transposed": lambda: torch.randn(3, 7).t(),
    "strided": lambda: in_layout(torch.randn(7, 3), "strided"),
    "expanded": lambda: torch.randn(1, 3).expand(7, 3),
    "offset": lambda: torch.randn(9, 3)[2:],
}


@pytest.mark.parametrize("layout", LAYOUTS.keys())
def test_layouts(layout):
    """Values and padded inputs of any layout (made contiguous); offsets of
    int32 and on the CPU too (moved to the device, read there)."""
    values = LAYOUTS[layout]()
    _check(lambda v, o: TO_PADDED(v, [o], [4], 1.0), values, OFFSETS)
    padded = TO_PADDED(values, [OFFSETS], [4], 1.0)
    _check(lambda d, o: TO_JAGGED(d.transpose(1, 2).contiguous().transpose(1, 2), [o], 7), padded, OFFSETS)
    _check(lambda v, o: TO_PADDED(v, [o], [4], 1.0), values, OFFSETS.int())
    with torch.device(device()), emulate():
        actual = TO_PADDED(values.to(device()), [OFFSETS], [4], 1.0)  # offsets left on the CPU
    assert torch.equal(actual.cpu(), TO_PADDED(values, [OFFSETS], [4], 1.0))


@pytest.mark.parametrize("start", [0, 1, 2, 4], ids=lambda s: f"start {s}")
@pytest.mark.parametrize("dtype", [torch.float16, torch.uint8], ids=str)
def test_inputs_that_start_inside_their_buffer(start, dtype):
    """Rows of 8 bytes are moved as 8-byte integers where the input starts on
    8 bytes; an input starting `start` elements into its buffer takes
    narrower moves, the same result."""
    moved = {1: "uchar", 2: "short", 4: "int", 0: "long"}[(start * dtype.itemsize) % 8]
    values = _values(7 * 8 // dtype.itemsize + start, (), dtype)[start:].view(7, -1)
    padded = _values(5 * 4 * 8 // dtype.itemsize + start, (), dtype)[start:].view(5, 4, -1)
    for fn, tensor in [(lambda v, o: TO_PADDED(v, [o], [4], 3.0), values), (lambda d, o: TO_JAGGED(d, [o], 7), padded)]:
        _check(fn, tensor, OFFSETS)
        _, dispatches = run_on_kernels(fn, tensor, OFFSETS)
        assert dispatches[0].kernel.endswith(f"_{moved}_{moved}")


@pytest.mark.parametrize("case", ["no batches", "no rows", "no elements a row", "no padded rows"])
def test_empty_shapes(case):
    values, offsets, max_length = {
        "no batches": (torch.randn(0, 3), torch.tensor([0]), 4),
        "no rows": (torch.randn(0, 3), torch.tensor([0, 0, 0]), 4),
        "no elements a row": (torch.randn(7, 0), OFFSETS, 4),
        "no padded rows": (torch.randn(7, 3), OFFSETS, 0),
    }[case]
    padded = TO_PADDED(values, [offsets], [max_length], 0.0)
    assert torch.equal(run_on_kernels(lambda v, o: TO_PADDED(v, [o], [max_length], 0.0), values, offsets)[0], padded)
    if max_length >= 4:
        expected = TO_JAGGED(padded, [offsets], values.size(0))
        actual, _ = run_on_kernels(lambda d, o: TO_JAGGED(d, [o], values.size(0)), padded, offsets)
        assert actual.shape == expected.shape and torch.equal(actual, expected)


def test_offsets_that_start_past_zero_leave_rows_before_them():
    """Jagged rows before the first offset are read by no batch item."""
    offsets = torch.tensor([2, 4, 7])
    _check(lambda v, o: TO_PADDED(v, [o], [3], 0.0), torch.randn(7, 2), offsets)


def test_a_length_back_past_the_padded_rows_pads_as_the_cpus():
    """A negative length of at least the padded rows: the CPU's slices of
    both sides are empty, so the item is all padding (a shorter negative
    one raises: test_bad_offsets_raise)."""
    _check(lambda v, o: TO_PADDED(v, [o], [4], 3.0), torch.randn(7, 2), torch.tensor([0, 6, 1, 7]))


def test_a_nested_jagged_tensors_parts_pad_as_its_to_padded_tensor():
    """What a nested jagged tensor's to_padded_tensor hands the op: its
    values and offsets. (The emulator's routing is a dispatch mode, which
    the nested tensor's own dispatch runs beneath: the call itself reaches
    the fill on a Mac only.)"""
    nested = torch.nested.nested_tensor([torch.randn(2, 3), torch.randn(5, 3), torch.randn(1, 3)],
                                        layout=torch.jagged)
    actual, _ = run_on_kernels(lambda v, o: TO_PADDED(v, [o], [5], -1.0), nested.values(), nested.offsets())
    assert torch.equal(actual, nested.to_padded_tensor(-1.0))


ERRORS = {
    "offsets of 2 dims": lambda: TO_PADDED(torch.randn(7, 3), [OFFSETS.view(2, 3)], [4], 0.0),
    "two offsets": lambda: TO_PADDED(torch.randn(7, 3), [OFFSETS, OFFSETS], [4, 4], 0.0),
    "two max lengths": lambda: TO_PADDED(torch.randn(7, 3), [OFFSETS], [4, 4], 0.0),
    "0-dim values": lambda: TO_PADDED(torch.tensor(1.0), [OFFSETS], [4], 0.0),
    "negative max length": lambda: TO_PADDED(torch.randn(7, 3), [OFFSETS], [-1], 0.0),
    "no offsets": lambda: TO_PADDED(torch.randn(7, 3), [torch.tensor([], dtype=torch.long)], [4], 0.0),
    "complex values": lambda: TO_PADDED(torch.randn(7, 3, dtype=torch.complex64), [OFFSETS], [4], 0.0),
    "uint16 values": lambda: TO_PADDED(torch.ones(7, 3, dtype=torch.uint16), [OFFSETS], [4], 0.0),
    "to jagged, offsets of 2 dims": lambda: TO_JAGGED(torch.randn(5, 4, 3), [OFFSETS.view(2, 3)], 7),
    "to jagged, padded of 1 dim": lambda: TO_JAGGED(torch.randn(5), [OFFSETS], 7),
    "to jagged, padded of 1 dim, total wrong": lambda: TO_JAGGED(torch.randn(5), [OFFSETS], 8),
    "to jagged, total wrong": lambda: TO_JAGGED(torch.randn(5, 4, 3), [OFFSETS], 8),
    "to jagged, no batches, total wrong": lambda: TO_JAGGED(torch.randn(5, 4, 3), [torch.tensor([0])], 2),
    "to jagged, no offsets": lambda: TO_JAGGED(torch.randn(5, 4, 3), [torch.tensor([], dtype=torch.long)], 0),
    "to jagged, batch longer than the padded rows": lambda: TO_JAGGED(torch.randn(5, 3, 3), [OFFSETS], 7),
    "to jagged, more batches than padded": lambda: TO_JAGGED(torch.randn(4, 4, 3), [OFFSETS], 7),
    "to jagged, no padded rows": lambda: TO_JAGGED(torch.randn(5, 0, 3), [OFFSETS], 7),
    "to jagged, no elements a row, total wrong": lambda: TO_JAGGED(torch.randn(5, 4, 0), [OFFSETS], 6),
}


@pytest.mark.parametrize("name", ERRORS.keys())
def test_errors_are_the_cpus(name):
    cpu, ours = errors_of_cpu_and_ours(lambda *_: ERRORS[name]())
    assert "jagged" in str(ours) or "select()" in str(ours) or "negative dimension" in str(ours) \
        or "out of range" in str(ours), str(ours)


BAD_OFFSETS = {
    "to padded, rows past the values": lambda: TO_PADDED(torch.randn(7, 3), [torch.tensor([0, 5, 12])], [4], 0.0),
    "to padded, a negative length": lambda: TO_PADDED(torch.randn(7, 3), [torch.tensor([0, 5, 2])], [4], 0.0),
    "to padded, a negative start": lambda: TO_PADDED(torch.randn(7, 3), [torch.tensor([-2, 2])], [4], 0.0),
    "to jagged, a negative length": lambda: TO_JAGGED(torch.randn(2, 4, 3), [torch.tensor([0, 3, 2])], 2),
    "to jagged, rows past the total": lambda: TO_JAGGED(torch.randn(2, 4, 3), [torch.tensor([0, 4, 3])], 3),
    # (The CPU takes this one, copying nothing for the second item: backward
    # offsets could give two items the same rows, which a GPU writes in no
    # order.)
    "to jagged, a length back past the padded rows":
        lambda: TO_JAGGED(torch.randn(3, 4, 3), [torch.tensor([0, 4, 0, 4])], 4),
}


@pytest.mark.parametrize("name", BAD_OFFSETS.keys())
def test_bad_offsets_raise(name):
    """Offsets that select rows outside the values or run backwards: the
    CPU fails in a copy (or, for some, wraps around); ours raise
    RuntimeError from the kernel's flag, writing nothing out of bounds."""
    with pytest.raises(RuntimeError, match="offsets select rows outside the values or a negative length"):
        run_on_kernels(lambda *_: BAD_OFFSETS[name]())


def test_float64_is_refused_clearly():
    with pytest.raises(TypeError, match="float64"):
        run_on_kernels(lambda v: TO_PADDED(v, [OFFSETS], [4], 0.0), torch.randn(7, 3, dtype=torch.float64))
    with pytest.raises(TypeError, match="float64"):
        run_on_kernels(lambda d: TO_JAGGED(d, [OFFSETS], 7), torch.randn(5, 4, dtype=torch.float64))


@pytest.mark.skipif(mps_ops.backend == "emulator", reason="2**31 + 8 elements (2 GiB of uint8): a GPU's memory")
def test_past_2_to_the_31_elements():
    """A padded result of more than 2**31 elements (2 x 1028 rows of 2**20),
    and back: rows past element 2**31 on both sides."""
    row = 2**20
    values = torch.arange(2055, device=device()).to(torch.uint8).repeat_interleave(row).view(2055, row)
    offsets = torch.tensor([0, 2047, 2055], device=device())  # 2047 rows cut at 1028, then 8
    with emulate():
        padded = TO_PADDED(values, [offsets], [1028], 9.0)
    assert padded.shape == (2, 1028, row)
    assert torch.equal(padded[0, 1027], values[1027])
    assert torch.equal(padded[1, 7], values[2054])
    assert bool((padded[1, 8:] == 9).all())
    with emulate():
        jagged = TO_JAGGED(padded, [torch.tensor([0, 1028, 1036], device=device())], 1036)
    assert torch.equal(jagged[1035], values[2054]) and torch.equal(jagged[1027], values[1027])
