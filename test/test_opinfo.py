"""Every registry op against torch on the CPU, over PyTorch's own OpInfo
samples and their non-contiguous versions, for every dtype both support.
A test also asserts that our kernels dispatched, so a silent fallback to the
CPU op fails."""

from __future__ import annotations

import pytest
import torch

import mps_ops
from eig_checks import assert_eig_valid, assert_eigenvalues_valid, assert_eigh_valid, assert_svd_valid
from helpers import assert_at_least_as_accurate, assert_near_truth, assert_matches, assert_normwise_as_accurate, numel_of, to_float64, opinfo_name, opinfos_for, run_on_kernels, to_device
from mps_ops.testing import device, emulate
from torch.testing._internal.opinfo.core import SampleInput

FORMS = ("functional", "out", "inplace")

ALL_CASES = [
    pytest.param(record, opinfo, dtype, id=f"{opinfo_name(opinfo)}-{str(dtype)[6:]}")
    for record in mps_ops.ops()
    for opinfo in opinfos_for(record)
    for dtype in record.dtypes
    if dtype in opinfo.supported_dtypes("cpu")
]
# The registry says which call forms reach our overloads (std: only out=).
CASES = [case for case in ALL_CASES if "functional" in case.values[0].forms]
OUT_CASES = [case for case in ALL_CASES
             if "out" in case.values[0].forms and case.values[1].supports_out]
INPLACE_CASES = [case for case in ALL_CASES
                 if "inplace" in case.values[0].forms and case.values[1].inplace_variant is not None]


def test_every_registry_form_has_cases():
    for record in mps_ops.ops():
        for form, cases in (("functional", CASES), ("out", OUT_CASES), ("inplace", INPLACE_CASES)):
            if record.opinfo and form in record.forms and record.forms != FORMS:
                assert any(c.values[0] == record for c in cases), f"{record.name}: no {form} cases"
ERROR_CASES = [
    pytest.param(record, opinfo, id=opinfo_name(opinfo))
    for record in mps_ops.ops()
    for opinfo in opinfos_for(record)
    # where's error inputs are all for a second device: none on the CPU.
    if opinfo.error_inputs_func is not None and next(iter(opinfo.error_inputs("cpu")), None) is not None
]


def _mode_matches(actual, expected, sample, where):
    """mode's values must equal the CPU's. Its index among repeated values is
    not specified: the CPU takes whatever its (unstable) std::sort leaves last,
    which differs between C++ libraries, so a Mac's CPU and a Linux CPU can
    disagree. Ours is the last occurrence; here it must hold the mode value."""
    assert_matches(actual[0], expected[0], where)
    dim = sample.args[0] if sample.args else sample.kwargs.get("dim", -1)
    keepdim = sample.args[1] if len(sample.args) > 1 else sample.kwargs.get("keepdim", False)
    x = sample.input
    if x.dim() == 0:
        assert actual[1].item() == 0, where
        return
    idx = actual[1] if keepdim else actual[1].unsqueeze(dim)
    picked = x.gather(dim, idx)
    assert_matches(picked if keepdim else picked.squeeze(dim), expected[0], where + " (index)")


def _rrelu_matches(actual, expected, sample, where):
    """rrelu in training draws its slopes from the generator: ours through
    torch's uniform_ on the device's generator, the CPU's from its own
    stream, so the values differ; each must be x where x > 0 (and NaN) and x
    times a slope in [lower, upper] elsewhere. Evaluation is deterministic."""
    if not sample.kwargs.get("training", False):
        assert_matches(actual, expected, where)
        return
    lower, upper = sample.kwargs.get("lower", 1.0 / 8), sample.kwargs.get("upper", 1.0 / 3)
    x = sample.input.float()
    got = actual.float()
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, where
    passes = ~(x <= 0)
    assert torch.equal(got[passes].nan_to_num(), x[passes].nan_to_num()), where
    slack = 1e-2 * x.abs() if actual.dtype != torch.float32 else 1e-6 * x.abs()
    negative = ~passes
    assert (got[negative] <= x[negative] * lower + slack[negative]).all(), where
    assert (got[negative] >= x[negative] * upper - slack[negative]).all(), where


def _eig_matches(actual, expected, sample, where):
    """Eigenvalues as multisets, eigenvectors by norm and residual (the
    CPU's order and phases are its LAPACK's choice): test/eig_checks.py."""
    assert_eig_valid(sample.input, actual, where)


def _eigh_matches(actual, expected, sample, where):
    """Eigenvalues near the CPU's, eigenvectors orthonormal with a small
    residual (their signs are LAPACK's choice): test/eig_checks.py."""
    uplo = sample.kwargs.get("UPLO", sample.args[0] if sample.args else "L")
    assert_eigh_valid(sample.input, uplo, actual[0], actual[1], expected[0], where)
    assert actual[1].stride() == expected[1].stride(), f"{where}: eigenvector strides"


