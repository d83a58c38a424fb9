import os

import pytest
import torch

import mps_ops

# The suite tests every kernel, the overrides' too: on for the whole session
# (at import, before the tests collect the registry's records).
# test_overrides.py checks the default, off, in a fresh process.
mps_ops.enable_overrides()


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture(autouse=True, scope="session")
def _checked_mode():
    """Every kernel in the suite runs with bounds-checked buffers (emulator)."""
    if mps_ops.backend != "emulator":
        yield
        return
    with mps_ops.emulator.checked():
        yield


@pytest.fixture(autouse=True, scope="session")
def _no_cudnn():
    """On the CUDA backend torch's composites take cuDNN where it exists
    (batch_norm's cudnn_batch_norm), a path no Mac has, around our kernels:
    off, so CUDA tensors take the ops a Mac's take."""
    with torch.backends.cudnn.flags(enabled=False):
        yield


def pytest_collection_modifyitems(config, items):
    """MPS_OPS_TEST_SHARD=i/n keeps every n-th test from the i-th: one file
    split over n processes (tools/gpu_check.sh's GPU_CHECK_SHARDS), where a
    whole file outlasts one command's limit on the GPU machine."""
    shard = os.environ.get("MPS_OPS_TEST_SHARD")
    if not shard:
        return
    index, _, count = shard.partition("/")
    index, count = int(index), int(count)
    assert 0 <= index < count, f"MPS_OPS_TEST_SHARD={shard}: want i/n with 0 <= i < n"
    kept, dropped = [], []
    for position, item in enumerate(items):
        (kept if position % count == index else dropped).append(item)
    config.hook.pytest_deselected(items=dropped)
    items[:] = kept
