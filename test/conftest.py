import pytest
import torch

import mps_ops


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
