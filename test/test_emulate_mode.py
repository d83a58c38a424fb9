"""The testing mode leaves every op that is not ours as it was: each OpInfo
op outside the registry, on its first float32 samples, gives under
``emulate()`` the result (or the exception type) it gives without it.
Where one reaches a registry op inside (softmin is a softmax, its
with_dtype variant a softmax in float64), it must match within the
registry ops' tolerance, or raise TypeError where the value our kernel would
compute is float64 (Metal has none).

The reference runs under a dispatch mode that changes nothing: with any
TorchDispatchMode active, torch itself takes other paths in a few ops
(linalg.svdvals computes U and V too, and moves by an ulp)."""

from __future__ import annotations

import pytest
import torch
from torch.testing._internal.common_methods_invocations import op_db
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

import mps_ops
from mps_ops.testing import emulate

from helpers import assert_matches, opinfo_name

# On CUDA the mode routes CUDA tensors, and every other test runs under it.
pytestmark = pytest.mark.skipif(mps_ops.backend != "emulator",
                                reason="emulator-only: the mode on CPU tensors outside the registry")

OURS = {name for record in mps_ops.ops() for name in record.opinfo}
SAMPLES_PER_OP = 2
# Their results are uninitialised memory: only sizes, strides and dtype compare.
UNINITIALISED = {"empty", "empty_like", "new_empty", "new_empty_strided", "empty_strided", "empty_permuted"}


class _Unchanged(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def _not_ours() -> list:
    return [op for op in op_db if opinfo_name(op) not in OURS and torch.float32 in op.supported_dtypes("cpu")]


def _run(op, sample, mode: bool):
    """(exception type or None, result, whether our kernels ran)."""
    torch.manual_seed(0)
    try:
        with emulate() if mode else _Unchanged(), mps_ops.profile() as prof:
            result = op(sample.input, *sample.args, **sample.kwargs)
        return None, result, bool(prof.dispatches)
    except Exception as error:  # noqa: BLE001 - the type is what we compare
        return type(error), None, "Metal has no double" in str(error)  # our float64 refusal (op_checks.cpp)


def test_arithmetic_with_python_numbers():
    with emulate():
        assert torch.equal(torch.arange(4) % 2, torch.tensor([0, 1, 0, 1]))
        assert torch.equal(torch.arange(3) * 2 + 1, torch.tensor([1, 3, 5]))


@pytest.mark.parametrize("op", _not_ours(), ids=opinfo_name)
def test_op_runs_as_without_the_mode(op):
    for i, sample in enumerate(op.sample_inputs("cpu", torch.float32)):
        if i == SAMPLES_PER_OP:
            break
        where = f"{opinfo_name(op)} sample {i}"
        plain_error, plain, _ = _run(op, sample, mode=False)
        mode_error, moded, reached_ours = _run(op, sample, mode=True)
        if reached_ours and plain_error is None:
            if mode_error is None:
                assert_matches(moded, plain, where)
            else:
                assert mode_error is TypeError, f"{where}: {mode_error} from our float64 refusal"
            continue
        assert mode_error is plain_error, f"{where}: {mode_error} under the mode, {plain_error} without"
        if plain_error is None:
            plain_leaves, _ = tree_flatten(plain)
            mode_leaves, _ = tree_flatten(moded)
            assert len(plain_leaves) == len(mode_leaves)
            for p, m in zip(plain_leaves, mode_leaves):
                if isinstance(p, torch.Tensor) and op.name in UNINITIALISED:
                    assert (m.shape, m.stride(), m.dtype) == (p.shape, p.stride(), p.dtype)
                elif isinstance(p, torch.Tensor):
                    torch.testing.assert_close(m, p, equal_nan=True, rtol=0, atol=0)
                else:
                    assert m == p or (m != m and p != p)
