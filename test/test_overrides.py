"""The `override` policy: off by default, on for all or some by name (and
by MPS_OPS_OVERRIDES), only in the releases whose stock kernel is
MPSGraph; and each override's OpInfos (its own and those whose gradients
reach it), outputs and input gradients against torch's own kernels (the
CPU's on the emulator), with every subset that matters on: each override
alone (ours forward with the stock backward, and the reverse) and all
together."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))
import codegen  # noqa: E402

import mps_ops
from helpers import assert_matches, error_against, numel_of, opinfo_name, opinfos_for, to_cpu, to_device
from mps_ops import _registry
from mps_ops.testing import device, emulate
from torch.testing._internal.opinfo.core import SampleInput
from torch.utils._python_dispatch import TorchDispatchMode

OVERRIDES = [r for r in mps_ops.ops() if r.policy == "override"]
NAMES = sorted(r.name.split("::", 1)[1] for r in OVERRIDES)


def _short(record) -> str:
    return record.name.split("::", 1)[1]


def _has_our_registration(overload: str) -> bool:
    """Off a Mac, torch has no MPS kernel of its own: any MPS kernel is ours."""
    return torch._C._dispatch_has_kernel_for_dispatch_key(f"aten::{overload}", "MPS")


def _fresh_process(environment: dict) -> dict:
    """ops() in a new interpreter: which overrides are active, their
    statuses, the warnings import raised, and (off a Mac) which override
    overloads have an MPS kernel."""
    script = (
        "import json, warnings, torch\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    import mps_ops\n"
        "records = [r for r in mps_ops.ops() if r.policy == 'override']\n"
        "print(json.dumps({'active': sorted(r.name.split('::')[1] for r in records if r.active),\n"
        "                  'status': {r.name: r.status for r in records},\n"
        "                  'warnings': [str(w.message) for w in caught],\n"
        "                  'mps_kernels': sorted(o for r in records for o in r.overloads\n"
        "                      if torch._C._dispatch_has_kernel_for_dispatch_key('aten::' + o, 'MPS'))}))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "MPS_OPS_OVERRIDES"}
    env.update(environment)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_wave_has_overrides():
    assert {"threshold", "threshold_backward", "hardtanh_backward"} <= set(NAMES)


def test_without_enable_overrides_nothing_of_the_wave_registers():
    state = _fresh_process({})
    assert state["active"] == []
    if mps_ops.backend != "metal":
        assert state["mps_kernels"] == []
    assert all(s.startswith(("off:", "unavailable:")) for s in state["status"].values()), state["status"]


@pytest.mark.parametrize("value, expected", [
    ("1", NAMES),
    ("threshold_backward", ["threshold_backward"]),
    ("aten::threshold, hardtanh_backward", ["hardtanh_backward", "threshold"]),
    ("0", []),
])
def test_environment_variable(value, expected):
    state = _fresh_process({"MPS_OPS_OVERRIDES": value})
    assert state["active"] == expected
    if mps_ops.backend != "metal":
        records = {_short(r): r for r in OVERRIDES}
        assert state["mps_kernels"] == sorted(o for name in expected for o in records[name].overloads)


def test_environment_variable_with_an_unknown_name_warns_and_enables_nothing():
    state = _fresh_process({"MPS_OPS_OVERRIDES": "threshold,no_such_op"})
    assert state["active"] == []
    assert any("no_such_op" in w and "none of the list is enabled" in w for w in state["warnings"]), \
        state["warnings"]


@pytest.fixture
def all_overrides_back_on():
    yield
    mps_ops.enable_overrides()


def _active() -> list:
    return sorted(_short(r) for r in mps_ops.ops() if r.policy == "override" and r.active)


def test_enable_and_disable_by_name(all_overrides_back_on):
    mps_ops.disable_overrides()
    assert _active() == []
    if mps_ops.backend != "metal":
        assert not any(_has_our_registration(o) for r in OVERRIDES for o in r.overloads)
    mps_ops.enable_overrides(["threshold"])
    assert _active() == ["threshold"]
    statuses = {_short(r): r.status for r in mps_ops.ops() if r.policy == "override"}
    assert statuses["threshold"].startswith("active:")
    assert statuses["threshold_backward"].startswith("off:")
    mps_ops.enable_overrides("aten::threshold_backward")
    mps_ops.disable_overrides(["threshold"])
    assert _active() == ["threshold_backward"]
    if mps_ops.backend != "metal":
        assert _has_our_registration("threshold_backward") and not _has_our_registration("threshold")
    with pytest.raises(ValueError, match="no override op named 'special_ndtri'"):
        mps_ops.enable_overrides(["special_ndtri"])  # a fill, not an override
    with pytest.raises(ValueError, match="no override op named 'prims::threshold'"):
        mps_ops.enable_overrides(["prims::threshold"])  # only aten's ops are overridden


def test_enable_and_disable_from_several_threads_agree_with_the_dispatcher(all_overrides_back_on):
    """Enabling and disabling one op from several threads at once leaves
    ops() saying what the dispatcher holds (without a lock across the check
    and the change, some 2% of such rounds disagreed)."""
    import random
    import threading

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for round_ in range(60):
            rng = random.Random(round_)
            plans = [[rng.random() < 0.5 for _ in range(20)] for _ in range(4)]
            threads = [threading.Thread(target=lambda plan=plan: [
                (mps_ops.enable_overrides if on else mps_ops.disable_overrides)(["threshold"]) for on in plan])
                for plan in plans]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            said = "threshold" in _active()
            if mps_ops.backend != "metal":
                assert said == _has_our_registration("threshold"), f"round {round_}"
            assert said == ("threshold" in {o.split(".")[0] for o in mps_ops._registry.active_overloads()})
    finally:
        sys.setswitchinterval(switch)


def test_an_override_stays_off_where_the_stock_kernel_is_not_mpsgraph(monkeypatch, all_overrides_back_on):
    mps_ops.disable_overrides()
    # A release the registry has no data for (2.16, say): nothing replaces anything.
    monkeypatch.setattr(_registry, "torch_release", lambda version=None: "9.99")
    mps_ops.enable_overrides()
    assert _active() == []
    assert all(r.status.startswith("unavailable: the registry has no data for torch 9.99")
               for r in mps_ops.ops() if r.policy == "override")
    with pytest.warns(UserWarning, match="own MPS kernel stays for threshold"):
        mps_ops.enable_overrides(["threshold"])
    assert _active() == []
    # A known release in which the stock kernel is native Metal.
    monkeypatch.setattr(_registry, "torch_release", lambda version=None: "2.13")
    entry = next(e for e in _registry._RECORDS if e.policy == "override")
    native_in_2_13 = entry._replace(mpsgraph=("2.9", "2.10"))
    assert not _registry._override_allowed(native_in_2_13)
    assert _registry._status(native_in_2_13, False) == "unavailable: torch 2.13's MPS kernel is native Metal"


def test_torch_release():
    assert _registry.torch_release("2.13.0+cpu") == "2.13"
    assert _registry.torch_release("2.10.1") == "2.10"


# --- each override's OpInfos: outputs and input gradients ----------------------

def _subsets(record) -> list:
    """The overrides on while this record's OpInfos run: all, and this one alone."""
    return [("all", None), ("alone", [_short(record)])]


