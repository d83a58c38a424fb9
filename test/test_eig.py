"""linalg_eig and linalg_eigvals against the CPU: eigenvalues as multisets
against the float64 result, eigenvectors by unit norm and relative residual
(test/eig_checks.py), on random matrices from 1x1 to 128x128 and on
structured ones (conjugate pairs, repeated and clustered eigenvalues,
triangular, diagonal, Jordan blocks, companion matrices, extreme scales);
batches, strided operands, out= of any layout, empty inputs, gradients and
the CPU's errors. OpInfo's samples run in test_opinfo.py."""

from __future__ import annotations

import os

import pytest
import torch

from eig_checks import EPS, assert_eig_valid, assert_eigenvalues_valid, matched_distance
from helpers import MATRIX_LAYOUTS, errors_of_cpu_and_ours, run_on_kernels, seeded_randn

# The registry ops whose layouts this file tests (test_layouts.py checks
# that every registry op's layouts are tested somewhere).
LAYOUTS_TESTED_HERE = {"linalg_eig", "_linalg_eigvals"}

EIG = torch.linalg.eig
EIGVALS = torch.linalg.eigvals
# torch.linalg.eigvals calls _linalg_eigvals on a Mac; under the testing
# mode (a Python dispatch mode, which torch treats as a tensor subclass that
# may need gradients) it calls linalg_eig instead. The aten op itself reaches
# the eigenvalue-only path.
EIGVALS_ONLY = torch.ops.aten._linalg_eigvals
KERNEL = "eig_dense_float_float"


def _eig(a):
    result, dispatches = run_on_kernels(EIG, a)
    if a.numel():
        assert [d.kernel for d in dispatches] == [KERNEL]
    return result


def _eigvals(a):
    result, dispatches = run_on_kernels(EIGVALS_ONLY, a)
    if a.numel():
        assert [d.kernel for d in dispatches] == [KERNEL]
    return result


def _check(a, where=""):
    """eig's eigenpairs and eigvals' eigenvalues, each valid."""
    result = _eig(a)
    assert_eig_valid(a, result, where)
    values = _eigvals(a)
    assert_eigenvalues_valid(a, values, where + " (eigvals)")
    return result


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8, 17, 33, 64])
def test_random_matrices(n):
    for seed in range(3):
        _check(seeded_randn(2, n, n, seed=seed), f"n={n} seed={seed}")


@pytest.mark.parametrize("n", [100, 128])
def test_larger_matrices(n):
    """More threads than a SIMD group, and several rows per thread."""
    _check(seeded_randn(n, n, seed=n), f"n={n}")


def _rotation_blocks(angles, radii):
    """Block diagonal 2x2 rotations scaled by radii: eigenvalues r e^{+-i t}."""
    blocks = [r * torch.tensor([[torch.cos(t), -torch.sin(t)], [torch.sin(t), torch.cos(t)]])
              for t, r in zip(torch.tensor(angles), radii)]
    return torch.block_diag(*blocks)


def _similar(d, seed=0):
    """Q d Q^T for a random orthogonal Q: d's eigenvalues, hidden."""
    q, _ = torch.linalg.qr(seeded_randn(d.shape[0], d.shape[0], seed=seed).double())
    return (q @ d.double() @ q.T).float()


def _jordan(eigenvalue, size):
    return torch.diag(torch.full((size,), eigenvalue)) + torch.diag(torch.ones(size - 1), 1)


def _companion_of(coefficients):
    """The companion matrix of the monic polynomial x^n + c_1 x^(n-1) + ... + c_n."""
    n = len(coefficients)
    c = torch.zeros(n, n)
    c[0, :] = -torch.as_tensor(coefficients, dtype=torch.float32)
    c[1:, :-1] = torch.eye(n - 1)
    return c


def _companion(roots):
    """The companion matrix of the monic polynomial with these roots."""
    coefficients = torch.tensor([1.0], dtype=torch.float64)
    for r in roots:
        coefficients = torch.cat([coefficients, torch.zeros(1, dtype=torch.float64)]) - r * torch.cat(
            [torch.zeros(1, dtype=torch.float64), coefficients])
    return _companion_of(coefficients[1:])


