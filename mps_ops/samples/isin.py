"""Samples of the ops whose stub is csrc/operations/isin.mm."""

from __future__ import annotations

import torch

from . import INDEX, empty, Sample

_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.uint8)


def _isin(dt, tests=5):
    return dict(elements=torch.randint(0, 12, (3, 4)).to(dt), test_elements=torch.randint(0, 12, (tests,)).to(dt))


def _large(dt):
    """Enough elements for two full threadgroups (tools/gpu_launch_all.py),
    scanned and searched."""
    elements = torch.randint(0, 12, (40, 300)).to(dt)
    return [dict(elements=elements, test_elements=torch.randint(0, 12, (n,)).to(dt)) for n in (5, 40)]


# Five test elements are scanned; forty sorted and searched.
OVERLOAD_SAMPLES = [
    Sample("isin.Tensor_Tensor", _isin, dtypes=_DTYPES, roles={"test_elements": INDEX}, large=_large),
    Sample("isin.Tensor_Tensor_out", lambda dt: dict(_isin(dt, 40), invert=True, out=empty(torch.bool)),
           dtypes=_DTYPES, roles={"test_elements": INDEX}),
    Sample("isin.Scalar_Tensor", lambda dt: dict(element=3, test_elements=torch.randint(0, 6, (8,)).to(dt)),
           dtypes=_DTYPES, roles={"test_elements": INDEX}),
    Sample("isin.Scalar_Tensor_out",
           lambda dt: dict(element=3, test_elements=torch.randint(0, 6, (40,)).to(dt), out=empty(torch.bool)),
           dtypes=_DTYPES, roles={"test_elements": INDEX}),
]
