"""Our own samples for what OpInfo misses: transposed, strided, broadcast,
0-dim, empty, CPU-scalar operands, Python-number operands, float64 refusal,
and a > 2**31-element stride-0 expanded input (the 32-bit split path)."""

from __future__ import annotations

import ast
import glob
import os

import pytest
import torch

import mps_ops
from mps_ops import samples
from helpers import OnCpu, assert_matches, run_on_cpu, run_on_kernels

HERE = os.path.dirname(os.path.abspath(__file__))

# The element-wise ops and their operands: mps_ops.samples (shaped ops from
# their registry domains, the others from its ELEMENTWISE_WITH_STUBS).
_ELEMENTWISE = samples.elementwise_ops()
UNARY = {name: (e.fn, e.makers[0]) for name, e in _ELEMENTWISE.items() if len(e.makers) == 1}
BINARY = {name: (e.fn, *e.makers) for name, e in _ELEMENTWISE.items() if len(e.makers) == 2}


def _takes_python_numbers(name) -> bool:
    """Whether torch has an overload of the op taking a Python number for an
    operand (the special polynomials' x_scalar and n_scalar, which wrap it
    and call ours); gcd takes tensors only."""
    packet = getattr(torch.ops.aten, name)
    return any(isinstance(a.type, torch.NumberType) for o in packet.overloads() for a in getattr(packet, o)._schema.arguments)


NUMBER_OPERANDS = [name for name, r in ((r.name.split("::")[1], r) for r in mps_ops.ops())
                   if r.shape and name in BINARY and _takes_python_numbers(name)]


# Ops whose layouts other files test: each names them in its own
# LAYOUTS_TESTED_HERE (an op with a test file of its own touches no table
# here); take's are below.
LAYOUTS_TESTED_HERE = {"take"}