def _gradient_opinfos(record) -> list:
    """Its own OpInfos that have gradients, and those whose gradients reach it."""
    own = [o for o in opinfos_for(record) if o.supports_autograd]
    return own + [o for o in opinfos_for(record, record.grad_opinfo) if o not in own]


GRADIENT_CASES = [
    pytest.param(record, opinfo, dtype, subset, on,
                 id=f"{_short(record)}-{opinfo_name(opinfo)}-{str(dtype)[6:]}-{subset}")
    for record in OVERRIDES
    for opinfo in _gradient_opinfos(record)
    for dtype in record.dtypes
    if dtype.is_floating_point and dtype in opinfo.supported_backward_dtypes("cpu")
    for subset, on in _subsets(record)
]


def _forward_and_gradients(opinfo, sample, grad_seed, grad_dtype=None):
    """The OpInfo's outputs (a list: var_mean and the batch norms return
    several) and its inputs' gradients for random grad_outputs, one per
    floating output (autograd.grad: the inputs' .grad are left alone, so both
    sides can share them), drawn in grad_dtype (each output's by default)."""
    inputs = [t for t in (sample.input, *sample.args) if isinstance(t, torch.Tensor) and t.requires_grad]
    result = opinfo(sample.input, *sample.args, **sample.kwargs)
    results = list(result) if isinstance(result, (tuple, list)) else [result]
    differentiable = [r for r in results if r.is_floating_point() and r.requires_grad]
    # Drawn on the CPU (under torch.device("cuda") too), the same on both sides.
    generator = torch.Generator().manual_seed(grad_seed)
    grad_outputs = [torch.randn(r.shape, generator=generator, dtype=grad_dtype or r.dtype, device="cpu")
                    .to(device=r.device, dtype=r.dtype) for r in differentiable]
    grads = torch.autograd.grad(differentiable, inputs, grad_outputs, allow_unused=True)
    return results, grads