STRUCTURED = {
    "conjugate_pairs": lambda: _similar(_rotation_blocks([0.3, 1.2, 2.5], [1.0, 2.0, 0.5])),
    "rotation": lambda: _rotation_blocks([0.7], [1.0]),
    "pure_imaginary": lambda: torch.tensor([[0.0, -2.0], [2.0, 0.0]]),
    "repeated": lambda: _similar(torch.diag(torch.tensor([2.0, 2.0, 2.0, -1.0, -1.0, 5.0]))),
    "clustered": lambda: _similar(torch.diag(1.0 + 1e-4 * torch.arange(6.0))),
    "upper_triangular": lambda: seeded_randn(7, 7, seed=1).triu(),
    "lower_triangular": lambda: seeded_randn(7, 7, seed=2).tril(),
    "diagonal": lambda: torch.diag(torch.tensor([3.0, -1.0, 0.5, -7.0, 0.0])),
    "identity": lambda: torch.eye(5),
    "zero": lambda: torch.zeros(4, 4),
    "rank_one": lambda: torch.outer(torch.arange(1.0, 6.0), torch.arange(2.0, 7.0)),
    "permutation": lambda: torch.eye(6)[[1, 2, 3, 4, 5, 0]],
    "companion": lambda: _companion([1.0, -2.0, 3.0, 0.5, -0.25]),
    "companion_complex_roots": lambda: _companion_of([0.0, 0.0, 0.0, 0.0, 1.0]),  # x^5 + 1: unit-circle roots
    "companion_roots_1_to_8": lambda: _companion([float(r) for r in range(1, 9)]),  # ill-conditioned roots
    "hessenberg": lambda: seeded_randn(8, 8, seed=3).triu(-1),
    "symmetric": lambda: (lambda x: x + x.T)(seeded_randn(6, 6, seed=4)),
    "skew_symmetric": lambda: (lambda x: x - x.T)(seeded_randn(6, 6, seed=5)),
    "tiny_scale": lambda: seeded_randn(6, 6, seed=6) * 1e-15,
    "huge_scale": lambda: seeded_randn(6, 6, seed=7) * 1e15,
    "badly_scaled": lambda: torch.diag(torch.tensor([1e-6, 1.0, 1e6])) @ seeded_randn(3, 3, seed=8)
    @ torch.diag(torch.tensor([1e6, 1.0, 1e-6])),
    "one_by_one": lambda: torch.tensor([[-3.5]]),
}


@pytest.mark.parametrize("name", list(STRUCTURED))
def test_structured_matrices(name):
    _check(STRUCTURED[name](), name)


@pytest.mark.parametrize("eigenvalue, size", [(2.0, 2), (2.0, 3), (-1.0, 4), (0.0, 5)])
def test_jordan_blocks(eigenvalue, size):
    """A defective block: float32's perturbation eps moves its eigenvalues by
    up to about eps**(1/size); ours must stay within that, and its vectors
    must still be eigenvectors (of a nearby matrix) to a small residual."""
    a = _similar(_jordan(eigenvalue, size), seed=size)
    values, vectors = _eig(a)
    bound = 4 * (size * EPS * float(a.norm())) ** (1.0 / size)
    assert matched_distance(values, torch.full((size,), eigenvalue, dtype=torch.complex64)) <= bound
    residual = (a.to(torch.complex128) @ vectors.to(torch.complex128)
                - vectors.to(torch.complex128) * values.to(torch.complex128)).norm(dim=0)
    assert residual.max() <= 32 * size * EPS * float(a.norm())


def test_real_eigenvalues_are_real_and_pairs_conjugate_in_order():
    """LAPACK's convention: a complex pair's eigenvalue with positive
    imaginary part first, its vector's conjugate beside it; real eigenvalues
    with a zero imaginary part (+0) and real vectors."""
    a = seeded_randn(12, 12, seed=9)
    values, vectors = _eig(a)
    i = 0
    while i < 12:
        if values[i].imag != 0:
            assert values[i].imag > 0 and values[i + 1] == values[i].conj()
            assert torch.equal(vectors[:, i + 1], vectors[:, i].conj())
            i += 2
        else:
            assert not torch.signbit(values[i].imag) and torch.equal(vectors[:, i].imag, torch.zeros(12))
            i += 1


def test_the_cpus_order_where_eigenvalues_are_well_separated():
    """The same deflation order as LAPACK's geev for a plain random matrix
    (documented as unspecified, but users compare): equal in order within
    float32 rounding."""
    a = seeded_randn(6, 6, seed=10)
    values, _ = _eig(a)
    torch.testing.assert_close(values, EIG(a)[0], atol=1e-4, rtol=1e-4)


def test_a_complex_vector_has_its_largest_component_real():
    a = seeded_randn(9, 9, seed=11)
    values, vectors = _eig(a)
    for k in range(9):
        if values[k].imag > 0:
            largest = vectors[:, k].abs().argmax()
            assert vectors[largest, k].imag == 0 and vectors[largest, k].real > 0