def _layouts_tested_in(path) -> set:
    """The literal LAYOUTS_TESTED_HERE of a test file (read, not imported)."""
    tree = ast.parse(open(path).read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "LAYOUTS_TESTED_HERE" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


def test_every_registry_op_has_layout_samples():
    names = {r.name.split("::")[1] for r in mps_ops.ops()}
    elsewhere = set().union(*(_layouts_tested_in(p) for p in glob.glob(os.path.join(HERE, "test_*.py"))))
    assert names == set(UNARY) | set(BINARY) | elsewhere, (names ^ (set(UNARY) | set(BINARY) | elsewhere))


def _check(fn, *args, expect_dispatch=True, variant=None):
    expected = run_on_cpu(fn, *args)
    actual, dispatches = run_on_kernels(fn, *args)
    assert_matches(actual, expected, fn.__name__)
    if expect_dispatch:
        assert dispatches, f"{fn.__name__}: no kernel dispatched"
    if variant is not None:
        assert all(f"_{variant}_" in d.kernel for d in dispatches), [d.kernel for d in dispatches]
    return dispatches


UNARY_LAYOUTS = {
    "transposed": (lambda make: make((6, 9)).t(), "dense"),
    "strided": (lambda make: make((6, 18))[:, ::2], "strided"),
    "expanded": (lambda make: make((6, 1)).expand(6, 7), "strided"),
    "zero_dim": (lambda make: make(()), None),
    "offset_view": (lambda make: make((40,))[3:29], "dense"),
}


@pytest.mark.parametrize("layout", list(UNARY_LAYOUTS))
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_layouts(name, layout):
    fn, make = UNARY[name]
    build, variant = UNARY_LAYOUTS[layout]
    _check(fn, build(make), variant=variant)


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_empty_dispatches_nothing(name):
    fn, make = UNARY[name]
    assert not _check(fn, make((0, 3)), expect_dispatch=False)


BINARY_LAYOUTS = {
    "same_shape": (lambda a, b: (a((5, 7)), b((5, 7))), "dense"),
    "both_transposed": (lambda a, b: (a((7, 5)).t(), b((7, 5)).t()), "dense"),
    "broadcast": (lambda a, b: (a((5, 1)), b((1, 7))), "strided"),
    "strided": (lambda a, b: (a((5, 14))[:, ::2], b((5, 7))), "strided"),
    "rhs_cpu_scalar": (lambda a, b: (a((5, 7)), OnCpu(b(()))), "dense_rhs_scalar"),
    "lhs_cpu_scalar": (lambda a, b: (OnCpu(a(())), b((5, 7))), "dense_lhs_scalar"),
    "transposed_with_scalar": (lambda a, b: (a((7, 5)).t(), OnCpu(b(()))), "dense_rhs_scalar"),
    "zero_dim": (lambda a, b: (a(()), b(())), None),
}


@pytest.mark.parametrize("layout", list(BINARY_LAYOUTS))
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_layouts(name, layout):
    fn, make_a, make_b = BINARY[name]
    build, variant = BINARY_LAYOUTS[layout]
    _check(fn, *build(make_a, make_b), variant=variant)


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_empty_dispatches_nothing(name):
    fn, make_a, make_b = BINARY[name]
    assert not _check(fn, make_a((0, 4)), make_b((0, 4)), expect_dispatch=False)


# 2-byte elements in and out (half, bfloat16, int16) go through the dense
# kernels two per 32-bit word (elementwise.h: paired_dense_elements): whole
# 256-element tiles as words, the last, partial tile one element at a time;
# an operand that does not start on a 4-byte boundary takes the strided
# kernel instead. frexp's second output is an int: single elements.
PAIRED_DTYPES = (torch.float16, torch.bfloat16, torch.int16)
_DTYPES = {r.name.split("::")[1]: r.dtypes for r in mps_ops.ops()}
PAIRED = [(name, dtype) for name in [*UNARY, *BINARY] if name != "frexp"
          for dtype in PAIRED_DTYPES if dtype in _DTYPES[name]]
PAIRED_STARTS = {"aligned": (0, "dense"), "word_offset": (2, "dense"), "half_word_offset": (1, "strided")}


@pytest.mark.parametrize("start", list(PAIRED_STARTS))
@pytest.mark.parametrize("name, dtype", PAIRED, ids=[f"{n}-{str(d).split('.')[1]}" for n, d in PAIRED])
def test_two_byte_elements_in_words_and_tile_tails(name, dtype, start):
    fn, *makers = UNARY.get(name) or BINARY[name]
    offset, variant = PAIRED_STARTS[start]
    n = 3 * 256 + 37  # three whole tiles and a partial one
    operands = [make((n + 3,)).to(dtype)[offset:offset + n] for make in makers]
    if fn(*operands).element_size() != 2:  # integers into float: single elements, any start
        variant = "dense"
    _check(fn, *operands, variant=variant)


@pytest.mark.parametrize("name", NUMBER_OPERANDS)
def test_python_number_operands(name):
    fn, make_x, make_n = BINARY[name]
    x, n = make_x((6,)), make_n((6,))
    x_number, n_number = make_x(()).item(), make_n(()).item()
    _check(lambda x_, n_: fn(x_number, n_), x, n, variant="dense_lhs_scalar")
    _check(lambda x_, n_: fn(x_, n_number), x, n, variant="dense_rhs_scalar")


def test_integer_inputs_compute_in_float():
    x = torch.arange(-3, 4, dtype=torch.int32)
    dispatches = _check(torch.special.log_ndtr, x)
    assert dispatches[0].kernel == "log_ndtr_dense_float_int"


def test_out_of_another_float_dtype_is_cast():
    x = torch.rand(9)
    expected = torch.special.ndtri(x).half()
    out = torch.empty(0, dtype=torch.half)
    actual, dispatches = run_on_kernels(lambda x_, o: torch.special.ndtri(x_, out=o), x, out)
    assert_matches(actual, expected)
    assert dispatches


def test_out_of_integer_dtype_is_refused_like_cpu():
    x = torch.rand(4)
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.special.ndtri(x, out=torch.empty(4, dtype=torch.int32))
    with pytest.raises(RuntimeError, match="can't be cast"):
        run_on_kernels(lambda x_, o: torch.special.ndtri(x_, out=o), x,
                       torch.empty(4, dtype=torch.int32))


def _strides_of(result):
    return [t.stride() for t in (result if isinstance(result, tuple) else (result,))]


def _assert_cpus_strides(fn, *args):
    """fn's results on our kernels have the CPU's strides, and so has an
    out= it resizes (the CPU's iterator's layout: the first input decides
    where the inputs' layouts disagree)."""
    expected = fn(*args)
    actual, dispatches = run_on_kernels(fn, *args)
    assert dispatches and _strides_of(actual) == _strides_of(expected), (_strides_of(actual), _strides_of(expected))

    def into_empty(*a):
        outs = tuple(torch.empty(0, dtype=e.dtype) for e in (expected if isinstance(expected, tuple) else (expected,)))
        return fn(*a, out=outs if isinstance(expected, tuple) else outs[0])
    expected_out = into_empty(*args)
    actual_out, _ = run_on_kernels(into_empty, *args)
    assert _strides_of(actual_out) == _strides_of(expected_out), (_strides_of(actual_out), _strides_of(expected_out))


MIXED_UNARY = {
    "transposed": lambda make: make((6, 9)).t(),
    "channels_last": lambda make: make((2, 3, 4, 5)).to(memory_format=torch.channels_last),
    "permuted_strided": lambda make: make((4, 6, 10))[:, :, ::2].permute(2, 0, 1),
}


@pytest.mark.parametrize("layout", list(MIXED_UNARY))
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_results_and_resized_outs_keep_the_inputs_layout(name, layout):
    fn, make = UNARY[name]
    _assert_cpus_strides(fn, MIXED_UNARY[layout](make))


MIXED_BINARY = {
    "transposed_and_contiguous": lambda a, b: (a((7, 5)).t(), b((5, 7))),
    "contiguous_and_transposed": lambda a, b: (a((5, 7)), b((7, 5)).t()),
    "channels_last_and_broadcast": lambda a, b: (a((2, 3, 4, 5)).to(memory_format=torch.channels_last), b((5,))),
    "broadcast_and_channels_last": lambda a, b: (a((3, 1, 1)), b((2, 3, 4, 5)).to(memory_format=torch.channels_last)),
}


@pytest.mark.parametrize("layout", list(MIXED_BINARY))
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_results_and_resized_outs_take_the_cpus_layout(name, layout):
    """Operands of different layouts: a channels-last input beside a
    broadcast one stays channels-last (it came out contiguous)."""
    fn, make_a, make_b = BINARY[name]
    _assert_cpus_strides(fn, *MIXED_BINARY[layout](make_a, make_b))


@pytest.mark.parametrize("resized", ["mantissa", "exponent"])
def test_frexp_lays_a_resized_output_out_by_the_other(resized):
    """One iterator over both outputs: the one of the right size (here
    permuted) orders the dims for the one resized."""
    x = torch.rand(2, 3, 4, 5)

    def call(t):
        right = torch.empty(5, 4, 3, 2).permute(3, 2, 1, 0)
        outs = ((torch.empty(0), right.int()) if resized == "mantissa" else (right, torch.empty(0, dtype=torch.int32)))
        return torch.frexp(t, out=outs)
    expected = call(x)
    actual, dispatches = run_on_kernels(call, x)
    assert_matches(actual, expected)
    assert dispatches and _strides_of(actual) == _strides_of(expected), (_strides_of(actual), _strides_of(expected))


@pytest.mark.parametrize("call", [
    lambda b, cl: torch.heaviside(b, cl, out=b),
    lambda b, cl: torch.ops.aten.threshold_backward.grad_input(b, cl, 0.1, grad_input=b),
    lambda b, cl: torch.ops.aten._add_relu.out(b, cl, out=b),
], ids=["heaviside", "threshold_backward", "_add_relu"])
def test_an_out_that_is_a_broadcast_input_is_not_resized(call):
    """The CPU's iterator refuses to resize an output it also reads (ours
    resized the input and computed into it)."""
    b, cl = torch.rand(3, 1, 1), torch.rand(2, 3, 4, 5).to(memory_format=torch.channels_last)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        call(b.clone(), cl)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        run_on_kernels(call, b.clone(), cl)


def test_inplace_cannot_broadcast_self():
    a, b = torch.zeros(1, 3), torch.ones(2, 3)
    with pytest.raises(RuntimeError):
        a.clone().heaviside_(b)
    with pytest.raises(RuntimeError):
        run_on_kernels(lambda x, y: x.heaviside_(y), a.clone(), b)


@pytest.mark.parametrize("name", list(UNARY))
def test_float64_raises_type_error_naming_op_and_device(name):
    fn, make = UNARY[name]
    with pytest.raises(TypeError, match=r"float64.*Metal has no double"):
        run_on_kernels(fn, make((3,)).double())


def test_complex_raises_not_implemented():
    with pytest.raises(NotImplementedError, match="special_ndtri"):
        run_on_kernels(torch.special.ndtri, torch.rand(3, dtype=torch.complex64))


def test_unsupported_dtype_names_op_dtype_and_device():
    # ndtri has no half kernel, as on the CPU.
    with pytest.raises(NotImplementedError, match=r"ndtri.*Half.*(emulator|mps|cuda)"):
        run_on_kernels(torch.special.ndtri, torch.rand(3, dtype=torch.half))


def test_more_than_2_31_elements_through_expanded_input():
    n = 2**31 + 8
    x = torch.tensor([0, 1, -1], dtype=torch.bool)[1:2].expand(n)
    values = torch.tensor(False)
    actual, dispatches = run_on_kernels(torch.heaviside, x, values)
    assert actual.shape == (n,)
    assert len(dispatches) >= 2, "a > 2**31 element iteration must be split for 32-bit indexing"
    assert bool(actual.all())
    # Eight 1-byte elements per thread (shape_limits.h): each piece's grid
    # covers it with less than one thread to spare.
    threads = sum(d.threads[0] * d.threads[1] for d in dispatches)
    assert n <= 8 * threads < n + 8 * len(dispatches)


@pytest.mark.parametrize(
    "make_self",
    [lambda: torch.randn(6, 9).t(), lambda: torch.randn(6, 18)[:, ::2], lambda: torch.tensor(3.5),
     lambda: torch.randn(2, 1, 3).expand(2, 4, 3)],
    ids=["transposed", "strided", "zero_dim", "expanded"],
)
def test_take_strided_self_and_negative_indices(make_self):
    self_ = make_self()
    n = self_.numel()
    index = torch.randint(-n, n, (4, 5))
    _check(torch.take, self_, index, variant="dense")
    _check(torch.take, self_, index.t(), variant="dense")


def test_take_checks_like_the_cpu():
    x = torch.randn(4, 5)
    for bad in (torch.tensor([20]), torch.tensor([-21])):
        with pytest.raises(IndexError, match=r"out of range: tried to access index -?2\d on a tensor of 20"):
            run_on_kernels(torch.take, x, bad)
    with pytest.raises(RuntimeError, match="Expected a long tensor") as cpu_error:
        torch.take(x, torch.tensor([1], dtype=torch.int32))
    with pytest.raises(RuntimeError, match="Expected a long tensor") as ours:
        run_on_kernels(torch.take, x, torch.tensor([1], dtype=torch.int32))
    assert type(ours.value) is type(cpu_error.value)
    with pytest.raises(IndexError, match="empty tensor"):
        run_on_kernels(torch.take, torch.randn(0), torch.tensor([0]))
    assert not _check(torch.take, torch.randn(0), torch.zeros(0, dtype=torch.long), expect_dispatch=False)
