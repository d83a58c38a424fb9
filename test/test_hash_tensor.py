"""hash_tensor against the CPU, bit for bit: layouts OpInfo leaves out
(transposed, strided, expanded, several dims, keepdim, 0-dim, empty), every
dtype's widening (float specials, subnormals and NaN payloads; integer
extremes), out= of any layout, a slice of more than 2**31 elements, and the
CPU's errors in the CPU's order."""

from __future__ import annotations

import pytest
import torch

from helpers import REDUCTION_LAYOUTS as LAYOUTS, errors_of_cpu_and_ours, run_on_kernels, values_with_limits

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"hash_tensor"}

DIMS = {
    "all": {},
    "last": {"dim": [-1]},
    "first_keepdim": {"dim": [0], "keepdim": True},
    "two_dims": {"dim": [0, -1]},
    "all_keepdim": {"keepdim": True},
}


def _check(x, **kwargs):
    expected = torch.hash_tensor(x, **kwargs)
    actual, dispatches = run_on_kernels(lambda t: torch.hash_tensor(t, **kwargs), x)
    assert actual.dtype == torch.uint64 and actual.shape == expected.shape
    assert torch.equal(actual, expected), (actual, expected)
    return dispatches


@pytest.mark.parametrize("dims", list(DIMS))
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_layouts(layout, dims):
    torch.manual_seed(0)
    x = LAYOUTS[layout]()
    kwargs = DIMS[dims]
    if x.dim() == 0 and dims == "two_dims":
        kwargs = {"dim": [0]}
    dispatches = _check(x, **kwargs)
    assert dispatches and all(d.kernel.startswith("hash_tensor_") for d in dispatches), dispatches


_FLOAT_BITS = {
    # infinities, signed zeros, the largest and smallest normals and
    # subnormals, quiet and signalling NaNs with payloads and both signs.
    torch.float32: [0x7F800000, 0xFF800000, 0x00000000, 0x80000000, 0x7F7FFFFF, 0x00800000, 0x00000001,
                    0x807FFFFF, 0x00400000, 0x7FC00000, 0x7F800001, 0xFFC12345, 0x7FBFFFFF, 0x3F800000],
    torch.float16: [0x7C00, 0xFC00, 0x0000, 0x8000, 0x7BFF, 0x0400, 0x0001, 0x83FF, 0x7E00, 0x7C01, 0xFD55, 0x3C00],
    torch.bfloat16: [0x7F80, 0xFF80, 0x0000, 0x8000, 0x7F7F, 0x0080, 0x0001, 0x807F, 0x7FC0, 0x7F81, 0xFFD5, 0x3F80],
}
_BITS_DTYPE = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}


@pytest.mark.parametrize("dtype", list(_FLOAT_BITS))
def test_float_values_widen_to_the_cpus_double_bits(dtype):
    """Each special value alone (an xor of several could hide a wrong bit
    pattern under another), then all of them in one slice."""
    bits = torch.tensor(_FLOAT_BITS[dtype], dtype=torch.int64).to(_BITS_DTYPE[dtype]).view(dtype)
    _check(bits.reshape(-1, 1), dim=[1])
    _check(bits)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_every_bit_pattern_widens_alone(dtype):
    """Each of the 65536 half and bfloat16 patterns in its own slice, and
    2**16 random float32 patterns (every exponent, each sign) beside every
    exponent's extremes: the widening's fast and slow ways, one by one."""
    if dtype == torch.float32:
        torch.manual_seed(2)
        random = torch.randint(-2**31, 2**31, (2**16,), dtype=torch.int64)
        exponents = torch.arange(256, dtype=torch.int64) << 23
        extremes = torch.cat([exponents, exponents | 0x7FFFFF, exponents | 1, exponents | 0x400000])
        patterns = torch.cat([random, extremes, extremes | (1 << 31)])
        bits = torch.where(patterns >= 2**31, patterns - 2**32, patterns).to(torch.int32)
    else:
        bits = torch.arange(-2**15, 2**15, dtype=torch.int32).to(torch.int16)
    _check(bits.view(dtype).reshape(-1, 1), dim=[1])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_every_bit_pattern_widens_alone_within_runs(dtype):
    """The same patterns, each in its own slice of 256 among +0.0s (whose
    double is all zero bits): slices this long are folded in runs of loads,
    whose branch-free widening and rare-value swap differ from the one
    element at a time above. Each pattern sits at another place in its slice,
    so every thread, every place in a run and both halves of a pair see the
    rare values."""
    if dtype == torch.float32:
        torch.manual_seed(3)
        random = torch.randint(-2**31, 2**31, (2**14,), dtype=torch.int64)
        exponents = torch.arange(256, dtype=torch.int64) << 23
        extremes = torch.cat([exponents, exponents | 0x7FFFFF, exponents | 1, exponents | 0x400000, exponents | 7])
        patterns = torch.cat([random, extremes, extremes | (1 << 31)])
        bits = torch.where(patterns >= 2**31, patterns - 2**32, patterns).to(torch.int32)
    else:
        bits = torch.arange(-2**15, 2**15, dtype=torch.int32).to(torch.int16)
    slices = torch.zeros(bits.numel(), 256, dtype=bits.dtype)
    slices[torch.arange(bits.numel()), torch.arange(bits.numel()) % 256] = bits
    # Contiguous half and bfloat16: two elements per load (the pairs
    # kernels); strided, or float: one.
    paired = _check(slices.view(dtype), dim=[1])
    assert all(("_pairs_" in d.kernel) == (dtype != torch.float32) for d in paired), paired
    single = _check(slices.t().contiguous().t().view(dtype), dim=[1])
    assert not any("_pairs_" in d.kernel for d in single), single


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("offset, shape, dims, paired", [
    (0, (6, 40), [1], True),
    (0, (6, 40), None, True),  # all dims: one slice
    (0, (6, 5, 8), [1, 2], True),  # two trailing dims merge into one slice of 40
    (1, (6, 40), [1], False),  # slices start between words
    (0, (6, 41), [1], False),  # odd slices: a word would straddle two
    (0, (6, 40), [0], False),  # the reduced dim is not the innermost
])
def test_contiguous_slices_read_in_pairs_where_they_allow_it(dtype, offset, shape, dims, paired):
    torch.manual_seed(4)
    n = torch.Size(shape).numel()
    x = values_with_limits(dtype, (n + offset,), scale=1000.0)[offset:].view(shape)
    dispatches = _check(x, dim=dims) if dims is not None else _check(x)
    assert all(("_pairs_" in d.kernel) == paired for d in dispatches), dispatches