def _float64_call(opinfo, sample, grad_seed, dtype):
    """The result and gradients of the same call in float64 through torch's
    kernels, for the same grad_output (drawn in dtype)."""
    def widen(t):
        if isinstance(t, torch.Tensor) and t.dtype == dtype:
            return t.detach().double().requires_grad_(t.requires_grad)
        return t
    wide = SampleInput(widen(sample.input), args=tuple(map(widen, sample.args)),
                       kwargs={k: widen(v) for k, v in sample.kwargs.items()})
    with torch.device(device()):
        return _forward_and_gradients(opinfo, wide, grad_seed, grad_dtype=dtype)


def _assert_within_rounding(actual, expected, truth, dtype, where):
    """A half/bfloat16 result differs from the reference by more than the
    dtype's tolerance where the two round differently on the way (the CPU
    sums a loss in half, we in float; a gradient goes through a forward
    result rounded to the dtype, where one ulp moves it a lot). Ours must
    then stay near the float64 result: no further from it than twice the
    reference is, or than four ulps of the result's scale."""
    ours_error = error_against(actual, truth)
    reference_error = error_against(expected, truth)
    finite = truth[truth.isfinite()]
    scale = finite.abs().max().item() if finite.numel() else 0.0
    # A reference that overflowed (inf or NaN where the truth is finite)
    # bounds nothing: then only the ulps count.
    ulps = 4 * torch.finfo(dtype).eps * scale
    bound = max(2 * reference_error, ulps) if math.isfinite(reference_error) else ulps
    assert ours_error <= bound, f"{where}: error {ours_error:.3g} against float64, reference's {reference_error:.3g}"


class _AtenLog(TorchDispatchMode):
    """The aten operators dispatched while it is active ("aten::nll_loss_forward")."""

    def __init__(self):
        super().__init__()
        self.names = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.add(func._schema.name)
        return func(*args, **(kwargs or {}))


def _aten_ops_reached(opinfo, sample, grad_seed) -> set:
    """The aten operators torch's own kernels reach for the sample, forward
    and backward: a sample that does not reach an override (cross_entropy
    with class probabilities, nll_loss on a 4-D input for nll_loss_forward)
    need not run its kernel."""
    with torch.device(device()), _AtenLog() as log:
        _forward_and_gradients(opinfo, sample, grad_seed)
    return log.names


# The kernel ops each registry entry's stubs run (its `kernels`, and those
# its stub picks for some inputs only).
KERNELS = {f"aten::{e.name}": set(e.kernels) | e.stub_kernels() for e in codegen.load_registry()}


def _ours_dispatched(record, dispatches) -> bool:
    return any(d.op in KERNELS[record.name] for d in dispatches)


