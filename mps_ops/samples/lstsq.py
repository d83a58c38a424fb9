"""Samples of the op whose stub is csrc/operations/lstsq.mm."""

from __future__ import annotations

import torch

from . import empty, Sample

_F32 = (torch.float32,)


def _call(a_shape, b_shape, driver):
    def build(dt):
        return dict(self=torch.randn(*a_shape).to(dt), b=torch.randn(*b_shape).to(dt), rcond=None, driver=driver,
                    solution=empty(dt), residuals=empty(dt), rank=empty(torch.int64), singular_values=empty(dt))
    return build


def _large(dt):
    """Every kernel lstsq runs, in full threadgroups: gels's geqrf and ormqr
    on tall and wide matrices, gelsd's SVD."""
    return [_call((3, 90, 70), (3, 90, 20), "gels")(dt), _call((3, 70, 90), (3, 70, 20), "gels")(dt),
            _call((3, 90, 70), (3, 90, 20), "gelsd")(dt)]


# The sweeps' layouts repeat rows or columns (expanded, doubled), which can
# leave A rank deficient, where the solution hangs on rounding: the sweeps
# compare shapes, dtypes and errors; test/test_lstsq.py the values.
OVERLOAD_SAMPLES = [
    # The default driver, gelsy (gelsd and gelss fail on the CPU for B
    # without columns, which the bad-input sweep builds).
    Sample("linalg_lstsq.out", _call((2, 5, 3), (2, 5, 2), None), dtypes=_F32, unpinned=True, large=_large),
]
