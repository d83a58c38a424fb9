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
