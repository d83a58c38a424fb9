"""_addmm_activation (no OpInfo) against the CPU: relu and gelu over every
dtype the CPU takes, beta and alpha (zero ones drop their term, NaN and all,
as the CPU's BLAS call does), self broadcast in each way addmm allows,
strided and transposed matrices, out= of any layout, empty products, NaN
and infinities, and the CPU's errors. Outputs of more than 2**31 elements
are not tried: the element-wise pass is the framework's (test_layouts.py
takes it past 2**31), and such a product would be a 2**31-element mm on the
CPU."""

from __future__ import annotations

import pytest
import torch

from helpers import assert_matches, errors_of_cpu_and_ours, run_on_kernels

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"_addmm_activation"}

OP = torch.ops.aten._addmm_activation.default
OUT = torch.ops.aten._addmm_activation.out
KERNEL = "addmm_activation_"


def _values(dtype, *shape):
    x = torch.randn(*shape) * 3
    return x.to(dtype) if dtype.is_floating_point else x.round().to(dtype)


def _check(self, mat1, mat2, **kwargs):
    expected = OP(self, mat1, mat2, **kwargs)
    actual, dispatches = run_on_kernels(lambda s, a, b: OP(s, a, b, **kwargs), self, mat1, mat2)
    assert_matches(actual, expected)
    assert any(d.kernel.startswith(KERNEL) for d in dispatches), dispatches
    return actual


@pytest.mark.parametrize("use_gelu", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.uint8, torch.int8,
                                   torch.int16, torch.int32, torch.int64])
def test_dtypes(dtype, use_gelu):
    torch.manual_seed(0)
    operands = _values(dtype, 7), _values(dtype, 5, 6), _values(dtype, 6, 7)
    if use_gelu and not dtype.is_floating_point:
        with pytest.raises(NotImplementedError):
            OP(*operands, use_gelu=True)
        with pytest.raises(NotImplementedError, match="_addmm_activation"):
            run_on_kernels(lambda *t: OP(*t, use_gelu=True), *operands)
        return
    for beta, alpha in [(1, 1), (0.5, 2), (-2, 0.25), (3, -1)]:
        _check(*operands, beta=beta, alpha=alpha, use_gelu=use_gelu)


SELF_SHAPES = {
    "row": (9,),
    "row_2d": (1, 9),
    "column": (4, 1),
    "full": (4, 9),
    "zero_dim": (),
}


@pytest.mark.parametrize("use_gelu", [False, True])
@pytest.mark.parametrize("shape", list(SELF_SHAPES))
def test_self_broadcasts_as_addmm_allows(shape, use_gelu):
    torch.manual_seed(1)
    _check(torch.randn(SELF_SHAPES[shape]), torch.randn(4, 3), torch.randn(3, 9), use_gelu=use_gelu)


def test_a_cpu_scalar_self_joins_the_matrices():
    """A 0-dim CPU self (a Python-side bias) with device matrices, as
    TensorIterator ops take one."""
    torch.manual_seed(1)
    mat1, mat2 = torch.randn(4, 3), torch.randn(3, 9)
    expected = OP(torch.tensor(0.5), mat1, mat2, use_gelu=True)

    def call(a, b):
        return OP(torch.tensor(0.5, device="cpu"), a, b, use_gelu=True)

    actual, dispatches = run_on_kernels(call, mat1, mat2)
    assert_matches(actual, expected)
    assert any(d.kernel.startswith(KERNEL) for d in dispatches)


MATRIX_LAYOUTS = {
    "contiguous": lambda: (torch.randn(6, 9), torch.randn(6, 5), torch.randn(5, 9)),
    "transposed": lambda: (torch.randn(9, 6).t(), torch.randn(5, 6).t(), torch.randn(9, 5).t()),
    "sliced": lambda: (torch.randn(6, 18)[:, ::2], torch.randn(6, 10)[:, 1::2], torch.randn(7, 9)[2:]),
    "expanded": lambda: (torch.randn(1, 9).expand(6, 9), torch.randn(6, 1).expand(6, 5), torch.randn(5, 9)),
}


@pytest.mark.parametrize("layout", list(MATRIX_LAYOUTS))
def test_strided_operands(layout):
    torch.manual_seed(2)
    _check(*MATRIX_LAYOUTS[layout](), beta=0.5, alpha=1.5)


# An out of the wrong size (resized, with the CPU's warning): test_outputs.py.
@pytest.mark.parametrize("out_layout", ["empty", "right_size", "transposed", "sliced"])
def test_out_of_any_layout(out_layout):
    torch.manual_seed(3)
    operands = torch.randn(9), torch.randn(4, 3), torch.randn(3, 9)
    expected = OP(*operands, use_gelu=True)
    out = {
        "empty": lambda: torch.empty(0),
        "right_size": lambda: torch.empty(4, 9),
        "transposed": lambda: torch.empty(9, 4).t(),
        "sliced": lambda: torch.empty(4, 18)[:, ::2],
    }[out_layout]()

    def call(s, a, b, o):
        returned = OUT(s, a, b, use_gelu=True, out=o)
        assert returned is o
        return o

    actual, dispatches = run_on_kernels(call, *operands, out)
    assert_matches(actual, expected)
    assert any(d.kernel.startswith(KERNEL) for d in dispatches)