@pytest.mark.parametrize("layout", list(MATRIX_LAYOUTS))
def test_layouts_give_the_contiguous_results(layout):
    """The kernel reads a column-major copy: any layout gives the same bits."""
    a = MATRIX_LAYOUTS[layout](seeded_randn(3, 7, 7, seed=12))
    values, vectors = _eig(a)
    expected_values, expected_vectors = _eig(a.contiguous())
    assert torch.equal(values, expected_values) and torch.equal(vectors, expected_vectors)
    assert torch.equal(_eigvals(a), _eigvals(a.contiguous()))
    assert torch.equal(run_on_kernels(EIGVALS, a)[0], values)  # through linalg_eig here


def test_batches_are_independent():
    a = seeded_randn(2, 3, 6, 6, seed=13)
    values, vectors = _eig(a)
    for index in [(0, 0), (1, 2)]:
        alone_values, alone_vectors = _eig(a[index])
        assert torch.equal(values[index], alone_values) and torch.equal(vectors[index], alone_vectors)


def test_result_layout_is_the_cpus():
    """Eigenvalues contiguous, eigenvectors column-major, as LAPACK's."""
    a = seeded_randn(2, 5, 5, seed=14)
    values, vectors = _eig(a)
    cpu_values, cpu_vectors = EIG(a)
    assert values.stride() == cpu_values.stride() and vectors.stride() == cpu_vectors.stride()


@pytest.mark.parametrize("shape", [(0, 0), (3, 0, 0), (0, 4, 4), (2, 0, 3, 3)])
def test_empty(shape):
    a = torch.empty(shape)
    values, vectors = _eig(a)
    cpu_values, cpu_vectors = EIG(a)
    assert values.shape == cpu_values.shape and vectors.shape == cpu_vectors.shape
    assert values.dtype == vectors.dtype == torch.complex64
    assert _eigvals(a).shape == EIGVALS(a).shape


@pytest.mark.parametrize("out_dtype", [torch.complex64, torch.complex128])
def test_out_of_any_dtype_and_layout(out_dtype):
    """An empty out is resized as the CPU resizes it (complex64 vectors
    column-major, others contiguous); a given shape and layout is kept."""
    a = seeded_randn(2, 4, 4, seed=15)

    def call(values_out, vectors_out):
        return EIG(a, out=(values_out, vectors_out))

    for values_out, vectors_out in [
        (torch.empty(0, dtype=out_dtype), torch.empty(0, dtype=out_dtype)),
        (torch.empty(2, 4, dtype=out_dtype), torch.empty(2, 4, 4, dtype=out_dtype).mT),
    ]:
        cpu = call(values_out.clone(), vectors_out.clone())
        ours, _ = run_on_kernels(lambda x, v, w: EIG(x, out=(v, w)), a, values_out.clone(), vectors_out.clone())
        assert ours[0].dtype == cpu[0].dtype == out_dtype
        assert ours[0].stride() == cpu[0].stride() and ours[1].stride() == cpu[1].stride()
        assert_eig_valid(a, (ours[0].to(torch.complex64), ours[1].to(torch.complex64)), str(out_dtype))
    values, _ = run_on_kernels(lambda x, o: EIGVALS(x, out=o), a, torch.empty(0, dtype=out_dtype))
    assert values.dtype == out_dtype
    assert_eigenvalues_valid(a, values.to(torch.complex64), "eigvals out=")


def test_gradients():
    """torch's eig backward on our decomposition: the gradient of a loss that
    neither the eigenvalues' order nor the vectors' phases change."""
    a = seeded_randn(5, 5, seed=16)

    def grad(x):
        x = x.detach().requires_grad_()
        values, vectors = EIG(x)
        weights = torch.arange(1.0, 6.0, device=x.device)[:, None]
        loss = values.real.pow(2).sum() + values.imag.abs().sum() + (vectors.abs().pow(2) * weights).sum()
        return torch.autograd.grad(loss, x)[0]

    expected = grad(a)
    actual, dispatches = run_on_kernels(grad, a)
    torch.testing.assert_close(actual, expected, atol=1e-4, rtol=1e-3)
    assert any(d.kernel == KERNEL for d in dispatches)


