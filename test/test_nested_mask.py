"""_nested_tensor_from_mask_left_aligned against the CPU: every mask of a few
small shapes, strided and broadcast masks, the CPU's errors, and
nn.TransformerEncoder in eval mode with a padding mask, which calls it on a
Mac before it looks at the device (the op no torch release has on MPS)."""

from __future__ import annotations

import itertools

import pytest
import torch

import mps_ops
from helpers import to_device
from mps_ops.testing import device, emulate

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"_nested_tensor_from_mask_left_aligned"}

OP = torch.ops.aten._nested_tensor_from_mask_left_aligned.default


def _ours(t, mask):
    t, mask = to_device((t, mask))
    with mps_ops.profile() as prof, emulate():
        result = OP(t, mask)
    return result, [d.kernel for d in prof.dispatches]


@pytest.mark.parametrize("rows, columns", [(1, 1), (1, 6), (2, 4), (3, 3)])
def test_every_mask_of_a_shape(rows, columns):
    t = torch.randn(rows, columns, 2)
    for bits in itertools.product([False, True], repeat=rows * columns):
        mask = torch.tensor(bits).reshape(rows, columns)
        ours, kernels = _ours(t, mask)
        assert ours is OP(t, mask), mask
        assert kernels == ([] if columns == 1 else ["mask_left_aligned_dense_bool_bool"])


@pytest.mark.parametrize("layout", ["transposed", "sliced", "broadcast rows", "offset"])
@pytest.mark.parametrize("aligned", [True, False])
def test_strided_masks(layout, aligned):
    lengths = torch.tensor([7, 0, 3, 9, 5])
    dense = torch.arange(9) < lengths[:, None]
    if not aligned:
        dense[2, 6] = True
    mask = {
        "transposed": dense.t().contiguous().t(),
        "sliced": torch.stack([dense, ~dense], dim=2)[:, :, 0],
        "broadcast rows": dense[3:4].expand(5, 9) if aligned else dense[2:3].expand(5, 9),
        "offset": torch.cat([torch.ones(1, 9, dtype=torch.bool), dense])[1:],
    }[layout]
    t = torch.randn(5, 9, 3)
    ours, kernels = _ours(t, mask)
    assert ours is OP(t, mask) is aligned
    assert kernels


def test_long_rows_and_many_rows():
    torch.manual_seed(1)
    lengths = torch.randint(0, 2049, (300,))
    mask = torch.arange(2048) < lengths[:, None]
    t = torch.empty(300, 2048, 1)
    assert _ours(t, mask)[0] is True
    mask[123, 2047] = True
    mask[123, 0] = False
    assert _ours(t, mask)[0] is OP(t, mask) is False


@pytest.mark.parametrize("t, mask", [
    (torch.zeros(0, 4, 2), torch.zeros(0, 4, dtype=torch.bool)),        # no rows: aligned
    (torch.zeros(3, 1, 2), torch.tensor([[True], [False], [True]])),      # one column: aligned
    (torch.zeros(2, 0, 2), torch.zeros(2, 0, dtype=torch.bool)),          # no columns: IndexError
    (torch.zeros(0, 0, 2), torch.zeros(0, 0, dtype=torch.bool)),
    (torch.zeros(2, 3, 1), torch.zeros(2, 3)),                            # not bool
    (torch.zeros(2, 3, 1), torch.zeros(2, 3, 1, dtype=torch.bool)),      # not 2-D
    (torch.zeros(2, 3), torch.zeros(2, 3, dtype=torch.bool)),             # t not 3-D
    (torch.zeros(2, 3, 1), torch.zeros(2, 4, dtype=torch.bool)),          # sizes differ
    (torch.zeros(2, 3, 1), torch.zeros(3, 3, dtype=torch.bool)),
])
def test_edge_shapes_and_errors_are_the_cpus(t, mask):
    try:
        expected = OP(t, mask)
    except Exception as error:  # noqa: BLE001 - the type and message are compared
        with pytest.raises(type(error)) as ours:
            _ours(t, mask)
        assert str(ours.value) == str(error)
        return
    assert _ours(t, mask)[0] is expected


def test_transformer_encoder_in_eval_with_a_padding_mask():
    """The encoder's eval path checks the mask with our kernel. (On CPU tensors
    it then takes the CPU's nested fast path, which a Mac does not: the
    result is compared with the CPU's all the same.)"""
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=2).eval().to(device())
    tokens, padding = to_device((torch.randn(3, 7, 16), torch.arange(7) >= torch.tensor([7, 4, 1])[:, None]))
    with torch.no_grad():
        expected = model(tokens, src_key_padding_mask=padding)
        with mps_ops.profile() as prof, emulate():
            actual = model(tokens, src_key_padding_mask=padding)
    assert "mask_left_aligned_dense_bool_bool" in [d.kernel for d in prof.dispatches]
    torch.testing.assert_close(actual.to_padded_tensor(0.0) if actual.is_nested else actual,
                               expected.to_padded_tensor(0.0) if expected.is_nested else expected)