@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
                                   torch.float16, torch.bfloat16, torch.float32])
def test_every_dtype(dtype):
    torch.manual_seed(1)
    x = values_with_limits(dtype, (6, 77), scale=1000.0)  # integers: sign extension at both ends
    for kwargs in DIMS.values():
        _check(x, **kwargs)
    # Each element alone: an xor over a slice could hide one wrong widening
    # under another.
    _check(x.reshape(-1, 1), dim=[1])


def test_empty_inputs():
    # An empty dim reduced away: nothing to dispatch; an empty dim kept: the
    # xor of nothing, 0.
    actual, dispatches = run_on_kernels(lambda t: torch.hash_tensor(t, dim=[1]), torch.empty(0, 4))
    assert actual.shape == (0,) and not dispatches
    _check(torch.empty(3, 0, 4), dim=[0, 2])


def test_out_of_any_layout_receives_the_result():
    x = torch.randn(6, 33)
    expected = torch.hash_tensor(x, dim=[1])
    out = torch.empty(12, dtype=torch.uint64)[::2]
    actual, dispatches = run_on_kernels(lambda x_, o: torch.hash_tensor(x_, dim=[1], out=o), x, out)
    assert torch.equal(actual, expected) and dispatches


def test_a_slice_of_more_than_2_31_elements():
    """Stride 0, an odd count per row, so each row's hash is its value's bits
    (an even count would cancel to 0 whatever the kernel read)."""
    n = 2**30 + 5
    x = torch.tensor([[1.5], [-3.0]]).expand(2, n)
    dispatches = _check(x, dim=[1])
    assert [d.kernel for d in dispatches] == ["hash_tensor_reduce_ulong_float", "hash_tensor_merge_ulong_float"]
    _check(x)


@pytest.mark.parametrize("call, x, error", [
    (lambda t: torch.hash_tensor(t), torch.empty(0, 3), RuntimeError),                 # no dim, no elements
    (lambda t: torch.hash_tensor(t, dim=[0]), torch.empty(0, 3), IndexError),          # empty reduced dim
    (lambda t: torch.hash_tensor(t, dim=[2]), torch.randn(2, 3), IndexError),          # dim out of range
    (lambda t: torch.hash_tensor(t, dim=[0, 0]), torch.randn(2, 3), RuntimeError),     # repeated dim
    (lambda t: torch.hash_tensor(t, mode=1), torch.randn(2, 3), RuntimeError),         # unknown mode
    (lambda t: torch.hash_tensor(t, out=torch.empty(0, dtype=torch.int64)), torch.randn(2), RuntimeError),
    # the out's dtype, then the mode, then the input's dtype: the CPU's order
    (lambda t: torch.hash_tensor(t, mode=3, out=torch.empty(0, dtype=torch.int64)), torch.ones(2), RuntimeError),
    (lambda t: torch.hash_tensor(t, mode=3), torch.ones(2, dtype=torch.complex64), RuntimeError),
    (lambda t: torch.hash_tensor(t), torch.ones(2, dtype=torch.complex64), NotImplementedError),
    (lambda t: torch.hash_tensor(t), torch.ones(2, dtype=torch.uint32), NotImplementedError),
])
def test_errors_are_the_cpus(call, x, error):
    cpu, ours = errors_of_cpu_and_ours(call, x)
    assert isinstance(cpu, error)
    if error is NotImplementedError:  # the CPU names its kernel, ours the op, dtype and device
        dtype_named = str(cpu).split("not implemented for ")[1].strip("'")
        assert "hash_tensor" in str(ours) and dtype_named in str(ours)
    else:
        assert str(cpu).split("(")[0].strip() in str(ours)


def test_float64_is_refused_clearly():
    with pytest.raises(TypeError, match="float64"):
        run_on_kernels(lambda t: torch.hash_tensor(t), torch.randn(3).double())