# OpInfos whose device kernels keep another dtype contract than MPS's: CUDA's
# batch_norm keeps a half or bfloat16 input's save_mean and save_invstd in
# float (its backward refuses the input's dtype), MPS's and the CPU's keep
# the input's, as ours do. On the CUDA backend their half and bfloat16 calls
# compare with torch's CPU kernels (MPS's contract), and our forward beside
# CUDA's own backward must meet CUDA's dtype error.
STATISTICS_IN_INPUT_DTYPE = {"nn.functional.batch_norm"}


def _cuda_contract_differs(opinfo, dtype) -> bool:
    return (torch.device(device()).type == "cuda" and opinfo_name(opinfo) in STATISTICS_IN_INPUT_DTYPE
            and dtype in (torch.float16, torch.bfloat16))


@pytest.mark.parametrize("record, opinfo, dtype, subset, on", GRADIENT_CASES)
def test_opinfo_outputs_and_gradients(record, opinfo, dtype, subset, on, all_overrides_back_on):
    if on is not None:
        mps_ops.disable_overrides()
        mps_ops.enable_overrides(on)
    n_checked = n_dispatched = 0
    for sample in opinfo.sample_inputs("cpu", dtype, requires_grad=True):
        for layout, s in (("contiguous", sample), ("noncontiguous", sample.noncontiguous())):
            where = f"{opinfo_name(opinfo)} {dtype} {layout} ({subset} on)"
            moved_input, moved_args, moved_kwargs = to_device((s.input, s.args, s.kwargs))
            moved = SampleInput(moved_input, args=moved_args, kwargs=moved_kwargs)
            # The reference: torch's own kernels where the tensors live (the
            # CPU's on the emulator; on the CUDA backend torch's CUDA kernels,
            # so that the ops around ours are the same on both sides).
            contract_differs = _cuda_contract_differs(opinfo, dtype)
            if contract_differs:
                expected, expected_grads = _forward_and_gradients(opinfo, s, n_checked)
            else:
                with torch.device(device()):
                    expected, expected_grads = _forward_and_gradients(opinfo, moved, n_checked)
            try:
                with torch.device(device()), mps_ops.profile() as prof, emulate():
                    actual, actual_grads = _forward_and_gradients(opinfo, moved, n_checked)
            except RuntimeError as error:
                # Training's statistics in the input's dtype, which CUDA's
                # backward refuses (in either of its words; evaluation's
                # reach it unused).
                refusals = ("Expected save_mean to have type Float", "expected scalar type Float but found")
                if not (contract_differs and subset == "alone" and record.name == "aten::native_batch_norm"
                        and any(r in str(error) for r in refusals)):
                    raise
                n_dispatched += _ours_dispatched(record, prof.dispatches)
                n_checked += 1
                continue
            truth = []  # the float64 result and gradients, made when needed

            def compare(a, e, k, what):
                try:
                    assert_matches(to_cpu(a), to_cpu(e), where + what)
                except AssertionError:
                    if not truth:
                        results, grads = _float64_call(opinfo, moved, n_checked, dtype)
                        truth.extend([*results, *grads])
                    exact = to_cpu(truth[k].detach())
                    if dtype == torch.float32:
                        # Only where the reference is the further from the
                        # float64 answer (a sum that cancels: layer_norm's
                        # weight gradient over one element is 0, the CPU's
                        # r x - r m with a fused multiply-add 3.9e-5).
                        if error_against(to_cpu(a), exact) <= error_against(to_cpu(e), exact):
                            return
                        raise
                    _assert_within_rounding(to_cpu(a), to_cpu(e), exact, dtype, where + what)

            assert len(actual) == len(expected), where
            for k, (a, e) in enumerate(zip(actual, expected)):
                compare(a.detach(), e.detach(), k, f" output {k}" if len(expected) > 1 else "")
            for k, (a, e) in enumerate(zip(actual_grads, expected_grads)):
                assert (a is None) == (e is None), where
                if e is not None:
                    compare(a, e, len(expected) + k, " gradient")
            if _ours_dispatched(record, prof.dispatches):
                n_dispatched += 1
            elif numel_of(expected) > 0 and record.name in _aten_ops_reached(opinfo, moved, n_checked):
                pytest.fail(f"{where}: {_short(record)}'s kernel did not run")
            n_checked += 1
    assert n_checked > 0 and n_dispatched > 0


