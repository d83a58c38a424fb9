"""float32 accuracy of the special functions on dense grids (OpInfo samples
are few and narrow). Truth: torch's float64 CPU result, except where
mps_ops.testing.exact_float64 names another (airy_ai: mpmath's)."""

from __future__ import annotations

import pytest
import torch

import mps_ops
from helpers import run_on_kernels


def _relative_error(actual, truth, floor):
    return ((actual.double() - truth).abs() / truth.abs().clamp_min(floor)).max().item()


def _grid(lo, hi, n=20001):
    return torch.linspace(lo, hi, n, dtype=torch.float64).float()


_airy_truth = mps_ops.testing.exact_float64("special_airy_ai")


# The smallest normal float32: below it, errors count as absolute (subnormal
# outputs have fewer bits), so a moved underflow cutoff still shows.
FLOAT32_TINY = torch.finfo(torch.float32).tiny

# The grids reach each function's tails, where cutoffs and asymptotic
# branches live (up to underflow of the result, and float32's subnormals).
CASES = {
    "ndtri_center": (torch.special.ndtri, _grid(1e-3, 1 - 1e-3), 1e-30, 6e-7),
    "ndtri_lower_tail": (torch.special.ndtri, torch.logspace(-44, -3, 4001).float(), 1e-30, 6e-7),
    "ndtri_upper_tail": (torch.special.ndtri, 1 - torch.logspace(-7, -1, 2001).float(), 1e-30, 6e-7),
    "ndtri_subnormal_inputs": (torch.special.ndtri, torch.logspace(-45.5, -38, 400).float(), 1e-30, 6e-7),
    "log_ndtr": (torch.special.log_ndtr, _grid(-100, 10), 1e-30, 6e-7),
    "log_ndtr_far_tail": (torch.special.log_ndtr, _grid(-1e4, -100), 1e-30, 6e-7),
    "log_ndtr_upper_tail": (torch.special.log_ndtr, _grid(10, 40), FLOAT32_TINY, 6e-7),
    # (fn, x, floor, bound, truth): relative error against max(|truth|, floor).
    "airy_ai_positive": (torch.special.airy_ai, _grid(0, 30, 2001), 1e-36, 1e-6, _airy_truth),
    # Oscillating: absolute error (floor 1) of at most 2e-7.
    "airy_ai_negative": (torch.special.airy_ai, _grid(-30, 0, 2001), 1.0, 2e-7, _airy_truth),
    # Up to where Ai underflows float32 (x near 105) and past it.
    "airy_ai_positive_tail": (torch.special.airy_ai, _grid(30, 110, 2001), FLOAT32_TINY, 1e-6, _airy_truth),
    "airy_ai_negative_tail": (torch.special.airy_ai, _grid(-300, -30, 2001), 1.0, 2e-7, _airy_truth),
    # Up to its float32 overflow (x near -9.38; special values below), and the
    # 1/(x sqrt(pi)) tail.
    "erfcx_negative": (torch.special.erfcx, _grid(-9.37, 0.5), 1e-30, 6e-7),
    "erfcx_positive": (torch.special.erfcx, _grid(0.5, 100), 1e-30, 6e-7),
    "erfcx_far_tail": (torch.special.erfcx, torch.logspace(2, 30, 2001).float(), 1e-38, 6e-7),
}


# Every other unary_float op: a dense grid over its registry domain, within
# DERIVED_BOUND of torch's float64 (relative; absolute below float32's
# smallest normal). Hand-written cases above take precedence: they reach the
# tails a domain's grid does not.
DERIVED_BOUND = 1e-6
_HAND_WRITTEN = {fn.__name__ for fn, *_ in CASES.values()}  # aten names: special_ndtri, ...
for _record in mps_ops.ops():
    _name = _record.name.split("::", 1)[1]
    if _record.shape == "unary_float" and _name not in _HAND_WRITTEN:
        (_, _range), = _record.domain
        CASES[f"{_name}_domain"] = (getattr(torch.ops.aten, _name), _grid(_range.lo, _range.hi),
                                    FLOAT32_TINY, DERIVED_BOUND)


@pytest.mark.parametrize("case", list(CASES))
def test_float32_accuracy_against_float64_truth(case):
    fn, x, floor, bound, *truth_fn = CASES[case]
    truth = truth_fn[0](x) if truth_fn else fn(x.double())
    actual, dispatches = run_on_kernels(fn, x)
    assert dispatches
    finite = truth.isfinite()
    assert torch.equal(actual.isfinite(), finite), "special values differ"
    err = _relative_error(actual[finite], truth[finite], floor)
    assert err <= bound, f"{case}: max relative error {err:.3g} > {bound:.3g}"


@pytest.mark.parametrize(
    "fn, inputs",
    [
        (torch.special.ndtri, [0.0, 1.0, -0.5, 1.5, float("nan"), 0.5]),
        (torch.special.log_ndtr, [float("-inf"), float("inf"), float("nan"), 0.0]),
        (torch.special.airy_ai, [float("-inf"), float("inf"), float("nan"), 0.0]),
        (torch.special.erfcx, [float("-inf"), float("inf"), float("nan"), 0.0, -0.0, -10.0]),
    ],
)
def test_special_values_match_cpu(fn, inputs):
    x = torch.tensor(inputs)
    actual, dispatches = run_on_kernels(fn, x)
    assert dispatches
    torch.testing.assert_close(actual, fn(x), equal_nan=True, rtol=0, atol=0)


def test_airy_ai_stays_in_its_envelope_where_the_phase_is_lost():
    """Past |x| ~ 1e8 float32 cannot place zeta's phase; Ai must still be an
    O(|x|^-1/4) value: |Ai(x)| <= M(x) ~ |x|^-1/4 / sqrt(pi) (the envelope),
    up to where |x|^(3/2) overflows float32 (NaN from there: the CPU's
    float32 is NaN from ~3.1e25 on)."""
    x = -torch.logspace(2, 38, 4001, dtype=torch.float64).float()
    actual, dispatches = run_on_kernels(torch.special.airy_ai, x)
    assert dispatches
    overflows = x.double().abs().pow(1.5) > torch.finfo(torch.float32).max
    assert torch.equal(actual.isnan(), overflows), "NaN before zeta overflows, or a value after"
    finite = ~overflows
    envelope = x[finite].double().abs().pow(-0.25) / torch.pi ** 0.5
    excess = (actual[finite].double().abs() / envelope).max().item()
    assert excess <= 1.001, f"|Ai| reaches {excess:.3g} x its envelope"