def _svd_matches(actual, expected, sample, where):
    """Singular values near the float64 ones, singular vectors orthonormal
    and rebuilding A (their signs are LAPACK's choice): test/eig_checks.py.
    torch.svd returns V where linalg.svd returns Vh, and takes `some`."""
    full = sample.kwargs.get("full_matrices", not sample.kwargs.get("some", True))
    u, s, v = actual
    vh = v.mT if where.startswith("svd ") else v
    assert_svd_valid(sample.input, u, s, vh, where, full)
    assert [t.stride() for t in actual] == [t.stride() for t in expected], f"{where}: strides"


def _eigvals_match(actual, expected, sample, where):
    assert_eigenvalues_valid(sample.input, actual, where)


def _matrix_exp_matches(actual, expected, sample, where):
    """Ours a Taylor polynomial where the CPU's is Bader, Blanes and Casas':
    normwise as near the float64 truth (test/test_matrix_exp.py's bound)."""
    truth = torch.linalg.matrix_exp(sample.input.double())
    assert_normwise_as_accurate(actual, expected, truth, 16 * sample.input.size(-1), where)


# Ops whose results the CPU does not pin down completely, or pins down by an
# algorithm of its own: how to compare them.
RESULT_CHECKS = {"mode": _mode_matches, "nn.functional.rrelu": _rrelu_matches,
                 "linalg.eig": _eig_matches, "linalg.eigvals": _eigvals_match, "linalg.eigh": _eigh_matches,
                 "matrix_exp": _matrix_exp_matches, "linalg.svd": _svd_matches, "svd": _svd_matches}


# Ops that draw their random windows in the input's dtype: a float64 call
# draws other ones, so it is no truth for a half call.
DRAWS_IN_DTYPE = {"nn.functional.fractional_max_pool2d", "nn.functional.fractional_max_pool3d"}


def _drawn_on_the_cpu(opinfo, sample):
    """The sample with its random windows drawn here, for both sides: on the
    emulator both calls draw from the CPU generator, but a GPU call draws
    from the GPU's, whose stream differs."""
    if opinfo_name(opinfo) not in DRAWS_IN_DTYPE or device() == "cpu" or "_random_samples" in sample.kwargs:
        return sample
    x = sample.input
    dims = 3 if opinfo_name(opinfo).endswith("3d") else 2
    batch = x.size(0) if x.dim() == dims + 2 else 1
    windows = torch.rand(batch, x.size(-dims - 1), dims, dtype=x.dtype)
    return SampleInput(x, args=sample.args, kwargs={**sample.kwargs, "_random_samples": windows})


def _compare(opinfo, actual, expected, sample, where):
    if opinfo_name(opinfo) in RESULT_CHECKS:
        RESULT_CHECKS[opinfo_name(opinfo)](actual, expected, sample, where)
    else:
        assert_matches(actual, expected, where)


def _compare_or_as_accurate(opinfo, actual, expected, sample, dtype, where):
    """_compare; where a half or bfloat16 result differs (the CPU rounds
    each step in the dtype, ours computes in float), ours no further from the
    float64 call's result than the CPU's."""
    try:
        _compare(opinfo, actual, expected, sample, where)
    except AssertionError:
        if dtype not in (torch.float16, torch.bfloat16):
            raise
        truth = opinfo(*to_float64((sample.input, *sample.args), dtype), **to_float64(sample.kwargs, dtype))
        assert_at_least_as_accurate(actual, expected, truth, where)


def _reaches_no_kernel(opinfo, sample) -> bool:
    """Samples that torch's composite routes to other ops before ours (an
    adaptive average pool to size 1 is a mean; an embedding without max_norm
    renormalises nothing; a smooth L1 loss with beta 0 is the L1 loss), and samples with nothing to compute (put with no
    indices returns self as it is)."""
    if opinfo_name(opinfo) == "put":
        return sample.args[0].numel() == 0
    if opinfo_name(opinfo) in ("svd", "linalg.svd", "linalg.svdvals"):
        return sample.input.numel() == 0  # full matrices of an empty A are identities
    if opinfo_name(opinfo) == "nn.functional.embedding":
        return sample.kwargs.get("max_norm") is None
    if opinfo_name(opinfo) == "nn.functional.smooth_l1_loss":
        return sample.kwargs.get("beta", 1.0) == 0  # F.smooth_l1_loss calls l1_loss then
    if opinfo_name(opinfo) in ("nn.functional.adaptive_avg_pool1d", "nn.functional.adaptive_avg_pool2d",
                               "nn.functional.adaptive_avg_pool3d"):
        dims = int(opinfo_name(opinfo)[-2])
        size = sample.args[0]
        # adaptive_avg_pool1d is 2-D pooling to (1, size).
        return all(s == 1 for s in ((size,) * dims if isinstance(size, int) else size))
    return False