# --- the comparisons at their edges, against the CPU ---------------------------

FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
INTEGER_DTYPES = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)


def _edge_values(dtype, bound):
    """The bound itself, its neighbours in the dtype, and NaN / +-inf."""
    if dtype.is_floating_point:
        b = torch.tensor(bound, dtype=dtype)
        return torch.stack([b, torch.nextafter(b, b - 1), torch.nextafter(b, b + 1), b.new_tensor(float("nan")),
                            b.new_tensor(float("inf")), b.new_tensor(-float("inf")), b.new_tensor(0.0)])
    low = 0 if dtype == torch.uint8 else -3
    return torch.arange(low, 4).to(dtype)


def _on_kernels(fn, *tensors):
    moved = to_device(tensors)
    with torch.device(device()), mps_ops.profile() as prof, emulate():
        result = fn(*moved)
    assert prof.dispatches
    return to_cpu(result)


# 0.0999755 lies just below the half value 0.0999755859375 (and below its
# bfloat16 rounding): the CPU compares against it unrounded, so an input of
# that value is above the bound. (uint8 cannot hold a negative bound: the
# CPU raises, as below.)
@pytest.mark.parametrize("dtype, bound", [
    (dtype, bound) for dtype in FLOAT_DTYPES + INTEGER_DTYPES for bound in (0.0, 0.0999755, -1.5, 2.0)
    if not (dtype == torch.uint8 and bound < 0)], ids=str)
def test_threshold_edges_match_the_cpu(dtype, bound):
    x = _edge_values(dtype, bound)
    grad = torch.arange(1, x.numel() + 1).to(dtype)
    value = 3
    torch.testing.assert_close(_on_kernels(lambda t: torch.threshold(t, bound, value), x),
                               torch.threshold(x, bound, value), rtol=0, atol=0, equal_nan=True)
    torch.testing.assert_close(_on_kernels(lambda g, t: torch.ops.aten.threshold_backward(g, t, bound), grad, x),
                               torch.ops.aten.threshold_backward(grad, x, bound), rtol=0, atol=0, equal_nan=True)
    if dtype.is_floating_point:
        lower, upper = -abs(bound) - 0.5, bound
        torch.testing.assert_close(
            _on_kernels(lambda g, t: torch.ops.aten.hardtanh_backward(g, t, lower, upper), grad, x),
            torch.ops.aten.hardtanh_backward(grad, x, lower, upper), rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("call", [
    lambda x: torch.threshold(x.to(torch.uint8), 0, 300),  # the value overflows uint8
    lambda x: torch.threshold(x.to(torch.int8), -300, 1),  # the bound overflows int8
    lambda x: torch.threshold(x.half(), 0, 1e6),  # the value overflows half
    lambda x: torch.threshold(x.bool(), 0, 1),  # no bool kernel on the CPU
    lambda x: torch.ops.aten.hardtanh_backward(x.long(), x.long(), -1, 1),  # floating only
], ids=["uint8_value", "int8_bound", "half_value", "bool", "hardtanh_backward_long"])
def test_bad_threshold_arguments_raise_what_the_cpu_raises(call):
    x = torch.randn(4)
    with pytest.raises(Exception) as cpu_error:
        call(x)
    moved = to_device(x)
    with pytest.raises(Exception) as our_error, torch.device(device()), emulate():
        call(moved)
    assert type(our_error.value) is type(cpu_error.value), (our_error.value, cpu_error.value)


def test_each_override_shows_its_gpu_ratio_or_unmeasured():
    for record in OVERRIDES:
        assert record.gpu_ratio == "unmeasured" or re.fullmatch(
            r"\d+\.\d+-\d+\.\d+ (H100|H200) at [0-9a-f]{7,}", record.gpu_ratio), (record.name, record.gpu_ratio)
    assert all(r.gpu_ratio == "" for r in mps_ops.ops() if r.policy == "fill")