def test_eigvals_gradient_goes_through_eig():
    a = seeded_randn(4, 4, seed=17)

    def grad(x):
        x = x.detach().requires_grad_()
        return torch.autograd.grad(EIGVALS(x).real.sum(), x)[0]

    actual, dispatches = run_on_kernels(grad, a)
    torch.testing.assert_close(actual, grad(a), atol=1e-5, rtol=1e-4)
    assert any(d.kernel == KERNEL for d in dispatches)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_eig_refuses_nan_and_infinities_as_the_cpu(value):
    a = seeded_randn(3, 3, seed=18)
    a[1, 2] = value
    cpu, ours = errors_of_cpu_and_ours(EIG, a)
    assert str(ours) == str(cpu)


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_eigvals_of_a_nonfinite_matrix_are_nan(value):
    """The CPU's LAPACK returns NaNs for an infinity and crashes the process
    on NaN (torch 2.13's MKL): ours gives NaN for that matrix only."""
    a = seeded_randn(2, 3, 3, seed=19)
    a[1, 0, 2] = value
    values = _eigvals(a)
    assert values[1].isnan().all()
    assert_eigenvalues_valid(a[0], values[0])


BAD_INPUTS = [
    (torch.randn(3),),                       # not a matrix
    (torch.randn(3, 4),),                    # not square
    (torch.randn(2, 3, 4),),
    (torch.ones(3, 3, dtype=torch.long),),   # no complex type for integers
    (torch.ones(3, 3, dtype=torch.bool),),
    (torch.randn(3, 3).half(),),             # the CPU has no half kernel
]


@pytest.mark.parametrize("fn", [EIG, EIGVALS_ONLY, EIGVALS], ids=["eig", "_linalg_eigvals", "eigvals"])
@pytest.mark.parametrize("args", BAD_INPUTS, ids=lambda a: f"{a[0].dtype}{tuple(a[0].shape)}")
def test_errors_are_the_cpus(fn, args):
    """The CPU's type, and its words (ours name the dtype where the CPU names
    its kernel; torch.linalg.eigvals reaches linalg_eig's checks under the
    testing mode, so only its types compare)."""
    cpu, ours = errors_of_cpu_and_ours(fn, *args)
    if not isinstance(cpu, NotImplementedError) and fn is not EIGVALS:
        assert str(ours) == str(cpu)


@pytest.mark.parametrize("fn", [EIG, EIGVALS_ONLY], ids=["eig", "_linalg_eigvals"])
def test_float64_is_refused_clearly(fn):
    with pytest.raises(TypeError, match="float64"):
        run_on_kernels(fn, torch.randn(3, 3).double())


def test_out_of_a_real_dtype_is_refused_as_on_the_cpu():
    a = seeded_randn(3, 3, seed=20)
    for outs in [(torch.empty(0), torch.empty(0, dtype=torch.complex64)),
                 (torch.empty(0, dtype=torch.complex64), torch.empty(0))]:
        cpu, ours = errors_of_cpu_and_ours(lambda x, v, w: EIG(x, out=(v, w)), a, *outs)
        assert str(ours) == str(cpu)
    cpu, ours = errors_of_cpu_and_ours(lambda x, o: EIGVALS(x, out=o), a, torch.empty(0))
    assert str(ours) == str(cpu)


def test_the_largest_size_is_refused_clearly():
    """Past 1024 x 1024 one threadgroup would take minutes: a clear error
    that names the size and the way out."""
    a = torch.zeros(1025, 1025)
    with pytest.raises(NotImplementedError, match="1025 x 1025.*at most 1024.*cpu"):
        run_on_kernels(EIG, a)


def test_convergence_failure_raises_the_cpus_error(monkeypatch):
    """With no QR sweep allowed (MPS_OPS_EIG_ITERATIONS=0), the CPU's
    LinAlgError and words; LAPACK's info is the row where QR stopped."""
    monkeypatch.setitem(os.environ, "MPS_OPS_EIG_ITERATIONS", "0")
    for a, batch in [(seeded_randn(2, 5, 5, seed=21), ": (Batch element 0)"), (seeded_randn(5, 5, seed=22), "")]:
        for fn, name in [(EIG, "torch.linalg.eig"), (EIGVALS_ONLY, "torch.linalg.eigvals")]:
            with pytest.raises(torch.linalg.LinAlgError) as error:
                run_on_kernels(fn, a)
            assert str(error.value).startswith(f"{name}{batch}: The algorithm failed to converge because the input "
                                               "matrix is ill-conditioned or has too many repeated eigenvalues "
                                               "(error code: 5).")


@pytest.mark.parametrize("n, threads", [(1, 32), (5, 32), (33, 64), (100, 128), (300, 256)])
def test_one_threadgroup_per_matrix_of_whole_simd_groups(n, threads):
    """A power of two from 32 up to n, at most 256 (and the pipeline's limit)."""
    _, dispatches = run_on_kernels(EIGVALS_ONLY, torch.eye(n).expand(2, n, n))
    assert [(d.threads[0], d.group_size[0]) for d in dispatches] == [(2 * threads, threads)]
