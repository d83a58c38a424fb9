"""_masked_softmax and its backward against the CPU: the three mask types
(an (L, L) attention mask, a (B, L) padding mask, a full mask) along the
last and other dims, fully masked rows (NaN, as on the CPU), long rows
(several SIMD groups), non-contiguous inputs, half/bfloat16, and errors."""

from __future__ import annotations

import pytest
import torch

from helpers import assert_matches, run_on_kernels

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"_masked_softmax", "_masked_softmax_backward"}

B, H, L = 2, 3, 5


def _masks(kind, shape):
    g = torch.Generator().manual_seed(1)
    if kind == "attention":  # type 0
        return torch.rand(L, L, generator=g) > 0.6, 0
    if kind == "padding":  # type 1
        mask = torch.rand(B, L, generator=g) > 0.6
        mask[1] = True  # every key of batch 1 masked: NaN rows
        return mask, 1
    if kind == "full":  # type 2
        return torch.rand(shape, generator=g) > 0.5, 2
    raise ValueError(kind)


@pytest.mark.parametrize("dim", [-1, 2, 1])
@pytest.mark.parametrize("kind", ["attention", "padding", "full"])
def test_masked_softmax_forward_and_backward(kind, dim):
    torch.manual_seed(0)
    x = torch.randn(B, H, L, L)
    mask, mask_type = _masks(kind, x.shape)
    fn = lambda x_, m_: torch.ops.aten._masked_softmax(x_, m_, dim, mask_type)  # noqa: E731
    expected = fn(x, mask)
    actual, dispatches = run_on_kernels(fn, x, mask)
    assert_matches(actual, expected)
    assert len(dispatches) == 1

    full = mask if mask_type == 2 else (
        mask.view(1, 1, L, L) if mask_type == 0 else mask.view(B, 1, 1, L)).expand(x.shape).contiguous()
    grad = torch.randn(x.shape)
    back = lambda g_, o_, m_: torch.ops.aten._masked_softmax_backward(g_, o_, m_, dim)  # noqa: E731
    out = torch.nan_to_num(expected)
    expected = back(grad, out, full)
    actual, dispatches = run_on_kernels(back, grad, out, full)
    assert_matches(actual, expected)
    assert len(dispatches) == 1


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_reduced_precision_long_rows_and_strided_input(dtype):
    x = (torch.randn(3, 1000) * 4)[:, ::2].to(dtype)
    mask = torch.rand(3, 500) > 0.7
    fn = lambda x_, m_: torch.ops.aten._masked_softmax(x_, m_, 1, None)  # noqa: E731
    assert_matches(run_on_kernels(fn, x, mask)[0], fn(x, mask))


@pytest.mark.parametrize("length", [33, 2000, 9000])
def test_rows_across_the_mapping(length):
    """Rows of a few elements per thread, of more threads than a SIMD group
    (their max and sum shared through threadgroup memory), and of more
    elements per thread than one run of loads; a +inf makes its row NaN,
    as on the CPU."""
    torch.manual_seed(length)
    x = torch.randn(6, length) * 3
    x[2, length // 3] = float("inf")
    mask = torch.rand(6, length) > 0.8
    mask[4] = True
    mask[2, length // 3] = False
    fn = lambda x_, m_: torch.ops.aten._masked_softmax(x_, m_, 1, None)  # noqa: E731
    expected = fn(x, mask)
    assert expected[2].isnan().all()
    assert_matches(run_on_kernels(fn, x, mask)[0], expected)
    back = lambda g_, o_, m_: torch.ops.aten._masked_softmax_backward(g_, o_, m_, 1)  # noqa: E731
    grad, out = torch.randn(6, length), torch.nan_to_num(expected)
    assert_matches(run_on_kernels(back, grad, out, mask)[0], back(grad, out, mask))


def test_zero_dim_and_errors():
    fn = lambda x_, m_: torch.ops.aten._masked_softmax(x_, m_, 0, None)  # noqa: E731
    for m in (torch.tensor(False), torch.tensor(True)):
        assert_matches(run_on_kernels(fn, torch.tensor(2.0), m)[0], fn(torch.tensor(2.0), m))
    x = torch.randn(B, H, L, L)
    for mask, mask_type, error in [(torch.zeros(B, H, L, L), 2, RuntimeError),
                                   (torch.zeros(B, H, L, 1, dtype=torch.bool), 2, RuntimeError),
                                   (torch.zeros(3, L, dtype=torch.bool), 1, RuntimeError)]:
        with pytest.raises(error):
            torch.ops.aten._masked_softmax(x, mask, 3, mask_type)
        with pytest.raises(error):
            run_on_kernels(lambda x_, m_: torch.ops.aten._masked_softmax(x_, m_, 3, mask_type), x, mask)
    with pytest.raises(NotImplementedError):
        run_on_kernels(fn, torch.ones(3, dtype=torch.int32), torch.zeros(3, dtype=torch.bool))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_masked_nonfinite_values_are_ignored(dtype):
    """Masked elements holding NaN or an infinity (in x, and in grad and out
    for the backward) take no part: the forward treats them as -inf and the
    backward writes 0, exactly as the CPU, whatever their bits."""
    torch.manual_seed(3)
    x = torch.randn(4, 300)
    mask = torch.rand(4, 300) > 0.6
    for value, columns in [(float("nan"), slice(0, 300, 7)), (float("inf"), slice(1, 300, 11)),
                           (float("-inf"), slice(2, 300, 13))]:
        x[:, columns] = value
        mask[:, columns] = True
    x, grad = x.to(dtype), x.flip(1).contiguous().to(dtype)
    mask_b = mask.flip(1).contiguous()
    fn = lambda x_, m_: torch.ops.aten._masked_softmax(x_, m_, 1, None)  # noqa: E731
    expected = fn(x.float(), mask).to(dtype)
    assert expected.isfinite().all()
    assert_matches(run_on_kernels(fn, x, mask)[0], expected)
    back = lambda g_, o_, m_: torch.ops.aten._masked_softmax_backward(g_, o_, m_, 1)  # noqa: E731
    out = x.clone()  # nonfinite where masked, as grad is where mask_b is
    both = mask | mask_b
    expected = back(grad.float(), out.float(), both).to(dtype)
    assert expected.isfinite().all()
    assert_matches(run_on_kernels(back, grad, out, both)[0], expected)