def _samples(opinfo, dtype):
    for sample in opinfo.sample_inputs("cpu", dtype, requires_grad=False):
        yield "contiguous", sample
        yield "noncontiguous", sample.noncontiguous()


@pytest.mark.parametrize("record, opinfo, dtype", CASES)
def test_output_match(record, opinfo, dtype):
    assert record.active, f"{record.name} is not registered for MPS"
    n_samples = 0
    for layout, sample in _samples(opinfo, dtype):
        sample = _drawn_on_the_cpu(opinfo, sample)
        expected = opinfo(sample.input, *sample.args, **sample.kwargs)
        actual, dispatches = run_on_kernels(opinfo, sample.input, *sample.args, **sample.kwargs)
        where = f"{opinfo.name} {dtype} {layout} sample {sample.summary() if hasattr(sample, 'summary') else sample}"
        _compare_or_as_accurate(opinfo, actual, expected, sample, dtype, where)
        if dtype in (torch.float16, torch.bfloat16) and opinfo_name(opinfo) not in {*RESULT_CHECKS, *DRAWS_IN_DTYPE}:
            # Matching the CPU is not enough where the CPU keeps sums in the
            # reduced type: ours must also be the float64 result, rounded.
            truth = opinfo(*to_float64((sample.input, *sample.args), dtype), **to_float64(sample.kwargs, dtype))
            assert_near_truth(actual, truth, dtype, where)
        if numel_of(expected) > 0 and not _reaches_no_kernel(opinfo, sample):
            assert dispatches, f"{where}: no kernel dispatched"
        n_samples += 1
    assert n_samples > 0


@pytest.mark.parametrize("record, opinfo, dtype", OUT_CASES)
def test_out_variant(record, opinfo, dtype):
    for _, sample in _samples(opinfo, dtype):
        expected = opinfo(sample.input, *sample.args, **sample.kwargs)
        outs = (
            tuple(torch.empty(0, dtype=e.dtype) for e in expected)
            if isinstance(expected, tuple)
            else torch.empty(0, dtype=expected.dtype)
        )
        outs = to_device(outs)
        inputs = to_device((sample.input, sample.args, sample.kwargs))
        with mps_ops.profile() as prof, emulate():
            returned = opinfo(inputs[0], *inputs[1], out=outs, **inputs[2])
        # The out tensors themselves hold the result, and are what is returned.
        written = tuple(o.cpu() for o in outs) if isinstance(outs, tuple) else outs.cpu()
        _compare_or_as_accurate(opinfo, written, expected, sample, dtype, f"{opinfo.name} out=")
        if isinstance(outs, tuple):
            assert all(r is o for r, o in zip(returned, outs))
        else:
            assert returned is outs
        if numel_of(expected) > 0 and not _reaches_no_kernel(opinfo, sample):
            assert prof.dispatches


@pytest.mark.parametrize("record, opinfo, dtype", INPLACE_CASES)
def test_inplace_variant(record, opinfo, dtype):
    n_checked = 0
    for _, sample in _samples(opinfo, dtype):
        if opinfo(sample.input, *sample.args, **sample.kwargs).shape != sample.input.shape:
            continue  # in-place cannot broadcast self; the error test covers it
        # The CPU's in-place result: self's dtype (logical_and_ on a float
        # tensor writes 0.0 and 1.0 where the functional form returns bool).
        expected = opinfo.inplace_variant(sample.input.clone(), *sample.args, **sample.kwargs)
        target, args, kwargs = to_device((sample.input.clone(), sample.args, sample.kwargs))
        with mps_ops.profile() as prof, emulate():
            returned = opinfo.inplace_variant(target, *args, **kwargs)
        assert returned is target
        _compare_or_as_accurate(opinfo, target.cpu(), expected, sample, dtype, f"{opinfo.name} in-place")
        if expected.numel() > 0 and not _reaches_no_kernel(opinfo, sample):
            assert prof.dispatches
        n_checked += 1
    assert n_checked > 0


@pytest.mark.parametrize("record, opinfo", ERROR_CASES)
def test_error_inputs_raise_what_cpu_raises(record, opinfo):
    n = 0
    for error_input in opinfo.error_inputs("cpu"):
        sample = error_input.sample_input
        kwargs = sample.kwargs
        if "functional" not in record.forms:
            # Only the out= form is ours (narrow_copy): off the CPU, the
            # functional call runs torch's own composite, not our stub.
            kwargs = dict(kwargs, out=torch.empty(0, dtype=sample.input.dtype))
        with pytest.raises(Exception) as cpu_error:
            opinfo(sample.input, *sample.args, **kwargs)
        inputs = to_device((sample.input, sample.args, kwargs))
        with pytest.raises(Exception) as our_error, emulate():
            opinfo(inputs[0], *inputs[1], **inputs[2])
        assert type(our_error.value) is type(cpu_error.value), (our_error.value, cpu_error.value)
        n += 1
    assert n > 0