def test_a_zero_coefficient_drops_its_term_nan_and_all():
    self, mat1, mat2 = torch.randn(5), torch.randn(3, 4), torch.randn(4, 5)
    self[1] = float("nan")
    mat1[0, 0] = float("nan")
    for use_gelu in (False, True):
        _check(self, mat1, mat2, beta=0, use_gelu=use_gelu)
        _check(self, mat1, mat2, alpha=0, use_gelu=use_gelu)
        _check(self, mat1, mat2, use_gelu=use_gelu)  # both terms: NaN where either has one


@pytest.mark.parametrize("use_gelu", [False, True])
def test_infinities_and_huge_values(use_gelu):
    """Against the CPU in float64 (the same infinities and NaNs: gelu(inf) is
    inf, gelu(-inf) the formula's -inf * 0, NaN): some CPUs' vectorised float
    gelu gives NaN for inf."""
    self, mat1, mat2 = torch.zeros(3), torch.tensor([[1e38], [-1e38], [float("inf")], [-float("inf")], [0.0], [-0.0]]), \
        torch.tensor([[2.0, 1.0, -1.0]])  # products within float's range: float and float64 agree
    expected = OP(self.double(), mat1.double(), mat2.double(), use_gelu=use_gelu).float()
    actual, dispatches = run_on_kernels(lambda s, a, b: OP(s, a, b, use_gelu=use_gelu), self, mat1, mat2)
    assert_matches(actual, expected)
    assert any(d.kernel.startswith(KERNEL) for d in dispatches)


@pytest.mark.parametrize("shape", [(0, 4, 5), (3, 4, 0), (3, 0, 5)])
def test_empty_products(shape):
    m, k, n = shape
    expected = OP(torch.randn(n), torch.randn(m, k), torch.randn(k, n), beta=2)
    actual, _ = run_on_kernels(lambda s, a, b: OP(s, a, b, beta=2), torch.randn(n), torch.randn(m, k),
                               torch.randn(k, n))
    assert actual.shape == expected.shape


def test_empty_inner_dim_gives_the_activation_of_beta_self():
    torch.manual_seed(4)
    _check(torch.randn(3, 5), torch.randn(3, 0), torch.randn(0, 5), beta=2, use_gelu=True)


@pytest.mark.parametrize("call, operands, error", [
    (OP, (torch.randn(5).half(), torch.randn(3, 4), torch.randn(4, 5)), RuntimeError),      # self's dtype
    (OP, (torch.randn(5), torch.randn(3, 4).half(), torch.randn(4, 5)), RuntimeError),      # mat1's dtype
    (OP, (torch.randn(5), torch.randn(3, 4, 1), torch.randn(4, 5)), RuntimeError),          # mat1 not 2-D
    (OP, (torch.randn(5), torch.randn(3, 4), torch.randn(4)), RuntimeError),                # mat2 not 2-D
    (OP, (torch.randn(5), torch.randn(3, 4), torch.randn(3, 5)), RuntimeError),             # inner sizes
    (OP, (torch.randn(2, 5), torch.randn(3, 4), torch.randn(4, 5)), RuntimeError),          # self won't expand
    (OP, (torch.randn(3, 5, 1), torch.randn(3, 4), torch.randn(4, 5)), RuntimeError),
    (OP, (torch.ones(5, dtype=torch.bool), torch.ones(3, 4, dtype=torch.bool), torch.ones(4, 5, dtype=torch.bool)),
     NotImplementedError),
    (lambda s, a, b: OP(s, a, b, beta=1 + 1j), (torch.randn(5), torch.randn(3, 4), torch.randn(4, 5)), RuntimeError),
    (lambda s, a, b: OUT(s, a, b, out=torch.empty(0, dtype=torch.half)),
     (torch.randn(5), torch.randn(3, 4), torch.randn(4, 5)), RuntimeError),                # out's dtype
    (lambda s, a, b: OUT(s, a, b, out=torch.empty(0, dtype=torch.half)),
     (torch.randn(5), torch.randn(3, 4), torch.randn(5, 5)), RuntimeError),                # shapes before out
])
def test_errors_are_the_cpus(call, operands, error):
    cpu, ours = errors_of_cpu_and_ours(call, *operands)
    assert isinstance(cpu, error)
    if error is not NotImplementedError:  # the CPU names its kernel, ours the op, dtype and device
        # up to the dtype names, which the CPU spells as types (float, c10::Half)
        assert str(cpu).split(",")[0].split("(")[0].split("[")[0].strip().lower() in str(ours).lower()
    else:
        assert "_addmm_activation" in str(ours) and "Bool" in str(ours)


def test_float64_is_refused_clearly():
    with pytest.raises(TypeError, match="float64"):
        run_on_kernels(OP, torch.randn(5).double(), torch.randn(3, 4).double(), torch.randn(4, 5).double())


def test_no_gradient_as_on_the_cpu():
    """torch defines no derivative for the op: the same error through ours."""
    def backward(s, a, b):
        OP(s, a, b).sum().backward()

    operands = torch.randn(5), torch.randn(3, 4).requires_grad_(), torch.randn(4, 5)
    with pytest.raises(RuntimeError, match="derivative for aten::_addmm_activation is not implemented"):
        backward(*operands)
    with pytest.raises(RuntimeError, match="derivative for aten::_addmm_activation is not implemented"):
        run_on_kernels(backward, *operands)
