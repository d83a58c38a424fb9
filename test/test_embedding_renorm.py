"""embedding_renorm_ against the CPU: repeated and negative indices (each
row renormed once), multi-dim and int32 index tensors, every norm type,
transposed and strided tables, half/bfloat16, rows already within max_norm,
and the CPU's errors."""

from __future__ import annotations

import pytest
import torch

from helpers import assert_matches, run_on_kernels

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"embedding_renorm_"}


def _renorm(max_norm=1.0, norm_type=2.0):
    def call(weight, indices):
        returned = torch.embedding_renorm_(weight, indices, max_norm, norm_type)
        assert returned is weight
        return weight
    return call


TABLES = {
    "contiguous": lambda: torch.randn(9, 40) * 2,
    "transposed": lambda: (torch.randn(40, 9) * 2).t(),
    "strided": lambda: (torch.randn(9, 80) * 2)[:, ::2],
    "wide": lambda: torch.randn(4, 700),
    # Rows of many runs of loads per thread, over several SIMD groups.
    "long": lambda: torch.randn(6, 9000) * 0.05,
}


@pytest.mark.parametrize("norm_type", [0.0, 1.0, 2.0, 3.5, float("inf")])
@pytest.mark.parametrize("table", list(TABLES))
def test_embedding_renorm(table, norm_type):
    torch.manual_seed(0)
    weight = TABLES[table]()
    rows = weight.size(0)
    indices = torch.tensor([[0, 2, 2, -1], [rows - 2, 1, 0, 1]])
    fn = _renorm(max_norm=1.5 if norm_type != 0.0 else 20.0, norm_type=norm_type)
    expected = fn(weight.clone(), indices)
    actual, dispatches = run_on_kernels(fn, weight.clone(), indices)
    assert_matches(actual, expected)
    assert len(dispatches) == 1


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_embedding_renorm_reduced_precision_and_int_indices(dtype):
    weight = (torch.randn(6, 30) * 3).to(dtype)
    indices = torch.tensor([5, 1, 1, 0], dtype=torch.int32)
    fn = _renorm()
    assert_matches(run_on_kernels(fn, weight.clone(), indices)[0], fn(weight.clone(), indices))


def test_many_short_rows_share_threadgroups():
    """Indices of 16-element rows, several per threadgroup, each row named
    up to a few times across groups: renormed once."""
    torch.manual_seed(1)
    weight = torch.randn(300, 16)
    indices = torch.randint(-300, 300, (1000,))
    fn = _renorm(max_norm=2.0)
    assert_matches(run_on_kernels(fn, weight.clone(), indices)[0], fn(weight.clone(), indices))


def test_a_row_named_by_two_aliases_is_renormed_once():
    """-1 and rows - 1 name one row. The CPU deduplicates raw index values and
    renorms that row twice; a second pass changes nothing for p >= 1 (the
    norm is then below max_norm) but halves the row again for p = 0, whose
    norm counts nonzeros. Ours renorms every row once."""
    weight = torch.randn(4, 10)
    indices = torch.tensor([-1, 3])
    for p in (1.0, 2.0, float("inf")):
        assert_matches(run_on_kernels(_renorm(0.5, p), weight.clone(), indices)[0],
                       _renorm(0.5, p)(weight.clone(), indices))
    actual, _ = run_on_kernels(_renorm(5.0, 0.0), weight.clone(), indices)
    assert_matches(actual[3], weight[3] * (5.0 / (10 + 1e-7)))


def test_rows_within_max_norm_stay_and_empty_indices_do_nothing():
    weight = torch.randn(5, 3) * 0.01
    actual, _ = run_on_kernels(_renorm(), weight.clone(), torch.tensor([0, 1, 4]))
    assert torch.equal(actual, weight)
    actual, dispatches = run_on_kernels(_renorm(), weight.clone(), torch.zeros(0, dtype=torch.long))
    assert torch.equal(actual, weight) and not dispatches


def test_errors_are_the_cpus():
    weight = torch.randn(5, 3)
    for w, idx in [(weight, torch.tensor([0, 5])), (weight, torch.tensor([-6])),
                   (weight, torch.tensor([0.0])), (torch.randn(5), torch.tensor([0])),
                   (weight.int(), torch.tensor([0]))]:
        with pytest.raises(Exception) as cpu:
            _renorm()(w.clone(), idx)
        with pytest.raises(type(cpu.value)):
            run_on_kernels(_renorm(), w.clone(), idx)
